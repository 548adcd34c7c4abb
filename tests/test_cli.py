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


# --------------------------------------------------------------------------
# issue 61: options anywhere, overrides that are not YAML, a finished run resumed
# --------------------------------------------------------------------------

TINY = ["run.num_chains=8", "run.num_steps=10", "run.burn_in=0", "run.chunk=10", "run.num_eval_samples=20", "run.progress=false"]


@pytest.mark.parametrize("where", ["before the config", "between the config and the overrides", "among the overrides", "last"])
def test_strict_is_taken_anywhere_after_run(where, tmp_path, capsys, monkeypatch):
    import jaxsamp.experiments.runner as runner

    seen = {}
    monkeypatch.setattr(runner, "run_experiment", lambda cfg, strict: seen.update(cfg=cfg, strict=strict))
    overrides = [*TINY, f"run.out_dir={tmp_path}"]
    argv = {
        "before the config": ["run", "--strict", "quickstart", *overrides],
        "between the config and the overrides": ["run", "quickstart", "--strict", *overrides],
        "among the overrides": ["run", "quickstart", *overrides[:2], "--strict", *overrides[2:]],
        "last": ["run", "quickstart", *overrides, "--strict"],
    }[where]
    assert main(argv) == 0, capsys.readouterr().err
    assert seen["strict"] and seen["cfg"].run.num_steps == 10 and seen["cfg"].run.out_dir == str(tmp_path)


@pytest.mark.parametrize("argv", [["resume", "--strict", "RUN"], ["resume", "RUN", "--strict"]])
def test_strict_is_taken_before_or_after_the_run_folder_of_resume(argv, capsys, monkeypatch):
    import jaxsamp.experiments.runner as runner

    seen = {}
    monkeypatch.setattr(runner, "resume_experiment", lambda run_dir, strict: seen.update(run_dir=run_dir, strict=strict))
    assert main(argv) == 0
    assert seen == {"run_dir": "RUN", "strict": True}


def test_an_unknown_option_among_the_overrides_is_named_alone(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["run", "quickstart", "--stritc", "run.num_steps=5"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == "jaxsamp: error: unrecognized arguments: --stritc"


@pytest.mark.parametrize("value", ["a: b", "!!python/name:os.system"])
def test_an_override_that_is_not_yaml_is_one_line_with_status_2(value, capsys):
    assert main(["run", "quickstart", f"run.num_steps={value}"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("jaxsamp: error: ConfigError: ") and f"override 'run.num_steps={value}'" in line
    assert line.count("(hint: ") == 1


def test_resuming_a_finished_run_says_so_in_one_line(tmp_path, capsys):
    assert main(["run", "quickstart", *TINY, f"run.out_dir={tmp_path}"]) == 0
    (run_dir,) = (tmp_path / "quickstart").iterdir()
    capsys.readouterr()
    assert main(["resume", str(run_dir)]) == 0
    err = capsys.readouterr().err.splitlines()
    notes = [line for line in err if "nothing is recomputed" in line]
    assert notes == [f"jaxsamp: note: run {run_dir} had finished; its checkpoints hold every step, so nothing is "
                     "recomputed: its metrics and plots are made again from them"], err
