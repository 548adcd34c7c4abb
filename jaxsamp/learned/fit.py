"""One-call training of a learned sampler: ``jaxsamp.fit(method, target, num_steps=...)`` returns a :class:`Fitted`.

The learned samplers' counterpart of :func:`jaxsamp.sample`, and as thin: the
method is built from the registry of learned methods (``jaxsamp list``) with its
settings dataclass, trained by the one driver (:func:`jaxsamp.run`, so progress,
checkpoints and resume are the driver's), and checked by the same health rules
as an experiment run (:func:`jaxsamp.diagnostics.health.training_warnings`, plus the
method's own ``health_warnings(history)`` where it has one, as AISIVI does).

Every registered method is a :class:`~jaxsamp.core.Trainer` (``init(key)``,
``step(key, state) -> (state, metrics)``) with ``sample(state, key, n) ->
WeightedSamples`` and ``evaluate(state, key, n) -> dict``; :class:`Fitted` holds
the trained state and calls them, so the user never chooses between a method's
raw and averaged parameters.

>>> import jax.numpy as jnp, jaxsamp
>>> fitted = jaxsamp.fit("pis", lambda x: -0.5 * jnp.sum(x**2), init=jnp.zeros(2), num_steps=50,
...                      batch_size=64, settings=jaxsamp.learned.diffusion.pis_dds.DiffusionSettings(num_steps=20),
...                      progress=False)  # doctest: +SKIP
>>> fitted.sample(1, 1000).log_Z  # doctest: +SKIP

A method's settings dataclass may have a field of the same name as one of
``fit``'s own arguments (PIS/DDS's ``num_steps`` is the SDE's step count): set
such a field through ``settings=``; a keyword argument is always ``fit``'s.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import time
import warnings
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxsamp.core.data_parallel import BATCH, data_parallel
from jaxsamp.core.driver import run
from jaxsamp.core.errors import InputError, RunHealthError, RunHealthWarning
from jaxsamp.core.protocols import WeightedSamples
from jaxsamp.core.registry import LEARNED, validate_dataclass
from jaxsamp.core.target import Target
from jaxsamp.core.validation import as_key, check_int
from jaxsamp.diagnostics import health


class Fitted:
    """What :func:`fit` returns: a trained learned sampler.

    Attributes
    ----------
    method : str
        The registered name (or the sampler object's class name).
    sampler : object
        The method object: a Trainer with ``sample`` and ``evaluate``.
    state : PyTree
        The train state after training (checkpointable, shardable).
    history : dict of numpy arrays
        The per-step metrics of training, each of shape ``(num_steps, ...)``; the
        keys are the method's (its class docstring lists them).
    seconds : float
        Wall-clock seconds of training, compilation included.
    warnings : list of str
        Health warnings of the training run (empty for a healthy one).
    """

    def __init__(self, method: str, sampler, state, history: dict, seconds: float, warnings_: list[str]):
        self.method, self.sampler, self.state = method, sampler, state
        self.history, self.seconds, self.warnings = history, seconds, warnings_
        # compiled once per number of samples, so that a second call with the same n only samples; a method
        # whose sample runs chains through the driver (host loop, progress bar) declares it and runs as is
        host = getattr(sampler, "samples_through_the_driver", False)
        self._sample = sampler.sample if host else jax.jit(sampler.sample, static_argnums=2)

    def sample(self, key, num_samples: int) -> WeightedSamples:
        """``num_samples`` weighted draws: ``WeightedSamples`` with ``.x``, ``.log_w``, ``.ess``, ``.log_Z``.

        ``.x`` is a PyTree with a leading axis of ``num_samples``: states for most
        methods (``(n, *event_shape)``), whole paths for a path sampler (TPS-DPS:
        a ``TransitionPaths``, whose ``.log_Z`` is the path measure's, not the
        target's); the method's ``sample`` docstring says which. Compiled once per
        ``num_samples``: a second call with the same number only samples (a method
        with ``samples_through_the_driver = True``, Bernoulli denoising, runs its
        chains through the driver, whose compiled chunks are reused).
        """
        num_samples = check_int("num_samples", num_samples, ge=1)
        return self._sample(self.state, as_key("key", key), num_samples)

    def evaluate(self, key, num_samples: int, **options) -> dict:
        """The method's metrics against the target's exact answers / references (floats).

        ``options`` go to the method's own ``evaluate``: for the diffusion samplers (PIS, DDS,
        Adjoint Sampling, ASBS) ``sinkhorn=False`` skips the Sinkhorn divergence, the costliest
        figure (ε = 1e-3 on ``num_samples`` points; about half a minute at 2000 on 2 CPU cores),
        and ``reference=`` scores against samples of your own.
        """
        num_samples = check_int("num_samples", num_samples, ge=2)
        accepted = inspect.signature(self.sampler.evaluate).parameters
        known = [name for name in list(accepted)[3:] if accepted[name].kind is not inspect.Parameter.VAR_KEYWORD]
        unknown = sorted(set(options) - set(known))
        if unknown and not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values()):
            raise InputError(f"{self.method}'s evaluate takes no option {', '.join(unknown)}",
                             f"its options: {', '.join(known) or 'none'}")
        out = self.sampler.evaluate(self.state, as_key("key", key), num_samples, **options)
        return {k: float(v) for k, v in out.items()}

    def summary(self) -> str:
        """A few lines: method, training length and time, first and last loss, warnings."""
        steps = len(next(iter(self.history.values()))) if self.history else 0
        on = getattr(getattr(self.sampler, "target", None), "name", "data")
        lines = [f"{self.method} on {on}: {steps} training steps in {self.seconds:.1f} s"]
        for name in ("loss", "ess", "log_Z_hat"):
            if name in self.history and steps:
                values = np.asarray(self.history[name], float).reshape(steps, -1).mean(axis=1)
                lines.append(f"  {name}: {values[0]:.4g} (first step) -> {values[-1]:.4g} (last)")
        lines += [f"  warning: {w}" for w in self.warnings] or ["  no health warnings"]
        return "\n".join(lines)

    def print_summary(self) -> None:
        print(self.summary())

    def __repr__(self) -> str:
        return f"Fitted({self.method!r}, {len(self.warnings)} warnings)"


def _as_target(target, init, model_args: tuple, model_kwargs: dict | None) -> Target:
    """A Target, a numpyro model or a plain log-density function (with ``init``) as :func:`jaxsamp.sample` takes them."""
    from jaxsamp.mcmc.sample import as_model_target

    return as_model_target(target, init, model_args, model_kwargs)


def _method_target(name: str, meta: dict, target, init, model_args: tuple, model_kwargs: dict | None):
    """The target in the form the method takes: a density (the default), or what its registration's ``as_target``
    accepts (an environment, data), which then checks it with an InputError saying what is needed."""
    convert = meta.get("as_target")
    if convert is None:
        return _as_target(target, init, model_args, model_kwargs)
    if init is not None or model_args or model_kwargs:
        raise InputError(f"method {name!r} takes no init=, model_args= or model_kwargs= (they are for log densities)")
    try:
        return convert(target)
    except InputError as err:
        raise InputError(f"method {name!r}: {err}", err.hint) from None


def _settings(name: str, settings, overrides: dict):
    """The method's settings dataclass: ``settings`` (or the defaults) with ``overrides`` checked and applied."""
    cls = LEARNED.entry(name).meta["settings"]
    if settings is not None and not isinstance(settings, cls):
        raise InputError(f"settings for {name!r} must be a {cls.__name__}, got {type(settings).__name__}")
    base = {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)} if settings is not None else {}
    return validate_dataclass(f"method {name!r}", {**base, **overrides}, cls)


