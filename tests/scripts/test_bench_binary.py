"""Run bench_binary in --quick mode so the script never rots (figures present and in range; no quality asserted)."""

from _quick_bench import run_quick


def test_bench_binary_quick(tmp_path):
    out = run_quick("binary", results_dir=tmp_path)
    for sampler in ("one_stage", "two_stage", "multi_m4"):
        assert 0 <= out[f"tv_mixture_d16_{sampler}"] <= 1 and 0 <= out[f"tv_mixture_d16_{sampler}_exact_score"] <= 1
        assert out[f"mmd_digits_{sampler}"] >= 0
        assert out[f"tv_mixture_d16_{sampler}_seeds"] == 1
    assert out["tv_mixture_d16_evals_per_sample"] == out["mmd_digits_evals_per_sample"] == 20
    assert 0 < out["tv_mixture_d16_floor"] < 1
    for name in ("mmd_digits_train_vs_test", "mmd_digits_fvbm_gibbs", "mmd_digits_fvbm_gibbs_long"):
        assert out[name] >= 0
    assert 0 <= out["ising_L8_abs_m_err"] <= 1 and 0 < out["ising_L8_abs_m_exact"] < 1
    assert "ising_L8_abs_m_err_two_stage" in out and "ising_L8_glauber_abs_m_err" in out
    assert 0 <= out["ising_L8_m_tv"] <= 1 and 0 <= out["ising_L8_glauber_m_tv"] <= 1
    for png in ("bench_binary_digits_seed0_quick.png", "bench_binary_digits_fvbm_seed0_quick.png"):
        assert (tmp_path / png).stat().st_size > 0
