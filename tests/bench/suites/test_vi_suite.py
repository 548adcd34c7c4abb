"""The ``vi`` suite at its quick size through ``jaxsamp bench`` (every group's score in range), its banana-reference
cells against the shipped configs, and the one-time conversion of the old ``bench_vi.json``."""

import json
from pathlib import Path

import numpy as np
import pytest
from _glossary_names import assert_glossary_names

from jaxsamp.bench import legacy, store
from jaxsamp.bench.suites import vi
from jaxsamp.cli import main
from jaxsamp.experiments.config import load_config

CONFIGS = Path(__file__).resolve().parents[3] / "configs"


def test_quick_run_scores_every_group_in_range_with_glossary_names(tmp_path, capsys):
    cells = ["softcvi/linreg", "elbo/eight_schools", "aisivi-ref256_tau8x1/banana", "bsivi/bayes_logreg",
             "nuts/bayes_logreg", "speed-snis_forward_kl/*"]
    assert main(["bench", "run", "vi", "--quick", "--cells", *cells, "--results-dir", str(tmp_path)]) == 0
    data = store.read(tmp_path / "vi_quick.json")
    records = {cell: seeds["0"]["figures"] for cell, seeds in data["records"].items()}
    assert set(records) == {*cells[:-1], "speed-snis_forward_kl/eight_schools"}
    assert records["softcvi/linreg"]["reverse_kl"] > 0 and records["softcvi/linreg"]["train_steps"] == 20
    schools = records["elbo/eight_schools"]
    assert 0 <= schools["hpd_coverage50"] <= schools["hpd_coverage90"] <= 1 and schools["mean_log_q_reference"] < 0
    banana = records["aisivi-ref256_tau8x1/banana"]
    assert banana["forward_kl"] > 0 and 0 <= banana["q_mass"] <= 1 + 1e-6 and banana["p_mass"] > 0.99
    assert data["records"]["aisivi-ref256_tau8x1/banana"]["0"]["cell"]["params"]["settings"]["tau_hidden_layers"] == 1
    assert records["bsivi/bayes_logreg"]["test_lppd"] < 0 and records["nuts/bayes_logreg"]["test_lppd"] < 0
    assert records["speed-snis_forward_kl/eight_schools"]["train_steps_per_s"] > 0
    figures = {f for figures in records.values() for f in figures}
    assert_glossary_names(figures)
    capsys.readouterr()
    assert main(["bench", "report", "vi", "--quick", "--results-dir", str(tmp_path)]) == 0
    assert "| nuts/bayes_logreg | 1 |" in capsys.readouterr().out


@pytest.mark.parametrize("cell", vi.BANANA_REFERENCE_CELLS)
def test_a_banana_reference_cell_trains_as_its_shipped_config_but_for_its_tag(cell):
    """The reference code's settings (s = 0.1 softplus(v) from v = 1, 4000 steps, drop at 2000, batch 128), the
    cell's inner draws, AISIVI's conditioners and latent prior as its name says, log q by 50 000 prior draws."""
    spec = vi.PROTOCOL.cell(cell)
    method, variant = cell.removesuffix("/banana").split("-")
    cfg = load_config(CONFIGS / f"{method}_banana.yaml")
    tag = {"num_inner": int(variant.split("_")[0].removeprefix("ref")), "marginal_draws": 50_000,
           "latent_prior": "uniform" if variant.endswith("_uniform") else "normal"}
    if method == "aisivi":
        width, layers = variant.split("_tau")[1].split("_")[0].split("x")
        tag.update(tau_hidden_width=int(width), tau_hidden_layers=int(layers))
    assert spec.params["settings"] == {**cfg.sampler.params, **tag}
    assert (cfg.target.name, cfg.run.num_steps, cfg.run.num_chains) == (spec.target["name"], spec.budget.updates,
                                                                          spec.params["batch_size"])
    assert spec.sized(quick=True).params["settings"]["scale_factor"] == 0.1  # the quick size keeps the parameterisation


def test_the_held_out_rows_are_standardised_by_the_training_rows():
    target, (design, labels) = vi.split_target({"name": "bayes_logreg", "dataset": "breast_cancer"}, vi.TEST_SPLIT)
    assert design.shape == (114, 31) and labels.shape == (114,) and target.design_np.shape == (455, 31)
    assert np.all(design[:, 0] == 1) and abs(design[:, 1:].mean()) < 0.2  # near, not at, zero mean
    # a coefficient vector that predicts every row at probability 1/2 scores log 1/2 on every row
    assert vi.test_lppd(np.zeros((3, 31)), (design, labels)) == pytest.approx(np.log(0.5), rel=1e-6)


def test_the_old_results_file_converts_once_into_cells_and_glossary_names(tmp_path):
    old = {"command": "python scripts/bench_vi.py", "date": "2026-12-02", "machine": {"cpu_count": 2},
           "results": {"snis_fkl_linreg_kl_seed1": 10.8, "snis_fkl_linreg_kl": 10.8,
                       "softcvi_eight_schools_mean_log_q_ref_seed0": -14.9,
                       "elbo_eight_schools_coverage90_seed2": 0.88, "bsivi_x_shaped_forward_kl_seed0": 0.008,
                       "nuts_bayes_logreg_test_lpd_seed1": -0.101, "aisivi_banana_ref256_forward_kl_seed2": 86.98,
                       "bsivi_banana_ref256_q_mass_seed2": 1.0, "aisivi_banana_ref256_tau8x1_q_mass_seed0": 0.2,
                       "aisivi_banana_ref256_tau64x2_uniform_forward_kl_seed1": 0.47,
                       "aisivi_banana_ref4096_tau64x2_forward_kl_seed1": 0.02, "softcvi_steps_per_s": 6021.0}}
    (tmp_path / "bench_vi.json").write_text(json.dumps(old))
    data = legacy.convert(vi.PROTOCOL, tmp_path / "bench_vi.json", vi.legacy_key, tmp_path / "vi.json")
    records = {(cell, seed): r["figures"] for cell, seeds in data["records"].items() for seed, r in seeds.items()}
    assert records == {
        ("snis_forward_kl/linreg", "1"): {"reverse_kl": 10.8},
        ("softcvi/eight_schools", "0"): {"mean_log_q_reference": -14.9},
        ("elbo/eight_schools", "2"): {"hpd_coverage90": 0.88},
        ("bsivi/x_shaped", "0"): {"forward_kl": 0.008},
        ("nuts/bayes_logreg", "1"): {"test_lppd": -0.101},
        ("aisivi-ref256_tau64x2/banana", "2"): {"forward_kl": 86.98},  # the first run's untagged 64 x 2
        ("bsivi-ref256/banana", "2"): {"q_mass": 1.0},
        ("aisivi-ref256_tau8x1/banana", "0"): {"q_mass": 0.2},
        ("aisivi-ref256_tau64x2_uniform/banana", "1"): {"forward_kl": 0.47},
        ("aisivi-ref4096_tau64x2/banana", "1"): {"forward_kl": 0.02},
    }
    assert all(cell in {c.name for c in vi.PROTOCOL.cells} for cell, _ in records)


def test_the_recorded_results_file_is_the_converted_one():
    data = store.read(store.results_path("vi"))
    assert data["suite"] == "vi" and len(data["records"]) == 21
    assert all(len(seeds) == 3 for seeds in data["records"].values())
    assert data["summary"]["elbo/eight_schools"][0]["figures"]["mean_log_q_reference"]["mean"] == pytest.approx(-14.986, abs=1e-3)
