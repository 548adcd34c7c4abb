"""Run bench_paths in --quick mode so the script never rots (no figure is asserted beyond its presence and sign)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_paths_quick():
    result = ROOT / "benchmarks/results/bench_paths_quick.json"
    result.unlink(missing_ok=True)
    proc = subprocess.run([sys.executable, "scripts/bench_paths.py", "--quick"], cwd=ROOT, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(result.read_text())["results"]
    for name in ("pis_kl_gmm", "dds_log_variance_gmm"):  # the quick run's two variants
        assert out[f"{name}_energy_evals"] > 0 and out[f"{name}_nonfinite_paths"] >= 0
        assert f"{name}_logz_abs_err" in out and out[f"{name}_logz_abs_err_seeds"] == 1
        assert 0.0 <= out[f"{name}_emc"] <= 1.0
    assert out["smc_gmm_logz_abs_err"] >= 0 and out["smc_gmm_target_evals"] > 0
    assert (ROOT / "benchmarks/results/bench_paths_gmm_seed0_quick.png").stat().st_size > 0
    assert 0.0 <= out["tps_thp"] <= 100.0
