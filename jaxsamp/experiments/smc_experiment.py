"""The ``smc`` experiment kind: AIS/SMC from a tractable base to the target, with log Z and its cost.

Lattice targets anneal along the LEAPS path ``pi_t ∝ exp(t log p)`` from the
uniform distribution (:class:`~jaxsamp.targets.lattice.LatticePath`); continuous
targets along the geometric path from ``N(0, base_scale^2 I)``
(:func:`~jaxsamp.targets.annealing.geometric_path`). The inner kernel is any
registered sampler (``SAMPLERS``), rebuilt at every temperature on the path
member ``pi_t``. ``cfg.run.num_chains`` is the number of particles and
``cfg.run.num_steps`` the number of levels (fixed linear schedule) or their
maximum (adaptive tempering). ``run.shard`` places the particles on all devices
(:func:`~jaxsamp.smc.annealing.anneal`'s ``mesh``).

Config ``sampler`` block: ``name: smc`` (or ``ais``: never resample) and
``params`` validated into :class:`SMCSettings`.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any, Optional

import jax
import numpy as np

from jaxsamp.core.errors import ConfigError
from jaxsamp.core.registry import (
    EXPERIMENTS,
    SAMPLERS,
    ExperimentKind,
    validate_dataclass,
)
from jaxsamp.diagnostics import health
from jaxsamp.experiments import plots
from jaxsamp.smc.annealing import RESAMPLERS, anneal, linear_schedule, path_member
from jaxsamp.targets.annealing import geometric_path
from jaxsamp.targets.lattice import LatticePath


@dataclasses.dataclass
class SMCSettings:
    """Hyper-parameters of an ``smc`` / ``ais`` experiment.

    Attributes
    ----------
    inner : str
        ``SAMPLERS`` name of the inner kernel (e.g. ``checkerboard``, ``glauber``, ``mala``, ``hmc``).
    inner_params : dict
        Its parameters.
    num_mcmc_steps : int
        Inner-kernel steps per level.
    target_cess : float or None
        Adaptive tempering at this conditional ESS; ``None``: a linear schedule
        of ``run.num_steps`` levels.
    ess_threshold : float
        Resample when the normalised ESS falls below it (forced to 0 for ``ais``).
    resampling : str
        blackjax resampler: systematic, stratified, multinomial or residual.
    base_scale : float
        Standard deviation of the Gaussian base (continuous targets).
    """

    inner: str = "checkerboard"
    inner_params: dict = dataclasses.field(default_factory=dict)
    num_mcmc_steps: int = 1
    target_cess: Optional[float] = 0.9
    ess_threshold: float = 0.5
    resampling: str = "systematic"
    base_scale: float = 1.0


def annealing_path(target, base_scale: float = 1.0):
    """The LEAPS lattice path for spin/categorical targets, the geometric path from a Gaussian otherwise."""
    if target.domain.is_discrete:
        return LatticePath(target)
    return geometric_path(target, base_scale)


def check(cfg, target) -> SMCSettings:
    """The SMC settings, the particle count and the inner kernel's parameters, before any work."""
    where = f"sampler {cfg.sampler.name!r}"
    if cfg.sampler.name not in ("smc", "ais"):
        raise ConfigError(f"experiment kind 'smc' takes sampler name 'smc' or 'ais', got {cfg.sampler.name!r}")
    settings = validate_dataclass(where, cfg.sampler.params, SMCSettings)
    if settings.resampling not in RESAMPLERS:
        raise ConfigError(f"{where}: resampling must be one of {', '.join(RESAMPLERS)}, got {settings.resampling!r}")
    if settings.target_cess is not None and not 0.0 < settings.target_cess < 1.0:
        raise ConfigError(f"{where}: target_cess must lie in (0, 1), got {settings.target_cess}")
    if cfg.run.num_chains < 2:
        raise ConfigError(
            f"run.num_chains must be >= 2 for {cfg.sampler.name}, got {cfg.run.num_chains}",
            "log Z and the ESS are averages over particles; use hundreds or more",
        )
    SAMPLERS.validate(settings.inner, settings.inner_params, skip=("target",))
    if cfg.sampler.name == "ais":
        settings = dataclasses.replace(settings, ess_threshold=0.0)
    return settings


def run_smc(cfg, target, settings: SMCSettings, run_dir: Path) -> dict[str, Any]:
    """Anneal ``cfg.run.num_chains`` particles to ``target``; report log Z, its error, ESS and cost."""
    path = annealing_path(target, settings.base_scale)

    def make_kernel(t):
        return SAMPLERS.get(settings.inner, path_member(path, t), **settings.inner_params)

    make_kernel(1.0)  # a bad inner sampler or parameter fails here, before anything runs
    adaptive = settings.target_cess is not None
    start = time.perf_counter()
    result = anneal(
        jax.random.key(cfg.seed),
        path,
        make_kernel,
        cfg.run.num_chains,
        schedule=None if adaptive else linear_schedule(cfg.run.num_steps),
        target_cess=settings.target_cess,
        max_levels=cfg.run.num_steps,
        num_mcmc_steps=settings.num_mcmc_steps,
        ess_threshold=settings.ess_threshold,
        resampling_fn=settings.resampling,
        mesh=cfg.run.shard or None,
        **{k: v for k, v in cfg.driver_options(run_dir).items() if k != "desc"},
    )
    elapsed = time.perf_counter() - start
    samples, trace, levels = result.samples, result.trace, result.num_levels
    log_Z = float(samples.log_Z)
    metrics = {
        "log_Z_hat": log_Z,
        "ess": float(samples.ess),
        "num_levels": levels,
        "target_evals": result.num_target_evals,
        "num_resamplings": int(np.asarray(trace.resampled).sum()),
        "acceptance_rate": float(np.nanmean(np.asarray(trace.acceptance_rate)[:levels])),
        "seconds_incl_compile": elapsed,
        "warnings": health.chain_warnings(
            num_chains=cfg.run.num_chains,
            acceptance=np.asarray(trace.acceptance_rate)[:levels],
            metropolis=SAMPLERS.entry(settings.inner).meta.get("metropolis", False),
        ),
    }
    if target.log_Z is not None:
        metrics["log_Z_exact"] = float(target.log_Z)
        metrics["log_Z_abs_err"] = abs(log_Z - float(target.log_Z))
    np.savez(run_dir / "samples.npz", x=np.asarray(samples.x), log_w=np.asarray(samples.log_w))
    plots.trace_plot(
        run_dir / "annealing.png",
        {"t": np.asarray(trace.t)[:levels], "ESS": np.asarray(trace.ess)[:levels]},
        f"{cfg.name}: temperature and ESS per level",
    )
    return metrics


EXPERIMENTS.register("smc", "AIS/SMC from a tractable base to the target; log Z, its error, ESS and cost")(
    ExperimentKind(check, run_smc)
)
