"""Run bench_vmf in --quick mode so the script never rots (figures present and positive; no timing asserted)."""

from _quick_bench import run_quick


def test_bench_vmf_quick(tmp_path):
    out = run_quick("vmf", results_dir=tmp_path)
    for impl in ("jaxsamp", "tfp", "scipy"):  # the quick run times one (d, kappa) of the grid
        assert out[f"vmf_samples_per_s_{impl}_d64_k1"] > 0
    assert out["vmf_log_norm_max_rel_err"] < 1e-6  # the accuracy figure is exact arithmetic, not a timing
    tag = "n1e4_d64"  # the quick run's uniform set (the clustered set runs in the full benchmark)
    for method in ("boltzmann", "vmfexp", "vmfexp_ivf"):  # one at a time and batched, every method
        assert out[f"{method}_selections_per_s_{tag}"] > 0 and out[f"{method}_batched_selections_per_s_{tag}"] > 0
    boltzmann = [out[f"boltzmann_{sampler}_selections_per_s_{tag}"] for sampler in ("full_cdf", "streamed")]
    assert out[f"boltzmann_selections_per_s_{tag}"] == max(boltzmann)  # the faster exact sampler is the baseline
    assert out[f"vmfexp_ivf_speedup_vs_boltzmann_{tag}"] > 0
    assert out[f"vmfexp_ivf_batched_speedup_vs_boltzmann_batched_{tag}"] > 0
    nprobe, bound = out[f"vmfexp_ivf_nprobe_{tag}"], out[f"vmfexp_ivf_tuning_tv_bound_{tag}"]
    assert nprobe in (8, 16, 32) and (bound <= 0.02 or nprobe == 32)  # the fidelity rule picked it
    assert 0 <= out[f"vmfexp_ivf_tv_bound_{tag}"] <= 1 and out[f"vmfexp_ivf_tv_bound_se_{tag}"] >= 0
    assert out[f"vmfexp_ivf_recall_{tag}"] == 1 - out[f"vmfexp_ivf_tv_bound_{tag}"]
    assert 0 < out[f"vmfexp_ivf_rows_read_fraction_{tag}"] <= 2
    assert out["uniform_d4_max_rel_dev_vmfexp_vs_boltzmann"] >= 0
    assert (tmp_path / "bench_vmf_selection_uniform_quick.png").stat().st_size > 0
