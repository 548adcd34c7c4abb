"""Run an experiment from a validated config into a run folder.

``runs/<name>/<timestamp>/`` receives the resolved ``config.yaml``, the
experiment's outputs (``samples.npz``, PNG plots, ``checkpoints/``) and
``metrics.json``. ``resume`` re-enters an existing folder; the driver then
continues from its newest valid checkpoint.
"""

from __future__ import annotations

import datetime as _dt
import json
import shutil
import time
from pathlib import Path

import jaxsamp.mcmc  # noqa: F401  (registers samplers)
import jaxsamp.targets  # noqa: F401  (registers targets)
from jaxsamp.experiments import kinds as _kinds  # noqa: F401  (registers experiment kinds)
from jaxsamp.experiments.config import ExperimentConfig, load_config, to_yaml
from jaxsamp.experiments.registry import EXPERIMENTS, TARGETS, ConfigError

CONFIG_FILE = "config.yaml"
METRICS_FILE = "metrics.json"


def _new_run_dir(cfg: ExperimentConfig) -> Path:
    base = Path(cfg.run.out_dir) / cfg.name
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir, k = base / stamp, 1
    while run_dir.exists():
        run_dir, k = base / f"{stamp}-{k}", k + 1
    return run_dir


def format_metrics(metrics: dict) -> str:
    """A short two-column table of metrics."""
    width = max((len(k) for k in metrics), default=0)
    lines = []
    for k, v in metrics.items():
        shown = f"{v:.6g}" if isinstance(v, float) else str(v)
        lines.append(f"  {k.ljust(width)}  {shown}")
    return "\n".join(lines)


def run_experiment(cfg: ExperimentConfig, run_dir: str | Path | None = None, verbose: bool = True) -> tuple[Path, dict]:
    """Validate ``cfg``, run it, write ``metrics.json``; return ``(run_dir, metrics)``.

    Everything that can be checked without running (target and its parameters,
    experiment kind) is checked before the run folder is created; a
    :class:`ConfigError` raised by the experiment before it wrote anything removes
    the fresh folder again, so a bad config leaves nothing half-written.
    """
    target = TARGETS.get(cfg.target.name, **cfg.target.params)
    experiment = EXPERIMENTS.entry(cfg.kind).factory
    fresh = run_dir is None
    run_dir = _new_run_dir(cfg) if fresh else Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / CONFIG_FILE).write_text(to_yaml(cfg))
    if verbose:
        print(f"jaxsamp: {cfg.kind} run '{cfg.name}' -> {run_dir}", flush=True)
    start = time.perf_counter()
    try:
        metrics = experiment(cfg, target, run_dir)
    except ConfigError:
        if fresh and [p.name for p in run_dir.iterdir()] == [CONFIG_FILE]:
            shutil.rmtree(run_dir)
        raise
    metrics = {k: (float(v) if hasattr(v, "__float__") and not isinstance(v, (bool, str)) else v) for k, v in metrics.items()}
    metrics["wall_seconds"] = time.perf_counter() - start
    (run_dir / METRICS_FILE).write_text(json.dumps(metrics, indent=2) + "\n")
    if verbose:
        print(format_metrics(metrics), flush=True)
        pngs = sorted(p.name for p in run_dir.glob("*.png"))
        if pngs:
            print(f"plots: {', '.join(pngs)} in {run_dir}", flush=True)
    return run_dir, metrics


def resume_experiment(run_dir: str | Path, verbose: bool = True) -> tuple[Path, dict]:
    """Continue the run in ``run_dir`` from its newest valid checkpoint."""
    run_dir = Path(run_dir)
    if not (run_dir / CONFIG_FILE).is_file():
        raise ConfigError(f"not a run folder (no {CONFIG_FILE}): {run_dir}")
    cfg = load_config(run_dir / CONFIG_FILE)
    return run_experiment(cfg, run_dir=run_dir, verbose=verbose)
