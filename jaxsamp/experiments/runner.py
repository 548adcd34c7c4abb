"""Run an experiment from a validated config into a run folder.

``runs/<name>/<timestamp>/`` receives the resolved ``config.yaml``, the
experiment's outputs (``samples.npz``, PNG plots, ``checkpoints/``) and
``metrics.json``. ``resume`` re-enters an existing folder; the driver then
continues from its newest valid checkpoint.

Everything that can be checked without running is checked before the folder
exists: the target and its parameters, the experiment kind and its settings,
the sampler's parameters, and that the chains divide over the devices. A run
that fails later never leaves a folder holding only its config: a folder with
nothing worth keeping is removed, and one with checkpoints keeps them (so
``jaxsamp resume`` can continue) and gets an ``error.json`` saying what failed.

A run that finishes but did not sample (chains that never moved, acceptance
exactly 0 or 1, too many non-finite proposals, chains started at a NaN) ends
with its ``warnings`` in ``metrics.json`` and on stderr; with ``strict=True``
it then fails with :class:`~jaxsamp.core.errors.RunHealthError`.
"""

from __future__ import annotations

import datetime as _dt
import json
import shutil
import sys
import time
from pathlib import Path

import jax
import numpy as np

import jaxsamp.mcmc  # noqa: F401  (registers samplers)
import jaxsamp.targets  # noqa: F401  (registers targets)
from jaxsamp.core import checkpoint as ckpt
from jaxsamp.core.errors import CheckpointError, ConfigError, RunHealthError
from jaxsamp.core.registry import EXPERIMENTS, TARGETS
from jaxsamp.experiments import glossary
from jaxsamp.experiments import kinds as _kinds  # noqa: F401  (registers experiment kinds)
from jaxsamp.experiments.config import ExperimentConfig, load_config, to_yaml
from jaxsamp.experiments.fitting import check_evaluate
from jaxsamp.experiments.verdict import verdict

CONFIG_FILE = "config.yaml"
METRICS_FILE = "metrics.json"
ERROR_FILE = "error.json"


def _new_run_dir(cfg: ExperimentConfig) -> Path:
    base = Path(cfg.run.out_dir) / cfg.name
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir, k = base / stamp, 1
    while run_dir.exists():
        run_dir, k = base / f"{stamp}-{k}", k + 1
    return run_dir


def format_metrics(metrics: dict) -> str:
    """A short two-column table of metrics (warnings are printed separately)."""
    shown = {k: v for k, v in metrics.items() if k not in ("warnings", "verdict")}
    width = max((len(k) for k in shown), default=0)
    lines = []
    for k, v in shown.items():
        text = f"{v:.6g}" if isinstance(v, float) else str(v)
        lines.append(f"  {k.ljust(width)}  {text}")
    return "\n".join(lines)


def prepare(cfg: ExperimentConfig):
    """Check ``cfg`` without running or writing anything; return ``(target, kind, checked)``.

    Raises
    ------
    ConfigError
        A bad target or target parameter, an unknown experiment kind, settings
        the kind refuses, a chain count the devices do not divide, or an
        ``evaluate.smc`` the sampler cannot run (:func:`~jaxsamp.experiments.fitting.check_evaluate`).
    """
    target = TARGETS.get(cfg.target.name, **cfg.target.params)
    kind = EXPERIMENTS.entry(cfg.kind).factory
    if cfg.run.shard and cfg.run.num_chains % jax.device_count():
        raise ConfigError(
            f"run.num_chains ({cfg.run.num_chains}) must be divisible by the {jax.device_count()} devices "
            "to shard the chains (a learned kind's batch)",
            "change run.num_chains or set run.shard=false",
        )
    checked = kind.check(cfg, target)
    check_evaluate(cfg)
    return target, kind, checked


def _created_dirs(run_dir: Path) -> list[Path]:
    """The folders ``run_dir.mkdir(parents=True)`` is about to create, innermost first."""
    out, p = [], run_dir
    while not p.exists():
        out.append(p)
        p = p.parent
    return out


def _checkpoint_folders(run_dir: Path) -> list[Path]:
    """The folders under ``run_dir`` that hold ``step_*`` checkpoints (``checkpoints/``, ``checkpoints/<phase>/``, ...)."""
    return sorted({p.parent for p in run_dir.rglob(f"{ckpt._PREFIX}*") if p.is_dir()})


def _worth_keeping(run_dir: Path) -> bool:
    """Whether a failed run left anything but its config: a file of its own or a valid checkpoint."""
    for path in run_dir.rglob("*"):
        if not path.is_file() or path.name in (CONFIG_FILE, ERROR_FILE):
            continue
        if any(part.startswith(ckpt._PREFIX) for part in path.relative_to(run_dir).parts):
            continue  # checkpoint files count only through a valid manifest, below
        return True
    return any(ckpt.latest_valid(d) is not None for d in _checkpoint_folders(run_dir))


