"""Run bench_gflownet in --quick mode so the script never rots (figures present and in range; no timing asserted)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_gflownet_quick():
    result = ROOT / "benchmarks/results/bench_gflownet_quick.json"
    result.unlink(missing_ok=True)
    proc = subprocess.run(
        [sys.executable, "scripts/bench_gflownet.py", "--quick"],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(result.read_text())["results"]
    assert out["rollout_trajectories_per_s"] > 0
    name = "tb_tlm_standard"  # the quick run: TB with TLM on an 8 x 8 grid, one seed
    for fig in ("l1", "policy_l1"):
        assert 0 <= out[f"{name}_{fig}"] <= 2 / 64 and out[f"{name}_{fig}_seeds"] == 1
    assert out[f"{name}_kl"] > 0 and out[f"{name}_policy_kl"] > 0 and out[f"{name}_logz_abs_err"] >= 0
    assert 0 <= out[f"{name}_modes_found"] <= 4 and out[f"{name}_train_trajectories_per_s"] > 0
    assert len(out[f"{name}_curve_seed0"]["l1"]) == 3
    assert (ROOT / "benchmarks/results/bench_gflownet_curves_standard_quick.png").stat().st_size > 0