def _identity(name: str, settings, batch_size) -> str:
    what = {"method": name, "settings": dataclasses.asdict(settings) if dataclasses.is_dataclass(settings) else
            repr(settings), "batch_size": batch_size}
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()


def _batch_axis(mesh) -> str:
    """The mesh axis the batch is split over: ``"batch"``, or the only axis of a 1-D mesh."""
    if not isinstance(mesh, jax.sharding.Mesh):
        raise InputError(f"mesh must be a jax.sharding.Mesh, got {type(mesh).__name__}",
                         "jaxsamp.batch_mesh() builds one over every device")
    if BATCH in mesh.shape:
        return BATCH
    if len(mesh.shape) == 1:
        return next(iter(mesh.shape))
    raise InputError(f"mesh has axes {tuple(mesh.shape)}: name the one to split the batch over {BATCH!r}")


def fit(
    method,
    target,
    *,
    num_steps: int,
    key=0,
    settings=None,
    batch_size: int | None = None,
    init=None,
    model_args: tuple = (),
    model_kwargs: dict | None = None,
    checkpoint: str | Path | None = None,
    checkpoint_every: int | None = None,
    progress: bool = True,
    strict: bool = False,
    mesh: jax.sharding.Mesh | None = None,
    **setting_values,
) -> Fitted:
    """Train learned sampler ``method`` on ``target`` for ``num_steps`` steps.

    Parameters
    ----------
    method : str or sampler object
        A registered learned method (``jaxsamp list`` names them: ``"pis"``,
        ``"dds"``, ``"adjoint"``, ``"asbs"``, ...), or an object with
        ``init``/``step``/``sample``/``evaluate`` (then ``settings``,
        ``batch_size`` and keyword settings must not be given).
    target : Target, numpyro model, or callable
        A plain callable is a log density of one flat state: give ``init`` (one
        state) for its shape, as in :func:`jaxsamp.sample`. A method that does not
        take a log density says what it takes: ``gflownet`` a DAG environment
        (``jaxsamp.targets.get("hypergrid", ...)``), ``bernoulli`` a +-1 target with
        exact samples, a data set or an array of +-1 samples.
    num_steps : int
        Training steps (the method's unit: an update, or an epoch for the
        adjoint-matching methods; the class docstrings say which).
    key : PRNG key or int
        Split into the initialisation key and the driver's key.
    settings : dataclass, optional
        The method's settings (e.g. :class:`~jaxsamp.learned.diffusion_samplers.DiffusionSettings`);
        keyword ``setting_values`` override its fields, each checked by name, type and range.
    batch_size : int, optional
        Paths / walkers / trajectories per step (default: the method's).
    init, model_args, model_kwargs
        As in :func:`jaxsamp.sample`.
    checkpoint, checkpoint_every, progress
        Passed to :func:`jaxsamp.run`: a killed ``fit`` resumes bit for bit.
    strict : bool
        Raise :class:`~jaxsamp.core.errors.RunHealthError` instead of warning when
        training is unhealthy (a NaN/inf or exploding loss, no improvement, or the
        method's own check: AISIVI's collapsed reverse model).
    mesh : jax.sharding.Mesh, optional
        Train data-parallel over this mesh (:func:`~jaxsamp.core.data_parallel.data_parallel`):
        each step's batch is split over its ``"batch"`` axis (or its only axis, e.g. a
        :func:`~jaxsamp.core.chain_mesh`), parameters are replicated, and the numbers equal
        the one-device run's up to the order of float reductions. ``batch_size`` must be a
        multiple of the axis' size. ``jaxsamp.batch_mesh()`` spans every device.

    Returns
    -------
    Fitted
    """
    num_steps = check_int("num_steps", num_steps, ge=1)
    key = as_key("key", key)
    if isinstance(method, str):
        import jaxsamp.learned.methods  # noqa: F401  (registers the methods)

        entry = LEARNED.entry(method)
        target = _method_target(method, entry.meta, target, init, model_args, model_kwargs)
        checked = _settings(method, settings, setting_values)
        batch = check_int("batch_size", batch_size if batch_size is not None else entry.meta["batch_size"], ge=1)
        try:
            sampler = entry.factory(target, checked, batch)
        except InputError as err:
            raise InputError(f"method {method!r}: {err}", err.hint) from None
        judge = entry.meta["judge_progress"]  # a bool, or a function of the settings
        name, identity, judge = method, _identity(method, checked, batch), judge(checked) if callable(judge) else judge
    else:
        missing = [a for a in ("init", "step", "sample", "evaluate") if not callable(getattr(method, a, None))]
        if missing:
            raise InputError(
                f"method must be a registered name or a sampler with init/step/sample/evaluate; "
                f"{type(method).__name__} has no {', '.join(missing)}",
                f"registered methods: {', '.join(LEARNED.names())}",
            )
        if settings is not None or batch_size is not None or setting_values:
            raise InputError("settings, batch_size and keyword settings go to the sampler's constructor, not to fit()")
        # whether its loss is a fixed objective (to judge for progress) is unknown: only NaN/inf and explosions
        sampler, name, identity, judge = method, type(method).__name__, None, False
    trainer = sampler
    if mesh is not None:
        axis = _batch_axis(mesh)
        if isinstance(method, str) and batch % mesh.shape[axis]:
            raise InputError(f"batch_size={batch} is not divisible by the {mesh.shape[axis]} devices of the mesh's "
                             f"{axis!r} axis", "give a batch_size that is a multiple of the device count")
        trainer = data_parallel(sampler, mesh, axis)
    k_init, k_train = jax.random.split(key)
    start = time.perf_counter()
    state, history = run(
        trainer.step, jax.jit(trainer.init)(k_init), k_train, num_steps, trace=lambda s, metrics: metrics,
        progress=progress, checkpoint=checkpoint, checkpoint_every=checkpoint_every, identity=identity,
        desc=f"fit {name}",
    )
    jax.block_until_ready(state)
    seconds = time.perf_counter() - start
    history = {k: np.asarray(v) for k, v in history.items()}
    found = health.training_warnings(history["loss"], judge_progress=judge) if "loss" in history else []
    if hasattr(sampler, "health_warnings"):  # a method's own check (AISIVI: a collapsed reverse model)
        found += sampler.health_warnings(history)
    for w in found:
        if strict:
            raise RunHealthError(w, "lower the learning rate or train longer; fitted.history holds the metrics")
        warnings.warn(w, RunHealthWarning, stacklevel=2)
    return Fitted(name, sampler, state, history, seconds, found)


__all__ = ["Fitted", "fit"]
