"""Run bench_overhead in --quick mode so the script never rots (no timing is asserted)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_overhead_quick():
    proc = subprocess.run([sys.executable, "scripts/bench_overhead.py", "--quick"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads((ROOT / "benchmarks/results/bench_overhead_quick.json").read_text())
    assert {"wrapped_over_direct", "driver_over_scan"} <= set(out["results"])
    assert out["command"].startswith("python scripts/bench_overhead.py")
