"""The benchmark results format: a partial run merges into the file and records the command of every figure."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import benchmark_io  # noqa: E402


@pytest.fixture
def results_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(benchmark_io, "RESULTS_DIR", tmp_path)
    return tmp_path


def test_read_results_is_empty_without_a_file(results_dir):
    assert benchmark_io.read_results("bench_none") == {}


def test_merge_keeps_earlier_figures_and_their_commands(results_dir):
    benchmark_io.write_results("bench_x", {"a": 1, "b": 2}, argv=["scripts/bench_x.py"])
    benchmark_io.write_results("bench_x", {"b": 3, "c": "conv"}, argv=["scripts/bench_x.py", "--only", "b"], merge=True)
    payload = json.loads((results_dir / "bench_x.json").read_text())
    assert payload["results"] == {"a": 1.0, "b": 3.0, "c": "conv"}
    assert benchmark_io.read_results("bench_x") == payload["results"]
    commands = payload["figure_commands"]
    assert commands["a"].endswith("bench_x.py") and commands["b"].endswith("--only b") and commands["c"] == commands["b"]


def test_without_merge_the_file_is_replaced(results_dir):
    benchmark_io.write_results("bench_x", {"a": 1}, argv=["scripts/bench_x.py"])
    benchmark_io.write_results("bench_x", {"b": 2}, argv=["scripts/bench_x.py"])
    assert benchmark_io.read_results("bench_x") == {"b": 2.0}


def test_a_write_lands_whole_so_that_a_concurrent_reader_sees_the_old_file_or_the_new(results_dir, monkeypatch):
    """Two runs of one script may share its file; the new payload is complete before it replaces the old."""
    benchmark_io.write_results("bench_x", {"a": 1}, argv=["scripts/bench_x.py"])
    replace, seen = benchmark_io.os.replace, []

    def checked_replace(src, dst):
        seen.append((benchmark_io.read_results("bench_x"), json.loads(Path(src).read_text())["results"]))
        replace(src, dst)

    monkeypatch.setattr(benchmark_io.os, "replace", checked_replace)
    benchmark_io.write_results("bench_x", {"b": 2}, argv=["scripts/bench_x.py"], merge=True)
    assert seen == [({"a": 1.0}, {"a": 1.0, "b": 2.0})]
    assert benchmark_io.read_results("bench_x") == {"a": 1.0, "b": 2.0}
    assert sorted(f.name for f in results_dir.iterdir()) == [".bench_x.json.lock", "bench_x.json"]


def test_a_merging_write_waits_for_another_runs_write_to_finish(results_dir):
    """Two runs merging into one file: a write made while another holds the lock would drop that run's figures."""
    import threading

    benchmark_io.write_results("bench_x", {"a": 1}, argv=["scripts/bench_x.py"])
    writer = threading.Thread(
        target=benchmark_io.write_results, args=("bench_x", {"b": 2}), kwargs={"argv": ["bench_x.py"], "merge": True}
    )
    with benchmark_io.locked(results_dir / "bench_x.json"):  # the other run, between its read and its write
        writer.start()
        writer.join(timeout=0.5)
        assert writer.is_alive() and benchmark_io.read_results("bench_x") == {"a": 1.0}
        other = {"command": "python bench_x.py", "results": {"a": 1.0, "c": 3.0}}
        (results_dir / "bench_x.json").write_text(json.dumps(other))  # its write
    writer.join()
    assert benchmark_io.read_results("bench_x") == {"a": 1.0, "b": 2.0, "c": 3.0}


def test_the_machine_record_names_the_cpu_and_jaxlib(results_dir):
    """A long training run's figure can move with the host's vector width (XLA's round-off), so the record names it."""
    benchmark_io.write_results("bench_x", {"a": 1}, argv=["scripts/bench_x.py"])
    record = json.loads((results_dir / "bench_x.json").read_text())["machine"]
    assert record["jaxlib"] and record["jax"]
    if Path("/proc/cpuinfo").exists():
        assert record["cpu_model"] and record["cpu_vector"] in ("avx512f", "avx2", "avx", "sse4_2")
