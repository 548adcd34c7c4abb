"""Run bench_scaling in --quick mode so the script never rots (no timing is asserted)."""

from _quick_bench import quick_payload


def test_bench_scaling_quick(tmp_path):
    out = quick_payload("scaling", "--devices", "1", "2", results_dir=tmp_path)["results"]
    for family in ("pis", "leaps"):
        assert out[f"{family}_updates_per_s_dev1"] > 0 and out[f"{family}_updates_per_s_dev2"] > 0
        assert out[f"{family}_speedup_dev1"] == 1.0
