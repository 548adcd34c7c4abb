"""The runner records each seed as it lands, resumes, keeps machines apart and refuses a changed cell."""

import dataclasses
import json

import pytest

from jaxsamp.bench import cells, runner, store
from jaxsamp.bench.protocol import Budget, Cell, Comparison, Goal, Protocol
from jaxsamp.bench.report import suite_tables, tables
from jaxsamp.core.errors import InputError

CALLS = []
FOLDERS = []


@cells.runner("toy_for_tests")
def toy(cell, seed, *, target_evals, evaluation, budget_scale=1, checkpoint=None):
    """Figures that are a known function of the seed and the budget (no training)."""
    CALLS.append((cell.name, seed, target_evals))
    FOLDERS.append(checkpoint)
    evals = cell.params.get("evals", 100.0) * budget_scale
    artifacts = {"curves": {"step": [1, 2], "loss": [0.5, 0.25]}} if cell.params.get("curve") else {}
    return {"log_Z_abs_err": cell.params.get("error", 0.1) + 0.01 * seed, "target_evals": evals}, artifacts


def protocol(error=0.1):
    return Protocol(
        "toy", "toy suite",
        (Cell("learned/t", "toy_for_tests", {"name": "gaussian", "dim": 2}, {"error": error, "evals": 100.0},
              Budget(updates=5)),
         Cell("other/t", "toy_for_tests", {"name": "gaussian", "dim": 2}, {"error": 0.5, "evals": 300.0},
              Budget(updates=5)),
         Cell("smc/t", "toy_for_tests", {"name": "gaussian", "dim": 2}, {"error": 0.05},
              Budget(match_target_evals=("learned/t", "other/t")))),
        seeds=(0, 1, 2), goals=(Goal("learned/t", "log_Z_abs_err", 0.2),),
        comparisons=(Comparison("learned/t", "smc/t", "log_Z_abs_err"),))


def test_each_seed_is_recorded_with_its_machine_and_a_rerun_skips_it(tmp_path):
    CALLS.clear()
    data = runner.run_suite(protocol(), results_dir=tmp_path, log=lambda _: None)
    assert len(CALLS) == 9
    rec = data["records"]["learned/t"]["1"]
    assert rec["figures"]["log_Z_abs_err"] == pytest.approx(0.11) and rec["machine"]["cpu_count"] > 0
    assert rec["cell"]["params"] == {"error": 0.1, "evals": 100.0}
    # the baseline's budget: the mean of the matched cells' evaluations at its seed
    assert [c[2] for c in CALLS if c[0] == "smc/t"] == [200.0, 200.0, 200.0]
    assert json.loads((tmp_path / "toy.json").read_text())["records"] == data["records"]
    (goal,) = data["goals"]
    assert goal["decision"] == "met" and goal["n"] == 3
    assert data["comparisons"][0]["ratio_median"] == pytest.approx(0.11 / 0.06)  # seeds: 2, 1.83, 1.71
    CALLS.clear()
    runner.run_suite(protocol(), results_dir=tmp_path, log=lambda _: None)
    assert CALLS == []
    runner.run_suite(protocol(), results_dir=tmp_path, seeds=[3], cells=["learned/*"], log=lambda _: None)
    assert CALLS == [("learned/t", 3, None)]


def test_a_recorded_seed_of_a_changed_cell_is_refused_naming_the_change(tmp_path):
    runner.run_suite(protocol(), results_dir=tmp_path, seeds=[0], log=lambda _: None)
    with pytest.raises(InputError, match=r"params.error: 0.1 -> 0.3"):
        runner.run_suite(protocol(error=0.3), results_dir=tmp_path, seeds=[0], log=lambda _: None)
    data = runner.run_suite(protocol(error=0.3), results_dir=tmp_path, seeds=[0], rerun=True, log=lambda _: None)
    assert data["records"]["learned/t"]["0"]["figures"]["log_Z_abs_err"] == pytest.approx(0.3)


