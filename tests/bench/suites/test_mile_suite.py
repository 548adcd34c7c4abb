"""The ``mile`` suite at its quick size through ``jaxsamp bench`` (the ``mile`` experiment kind end to end), its cells
against the configs they read, and the one-time conversion of the old ``bench_mile.json``."""

import json
import math

import pytest
from _glossary_names import assert_glossary_names

from jaxsamp.bench import legacy, store
from jaxsamp.bench.suites import mile
from jaxsamp.cli import main
from jaxsamp.core.errors import ConfigError, InputError


def test_quick_run_records_the_three_methods_in_glossary_names_and_report_shows_it(tmp_path, capsys):
    assert main(["bench", "run", "mile", "--quick", "--cells", "mile/yacht", "--results-dir", str(tmp_path)]) == 0
    data = store.read(tmp_path / "mile_quick.json")
    figures = data["records"]["mile/yacht"]["0"]["figures"]
    for method in mile.METHODS:
        assert math.isfinite(figures[f"{method}_lppd"])
        assert figures[f"{method}_rmse"] > 0 and 0.0 <= figures[f"{method}_coverage90"] <= 1.0
        assert figures[f"{method}_seconds"] > 0 and figures[f"{method}_grad_evals"] > 0
    assert figures["num_members"] == 4
    assert figures["mile_grad_evals"] == 4 * (1 + 2 * 200 + 2 * 20 * 2)  # 4 members: init, tuning, sampling
    assert figures["mile_speedup_vs_bde"] == figures["bde_seconds"] / figures["mile_seconds"]
    assert figures["mile_lppd_gain_vs_bde"] == figures["mile_lppd"] - figures["bde_lppd"]
    assert_glossary_names(figures)
    assert (tmp_path / "mile_yacht_seed0_quick.png").stat().st_size > 0
    capsys.readouterr()
    assert main(["bench", "report", "mile", "--quick", "--results-dir", str(tmp_path)]) == 0
    assert "| mile/yacht | 1 |" in capsys.readouterr().out


def test_cells_state_the_configs_settings_and_refuse_a_budget_scale():
    cell = mile.PROTOCOL.cell("mile/airfoil")
    assert cell.params["num_members"] == 12 and cell.params["mile"]["tune_steps"] == 10_000
    assert (cell.params["bde"]["warmup_steps"], cell.params["bde"]["num_samples"]) == (100, 200)
    assert cell.target["dataset"] == "airfoil" and "split_seed" not in cell.target  # the seed sets the split
    quick = cell.sized(quick=True).params
    assert quick["mile"]["tune_steps"] == 200 and quick["mile"]["energy_variance_end"] == 0.1  # others kept
    assert {(g.cell, g.figure) for g in mile.PROTOCOL.goals} == {
        (f"mile/{d}", f) for d in mile.DATASETS for f in ("mile_lppd_gain_vs_bde", "mile_lppd_gain_vs_de",
                                                          "mile_speedup_vs_bde")}
    with pytest.raises(ConfigError, match="budget scale"):
        mile.ensembles_run(cell, 0, target_evals=None, evaluation={}, budget_scale=2)


def old_file():
    results = {"mile_yacht_lppd_seed0": 2.9, "bde_yacht_lppd_seed0": 2.5, "de_yacht_lppd_seed0": 1.0,
               "mile_yacht_seconds_seed0": 20.0, "bde_yacht_seconds_seed0": 150.0,
               "mile_yacht_speedup_vs_bde_seed0": 7.5, "bde_yacht_rhat_test_loglik_seed1": 1.3,
               "mile_yacht_lppd": 2.9, "mile_yacht_lppd_sd": 0.0, "mile_yacht_lppd_seeds": 1.0}
    return {"command": "python scripts/bench_mile.py", "date": "2026-12-03", "machine": {"platform": "Linux-x"},
            "results": results}


def test_the_old_results_file_converts_once_with_the_goals_figures_derived(tmp_path):
    (tmp_path / "bench_mile.json").write_text(json.dumps(old_file()))
    data = legacy.convert(mile.PROTOCOL, tmp_path / "bench_mile.json", mile.legacy_key, tmp_path / "mile.json",
                          derived=mile.derived_figures)
    seed0 = data["records"]["mile/yacht"]["0"]["figures"]
    assert seed0["mile_lppd"] == 2.9 and seed0["bde_lppd"] == 2.5 and seed0["mile_speedup_vs_bde"] == 7.5
    assert seed0["mile_lppd_gain_vs_bde"] == pytest.approx(0.4) and seed0["mile_lppd_gain_vs_de"] == pytest.approx(1.9)
    assert data["records"]["mile/yacht"]["1"]["figures"] == {"bde_rhat_test_loglik": 1.3}
    broken = old_file()
    broken["results"]["mystery_yacht_lppd_seed0"] = 1.0
    (tmp_path / "bench_mile.json").write_text(json.dumps(broken))
    with pytest.raises(InputError, match="mystery_yacht_lppd_seed0"):
        legacy.convert(mile.PROTOCOL, tmp_path / "bench_mile.json", mile.legacy_key, tmp_path / "other.json")


def test_the_recorded_results_file_is_the_converted_one():
    data = store.read(store.results_path("mile"))
    assert set(data["records"]) == {f"mile/{d}" for d in mile.DATASETS}
    assert all(len(seeds) == 3 for seeds in data["records"].values())
    airfoil = data["records"]["mile/airfoil"]["0"]["figures"]
    assert airfoil["mile_lppd_gain_vs_bde"] == airfoil["mile_lppd"] - airfoil["bde_lppd"]
