"""The ``device`` suite at its quick size on the CPU (every cell, in one process), ``--device-budget`` through the
command line (each cell in its own process), and the one-time conversion of the old device script's file."""

import json
import math
import subprocess
import sys

import pytest
from _glossary_names import assert_glossary_names

from jaxsamp.bench import legacy, store
from jaxsamp.bench.suites import device
from jaxsamp.cli import main
from jaxsamp.core.errors import InputError

TIMINGS = ("pis-timing/funnel", "dds-timing/funnel", "leaps-timing/ising_L15", "adjoint-timing/dw4", "asbs-timing/dw4")


def test_quick_run_of_every_cell_gives_its_timing_or_its_scores(tmp_path):
    assert main(["bench", "run", "device", "--quick", "--results-dir", str(tmp_path)]) == 0
    data = store.read(tmp_path / "device_quick.json")
    assert set(data["records"]) == {c.name for c in device.PROTOCOL.cells}
    figures = {cell: seeds["0"]["figures"] for cell, seeds in data["records"].items()}
    for cell in TIMINGS:  # timing only: no evaluation
        f = figures[cell]
        assert f["train_steps"] == 6 and f["seconds_per_update"] > 0 and f["compile_seconds"] >= 0
        assert math.isclose(f["hours_to_paper_budget"], device.PROTOCOL.cell(cell).params["paper_updates"]
                            * f["seconds_per_update"] / 3600)
        assert "ess" not in f
    nuts = figures["nuts/logreg_d100"]
    assert nuts["grad_evals_per_s"] >= nuts["draws_per_s"] > 0 and nuts["mean_integration_steps"] >= 1
    for cell in ("pis-sendera/funnel", "dds-sendera/funnel"):
        assert figures[cell]["train_steps"] == 8 and math.isfinite(figures[cell]["log_Z_abs_err"])
    for cell in ("adjoint/dw4", "asbs/dw4"):
        assert math.isfinite(figures[cell]["w2"]) and figures[cell]["train_steps"] == 3
    assert_glossary_names({f for fs in figures.values() for f in fs})


def test_the_device_budget_runs_unrecorded_cells_in_their_own_processes_and_skips_them_the_next_time(tmp_path):
    def budget():
        return subprocess.run([sys.executable, "-m", "jaxsamp", "bench", "run", "device", "--quick", "--device-budget",
                               "400", "--cells", "pis-timing/funnel", "nuts/logreg_d100", "--seeds", "0",
                               "--results-dir", str(tmp_path)],
                              check=False, capture_output=True, text=True, timeout=600)

    first = budget()
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    assert "2 device cell-seeds not yet recorded" in first.stdout
    records = store.read(tmp_path / "device_quick.json")["records"]
    assert set(records) == {"pis-timing/funnel", "nuts/logreg_d100"}
    again = budget()
    assert again.returncode == 0 and "0 device cell-seeds not yet recorded" in again.stdout


def test_a_suite_without_device_cells_refuses_a_device_budget(capsys):
    assert main(["bench", "run", "mcmc", "--device-budget", "60"]) != 0
    assert "declares no device cells" in capsys.readouterr().err


OLD = {"command": "python scripts/device_check.py --out /tmp/out --budget-seconds 403", "date": "2026-12-04",
       "machine": {"platform": "Linux-gpu-x86_64", "cpu_count": 16, "jax": "0.11.2", "backend": "gpu",
                   "devices": ["cuda:0"], "device_kind": "NVIDIA H200"},
       "results": {"budget_seconds": 403.0, "gpu_tests_passed": 15.0, "pis_funnel_s_per_update": 0.0155,
                   "pis_funnel_compile_s": 5.0, "pis_funnel_batch": 300.0, "adjoint_dw4_s_per_epoch": 0.153,
                   "nuts_logreg_d100_grad_evals_per_s": 3.7e6, "train_pis_funnel_updates": 6000.0,
                   "train_pis_funnel_logz_abs_err": 0.207, "train_pis_funnel_train_minutes": 1.5}}


def test_the_old_device_file_converts_into_the_device_kind_s_file_with_glossary_names(tmp_path, capsys):
    (tmp_path / device.LEGACY_FILE).write_text(json.dumps(OLD))
    assert main(["bench", "convert", "device", "--results-dir", str(tmp_path)]) == 0
    data = store.read(tmp_path / "device.nvidia-h200.json")
    assert data["records"]["pis-timing/funnel"]["0"]["figures"] == {"seconds_per_update": 0.0155,
                                                                    "compile_seconds": 5.0}
    assert data["records"]["adjoint-timing/dw4"]["0"]["figures"] == {"seconds_per_update": 0.153}
    assert data["records"]["pis-sendera-6000/funnel"]["0"]["figures"] == {
        "train_steps": 6000.0, "log_Z_abs_err": 0.207, "train_seconds_incl_compile": 90.0}
    assert_glossary_names({f for seeds in data["records"].values() for r in seeds.values() for f in r["figures"]})
    (tmp_path / device.LEGACY_FILE).write_text(json.dumps({**OLD, "results": {"mystery_figure": 1.0}}))
    with pytest.raises(InputError, match="mystery_figure"):  # nothing is dropped silently
        legacy.convert(device.PROTOCOL, tmp_path / device.LEGACY_FILE, device.legacy_key, tmp_path / "again.json",
                       legacy_single=device.legacy_single)


def test_the_recorded_h200_file_is_the_converted_first_device_call():
    data = store.read(store.results_path("device", device="nvidia-h200"))
    assert {"pis-timing/funnel", "leaps-timing/ising_L15", "nuts/logreg_d100", "pis-sendera-6000/funnel"} <= \
        set(data["records"])
    assert all(r["machine"]["device_kind"] == "NVIDIA H200" for s in data["records"].values() for r in s.values())
