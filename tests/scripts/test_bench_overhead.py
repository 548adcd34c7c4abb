"""Run bench_overhead in --quick mode so the script never rots (no timing is asserted)."""

from _quick_bench import quick_payload


def test_bench_overhead_quick(tmp_path):
    out = quick_payload("overhead", results_dir=tmp_path)
    assert {"wrapped_over_direct", "driver_over_scan"} <= set(out["results"])
    assert out["command"].startswith("python scripts/bench_overhead.py")
