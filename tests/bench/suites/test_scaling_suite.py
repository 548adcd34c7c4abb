"""The ``scaling`` suite at its quick size through ``jaxsamp bench`` (PIS on 1 and 2 forced CPU devices, each in its own
process; no timing asserted), every cell's settings, and the one-time conversion of the old ``bench_scaling.json``."""

import json

import pytest
from _glossary_names import assert_glossary_names

import jaxsamp.learned.methods  # noqa: F401  (registers the methods)
from jaxsamp.bench import legacy, store
from jaxsamp.bench.suites import scaling
from jaxsamp.cli import main
from jaxsamp.core.errors import InputError
from jaxsamp.core.registry import LEARNED


def test_quick_run_trains_on_forced_devices_in_child_processes_and_compares_with_one_device(tmp_path):
    assert main(["bench", "run", "scaling", "--quick", "--cells", "pis/dev1", "pis/dev2",
                 "--results-dir", str(tmp_path)]) == 0
    data = store.read(tmp_path / "scaling_quick.json")
    rates = {}
    for cell in ("pis/dev1", "pis/dev2"):
        figures = data["records"][cell]["0"]["figures"]
        assert figures["train_steps"] >= scaling.CHUNK and figures["compile_seconds"] > 0
        assert figures["train_steps_per_s"] == pytest.approx(figures["train_steps"] / figures["train_seconds"])
        rates[cell] = figures["train_steps_per_s"]
        assert_glossary_names(figures)
    (speedup,) = data["comparisons"]
    assert (speedup["cell"], speedup["baseline"], speedup["figure"]) == ("pis/dev2", "pis/dev1", "train_steps_per_s")
    assert speedup["ratio_median"] == pytest.approx(rates["pis/dev2"] / rates["pis/dev1"])


@pytest.mark.parametrize("quick", [False, True])
def test_every_cell_builds_its_settings_with_a_batch_every_device_count_divides(quick):
    for cell in scaling.PROTOCOL.cells:
        sized = cell.sized(quick)
        LEARNED.entry(sized.params["method"]).meta["settings"](**sized.params["settings"])
        assert sized.params["batch_size"] % max(scaling.DEVICES) == 0
    assert {c.params["devices"] for c in scaling.PROTOCOL.cells} == set(scaling.DEVICES)


def old_file():
    results = {"chunk": 10.0, "seconds_per_point": 20.0, "pis_updates_per_s_dev1": 83.7, "pis_first_call_s_dev1": 2.46,
               "pis_updates_per_s_dev2": 21.0, "pis_first_call_s_dev2": 3.08, "pis_speedup_dev1": 1.0,
               "pis_speedup_dev2": 0.25, "leaps_updates_per_s_dev8": 57.8}
    return {"command": "python scripts/bench_scaling.py", "date": "2026-12-05", "machine": {"platform": "Linux-x"},
            "results": results}


def test_the_old_single_run_converts_once_as_seed_zero_and_its_speedups_become_comparisons(tmp_path):
    (tmp_path / "bench_scaling.json").write_text(json.dumps(old_file()))
    data = legacy.convert(scaling.PROTOCOL, tmp_path / "bench_scaling.json", scaling.legacy_key,
                          tmp_path / "scaling.json", legacy_single=scaling.legacy_single)
    assert data["records"]["pis/dev2"]["0"]["figures"] == {"train_steps_per_s": 21.0, "first_call_seconds": 3.08}
    assert data["records"]["leaps/dev8"]["0"]["figures"] == {"train_steps_per_s": 57.8}
    (speedup,) = [c for c in data["comparisons"] if c["cell"] == "pis/dev2"]
    assert speedup["ratio_median"] == pytest.approx(21.0 / 83.7)
    broken = old_file()
    broken["results"]["pis_mystery_dev2"] = 1.0
    (tmp_path / "bench_scaling.json").write_text(json.dumps(broken))
    with pytest.raises(InputError, match="pis_mystery_dev2"):
        legacy.convert(scaling.PROTOCOL, tmp_path / "bench_scaling.json", scaling.legacy_key,
                       tmp_path / "other.json", legacy_single=scaling.legacy_single)


def test_the_recorded_results_file_is_the_converted_one_on_one_seed():
    data = store.read(store.results_path("scaling"))
    assert {c: sorted(s) for c, s in data["records"].items()} == {c.name: ["0"] for c in scaling.PROTOCOL.cells}
    assert len(data["comparisons"]) == len(scaling.PROTOCOL.comparisons)  # every speed-up, on the one machine