def test_a_record_made_before_a_budget_field_existed_is_the_same_cell_with_the_field_at_its_default(tmp_path):
    runner.run_suite(protocol(), results_dir=tmp_path, seeds=[0], log=lambda _: None)
    data = json.loads((tmp_path / "toy.json").read_text())
    for record in data["records"].values():
        del record["0"]["cell"]["budget"]["match_figure"]  # as a file written before the field was added
    (tmp_path / "toy.json").write_text(json.dumps(data))
    CALLS.clear()
    runner.run_suite(protocol(), results_dir=tmp_path, seeds=[0], log=lambda _: None)
    assert CALLS == []


@pytest.mark.parametrize("scale", [1.0, 4.0])
def test_a_baseline_can_match_another_count_of_its_cells_and_a_multiple_of_it(tmp_path, scale):
    matched = dataclasses.replace(protocol().cells[2], budget=Budget(match_target_evals=("learned/t",),
                                                                     match_figure="log_Z_abs_err", match_scale=scale))
    suite = dataclasses.replace(protocol(), cells=(*protocol().cells[:2], matched))
    CALLS.clear()
    runner.run_suite(suite, results_dir=tmp_path, seeds=[1], log=lambda _: None)
    assert [c[2] for c in CALLS if c[0] == "smc/t"] == [pytest.approx(0.11 * scale)]  # learned/t's figure at seed 1


def test_a_baseline_without_its_matched_cells_says_what_to_run(tmp_path):
    with pytest.raises(InputError, match="none of them is recorded"):
        runner.run_suite(protocol(), results_dir=tmp_path, cells=["smc/t"], log=lambda _: None)


def test_seeds_from_two_machines_are_never_pooled(tmp_path, monkeypatch):
    runner.run_suite(protocol(), results_dir=tmp_path, seeds=[0, 1], log=lambda _: None)
    other = {"cpu_model": "Other CPU", "cpu_vector": "avx2", "cpu_count": 2, "jax": "x", "jaxlib": "x",
             "device_kind": "cpu"}
    monkeypatch.setattr(runner, "machine", lambda: other)
    data = runner.run_suite(protocol(), results_dir=tmp_path, seeds=[2], log=lambda _: None)
    groups = data["summary"]["learned/t"]
    assert sorted(len(g["seeds"]) for g in groups) == [1, 2]
    assert all(g["decision"] == "undecided" for g in data["goals"] if g["n"] == 1)
    assert {c["machine"] for c in data["comparisons"]} == {g["machine"] for g in groups}
    (_, header, rows), *_ = tables(store.read(tmp_path / "toy.json"))
    assert [row[0] for row in rows].count("learned/t") == 2 and header[-1] == "machine"
    assert "Other CPU (avx2)" in suite_tables(store.read(tmp_path / "toy.json"))


def test_budget_scale_names_the_cells_and_scales_the_budget(tmp_path):
    data = runner.run_suite(protocol(), results_dir=tmp_path, seeds=[0], budget_scale=3, log=lambda _: None)
    assert set(data["records"]) == {"learned/t x3", "other/t x3", "smc/t x3"}
    assert data["records"]["smc/t x3"]["0"]["figures"]["target_evals"] == 300.0  # its own evals, at scale 3
    assert CALLS[-1] == ("smc/t", 0, 600.0)


def test_a_learning_curve_is_stored_beside_the_figures_and_never_aggregated(tmp_path):
    curved = Protocol("toy", "toy suite", (Cell("learned/t", "toy_for_tests", {"name": "gaussian", "dim": 2},
                                                {"curve": True}, Budget(updates=5)),))
    data = runner.run_suite(curved, results_dir=tmp_path, seeds=[0, 1], log=lambda _: None)
    assert data["records"]["learned/t"]["1"]["curves"] == {"step": [1, 2], "loss": [0.5, 0.25]}
    assert set(data["summary"]["learned/t"][0]["figures"]) == {"log_Z_abs_err", "target_evals"}
    assert "curves" not in runner.run_suite(protocol(), results_dir=tmp_path / "plain", seeds=[0],
                                            log=lambda _: None)["records"]["learned/t"]["0"]


