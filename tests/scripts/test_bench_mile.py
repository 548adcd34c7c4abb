"""Run bench_mile in --quick mode so the script never rots; it runs the ``mile`` experiment kind end to end.

Figures are only checked for presence and range (no timing or quality is asserted at this size), and
the LPPD-against-time plot for existence.
"""

import math

from _quick_bench import run_quick


def test_bench_mile_quick(tmp_path):
    out = run_quick("mile", results_dir=tmp_path)
    for method in ("de", "mile", "bde"):
        assert math.isfinite(out[f"{method}_yacht_lppd"]) and out[f"{method}_yacht_lppd_seeds"] == 1
        assert out[f"{method}_yacht_rmse"] > 0 and 0.0 <= out[f"{method}_yacht_coverage90"] <= 1.0
        assert out[f"{method}_yacht_seconds"] > 0 and out[f"{method}_yacht_grad_evals"] > 0
    assert out["mile_yacht_grad_evals"] == 4 * (1 + 2 * 200 + 2 * 20 * 2)  # 4 members: init, tuning, sampling
    assert out["mile_yacht_speedup_vs_bde"] > 0
    assert (tmp_path / "bench_mile_yacht_quick.png").stat().st_size > 0
