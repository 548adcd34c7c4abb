"""Run bench_leaps in --quick mode so the script never rots (no figure or timing is asserted)."""

import math

from _quick_bench import quick_payload

FIGURES = {
    f"{figure}_L8_{network}{suffix}" for network in ("conv", "mlp", "attention") for suffix in ("", "_sd", "_seed0")
    for figure in ("ess", "logz_abs_err", "logz_fe_abs_err", "train_steps_per_s", "train_target_evals")
} | {"smc_logz_abs_err_L8_equal_evals", "smc_logz_abs_err_L8_total_evals", "buffer_bytes_per_state"}


def test_bench_leaps_quick():
    out = quick_payload("leaps")
    results = out["results"]
    assert FIGURES <= set(results)
    assert out["command"].startswith("python scripts/bench_leaps.py")
    assert all(0 < results[f"ess_L8_{n}"] <= 1 for n in ("conv", "mlp", "attention"))
    assert results["buffer_bytes_per_state"] == 8 * 8 + 4  # int8 spins and a float32 time
    assert results["smc_target_evals_L8_equal_evals"] <= results["leaps_sampling_target_evals_L8"]
    assert results["train_target_evals_L8_conv"] > 0 and results["ess_L8_conv_seeds"] == 1
    assert math.isfinite(results["logz_abs_err_L8_conv"]) and math.isfinite(results["smc_logz_abs_err_L8_equal_evals"])