def test_a_recorded_cell_reproduces_from_its_stored_definition_even_after_the_protocol_changed(tmp_path):
    runner.run_suite(protocol(), results_dir=tmp_path, seeds=[1], log=lambda _: None)
    CALLS.clear()
    again = runner.reproduce(protocol(error=0.7), "learned/t", 1, results_dir=tmp_path, log=lambda _: None)
    assert again["log_Z_abs_err"] == (pytest.approx(0.11), pytest.approx(0.11))  # the stored error 0.1, not 0.7
    again = runner.reproduce(protocol(), "smc/t", 1, results_dir=tmp_path, log=lambda _: None)
    assert CALLS[-1] == ("smc/t", 1, 200.0)  # the matched cells' recorded evaluations
    assert json.loads((tmp_path / "toy.json").read_text())["records"]["learned/t"]["1"]["figures"]["log_Z_abs_err"] \
        == pytest.approx(0.11)  # nothing written
    with pytest.raises(InputError, match="no record of learned/t seed 5"):
        runner.reproduce(protocol(), "learned/t", 5, results_dir=tmp_path, log=lambda _: None)


def test_a_goal_on_the_ratio_to_a_baseline_is_decided_on_per_seed_ratios(tmp_path):
    ratio_goal = Goal("learned/t", "log_Z_abs_err", 2.5, baseline="smc/t", source="within 2.5x of SMC")
    data = runner.run_suite(dataclasses.replace(protocol(), goals=(ratio_goal,)), results_dir=tmp_path,
                            log=lambda _: None)
    (goal,) = data["goals"]
    # per seed: 0.10 / 0.05, 0.11 / 0.06, 0.12 / 0.07 = 2, 1.83, 1.71; their mean's interval lies below 2.5
    assert goal["mean"] == pytest.approx((2 + 0.11 / 0.06 + 0.12 / 0.07) / 3) and goal["n"] == 3
    assert goal["decision"] == "met" and goal["baseline"] == "smc/t"
    assert goal["goal"] == "learned/t: log_Z_abs_err / smc/t's < 2.5"


def test_a_baseline_gets_its_own_count_on_top_of_the_matched_one_and_every_run_a_checkpoint_folder(tmp_path):
    """LEAPS' total-evaluation baseline: the learned cells' mean training evaluations plus their sampling's."""
    plus = Protocol("toy", "toy suite", (
        Cell("learned/t", "toy_for_tests", {"name": "gaussian", "dim": 2}, {"evals": 100.0}, Budget(updates=5)),
        Cell("smc-total/t", "toy_for_tests", {"name": "gaussian", "dim": 2}, {},
             Budget(target_evals=7, match_target_evals=("learned/t",)))))
    CALLS.clear()
    FOLDERS.clear()
    runner.run_suite(plus, results_dir=tmp_path, seeds=[2], log=lambda _: None)
    assert CALLS == [("learned/t", 2, None), ("smc-total/t", 2, 107.0)]
    assert FOLDERS == [tmp_path / "checkpoints" / "toy" / "learned_t" / "seed2",
                       tmp_path / "checkpoints" / "toy" / "smc-total_t" / "seed2"]


def device_protocol():
    cell = Cell("a/t", "toy_for_tests", {"name": "gaussian", "dim": 2}, {}, Budget(updates=5))
    return Protocol("toy", "toy suite", (cell, dataclasses.replace(cell, name="b/t"),
                                         dataclasses.replace(cell, name="c/t", params={"checkpoint_every": 2})),
                    seeds=(0, 1), device={"b/t": 50, "a/t": 10, "c/t": 500})


def test_the_device_queue_is_seed_major_in_the_declared_order_and_learns_each_cell_s_seconds():
    records = {"b/t": {"0": {"wall_seconds": 80.0}}}
    queue = runner.device_queue(device_protocol(), records)
    assert queue == [("a/t", 0, 10.0), ("c/t", 0, 500.0), ("b/t", 1, 80.0), ("a/t", 1, 10.0), ("c/t", 1, 500.0)]
    assert runner.device_queue(device_protocol(), records, cells=["a/*"], seeds=[1]) == [("a/t", 1, 10.0)]


