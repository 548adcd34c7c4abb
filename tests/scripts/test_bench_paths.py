"""Run bench_paths in --quick mode so the script never rots (no figure is asserted beyond its presence and sign)."""

import pytest
from _quick_bench import run_quick


def test_bench_paths_quick(tmp_path):
    out = run_quick("paths", results_dir=tmp_path)
    for name in ("pis_kl_gmm", "dds_log_variance_gmm"):  # the quick run's two variants
        assert out[f"{name}_energy_evals"] > 0 and out[f"{name}_nonfinite_paths"] >= 0
        assert f"{name}_logz_abs_err" in out and out[f"{name}_logz_abs_err_seeds"] == 1
        assert 0.0 <= out[f"{name}_emc"] <= 1.0
        # 128 paths scored whole and as 2 disjoint sets of 64: the sets' mean error and spread
        assert out[f"{name}_eval_paths"] == 128 and out[f"{name}_logz_abs_err_sets_mean"] >= 0
        assert out[f"{name}_logz_abs_err_sets_sd"] >= 0 and out[f"{name}_logz_sets_sd"] >= 0
    assert round(out["many_well_collapse_logz_abs_err"], 3) == 2.708  # 16 log(1 / 0.8443), from the target
    assert out["smc_gmm_logz_abs_err"] >= 0 and out["smc_gmm_target_evals"] > 0
    assert (tmp_path / "bench_paths_gmm_seed0_quick.png").stat().st_size > 0
    assert 0.0 <= out["tps_thp"] <= 100.0


def test_the_kl_variant_without_the_stochastic_term_runs_only_when_named_and_a_budget_scale_names_its_figures(tmp_path):
    out = run_quick("paths", "--groups", "diffusion", "--variants", "pis-kl_nostochastic", "--budget-scale", "2",
                    results_dir=tmp_path)
    assert out["pis_kl_nostochastic_gmm_x2_energy_evals"] > 0
    assert out["pis_kl_nostochastic_gmm_x2_logz_abs_err_seeds"] == 1
    assert not any(name.startswith(("pis_kl_gmm", "dds_")) for name in out)  # the named variant alone
    assert not any(name.startswith("pis_kl_nostochastic_gmm_") and "_x2_" not in name for name in out)


@pytest.mark.parametrize("args, message", [
    (["--budget-scale", "0"], "positive integer"),
    (["--budget-scale", "5"], "--groups diffusion"),  # the default groups include smc and tps
])
def test_a_bad_budget_scale_is_refused(args, message, capsys, tmp_path):
    with pytest.raises(SystemExit):
        run_quick("paths", *args, results_dir=tmp_path)
    assert message in capsys.readouterr().err
