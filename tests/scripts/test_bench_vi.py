"""Run bench_vi in --quick mode so the script never rots (every figure present and in range; no timing asserted)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_vi_quick():
    result = ROOT / "benchmarks/results/bench_vi_quick.json"
    result.unlink(missing_ok=True)
    proc = subprocess.run([sys.executable, "scripts/bench_vi.py", "--quick"], cwd=ROOT, capture_output=True,
                          text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(result.read_text())["results"]
    # the quick run exercises each group with one or two methods (scripts/bench_vi.py QUICK_METHODS)
    assert out["softcvi_linreg_kl"] > 0 and out["softcvi_linreg_kl_seeds"] == 1
    assert 0 <= out["elbo_eight_schools_coverage50"] <= out["elbo_eight_schools_coverage90"] <= 1
    assert out["elbo_eight_schools_mean_log_q_ref"] < 0
    assert out["aisivi_banana_forward_kl"] > 0 and out["bsivi_banana_forward_kl"] > 0
    assert out["bsivi_bayes_logreg_test_lpd"] < 0 and out["nuts_bayes_logreg_test_lpd"] < 0
    assert out["snis_fkl_steps_per_s"] > 0
