"""The ``classical`` suite at its quick size through ``jaxsamp bench`` (one cell of each runner), its plots, and the
one-time conversion of the old ``bench_classical.json`` (one run at fixed keys: seed 0)."""

import json
import math

from _glossary_names import assert_glossary_names

from jaxsamp.bench import legacy, store
from jaxsamp.bench.suites import classical
from jaxsamp.cli import main

CELLS = ["rmm-h0.5/gaussian_var4_d16", "speculative_ula-L8/gaussian_d32", "almc/two_modes_d8",
         "smc-heat_bath/ising_L8", "glauber-checkerboard/ising_L64"]


def test_quick_run_records_each_runner_s_figures_and_draws_the_plots(tmp_path, capsys):
    assert main(["bench", "run", "classical", "--quick", "--cells", *CELLS, "--results-dir", str(tmp_path)]) == 0
    data = store.read(tmp_path / "classical_quick.json")
    figures = {cell: data["records"][cell]["0"]["figures"] for cell in CELLS}
    assert 3.5 < figures["rmm-h0.5/gaussian_var4_d16"]["stationary_var"] < 4.5  # exact 4
    assert figures["speculative_ula-L8/gaussian_d32"]["sequential_calls_ratio"] > 1
    assert set(figures["almc/two_modes_d8"]) == {f"mode_axis_w2_sep{s}" for s in (2, 4, 8)}
    smc = figures["smc-heat_bath/ising_L8"]
    assert smc["log_Z_abs_err"] < 2 and smc["target_evals"] > 0 and smc["num_levels"] >= 2
    temperatures = data["records"]["smc-heat_bath/ising_L8"]["0"]["curves"]["temperature"]
    assert len(temperatures) == smc["num_levels"] and temperatures[-1] == 1.0
    assert figures["glauber-checkerboard/ising_L64"]["flips_per_s"] > 0
    recorded = {f for fs in figures.values() for f in fs}
    assert all(math.isfinite(v) for fs in figures.values() for v in fs.values())
    assert_glossary_names(recorded)
    assert {"rmm_variance_quick.png", "speculative_calls_quick.png", "almc_vs_lmc_w2_quick.png",
            "smc_schedules_quick.png"} <= {p.name for p in tmp_path.iterdir()}
    capsys.readouterr()
    assert main(["bench", "report", "classical", "--quick", "--results-dir", str(tmp_path)]) == 0
    assert "| almc/two_modes_d8 | 1 |" in capsys.readouterr().out


def test_the_old_results_file_converts_once_as_seed_0_without_the_best_window_s_maximum(tmp_path):
    old = {"command": "python scripts/bench_classical.py --groups midpoint_figures", "date": "2026-12-01",
           "machine": {"platform": "Linux-fc-v782", "cpu_count": 2, "jax": "0.10.2"},
           "results": {"rmm_var_h05": 4.002, "speculative_calls_ratio": 1.92, "speculative_calls_ratio_L8": 1.92,
                       "lmc_w2_sep8": 2.31, "smc_logz_abs_err_many_well32": 0.073,
                       "smc_logz_abs_err_many_well32_target_evals": 2506752.0,
                       "glauber_random_scan_flips_per_s_L64": 1.67e6}}
    (tmp_path / "bench_classical.json").write_text(json.dumps(old))
    data = legacy.convert(classical.PROTOCOL, tmp_path / "bench_classical.json", classical.legacy_key,
                          tmp_path / "classical.json", legacy_single=classical.legacy_single)
    records = {cell: seeds["0"]["figures"] for cell, seeds in data["records"].items()}
    assert records == {"rmm-h0.5/gaussian_var4_d16": {"stationary_var": 4.002},
                       "speculative_ula-L8/gaussian_d32": {"sequential_calls_ratio": 1.92},
                       "lmc/two_modes_d8": {"mode_axis_w2_sep8": 2.31},
                       "smc-mala/many_well_d32": {"log_Z_abs_err": 0.073, "target_evals": 2506752.0},
                       "glauber-random_scan/ising_L64": {"flips_per_s": 1.67e6}}


def test_the_recorded_results_file_is_the_converted_one():
    data = store.read(store.results_path("classical"))
    assert data["suite"] == "classical" and len(data["records"]) == 16
    assert all(list(seeds) == ["0"] and "legacy" in r["machine"] for seeds in data["records"].values()
               for r in seeds.values())
