"""Run bench_curves in --quick mode so the script never rots (figures are checked for presence and range only)."""

from _quick_bench import run_quick


def test_bench_curves_quick(tmp_path):
    out = run_quick("curves", results_dir=tmp_path)
    for interp in ("learned",):  # the quick run trains one interpolation
        name = f"{interp}_gmm2d"
        assert 0.0 <= out[f"{name}_ess"] <= 1.0 and out[f"{name}_ess_seeds"] == 1
        for figure in (
            "logz_abs_err",
            "logz_jarzynski_abs_err",
            "mmd",
            "max_velocity",
            "train_minutes",
        ):
            assert f"{name}_{figure}" in out, figure
        assert out[f"{name}_target_evals"] > 0
    assert out["smc_gmm2d_logz_abs_err"] >= 0 and out["smc_gmm2d_target_evals"] > 0
    assert out["base_is_gmm2d_logz_abs_err"] >= 0 and 0 < out["base_is_gmm2d_ess"] <= 1
    assert out["learned_gmm2d_diverged_points"] == 0  # box collocation has no trajectories
    assert (
        out["exact_linear_separation8_peak_rms_speed"]
        > 20 * out["exact_gradient_flow_separation8_peak_rms_speed"]
    )
    for png in (
        "bench_curves_exact_velocity_quick.png",
        "bench_curves_velocity_gmm2d_seed0_quick.png",
        "bench_curves_gmm2d_seed0_quick.png",
    ):
        assert (tmp_path / png).stat().st_size > 0, png
