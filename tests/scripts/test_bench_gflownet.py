"""Run bench_gflownet in --quick mode so the script never rots (figures present and in range; no timing asserted)."""

from _quick_bench import run_quick


def test_bench_gflownet_quick(tmp_path):
    out = run_quick("gflownet", results_dir=tmp_path)
    assert out["rollout_trajectories_per_s"] > 0
    name = "tb_tlm_standard"  # the quick run: TB with TLM on an 8 x 8 grid, one seed
    for fig in ("l1", "policy_l1"):
        assert 0 <= out[f"{name}_{fig}"] <= 2 / 64 and out[f"{name}_{fig}_seeds"] == 1
    assert out[f"{name}_kl"] > 0 and out[f"{name}_policy_kl"] > 0 and out[f"{name}_logz_abs_err"] >= 0
    assert 0 <= out[f"{name}_modes_found"] <= 4 and out[f"{name}_train_trajectories_per_s"] > 0
    assert len(out[f"{name}_curve_seed0"]["l1"]) == 3
    assert (tmp_path / "bench_gflownet_curves_standard_quick.png").stat().st_size > 0
