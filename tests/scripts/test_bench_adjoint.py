"""The Adjoint Sampling benchmark runs end to end at CI size and writes every figure the issue asks for."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIGURES = [
    "dw4_w2", "dw4_energy_w2", "dw4_energy_evals", "dw4_train_minutes",
    "lj13_w2", "lj13_energy_w2", "lj13_energy_evals", "lj13_train_minutes", "epochs_per_s_dw4",
]


def test_quick_benchmark_writes_its_figures():
    subprocess.run([sys.executable, "scripts/bench_adjoint.py", "--quick"], cwd=ROOT, check=True, timeout=900)
    payload = json.loads((ROOT / "benchmarks" / "results" / "bench_adjoint_quick.json").read_text())
    results = payload["results"]
    for name in FIGURES:
        assert name in results and results[name] == results[name], name  # present and not NaN
    assert results["dw4_energy_evals"] == 3 * 32  # 3 epochs x 32 rollout paths, one gradient each
    assert results["dw4_w2"] > 0 and results["lj13_energy_w2"] > 0
