"""The command line as a user meets it: run, resume, list, and one-line errors.

The first test goes through the real entry point (a subprocess); the others
call :func:`jaxsamp.cli.main` in this process, which is the same code without
the cost of starting Python and JAX again.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from jaxsamp.cli import main

ROOT = Path(__file__).resolve().parent.parent
SMALL = ["run.num_chains=64", "run.num_steps=40", "run.burn_in=0", "run.chunk=10", "run.checkpoint_every=20", "run.num_eval_samples=200", "run.progress=false"]


def test_quickstart_runs_writes_a_run_folder_and_resumes(tmp_path, capsys):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "jaxsamp.cli", "run", str(ROOT / "configs/quickstart.yaml"), *SMALL, f"run.out_dir={tmp_path}"]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (run_dir,) = list((tmp_path / "quickstart").iterdir())
    for name in ("config.yaml", "metrics.json", "samples.npz", "samples.png", "acceptance.png", "trace_rank.png"):
        assert (run_dir / name).is_file(), name
    assert (run_dir / "checkpoints").is_dir()
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert {"mean_abs_err", "mode_weight_tv", "acceptance_rate", "max_rhat", "min_ess_bulk", "divergences"} <= set(metrics)
    assert isinstance(metrics["divergences"], int) and isinstance(metrics["num_chains"], int)
    assert isinstance(metrics["warnings"], list)  # 40 steps from dispersed starts: R-hat may well warn
    assert "mode_weight_tv" in proc.stdout  # the metrics table is printed

    # resume: the run is already complete, so it reproduces the same samples
    before = np.load(run_dir / "samples.npz")["samples"]
    assert main(["resume", str(run_dir)]) == 0
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
def test_bad_config_is_a_one_line_error_and_writes_nothing(tmp_path, capsys, override, fragment):
    code = main(["run", str(ROOT / "configs/quickstart.yaml"), override, f"run.out_dir={tmp_path / 'runs'}"])
    err = capsys.readouterr().err
    assert code == 2
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("jaxsamp: error: ConfigError:"), err
    assert fragment in lines[0]
    assert "Traceback" not in err
    assert not (tmp_path / "runs").exists()


def test_missing_config_file_and_bad_run_folder(tmp_path, capsys):
    assert main(["run", str(tmp_path / "nope.yaml")]) == 2
    assert "config file not found" in capsys.readouterr().err
    assert main(["resume", str(tmp_path)]) == 2
    assert "not a run folder" in capsys.readouterr().err


def test_list_names_targets_samplers_learned_methods_and_kinds(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in ("gaussian", "gmm", "hmc", "mala", "mcmc", "pis", "asbs"):
        assert f"  {name} " in out


def test_a_reader_that_stops_early_is_not_an_error():
    """`jaxsamp list --configs | head -1`: a closed pipe ends the listing quietly with exit 0, not an error line."""
    code = (
        "import os, sys\n"
        "read, write = os.pipe()\n"
        "os.close(read)  # the reader has left before the first line, as `head` does after its last\n"
        "os.dup2(write, 1)\n"
        "from jaxsamp.cli import main\n"
        "sys.exit(main(['list', '--configs']))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "error" not in proc.stderr, proc.stderr
