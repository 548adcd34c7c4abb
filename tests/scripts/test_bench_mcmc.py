"""Run bench_mcmc in --quick mode so the script never rots (no timing or figure is asserted)."""

from _quick_bench import run_quick


def test_bench_mcmc_quick(tmp_path):
    out = run_quick("mcmc", results_dir=tmp_path)
    for framework in ("jaxsamp", "numpyro", "blackjax"):
        assert out[f"{framework}_eight_schools_min_ess_per_s"] > 0
        assert out[f"{framework}_eight_schools_first_call_seconds"] > 0
        assert out[f"{framework}_eight_schools_min_ess_per_call_second"] > 0
    assert out["jaxsamp_over_blackjax_eight_schools_call_seconds"] > 0
    assert out["diagnostics_first_call_seconds"] > 0
