"""Run bench_mcmc in --quick mode so the script never rots (no timing or figure is asserted)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_mcmc_quick():
    result = ROOT / "benchmarks/results/bench_mcmc_quick.json"
    result.unlink(missing_ok=True)
    proc = subprocess.run([sys.executable, "scripts/bench_mcmc.py", "--quick"], cwd=ROOT, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(result.read_text())["results"]
    for framework in ("jaxsamp", "numpyro", "blackjax"):
        assert out[f"{framework}_eight_schools_min_ess_per_s"] > 0
        assert out[f"{framework}_eight_schools_first_call_seconds"] > 0
    assert out["diagnostics_first_call_seconds"] > 0
