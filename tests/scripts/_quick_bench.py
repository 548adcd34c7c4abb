"""What every benchmark script's never-rot test does first: run it with ``--quick`` and read its fresh results."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_quick(name: str) -> dict:
    """Run ``scripts/bench_{name}.py --quick`` (a stale result file removed first); return its ``results``."""
    result = ROOT / f"benchmarks/results/bench_{name}_quick.json"
    result.unlink(missing_ok=True)
    proc = subprocess.run([sys.executable, f"scripts/bench_{name}.py", "--quick"], cwd=ROOT, capture_output=True,
                          text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(result.read_text())["results"]