def test_the_device_budget_runs_what_fits_passes_over_the_rest_and_stops_a_checkpointed_cell_at_the_end(
        tmp_path, monkeypatch):
    """Children are faked: each takes its cell's expected seconds of a fake clock; the budget is 100 s."""
    import subprocess

    clock, started, killed = [0.0], [], []

    class Child:
        def __init__(self, command, **kwargs):
            self.cell, self.pid = command[command.index("--cells") + 1], 1234
            started.append((self.cell, int(command[command.index("--seeds") + 1])))

        def wait(self, timeout=None):
            needs = device_protocol().device[self.cell]
            if timeout is not None and needs > timeout:
                clock[0] += timeout
                raise subprocess.TimeoutExpired("jaxsamp", timeout)
            clock[0] += needs
            return 0

    monkeypatch.setattr(runner.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(
        a, 0, json.dumps({"device_kind": "cpu"}) + "\n", ""))
    monkeypatch.setattr(subprocess, "Popen", Child)
    monkeypatch.setattr("os.killpg", lambda pid, sig: killed.append(pid))
    lines = []
    outcome = runner.run_device_budget(device_protocol(), 100.0, results_dir=tmp_path, log=lines.append)
    # b 0 (50 s) and a 0 (10 s) run; c 0 expects 500 s but is checkpointed: it starts with 40 s left and is
    # stopped at the end; nothing is left for seed 1
    assert started == [("b/t", 0), ("a/t", 0), ("c/t", 0)]
    assert outcome == {"ran": ["b/t seed 0", "a/t seed 0"], "stopped": ["c/t seed 0"], "failed": [],
                       "passed_over": ["b/t seed 1", "a/t seed 1", "c/t seed 1"]}
    assert killed == [1234] and any("resumes at the next call" in line for line in lines)

    started.clear()
    outcome = runner.run_device_budget(device_protocol(), 45.0, seeds=[1], results_dir=tmp_path, log=lines.append)
    assert outcome["passed_over"] == ["b/t seed 1"]  # expects 50 s of the 45: a cheaper cell goes first
    assert started == [("a/t", 1), ("c/t", 1)] and outcome["stopped"] == ["c/t seed 1"]


def test_a_device_run_writes_its_own_file_beside_the_cpu_one(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "machine", lambda: {"device_kind": "NVIDIA H200", "devices": ["cuda:0"]})
    runner.run_suite(protocol(), cells=["learned/t"], seeds=[0], results_dir=tmp_path, log=lambda _: None)
    assert not (tmp_path / "toy.json").exists()
    assert store.device_files("toy", results_dir=tmp_path) == {"nvidia-h200": tmp_path / "toy.nvidia-h200.json"}
    assert store.read(tmp_path / "toy.nvidia-h200.json")["records"]["learned/t"]["0"]["machine"]["device_kind"] == \
        "NVIDIA H200"


def test_every_record_of_a_run_names_the_revision_it_started_from(tmp_path, monkeypatch):
    """A commit made while a long run goes on is not the code it runs: the revision is read once, at the start."""
    commits = iter(["abc1234", "def5678", "0123456"])
    monkeypatch.setattr(store, "revision", lambda: next(commits))
    data = runner.run_suite(protocol(), results_dir=tmp_path, log=lambda _: None)
    assert {r["revision"] for cell in data["records"].values() for r in cell.values()} == {"abc1234"}


def test_the_revision_says_dirty_when_the_tracked_files_differ_from_it(monkeypatch):
    import subprocess

    def git(args, **kwargs):
        if "rev-parse" in args:
            return subprocess.CompletedProcess(args, 0, stdout="abc1234\n")
        return subprocess.CompletedProcess(args, diff_status)

    monkeypatch.setattr(store.subprocess, "run", git)
    diff_status = 0
    assert store.revision() == "abc1234"
    diff_status = 1
    assert store.revision() == "abc1234-dirty"


