"""Run bench_vi in --quick mode so the script never rots (every figure present and in range; no timing asserted)."""

import dataclasses

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


def test_banana_reference_group_uses_the_configs_reference_settings(tmp_path, monkeypatch):
    """``--groups banana_reference``: the shipped banana configs' settings (s = 0.1 softplus(v) from v = 1, 4000 steps,
    drop at 2000) with ``--inner-draws`` inner draws; its quick run writes the headline."""
    from _quick_bench import ROOT

    monkeypatch.syspath_prepend(str(ROOT / "scripts"))
    import bench_vi

    for method in ("aisivi", "bsivi"):
        settings, batch, steps = bench_vi.reference_banana_run(method, quick=False, inner_draws=8192)
        assert (settings.scale_factor, settings.init_scale, settings.decay_step, settings.decay_factor) == (
            0.1, 0.1313262, 2000, 0.1)
        assert (settings.num_inner, settings.marginal_draws, batch, steps) == (8192, 50_000, 128, 4000)
    aisivi, _, _ = bench_vi.reference_banana_run("aisivi", quick=False, inner_draws=256)
    # the reverse model: 6 couplings with conditioners of 2 x 64 (the reference's 1 x 8 failed on every seed)
    assert (aisivi.tau_layers, aisivi.tau_hidden_width, aisivi.tau_hidden_layers) == (6, 64, 2)
    assert bench_vi.banana_reference_name("aisivi", aisivi, 256) == "aisivi_banana_ref256_tau64x2"
    assert bench_vi.banana_reference_name("bsivi", aisivi, 256) == "bsivi_banana_ref256"
    uniform = dataclasses.replace(aisivi, latent_prior="uniform")
    assert bench_vi.banana_reference_name("aisivi", uniform, 256) == "aisivi_banana_ref256_tau64x2_uniform"
    out = run_quick("vi", "--groups", "banana_reference", "--inner-draws", "8", results_dir=tmp_path)
    name = "aisivi_banana_ref8_tau8x2"  # the quick run's tiny settings: conditioners 2 x 8
    assert out[f"{name}_forward_kl"] > 0 and 0 <= out[f"{name}_q_mass"] <= 1.0 + 1e-6
