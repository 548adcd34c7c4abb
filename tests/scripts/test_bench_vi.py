"""Run bench_vi in --quick mode so the script never rots (every figure present and in range; no timing asserted)."""

from _quick_bench import run_quick


def test_bench_vi_quick(tmp_path):
    out = run_quick("vi", results_dir=tmp_path)
    # the quick run exercises each group with one or two methods (scripts/bench_vi.py QUICK_METHODS)
    assert out["softcvi_linreg_kl"] > 0 and out["softcvi_linreg_kl_seeds"] == 1
    assert 0 <= out["elbo_eight_schools_coverage50"] <= out["elbo_eight_schools_coverage90"] <= 1
    assert out["elbo_eight_schools_mean_log_q_ref"] < 0
    assert out["aisivi_banana_forward_kl"] > 0 and out["bsivi_banana_forward_kl"] > 0
    assert out["bsivi_bayes_logreg_test_lpd"] < 0 and out["nuts_bayes_logreg_test_lpd"] < 0
    assert out["snis_fkl_steps_per_s"] > 0
