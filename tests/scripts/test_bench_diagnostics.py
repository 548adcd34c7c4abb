"""The diagnostics benchmark runs end to end at CI size and writes every figure the issue asks for."""

import math

from _quick_bench import quick_payload

RATES = ["psd_size", "psd_power_meanshift_r1", "psd_power_var_r2", "psd_power_laplace_r4", "ksd_power_meanshift"]
POSITIVE = [
    "psd_over_ksd_speedup_n10000",
    "geom_w2_lj13_2000_seconds",
    "geom_w2_dw4_reference_vs_reference",
    "energy_w2_dw4_reference_vs_reference",
]


def test_quick_benchmark_writes_its_figures(tmp_path):
    payload = quick_payload("diagnostics", results_dir=tmp_path)
    assert payload["command"].startswith("python scripts/bench_diagnostics.py")
    results = payload["results"]
    for name in RATES:
        assert 0.0 <= results[name] <= 1.0, name
    for name in POSITIVE:
        assert math.isfinite(results[name]) and results[name] > 0, name
    # the mean shift of 0.3 is found by both tests even at CI size
    assert results["psd_power_meanshift_r1"] == 1.0 and results["ksd_power_meanshift"] == 1.0
