"""The ``curves`` suite at its quick size through ``jaxsamp bench``, so that it never rots, its cells against the
shipped configs, and the one-time conversion of the old ``bench_curves.json``."""

import json
from pathlib import Path

import pytest
from _glossary_names import assert_glossary_names

from jaxsamp.bench import legacy, store
from jaxsamp.bench.suites import curves
from jaxsamp.cli import main
from jaxsamp.core.errors import InputError
from jaxsamp.experiments.config import load_config

CONFIGS = Path(__file__).resolve().parents[3] / "configs"


def test_quick_run_records_every_figure_in_the_glossary_and_draws_the_plots(tmp_path, capsys):
    cells = ["curves-learned/gmm2d", "smc/gmm2d", "base_is/gmm2d", "exact_speeds/*separation8"]
    assert main(["bench", "run", "curves", "--quick", "--cells", *cells, "--results-dir", str(tmp_path)]) == 0
    data = store.read(tmp_path / "curves_quick.json")
    records = {cell: seeds["0"]["figures"] for cell, seeds in data["records"].items()}
    assert set(records) == {"curves-learned/gmm2d", "smc/gmm2d", "base_is/gmm2d", "exact_speeds/mixture_1d_separation8"}
    learned = records["curves-learned/gmm2d"]
    assert 0 <= learned["ess"] <= 1 and learned["train_steps"] == 20 and learned["target_evals"] > 0
    for figure in ("log_Z_abs_err", "log_Z_abs_err_jarzynski", "log_Z_learned_abs_err", "mmd", "max_velocity"):
        assert figure in learned, figure
    assert learned["diverged_collocation_points"] == 0  # box collocation has no trajectories
    # the baseline spends at most the curve's training evaluations, a level costing 64 x (2 + 2) of them
    assert learned["target_evals"] - 64 * 4 < records["smc/gmm2d"]["target_evals"] <= learned["target_evals"]
    assert records["base_is/gmm2d"]["log_Z_abs_err"] >= 0 and 0 < records["base_is/gmm2d"]["ess"] <= 1
    exact = records["exact_speeds/mixture_1d_separation8"]
    assert exact["peak_rms_speed_linear"] > 20 * exact["peak_rms_speed_gradient_flow"]
    for png in ("curves_exact_velocity_quick.png", "curves_velocity_gmm2d_seed0_quick.png",
                "curves_gmm2d_seed0_quick.png"):
        assert (tmp_path / png).stat().st_size > 0, png
    figures = {f for figures in records.values() for f in figures}
    assert_glossary_names(figures)
    capsys.readouterr()
    assert main(["bench", "report", "curves", "--quick", "--results-dir", str(tmp_path)]) == 0
    assert "| curves-learned/gmm2d | 1 |" in capsys.readouterr().out


@pytest.mark.parametrize("cell", [c for c in curves.PROTOCOL.cells if c.runner == "fit"], ids=lambda c: c.name)
def test_a_curve_cell_trains_as_its_shipped_config(cell):
    interpolation, target = cell.name.removeprefix("curves-").split("/")
    name = f"curves_{interpolation}_gmm2d.yaml" if target == "gmm2d" else f"curves_{target}.yaml"
    cfg = load_config(CONFIGS / name)
    assert {"name": cfg.target.name, **cfg.target.params} == cell.target
    assert {**cfg.sampler.params, "interpolation": interpolation} == cell.params["settings"]
    assert (cfg.run.num_steps, cfg.run.num_chains) == (cell.budget.updates, cell.params["batch_size"])


def test_the_old_results_file_converts_once_into_cells_and_glossary_names(tmp_path):
    old = {"command": "python scripts/bench_curves.py --seeds 0 1 2", "date": "2026-12-02", "machine": {"cpu_count": 2},
           "results": {"exact_linear_separation8_peak_rms_speed": 1658.3,
                       "gradient_flow_many_well_logz_jarzynski_abs_err_seed2": 120.9,
                       "gradient_flow_many_well_logz_jarzynski_abs_err": 120.9,
                       "gradient_flow_many_well_diverged_points_seed2": 22551.0,
                       "linear_gmm2d_target_evals_seed0": 4099024.0, "linear_gmm2d_train_minutes_seed0": 0.5,
                       "learned_lattice_double_well_logz_learned_abs_err_seed1": 0.7,
                       "smc_gmm2d_target_evals_seed0": 4774000.0, "smc_gmm2d_levels_seed0": 341.0,
                       "base_is_many_well_ess_seed1": 0.0005}}
    (tmp_path / "bench_curves.json").write_text(json.dumps(old))
    new = tmp_path / "curves.json"
    data = legacy.convert(curves.PROTOCOL, tmp_path / "bench_curves.json", curves.legacy_key, new)
    records = {(cell, seed): r["figures"] for cell, seeds in data["records"].items() for seed, r in seeds.items()}
    assert records == {
        ("curves-gradient_flow/many_well", "2"): {"log_Z_abs_err_jarzynski": 120.9, "diverged_collocation_points": 22551.0},
        ("curves-linear/gmm2d", "0"): {"train_and_sample_target_evals": 4099024.0, "train_seconds_incl_compile": 30.0},
        ("curves-learned/lattice_double_well", "1"): {"log_Z_learned_abs_err": 0.7},
        ("smc/gmm2d", "0"): {"target_evals": 4774000.0, "num_levels": 341.0},
        ("base_is/many_well", "1"): {"ess": 0.0005},
    }
    assert "legacy" in data["records"]["smc/gmm2d"]["0"]["machine"]
    with pytest.raises(InputError, match="runs once"):
        legacy.convert(curves.PROTOCOL, tmp_path / "bench_curves.json", curves.legacy_key, new)
    old["results"]["mystery_figure_seed0"] = 1.0
    (tmp_path / "bench_curves.json").write_text(json.dumps(old))
    with pytest.raises(InputError, match="mystery_figure_seed0"):
        legacy.convert(curves.PROTOCOL, tmp_path / "bench_curves.json", curves.legacy_key, tmp_path / "again.json")


def test_the_recorded_results_file_is_the_converted_one():
    data = store.read(store.results_path("curves"))
    assert data["suite"] == "curves" and len(data["records"]["smc/many_well"]) == 3
    assert len(data["records"]["exact_speeds/mixture_1d_separation8"]) == 3
