"""Run bench_vmf in --quick mode so the script never rots (figures present and positive; no timing asserted)."""

from _quick_bench import run_quick


def test_bench_vmf_quick(tmp_path):
    out = run_quick("vmf", results_dir=tmp_path)
    for impl in ("jaxsamp", "tfp", "scipy"):  # the quick run times one (d, kappa) of the grid
        assert out[f"vmf_samples_per_s_{impl}_d64_k1"] > 0
    assert out["vmf_log_norm_max_rel_err"] < 1e-6  # the accuracy figure is exact arithmetic, not a timing
    assert out["vmfexp_selections_per_s_n1e4_d64"] > 0 and out["boltzmann_selections_per_s_n1e4_d64"] > 0
    tag = "n1e4_d64"  # the quick run's uniform set (the clustered set runs in the full benchmark)
    assert out[f"vmfexp_ivf_selections_per_s_{tag}"] > 0 and 0 <= out[f"vmfexp_ivf_recall_{tag}"] <= 1
    assert out[f"vmfexp_ivf_nprobe_{tag}"] in (8, 16, 32)
    assert out["uniform_d4_max_rel_dev_vmfexp_vs_boltzmann"] >= 0
    assert (tmp_path / "bench_vmf_selection_uniform_quick.png").stat().st_size > 0
