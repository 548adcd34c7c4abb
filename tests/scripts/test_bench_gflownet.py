"""Run bench_gflownet in --quick mode so the script never rots (figures present and in range; no timing asserted)."""

import pytest
from _quick_bench import quick_payload, run_quick


def test_bench_gflownet_quick(tmp_path):
    out = run_quick("gflownet", results_dir=tmp_path)
    assert out["rollout_trajectories_per_s"] > 0
    name = "tb_tlm_standard"  # the quick run: TB with TLM on an 8 x 8 grid, one seed
    for fig in ("l1", "policy_l1"):
        assert 0 <= out[f"{name}_{fig}"] <= 2 / 64 and out[f"{name}_{fig}_seeds"] == 1
    assert out[f"{name}_kl"] > 0 and out[f"{name}_policy_kl"] > 0 and out[f"{name}_logz_abs_err"] >= 0
    assert 0 <= out[f"{name}_modes_found"] <= 4 and out[f"{name}_train_trajectories_per_s"] > 0
    assert len(out[f"{name}_curve_seed0"]["l1"]) == 3
    plot = tmp_path / "bench_gflownet_curves_standard_quick.png"
    assert plot.stat().st_size > 0
    # runs made in parts: --plot-only redraws the curves from the results file and trains nothing
    plot.unlink()
    before = (tmp_path / "bench_gflownet_quick.json").read_text()
    quick_payload("gflownet", "--plot-only", results_dir=tmp_path)
    assert plot.stat().st_size > 0 and (tmp_path / "bench_gflownet_quick.json").read_text() == before
    # TLM with a constant backward rate: figures of its own, beside the decaying run's, and other numbers
    variant = quick_payload("gflownet", "--skip-rollout", "--policies", "tlm", "--backward-lr-decay", "1",
                            results_dir=tmp_path)["results"]
    assert variant[f"{name}_policy_l1"] == out[f"{name}_policy_l1"]
    assert 0 <= variant["tb_tlm_bdecay1_standard_policy_l1"] != out[f"{name}_policy_l1"]
    with pytest.raises(SystemExit):
        quick_payload("gflownet", "--policies", "naive", "tlm", "--backward-lr-decay", "1", results_dir=tmp_path)


def test_another_budget_names_its_figures_and_keeps_a_fifth_as_history(monkeypatch):
    import runpy

    from _quick_bench import ROOT

    monkeypatch.syspath_prepend(str(ROOT / "scripts"))
    script = runpy.run_path(str(ROOT / "scripts" / "bench_gflownet.py"))
    assert script["budget_suffix"](80_000) == "" and script["budget_suffix"](1_000_000) == "_1000k"
    paper = script["budget_size"](1_000_000)
    assert paper["iterations"] == 62_500 and paper["history"] == 200_000  # the paper's 200 000 of 10^6
    assert script["budget_size"](80_000) == script["FULL"]
    with pytest.raises(SystemExit, match="multiple of 16"):
        script["budget_size"](1000)
    with pytest.raises(SystemExit):  # argparse's usage error
        script["main"](["--plot-only", "--rollout-only"])
