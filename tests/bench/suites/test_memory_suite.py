"""The ``memory`` suite at its quick size through ``jaxsamp bench`` (the extrapolation is a line through the two
measured points), its diffusion cells as the device suite times them, and the one-time conversion of the old
``memory_estimates.json``."""

import json

import pytest
from _glossary_names import assert_glossary_names

from jaxsamp.bench import legacy, store
from jaxsamp.bench.suites import device, memory
from jaxsamp.cli import main
from jaxsamp.core.errors import InputError


def test_quick_run_extrapolates_a_line_through_two_measured_batches(tmp_path):
    cells = ["pis/funnel", "adjoint/dw4"]
    assert main(["bench", "run", "memory", "--quick", "--cells", *cells, "--results-dir", str(tmp_path)]) == 0
    records = store.read(tmp_path / "memory_quick.json")["records"]
    for name in cells:
        figures = records[name]["0"]["figures"]
        measured = sorted((int(k.rsplit("batch", 1)[1]), v) for k, v in figures.items()
                          if k.startswith("measured_peak_gib_batch"))
        assert len(measured) == 2 and 0 < measured[0][1] <= measured[1][1]
        (b1, m1), (b2, m2) = measured
        paper = memory.PROTOCOL.cell(name).sized(True).params["batch_size"]
        assert figures["peak_gib"] == pytest.approx(m1 + (m2 - m1) / (b2 - b1) * (paper - b1))
        assert figures["peak_fixed_gib"] == pytest.approx(m1 - (m2 - m1) / (b2 - b1) * b1)
        assert figures["state_gib"] > 0
        assert_glossary_names(figures)


def test_the_diffusion_configs_are_the_device_suite_s_timing_cells():
    for method in ("pis", "dds"):
        timing, cell = device.PROTOCOL.cell(f"{method}-timing/funnel"), memory.PROTOCOL.cell(f"{method}/funnel")
        assert (cell.target, cell.params["settings"], cell.params["batch_size"]) == (
            timing.target, timing.params["settings"], timing.params["batch_size"]) and cell.params["batch_size"] == 300
    assert memory.PROTOCOL.cell("leaps/ising_L15").params["settings"]["buffer_rollouts"] == 100  # its whole buffer


def old_file():
    results = {"pis_funnel_paper_batch": 300.0, "pis_funnel_peak_gib": 0.00328,
               "pis_funnel_measured_peak_gib_batch15": 0.00074, "asbs_dw4_state_per_sample_mib": 0.003}
    return {"command": "python scripts/memory_estimates.py", "date": "2026-12-05", "machine": {"platform": "Linux-x"},
            "results": results}


def test_the_old_single_run_converts_once_as_seed_zero(tmp_path):
    (tmp_path / "memory_estimates.json").write_text(json.dumps(old_file()))
    data = legacy.convert(memory.PROTOCOL, tmp_path / "memory_estimates.json", memory.legacy_key,
                          tmp_path / "memory.json", legacy_single=memory.legacy_single)
    assert data["records"]["pis/funnel"]["0"]["figures"] == {"peak_gib": 0.00328,
                                                             "measured_peak_gib_batch15": 0.00074}
    assert data["records"]["asbs/dw4"]["0"]["figures"] == {"state_per_sample_mib": 0.003}
    broken = old_file()
    broken["results"]["mystery_peak_gib"] = 1.0
    (tmp_path / "memory_estimates.json").write_text(json.dumps(broken))
    with pytest.raises(InputError, match="mystery_peak_gib"):
        legacy.convert(memory.PROTOCOL, tmp_path / "memory_estimates.json", memory.legacy_key,
                       tmp_path / "other.json", legacy_single=memory.legacy_single)


def test_the_recorded_results_file_is_the_converted_one_on_one_seed():
    data = store.read(store.results_path("memory"))
    assert {c: sorted(s) for c, s in data["records"].items()} == {c.name: ["0"] for c in memory.PROTOCOL.cells}
    assert all(r["figures"]["peak_gib"] < 0.5 for seeds in data["records"].values() for r in seeds.values())
