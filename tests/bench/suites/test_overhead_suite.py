"""The ``overhead`` suite at its quick size through ``jaxsamp bench`` (its figures present, no timing asserted), its
goals, and the one-time conversion of the old ``bench_overhead.json`` (one run, seed 0)."""

import json

import pytest
from _glossary_names import assert_glossary_names

from jaxsamp.bench import legacy, store
from jaxsamp.bench.suites import overhead
from jaxsamp.cli import main
from jaxsamp.core.errors import InputError

RATIOS = {"wrapped_over_direct", "driver_over_scan", "control_direct_over_direct"}


def test_quick_run_records_the_ratios_step_times_and_fingerprints(tmp_path, capsys):
    assert main(["bench", "run", "overhead", "--quick", "--results-dir", str(tmp_path)]) == 0
    data = store.read(tmp_path / "overhead_quick.json")
    mala = data["records"]["mala/quartic_32d"]["0"]["figures"]
    assert set(mala) == RATIOS | {"direct_step_ms", "wrapped_step_ms", "driver_step_ms", "fingerprint_seconds"}
    assert all(mala[name] > 0 for name in mala)
    assert mala["wrapped_over_direct"] == pytest.approx(mala["wrapped_step_ms"] / mala["direct_step_ms"])
    assert mala["driver_over_scan"] == pytest.approx(mala["driver_step_ms"] / mala["direct_step_ms"])
    leaps = data["records"]["fingerprint/leaps_ising_L15"]["0"]["figures"]
    assert leaps["fingerprint_seconds"] > 0
    assert_glossary_names({f for cell in data["records"].values() for r in cell.values() for f in r["figures"]})
    assert {g["figure"]: g["decision"] for g in data["goals"]} == {"wrapped_over_direct": "undecided",
                                                                   "driver_over_scan": "undecided"}  # one seed
    capsys.readouterr()
    assert main(["bench", "report", "overhead", "--quick", "--results-dir", str(tmp_path)]) == 0
    assert "| mala/quartic_32d | 1 |" in capsys.readouterr().out


def test_the_goals_are_issue_2_s_on_both_ratios_with_the_a_a_control_beside():
    protocol = overhead.PROTOCOL
    assert {(g.cell, g.figure, g.threshold, g.better) for g in protocol.goals} == {
        ("mala/quartic_32d", "wrapped_over_direct", 1.02, "below"),
        ("mala/quartic_32d", "driver_over_scan", 1.02, "below")}
    assert all("issue 2" in g.source for g in protocol.goals)
    assert "control_direct_over_direct" in protocol.figures and len(protocol.seeds) >= 3
    cell = protocol.cell("mala/quartic_32d")
    assert cell.params == {"num_chains": 1024, "dim": 32, "steps": 400, "trials": 15}


def old_file():
    results = {"wrapped_over_direct": 1.021, "driver_over_scan": 1.054, "control_direct_over_direct": 0.9999,
               "direct_step_ms": 0.38, "wrapped_step_ms": 0.388, "driver_step_ms": 0.401,
               "fingerprint_seconds_mala": 0.0039, "fingerprint_seconds_leaps_L15": 0.154, "chains": 1024.0,
               "dim": 32.0, "steps_per_trial": 400.0, "trials": 15.0}
    return {"command": "python bench_overhead.py", "date": "2026-12-04", "machine": {"platform": "Linux-x"},
            "results": results}


def test_the_old_single_run_converts_once_as_seed_zero(tmp_path):
    (tmp_path / "bench_overhead.json").write_text(json.dumps(old_file()))
    data = legacy.convert(overhead.PROTOCOL, tmp_path / "bench_overhead.json", overhead.legacy_key,
                          tmp_path / "overhead.json", legacy_single=overhead.legacy_single)
    assert data["records"]["mala/quartic_32d"]["0"]["figures"] == {
        "wrapped_over_direct": 1.021, "driver_over_scan": 1.054, "control_direct_over_direct": 0.9999,
        "direct_step_ms": 0.38, "wrapped_step_ms": 0.388, "driver_step_ms": 0.401, "fingerprint_seconds": 0.0039}
    assert data["records"]["fingerprint/leaps_ising_L15"]["0"]["figures"] == {"fingerprint_seconds": 0.154}
    broken = old_file()
    broken["results"]["mystery"] = 1.0
    (tmp_path / "bench_overhead.json").write_text(json.dumps(broken))
    with pytest.raises(InputError, match="mystery"):
        legacy.convert(overhead.PROTOCOL, tmp_path / "bench_overhead.json", overhead.legacy_key,
                       tmp_path / "other.json", legacy_single=overhead.legacy_single)


def test_the_recorded_results_file_is_the_converted_one_on_one_seed():
    data = store.read(store.results_path("overhead"))
    assert {c: sorted(s) for c, s in data["records"].items()} == {c.name: ["0"] for c in overhead.PROTOCOL.cells}
    record = data["records"]["mala/quartic_32d"]["0"]
    assert record["legacy_file"] == "bench_overhead.json" and "legacy" in record["machine"]
    assert round(record["figures"]["driver_over_scan"], 3) == 1.054  # the figure docs/status.md quotes
