"""The command line as a user meets it: run, resume, list, and one-line errors."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SMALL = ["run.num_chains=64", "run.num_steps=40", "run.chunk=10", "run.checkpoint_every=20", "run.num_eval_samples=200", "run.progress=false"]


def jaxsamp(*args, cwd):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run([sys.executable, "-m", "jaxsamp.cli", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_quickstart_runs_writes_a_run_folder_and_resumes(tmp_path):
    proc = jaxsamp("run", str(ROOT / "configs/quickstart.yaml"), *SMALL, f"run.out_dir={tmp_path}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (run_dir,) = list((tmp_path / "quickstart").iterdir())
    for name in ("config.yaml", "metrics.json", "samples.npz", "samples.png", "acceptance.png"):
        assert (run_dir / name).is_file(), name
    assert (run_dir / "checkpoints").is_dir()
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert {"mean_abs_err", "mode_weight_tv", "acceptance_rate"} <= set(metrics)
    assert "mode_weight_tv" in proc.stdout  # the metrics table is printed

    # resume: the run is already complete, so it reproduces the same samples
    import numpy as np

    before = np.load(run_dir / "samples.npz")["samples"]
    proc = jaxsamp("resume", str(run_dir), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    np.testing.assert_array_equal(before, np.load(run_dir / "samples.npz")["samples"])


@pytest.mark.parametrize(
    "override, fragment",
    [
        ("run.num_chain=3", "num_chain"),
        ("run.num_steps=many", "num_steps"),
        ("sampler.params.stepsize=0.1", "stepsize"),
        ("target.name=nonexistent", "nonexistent"),
        ("sampler.params.step_size=fast", "step_size"),
    ],
)
def test_bad_config_is_a_one_line_error_and_writes_nothing(tmp_path, override, fragment):
    proc = jaxsamp("run", str(ROOT / "configs/quickstart.yaml"), override, f"run.out_dir={tmp_path / 'runs'}", cwd=tmp_path)
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("jaxsamp: error:"), proc.stderr
    assert fragment in lines[0]
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("*.json"))
    leftovers = list((tmp_path / "runs").rglob("*")) if (tmp_path / "runs").exists() else []
    assert all(p.is_dir() for p in leftovers), leftovers


def test_missing_config_file_and_bad_run_folder(tmp_path):
    proc = jaxsamp("run", str(tmp_path / "nope.yaml"), cwd=tmp_path)
    assert proc.returncode == 2 and "config file not found" in proc.stderr and "Traceback" not in proc.stderr
    proc = jaxsamp("resume", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 2 and "not a run folder" in proc.stderr


def test_list_names_targets_samplers_and_kinds(tmp_path):
    proc = jaxsamp("list", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for name in ("gaussian", "gmm", "hmc", "mala", "mcmc"):
        assert f"  {name} " in proc.stdout