def test_a_rerun_of_a_recorded_seed_starts_afresh_and_an_unrecorded_seed_resumes_its_checkpoints(tmp_path):
    """``--rerun`` trains a recorded seed again: its checkpoints (a finished training's last one among them, which a
    fit would otherwise return without training) are removed first; a seed killed before its record keeps its own."""
    runner.run_suite(protocol(), results_dir=tmp_path, seeds=[0], cells=["learned/*"], log=lambda _: None)
    recorded, unrecorded = (runner.checkpoint_folder(tmp_path / "toy.json", "learned/t", s) for s in (0, 1))
    for folder in (recorded, unrecorded):
        folder.mkdir(parents=True)
        (folder / "step_0000000005").mkdir()
    runner.run_suite(protocol(), results_dir=tmp_path, seeds=[0, 1], cells=["learned/*"], rerun=True,
                     log=lambda _: None)
    assert not recorded.exists() and (unrecorded / "step_0000000005").exists()


def test_a_run_kept_in_another_folder_merges_in_with_its_machine_and_replaces_the_seeds_it_reran(tmp_path,
                                                                                                     monkeypatch):
    main, other = tmp_path / "main", tmp_path / "other"
    runner.run_suite(protocol(), results_dir=main, seeds=[0, 1], log=lambda _: None)
    elsewhere = {"cpu_model": "Other CPU", "cpu_vector": "avx2", "cpu_count": 8, "jax": "x", "jaxlib": "x",
                 "device_kind": "cpu"}
    monkeypatch.setattr(runner, "machine", lambda: elsewhere)
    runner.run_suite(protocol(), results_dir=other, seeds=[1, 2], log=lambda _: None)
    lines = []
    outcome = runner.merge(protocol(), other, cells=["learned/*"], results_dir=main, log=lines.append)
    assert outcome == {"added": ["learned/t seed 2"], "replaced": ["learned/t seed 1"], "unchanged": []}
    data = store.read(main / "toy.json")
    assert data["records"]["learned/t"]["2"] == store.read(other / "toy.json")["records"]["learned/t"]["2"]
    assert data["records"]["smc/t"].keys() == {"0", "1"}  # not matched: left as it was
    assert sorted(g["seeds"] for g in data["summary"]["learned/t"]) == [[0], [1, 2]]  # never pooled
    assert any("seeds from 2 machines" in line for line in lines)
    again = runner.merge(protocol(), other, cells=["learned/*"], results_dir=main, log=lambda _: None)
    assert again["unchanged"] == ["learned/t seed 1", "learned/t seed 2"] and not again["added"]


def test_a_merge_refuses_a_changed_cell_an_unmatched_pattern_and_an_empty_folder(tmp_path):
    runner.run_suite(protocol(error=0.3), results_dir=tmp_path / "other", seeds=[0], log=lambda _: None)
    with pytest.raises(InputError, match=r"params.error: 0.3 -> 0.1"):
        runner.merge(protocol(), tmp_path / "other", results_dir=tmp_path / "main", log=lambda _: None)
    with pytest.raises(InputError, match=r"matches \['nothing/\*'\]"):
        runner.merge(protocol(error=0.3), tmp_path / "other", cells=["nothing/*"], results_dir=tmp_path / "main",
                     log=lambda _: None)
    with pytest.raises(InputError, match="holds no results of suite 'toy'"):
        runner.merge(protocol(), tmp_path / "empty", results_dir=tmp_path / "main", log=lambda _: None)
    assert not (tmp_path / "main" / "toy.json").exists()  # nothing written by a refused merge


@pytest.mark.parametrize("value, digits, text", [
    (0.12345, 3, "0.123"), (12.345, 3, "12.3"), (134.23, 3, "134"), (1180.4, 3, "1180"), (320.0, 2, "320"),
    (57.4, 2, "57"), (4.2e-4, 3, "4.20e-04"), (2.5e6, 3, "2.50e+06"), (0.0, 3, "0"), (float("nan"), 3, "nan"),
    (None, 3, "None"), (-0.5, 3, "-0.5")])
def test_a_number_is_read_at_a_glance(value, digits, text):
    """Significant digits, exponents only for the very small and the very large, whole numbers without one."""
    from jaxsamp.bench.report import number

    assert number(value, digits) == text