def _record_failure(run_dir: Path, created: list[Path], err: BaseException) -> None:
    """Remove a failed run's folder if nothing in it is worth keeping, else write ``error.json`` into it.

    The folder kept (or ``None``) is set as ``err.run_dir``, so that the command
    line can name it in its ``jaxsamp resume`` hint.
    """
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ckpt.CheckpointSkippedWarning)
        keep = _worth_keeping(run_dir)
    err.run_dir = None if not keep and created else run_dir
    if not keep and created:
        for folder in created:  # innermost first; a parent is removed only when it is empty
            if folder == run_dir:
                shutil.rmtree(folder, ignore_errors=True)
            elif folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
        return
    status = "interrupted" if isinstance(err, KeyboardInterrupt) else "failed"
    record = {"status": status, "error": type(err).__name__,
              "message": " ".join(str(getattr(err, "message", err)).split())}
    if getattr(err, "hint", None):
        record["hint"] = err.hint
    try:
        (run_dir / ERROR_FILE).write_text(json.dumps(record, indent=2) + "\n")
    except OSError:
        pass  # the folder itself is unwritable: the error on stderr says what happened


def _plain(value):
    """A metric as a plain JSON value: integers stay integers (NumPy's too), other numbers become floats."""
    if isinstance(value, (bool, str, list, dict)) or value is None:
        return value
    if isinstance(value, (int, np.integer)) or (hasattr(value, "dtype") and np.issubdtype(value.dtype, np.integer)):
        return int(value)
    return float(value) if hasattr(value, "__float__") else value


def run_experiment(
    cfg: ExperimentConfig, run_dir: str | Path | None = None, verbose: bool = True, strict: bool = False
) -> tuple[Path, dict]:
    """Check ``cfg``, run it, write ``metrics.json``; return ``(run_dir, metrics)``.

    Parameters
    ----------
    cfg : ExperimentConfig
        A loaded config (:func:`~jaxsamp.experiments.config.load_config`).
    run_dir : path, optional
        An existing run folder to continue (``resume``); default: a new
        ``<out_dir>/<name>/<timestamp>/``.
    verbose : bool
        Print the folder, the metrics table and any warnings.
    strict : bool
        Fail with :class:`RunHealthError` when the run ends with warnings.
    """
    target, kind, checked = prepare(cfg)
    fresh = run_dir is None
    run_dir = _new_run_dir(cfg) if fresh else Path(run_dir)
    created = _created_dirs(run_dir) if fresh else []
    run_dir.mkdir(parents=True, exist_ok=True)
    try:
        (run_dir / CONFIG_FILE).write_text(to_yaml(cfg))
        if verbose:
            print(f"jaxsamp: {cfg.kind} run '{cfg.name}' -> {run_dir}", flush=True)
        start = time.perf_counter()
        metrics = {k: _plain(v) for k, v in kind.run(cfg, target, checked, run_dir).items()}
        metrics["wall_seconds"] = time.perf_counter() - start
        metrics["verdict"] = verdict(cfg, target, metrics)
        glossary.check_documented(cfg.kind, metrics)
        warnings = list(metrics.pop("warnings", []))
        metrics["warnings"] = warnings
        (run_dir / METRICS_FILE).write_text(json.dumps(metrics, indent=2) + "\n")
        if verbose:
            print(format_metrics(metrics), flush=True)
            pngs = sorted(p.name for p in run_dir.glob("*.png"))
            if pngs:
                print(f"plots: {', '.join(pngs)} in {run_dir}", flush=True)
        for w in warnings:
            print(f"jaxsamp: warning: {w}", file=sys.stderr, flush=True)
        if verbose:
            print(f"verdict: {metrics['verdict']}", flush=True)
        if strict and warnings:
            raise RunHealthError(
                f"the run finished with {len(warnings)} warning(s): {warnings[0]}",
                f"all warnings are in {run_dir / METRICS_FILE}",
            )
    except BaseException as err:
        _record_failure(run_dir, created, err)
        raise
    (run_dir / ERROR_FILE).unlink(missing_ok=True)  # a resumed run that now succeeded
    return run_dir, metrics


def resume_experiment(run_dir: str | Path, verbose: bool = True, strict: bool = False) -> tuple[Path, dict]:
    """Continue the run in ``run_dir`` from its newest valid checkpoint.

    A run folder with no valid checkpoint (killed before its first one, or its
    checkpoints deleted or damaged) is run again from step 0 in the same
    folder, with a warning on stderr saying so. A run that had finished is
    evaluated again from its checkpoints, with one line on stderr saying that
    nothing is recomputed.

    Raises
    ------
    ConfigError
        ``run_dir`` is not a run folder.
    CheckpointError
        A checkpoint folder of the run is a file.
    """
    import warnings

    run_dir = Path(run_dir)
    if not (run_dir / CONFIG_FILE).is_file():
        raise ConfigError(f"not a run folder (no {CONFIG_FILE}): {run_dir}")
    cfg = load_config(run_dir / CONFIG_FILE)
    for path in run_dir.glob("*checkpoints*"):
        if not path.is_dir():
            raise CheckpointError(f"{path} should be a checkpoint folder but is a file", "move or delete it, then resume")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ckpt.CheckpointSkippedWarning)  # the driver names each skipped one
        resumable = any(ckpt.latest_valid(d) is not None for d in _checkpoint_folders(run_dir))
    if not resumable:
        print(f"jaxsamp: warning: no valid checkpoint in {run_dir}; the run starts again from step 0",
              file=sys.stderr, flush=True)
    elif (run_dir / METRICS_FILE).is_file():  # it had finished: say so once, not once per phase's checkpoint folder
        print(f"jaxsamp: note: run {run_dir} had finished; its checkpoints hold every step, so nothing is recomputed: "
              "its metrics and plots are made again from them", file=sys.stderr, flush=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ckpt.CompletedRunWarning)
        return run_experiment(cfg, run_dir=run_dir, verbose=verbose, strict=strict)

