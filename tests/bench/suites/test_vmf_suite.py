"""The ``vmf`` suite at its quick size through ``jaxsamp bench`` (figures present and in range; no timing asserted),
its seeds' random streams, and the one-time conversion of the old ``bench_vmf.json`` (single runs, seed 0)."""

import json

import jax
import numpy as np
import pytest
from _glossary_names import assert_glossary_names

from jaxsamp.bench import legacy, store
from jaxsamp.bench.suites import vmf
from jaxsamp.cli import main
from jaxsamp.core.errors import InputError


def test_quick_run_records_every_part_in_glossary_names_and_report_shows_it(tmp_path, capsys):
    cells = ["sampling/d64_k1", "log_normalizer/grid", "selection/n1e6_d64", "paper_simulation/uniform_d4"]
    assert main(["bench", "run", "vmf", "--quick", "--cells", *cells, "--results-dir", str(tmp_path)]) == 0
    data = store.read(tmp_path / "vmf_quick.json")
    sampling, grid, selection, simulation = (data["records"][c]["0"]["figures"] for c in cells)
    assert all(sampling[f"vmf_samples_per_s_{impl}"] > 0 for impl in vmf.IMPLEMENTATIONS)
    assert grid["vmf_log_norm_max_rel_err"] < 1e-6  # the accuracy figure is exact arithmetic, not a timing
    for method in ("boltzmann", "vmfexp", "vmfexp_ivf"):  # one at a time and batched, every method
        assert selection[f"{method}_selections_per_s"] > 0 and selection[f"{method}_batched_selections_per_s"] > 0
    boltzmann = [selection[f"boltzmann_{sampler}_selections_per_s"] for sampler in ("full_cdf", "streamed")]
    assert selection["boltzmann_selections_per_s"] == max(boltzmann)  # the faster exact sampler is the baseline
    assert selection["vmfexp_ivf_speedup_vs_boltzmann"] > 0
    assert selection["vmfexp_ivf_batched_speedup_vs_boltzmann_batched"] > 0
    nprobe, bound = selection["vmfexp_ivf_nprobe"], selection["vmfexp_ivf_tuning_tv_bound"]
    assert nprobe in (8, 16, 32) and (bound <= 0.02 or nprobe == 32)  # the fidelity rule picked it
    assert 0 <= selection["vmfexp_ivf_tv_bound"] <= 1 and selection["vmfexp_ivf_tv_bound_se"] >= 0
    assert selection["ivf_recall"] == 1 - selection["vmfexp_ivf_tv_bound"]
    assert 0 < selection["vmfexp_ivf_rows_read_fraction"] <= 2
    assert simulation["max_rel_dev_vmfexp_vs_boltzmann"] >= 0
    assert (tmp_path / "vmf_selection_uniform_seed0_quick.png").stat().st_size > 0
    figures = {f for cell in data["records"].values() for r in cell.values() for f in r["figures"]}
    assert_glossary_names(figures)
    capsys.readouterr()
    assert main(["bench", "report", "vmf", "--quick", "--results-dir", str(tmp_path)]) == 0
    assert "| selection/n1e6_d64 | 1 |" in capsys.readouterr().out


def test_seed_zero_draws_the_scripts_keys_and_each_seed_its_own():
    assert len(vmf.PROTOCOL.seeds) >= 3  # issue 60: the protocol states its seeds
    assert np.array_equal(jax.random.key_data(vmf.stream_key(0, 4)), jax.random.key_data(jax.random.key(4)))
    streams = {tuple(np.asarray(jax.random.key_data(vmf.stream_key(seed, s)))) for seed in range(3) for s in range(7)}
    assert len(streams) == 21


def old_file():
    results = {"vmf_samples_per_s_jaxsamp_d64_k1": 9.7e5, "vmf_samples_per_s_tfp_d64_k1": 9.2e5,
               "vmf_samples_per_s_d64_k1_ratio_vs_best_other": 1.06, "vmf_log_norm_max_rel_err": 7.5e-15,
               "vmfexp_ivf_recall_n1e6_d64": 0.986, "vmfexp_ivf_speedup_vs_boltzmann_n1e6_d64_clustered": 1.39,
               "uniform_d4_max_rel_dev_vmfexp_vs_boltzmann": 0.045}
    return {"command": "python scripts/bench_vmf.py --only selection", "date": "2026-12-05",
            "machine": {"platform": "Linux-x"}, "results": results}


def test_the_old_single_runs_convert_once_as_seed_zero(tmp_path):
    (tmp_path / "bench_vmf.json").write_text(json.dumps(old_file()))
    data = legacy.convert(vmf.PROTOCOL, tmp_path / "bench_vmf.json", vmf.legacy_key, tmp_path / "vmf.json",
                          legacy_single=vmf.legacy_single)
    records = data["records"]
    assert all(set(seeds) == {"0"} for seeds in records.values())
    assert records["sampling/d64_k1"]["0"]["figures"] == {
        "vmf_samples_per_s_jaxsamp": 9.7e5, "vmf_samples_per_s_tfp": 9.2e5, "vmf_samples_per_s_ratio_vs_best_other": 1.06}
    assert records["log_normalizer/grid"]["0"]["figures"] == {"vmf_log_norm_max_rel_err": 7.5e-15}
    assert records["selection/n1e6_d64"]["0"]["figures"] == {"ivf_recall": 0.986}
    assert records["selection/n1e6_d64_clustered"]["0"]["figures"] == {"vmfexp_ivf_speedup_vs_boltzmann": 1.39}
    assert records["paper_simulation/uniform_d4"]["0"]["figures"] == {"max_rel_dev_vmfexp_vs_boltzmann": 0.045}
    broken = old_file()
    broken["results"]["mystery_figure"] = 1.0  # a single-run file's every key is placed, or the conversion stops
    (tmp_path / "bench_vmf.json").write_text(json.dumps(broken))
    with pytest.raises(InputError, match="mystery_figure"):
        legacy.convert(vmf.PROTOCOL, tmp_path / "bench_vmf.json", vmf.legacy_key, tmp_path / "other.json",
                       legacy_single=vmf.legacy_single)


def test_the_recorded_results_file_is_the_converted_one_on_one_seed():
    data = store.read(store.results_path("vmf"))
    assert set(data["records"]) == {cell.name for cell in vmf.PROTOCOL.cells}
    assert all(set(seeds) == {"0"} for seeds in data["records"].values())  # the script's single runs
