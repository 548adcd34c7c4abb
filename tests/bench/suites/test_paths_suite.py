"""The ``paths`` suite at its quick size through ``jaxsamp bench``, so that it never rots, and the one-time
conversion of the old ``bench_paths.json``."""

import json

import pytest
from _glossary_names import assert_glossary_names

from jaxsamp.bench import legacy, store
from jaxsamp.bench.suites import paths
from jaxsamp.cli import main
from jaxsamp.core.errors import InputError


def test_quick_run_records_every_figure_in_the_glossary_and_report_shows_it(tmp_path, capsys):
    cells = ["pis-kl/gmm", "dds-log_variance/gmm", "smc/gmm", "tps_dps-learned/*"]
    assert main(["bench", "run", "paths", "--quick", "--cells", *cells, "--results-dir", str(tmp_path)]) == 0
    data = store.read(tmp_path / "paths_quick.json")
    assert set(data["records"]) == {"pis-kl/gmm", "dds-log_variance/gmm", "smc/gmm", "tps_dps-learned/double_well_2d"}
    pis = data["records"]["pis-kl/gmm"]["0"]
    assert pis["evaluation"] == {"num_samples": 128} and pis["cell"]["params"]["evaluate"] == {"num_sets": 2}
    assert pis["figures"]["target_evals"] > 0 and pis["figures"]["train_steps"] == 20
    assert pis["figures"]["log_Z_abs_err"] >= 0 and 0 <= pis["figures"]["emc"] <= 1
    smc = data["records"]["smc/gmm"]["0"]["figures"]
    # the baseline spends the mean training evaluations of the gmm cells recorded at this seed
    mean_evals = (pis["figures"]["target_evals"]
                  + data["records"]["dds-log_variance/gmm"]["0"]["figures"]["target_evals"]) / 2
    assert 0.5 * mean_evals < smc["target_evals"] <= mean_evals
    assert 0 <= data["records"]["tps_dps-learned/double_well_2d"]["0"]["figures"]["thp"] <= 100
    assert (tmp_path / "paths_gmm_pis-kl_seed0_quick.png").stat().st_size > 0
    figures = {f for cell in data["records"].values() for r in cell.values() for f in r["figures"]}
    assert_glossary_names(figures)
    capsys.readouterr()
    assert main(["bench", "report", "paths", "--quick", "--results-dir", str(tmp_path)]) == 0
    assert "| pis-kl/gmm | 1 |" in capsys.readouterr().out


def test_every_cell_of_the_suite_is_listed(capsys, tmp_path):
    assert main(["bench", "list", "--results-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert all(cell.name in out for cell in paths.PROTOCOL.cells)


def test_the_old_results_file_converts_once_into_cells_and_glossary_names(tmp_path):
    old = {"command": "python scripts/bench_paths.py", "date": "2026-12-01", "machine": {"cpu_count": 2},
           "results": {"pis_kl_nostochastic_funnel_x5_logz_abs_err_seed3": 0.3, "pis_kl_nostochastic_funnel_x5_logz_abs_err": 0.3,
                       "pis_kl_nostochastic_funnel_x5_eval_paths_seed3": 10000, "pis_kl_funnel_train_minutes_seed0": 2.0,
                       "smc_gmm_levels_seed1": 7, "tps_zero_thp_seed2": 99.0, "tps_ets_seed2": 1.3},
           "figure_commands": {"pis_kl_funnel_train_minutes_seed0": "python scripts/bench_paths.py --seeds 0"}}
    (tmp_path / "bench_paths.json").write_text(json.dumps(old))
    new = tmp_path / "paths.json"
    data = legacy.convert(paths.PROTOCOL, tmp_path / "bench_paths.json", paths.legacy_key, new)
    rec = data["records"]["pis-kl_nostochastic/funnel x5"]["3"]
    assert rec["figures"] == {"log_Z_abs_err": 0.3} and rec["evaluation"] == {"num_samples": 10000}
    assert rec["budget_scale"] == 5 and "legacy" in rec["machine"]
    minutes = data["records"]["pis-kl/funnel"]["0"]
    assert minutes["figures"] == {"train_seconds_incl_compile": 120.0} and minutes["command"].endswith("--seeds 0")
    assert data["records"]["smc/gmm"]["1"]["figures"] == {"num_levels": 7}
    assert data["records"]["tps_dps-zero/double_well_2d"]["2"]["figures"] == {"thp": 99.0}
    assert data["records"]["tps_dps-learned/double_well_2d"]["2"]["figures"] == {"ets": 1.3}
    assert store.read(new)["summary"]["pis-kl/funnel"][0]["figures"]["train_seconds_incl_compile"]["n"] == 1
    with pytest.raises(InputError, match="runs once"):
        legacy.convert(paths.PROTOCOL, tmp_path / "bench_paths.json", paths.legacy_key, new)
    old["results"]["mystery_figure_seed0"] = 1.0
    (tmp_path / "bench_paths.json").write_text(json.dumps(old))
    with pytest.raises(InputError, match="mystery_figure_seed0"):
        legacy.convert(paths.PROTOCOL, tmp_path / "bench_paths.json", paths.legacy_key, tmp_path / "again.json")


def test_the_recorded_results_file_is_the_converted_one():
    data = store.read(store.results_path("paths"))
    assert data["suite"] == "paths" and len(data["records"]["smc/funnel"]) == 3
