"""The ``diagnostics`` suite at its quick size through ``jaxsamp bench`` (rates in [0, 1], the mean shift found by
both tests, floors and seconds positive), its forced host devices, and the one-time conversion of the old
``bench_diagnostics.json`` (one run, seed 0)."""

import json
import math
import os

import jax
import pytest
from _glossary_names import assert_glossary_names

from jaxsamp.bench import child, legacy, store
from jaxsamp.bench.suites import diagnostics
from jaxsamp.cli import main
from jaxsamp.core.errors import InputError


def test_quick_run_records_speed_power_and_a_noise_floor(tmp_path, capsys):
    cells = ["speed/*", "power/psd_r1_mean_shift", "power/ksd_mean_shift", "power/psd_r2_null", "floor/dw4"]
    assert main(["bench", "run", "diagnostics", "--quick", "--cells", *cells, "--results-dir", str(tmp_path)]) == 0
    records = store.read(tmp_path / "diagnostics_quick.json")["records"]
    speed = records["speed/psd_vs_ksd_n10000"]["0"]["figures"]
    assert speed["psd_over_ksd_speedup"] == pytest.approx(speed["ksd_test_seconds"] / speed["psd_test_seconds"])
    rates = {c: r["0"]["figures"]["rejection_rate"] for c, r in records.items() if c.startswith("power/")}
    assert all(0.0 <= rate <= 1.0 for rate in rates.values())
    # the mean shift of 0.3 is found by both tests even at the quick size
    assert rates["power/psd_r1_mean_shift"] == 1.0 and rates["power/ksd_mean_shift"] == 1.0
    floor = records["floor/dw4"]["0"]["figures"]
    assert all(math.isfinite(floor[f]) and floor[f] > 0 for f in ("w2_floor", "energy_w2_floor", "w2_seconds"))
    assert_glossary_names({f for cell in records.values() for r in cell.values() for f in r["figures"]})
    capsys.readouterr()
    assert main(["bench", "report", "diagnostics", "--quick", "--results-dir", str(tmp_path)]) == 0
    assert "| floor/dw4 | 1 |" in capsys.readouterr().out


def test_the_floor_cells_run_with_one_forced_host_device_per_core(monkeypatch):
    """The geometric W2 shards its pairs over the devices: on a CPU whose JAX has another count the cell runs in a
    child process with ``os.cpu_count()`` forced host devices (what the script did to itself)."""
    if jax.default_backend() != "cpu" or jax.device_count() == os.cpu_count():
        pytest.skip("this process has one CPU device per core already (the cell runs here)")
    seen = {}

    def fake_child(run, cell, seed, *, env, **options):
        seen.update(run=run, cell=cell.name, env=env)
        return {"w2_floor": 1.0}, {}

    monkeypatch.setattr(child, "run_in_child", fake_child)
    cell = diagnostics.PROTOCOL.cell("floor/lj13").sized(True)
    figures, _ = diagnostics.reference_floor_cell(cell, 0, target_evals=None, evaluation={})
    assert figures == {"w2_floor": 1.0} and seen["run"] is diagnostics.reference_floor_cell
    assert seen["env"]["XLA_FLAGS"].endswith(f"--xla_force_host_platform_device_count={os.cpu_count()}")
    assert seen["env"]["JAX_PLATFORMS"] == "cpu"


def test_the_goals_are_issue_5_s():
    goals = {(g.cell, g.figure): (g.threshold, g.better) for g in diagnostics.PROTOCOL.goals}
    assert goals == {("speed/psd_vs_ksd_n10000", "psd_over_ksd_speedup"): (50, "above"),
                     ("floor/lj13", "w2_seconds"): (120, "below")}
    assert all("issue 5" in g.source for g in diagnostics.PROTOCOL.goals)


def old_file():
    results = {"psd_over_ksd_speedup_n10000": 132.9, "psd_size": 0.05, "psd_power_meanshift_r1": 1.0,
               "psd_power_var_r2": 1.0, "psd_power_laplace_r4": 1.0, "ksd_power_meanshift": 1.0,
               "geom_w2_dw4_reference_vs_reference": 0.284, "energy_w2_dw4_reference_vs_reference": 0.108,
               "geom_w2_lj13_reference_vs_reference": 1.438, "energy_w2_lj13_reference_vs_reference": 0.419,
               "geom_w2_lj13_2000_seconds": 33.1}
    return {"command": "python scripts/bench_diagnostics.py", "date": "2026-12-01", "machine": {"platform": "Linux-x"},
            "results": results}


def test_the_old_single_run_converts_once_as_seed_zero(tmp_path):
    (tmp_path / "bench_diagnostics.json").write_text(json.dumps(old_file()))
    data = legacy.convert(diagnostics.PROTOCOL, tmp_path / "bench_diagnostics.json", diagnostics.legacy_key,
                          tmp_path / "diagnostics.json", legacy_single=diagnostics.legacy_single)
    records = data["records"]
    assert set(records) == {c.name for c in diagnostics.PROTOCOL.cells}
    assert records["speed/psd_vs_ksd_n10000"]["0"]["figures"] == {"psd_over_ksd_speedup": 132.9}
    assert records["power/psd_r2_null"]["0"]["figures"] == {"rejection_rate": 0.05}
    assert records["floor/lj13"]["0"]["figures"] == {"w2_floor": 1.438, "energy_w2_floor": 0.419, "w2_seconds": 33.1}
    broken = old_file()
    broken["results"]["mystery"] = 1.0
    (tmp_path / "bench_diagnostics.json").write_text(json.dumps(broken))
    with pytest.raises(InputError, match="mystery"):
        legacy.convert(diagnostics.PROTOCOL, tmp_path / "bench_diagnostics.json", diagnostics.legacy_key,
                       tmp_path / "other.json", legacy_single=diagnostics.legacy_single)


def test_the_recorded_results_file_is_the_converted_one_on_one_seed():
    data = store.read(store.results_path("diagnostics"))
    assert {c: sorted(s) for c, s in data["records"].items()} == {c.name: ["0"] for c in diagnostics.PROTOCOL.cells}
    assert all("legacy" in r["machine"] for seeds in data["records"].values() for r in seeds.values())
