"""A learned experiment kind's config to :func:`jaxsamp.fit`: the method checked before any work, then trained.

A learned kind names the registered methods it runs (``sampler.name``); ``sampler.params`` are the
method's settings, ``run.num_chains`` its batch per training step and ``run.num_steps`` its training
steps. :func:`check_method` is the kind's ``check`` (nothing trained, nothing written) and
:func:`fit_method` its training, with the run folder's checkpoints (so ``jaxsamp resume`` continues
it), ``run.checkpoint_every``, ``run.progress`` and, with ``run.shard``, a mesh of every device.
A config's ``evaluate.smc`` adds the figures of a resampled SMC run of the trained sampler
(:func:`smc_metrics`), checked before any work by :func:`check_evaluate`.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import jax
import numpy as np

from jaxsamp.core.data_parallel import batch_mesh
from jaxsamp.core.errors import ConfigError, InputError, RunHealthWarning
from jaxsamp.core.progress import phase
from jaxsamp.core.registry import LEARNED, build_learned_sampler
from jaxsamp.learned.fit import Fitted, fit
from jaxsamp.learned.resampled import smc_options

#: ``fold_in(key(seed), SMC_STREAM)`` is the key of the SMC run of a config's ``evaluate.smc``.
SMC_STREAM = 59


def check_method(cfg, target, kind: str, methods: tuple[str, ...]):
    """The settings of ``cfg.sampler`` for one of the registered ``methods``, checked against ``target``.

    The method is built once for ``target`` at the run's batch (its ``build`` refuses a target it
    cannot take); every problem is a one-line :class:`~jaxsamp.core.errors.ConfigError`.

    Returns
    -------
    dataclass
        The method's settings, as :func:`fit_method` takes them.
    """
    import jaxsamp.learned.methods  # noqa: F401  (registers the methods)

    def checked(name, settings):
        LEARNED.entry(name).factory(target, settings, batch_size=cfg.run.num_chains)
        return settings

    samplers = {name: (lambda settings, name=name: checked(name, settings), LEARNED.entry(name).meta["settings"])
                for name in methods}
    return build_learned_sampler(cfg, kind, samplers)


def fit_method(cfg, target, settings, run_dir: Path, key, *, method: str | None = None,
               folder: str = "checkpoints") -> Fitted:
    """``jaxsamp.fit`` of ``method`` (default ``cfg.sampler.name``) on ``target`` with the run's options, from ``key``.

    Every learned kind trains through this one call: ``run.num_steps`` steps of ``run.num_chains``
    (the method's batch), checkpoints in ``run_dir/folder`` every ``run.checkpoint_every`` steps (so
    that ``jaxsamp resume`` continues a killed run bit for bit), ``run.progress``, ``run.chunk``, and with
    ``run.shard`` data-parallel over every device. The health warnings of the training are in the
    result's ``warnings`` (the runner reports a run's warnings), not emitted.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RunHealthWarning)
        return fit(method or cfg.sampler.name, target, num_steps=cfg.run.num_steps, key=key, settings=settings,
                   batch_size=cfg.run.num_chains, checkpoint=Path(run_dir) / folder,
                   checkpoint_every=cfg.run.checkpoint_every, progress=cfg.run.progress, chunk=cfg.run.chunk,
                   mesh=batch_mesh() if cfg.run.shard else None)


def training_metrics(cfg, fitted: Fitted) -> dict:
    """The figures every path sampler's run reports of its training: ``train_steps``,
    ``train_seconds_incl_compile``, ``target_evals`` (the history's last count) and ``final_loss`` (the mean of
    the last 10 steps' losses)."""
    history = fitted.history
    return {"train_steps": cfg.run.num_steps, "train_seconds_incl_compile": fitted.seconds,
            "target_evals": int(history["target_evals"][-1]),
            "final_loss": float(np.mean(history["loss"][-10:]))}


def check_evaluate(cfg) -> None:
    """Check a config's ``evaluate`` section before any work: ``evaluate.smc`` needs a sampler with a path.

    Raises
    ------
    ConfigError
        ``evaluate.smc`` is not null, true or a mapping of :meth:`~jaxsamp.learned.fit.Fitted.smc`'s
        options (the message names them), or the sampler is not a learned method with a path (the
        message names those that have one).
    """
    try:
        options = smc_options(cfg.evaluate.smc)
    except InputError as err:
        raise ConfigError(f"evaluate.{err.message}", err.hint) from None
    if options is None:
        return
    import jaxsamp.learned.methods  # noqa: F401  (registers the methods)

    having = [name for name in LEARNED.names() if LEARNED.entry(name).meta.get("smc_proposal")]
    if cfg.sampler.name not in having:
        raise ConfigError(f"evaluate.smc runs SMC along a trained sampler's path, and sampler {cfg.sampler.name!r} "
                          "has none", f"samplers with one: {', '.join(having)}; or drop evaluate.smc")


def smc_metrics(cfg, fitted: Fitted) -> dict:
    """The figures of ``fitted.evaluate(key, run.num_eval_samples, smc=evaluate.smc)``, each named ``smc_<figure>``.

    The key is ``fold_in(key(seed), SMC_STREAM)``; empty when ``evaluate.smc`` is null.
    """
    options = smc_options(cfg.evaluate.smc)
    if options is None:
        return {}
    key = jax.random.fold_in(jax.random.key(cfg.seed), SMC_STREAM)
    n = cfg.run.num_eval_samples
    with phase(f"an SMC run of {n} particles along the trained path (evaluate.smc)", cfg.run.progress):
        figures = fitted.evaluate(key, n, smc=options)
    return {f"smc_{name}": value for name, value in figures.items()}
