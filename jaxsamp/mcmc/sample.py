"""One-call sampling: ``jaxsamp.sample(model, ...)`` returns a :class:`Posterior`.

A thin layer over the protocol, meant to be read: the model becomes a
:class:`~jaxsamp.core.target.Target` (a numpyro model, a plain log-density
function, an Inference Gym model or a target), the chains start at
:func:`~jaxsamp.mcmc.starting_points`, every chain is warmed up at once
(:func:`~jaxsamp.mcmc.warmup`), and the driver runs the tuned kernel
and collects every draw. The :class:`Posterior` holds the draws (constrained
space for numpyro and Inference Gym models), the sampler's per-draw info
(acceptance, divergences, integration steps, tree depth), the warm-up, a
numpyro-style ``summary()`` and ``to_arviz()``.

A run that does not sample well says so: divergences after warm-up, chains that
disagree (rank-normalised split R-hat above 1.01 once every coordinate has a bulk
ESS of 400 per chain, above 1.05 for shorter runs, where well-mixed chains reach
1.01-1.03 by noise alone), a NaN R-hat or ESS, chains that never moved or an
acceptance of exactly 0 or 1, chains that end where the log density is NaN or
+inf (:mod:`jaxsamp.core.chain_health`, the driver's own check) become
``Posterior.warnings`` and :class:`RunHealthWarning` s (``strict=True``
raises :class:`~jaxsamp.core.errors.RunHealthError` instead).

A second call compiles nothing when only the data values change: the target's
log density and constraining map are :class:`jax.tree_util.Partial` s whose
leaves are the data (a numpyro model's arrays, a plain log density's
``model_args``), and the warm-up (window, ChEES or MEADS), the sampling kernel
(NUTS and HMC after the warm-up, or a registered sampler with its chains and
burn-in), the driver's chunks, the start check and the constraining take them
as traced arguments (:mod:`jaxsamp.core.compiled`), while everything they are
compiled for (the model function, the settings, the shapes) is static and cached.
"""

from __future__ import annotations

import contextlib
import re
import time
import warnings
from pathlib import Path
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core import chain_health
from jaxsamp.core import checkpoint as ckpt
from jaxsamp.core.compiled import batched, cached_kernel
from jaxsamp.core.combinators import CHAIN_METHODS, ensemble, guard_finite, position_of
from jaxsamp.core.combinators import thin as thin_kernel
from jaxsamp.core.driver import run
from jaxsamp.core.errors import InputError, RunHealthError, RunHealthWarning  # noqa: F401  (re-exported)
from jaxsamp.core.registry import SAMPLERS
from jaxsamp.core.target import Target, from_function
from jaxsamp.core.validation import as_key, check_int
from jaxsamp.diagnostics import health
from jaxsamp.mcmc.chain_method import choose_chain_method
from jaxsamp.mcmc.warmup import (
    METHODS,
    WINDOW_ALGORITHMS,
    Warmup,
    starting_points,
    warmup,
)

#: Per-draw sampler statistics kept when the sampler reports them.
INFO_FIELDS = ("acceptance_rate", "is_divergent", "num_integration_steps", "num_trajectory_expansions")


class Posterior:
    """What :func:`sample` returns.

    Attributes
    ----------
    draws : PyTree
        Leaves of shape ``(num_chains, num_samples, ...)``: the model's sites in
        constrained space (numpyro / Inference Gym models) or the flat state.
    positions : array, shape (num_chains, num_samples, d)
        The draws as the sampler saw them (unconstrained, flat).
    info : dict of arrays
        Per chain and draw: ``acceptance_rate``, ``is_divergent`` and, where the
        sampler reports them, ``num_integration_steps`` and ``tree_depth``.
    warmup : Warmup or None
        The warm-up's final states and adapted parameters.
    warnings : list of str
        Health warnings (empty for a healthy run).
    target : Target
    seconds : dict
        Wall-clock seconds of the ``warmup`` (or burn-in) and ``sampling`` phases,
        compilation included.
    chain_method : str
        How the chains ran, ``"vectorized"`` or ``"sequential"`` (what ``"auto"`` chose).
    batching_gain : float or None
        What ``"auto"`` measured (:func:`~jaxsamp.mcmc.chain_method.batching_gain`);
        None where it measured nothing.
    """

    def __init__(self, draws, positions, info: dict, warmup_result: Warmup | None, target: Target, seconds: dict):
        self.draws, self.positions, self.info = draws, positions, info
        self.warmup, self.target, self.seconds = warmup_result, target, seconds
        self.warnings: list[str] = []
        self.chain_method: str = "vectorized"
        self.batching_gain: float | None = None

    @property
    def num_chains(self) -> int:
        return int(self.positions.shape[0])

    @property
    def num_samples(self) -> int:
        return int(self.positions.shape[1])

    @property
    def num_divergences(self) -> int:
        """Divergent transitions after warm-up, over all chains."""
        divergent = self.info.get("is_divergent")
        return 0 if divergent is None else int(np.sum(divergent))

    def summary(self, prob: float = 0.9):
        """Mean, sd, median, central ``prob`` interval, bulk and tail ESS and R-hat of every site; divergences.

        Returns a :class:`~jaxsamp.diagnostics.mcmc.PosteriorSummary` (``print`` it
        for numpyro's ``print_summary`` table; ``.to_dict()`` for numbers).
        """
        from jaxsamp.diagnostics.mcmc import posterior_summary

        return posterior_summary(self.draws, divergences=self.info.get("is_divergent"), prob=prob)

    def print_summary(self, prob: float = 0.9) -> None:
        print(self.summary(prob))

    def to_arviz(self):
        """An ``arviz.InferenceData`` with the draws as ``posterior`` and the sampler info as ``sample_stats``."""
        import arviz

        def named(tree):
            leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
            return {jax.tree_util.keystr(p, simple=True, separator=".") or "x": np.asarray(v) for p, v in leaves}

        stats = {("diverging" if k == "is_divergent" else k): np.asarray(v) for k, v in self.info.items()}
        return arviz.from_dict(posterior=named(self.draws), sample_stats=stats)

    def __repr__(self) -> str:
        return (
            f"Posterior({self.target.name}: {self.num_chains} chains x {self.num_samples} draws, "
            f"{self.num_divergences} divergences, {len(self.warnings)} warnings)"
        )


# --------------------------------------------------------------------------
# the model as a Target
# --------------------------------------------------------------------------


def _is_numpyro_model(model: Callable, args: tuple, kwargs: dict) -> bool:
    """A callable that records numpyro sample sites when run with ``args``/``kwargs`` (a log density raises).

    A numpyro model called without some of its arguments (its data) is an InputError naming them,
    not a log density that lacks ``init=``.
    """
    try:
        from numpyro import handlers
    except ImportError:
        return False
    from jaxsamp.targets.numpyro_adapter import check_model_arguments, records_sample_sites_without_data

    try:
        trace = handlers.trace(handlers.seed(model, 0)).get_trace(*args, **kwargs)
    except TypeError:
        if records_sample_sites_without_data(model, args, kwargs):
            check_model_arguments(model, args, kwargs)
        return False
    return any(site["type"] == "sample" for site in trace.values())


def as_model_target(model, init=None, model_args: tuple = (), model_kwargs: dict | None = None) -> Target:
    """The Target for :func:`sample`'s ``model`` argument.

    A :class:`Target` is used as is; an Inference Gym model goes through
    :func:`~jaxsamp.targets.inference_gym_adapter.from_inference_gym`; a callable
    that records numpyro sample sites when called with ``model_args`` /
    ``model_kwargs`` through :func:`~jaxsamp.targets.from_numpyro`; any other
    callable is a log density ``model(x, *model_args)`` of one flat state, whose
    shape comes from ``init`` (an array of one state or of one state per chain),
    and whose ``model_args`` are traced data (:func:`~jaxsamp.core.target.from_function`).

    Raises
    ------
    InputError
        ``model_args`` that is not a tuple, ``model_kwargs`` that is not a dict,
        data for a Target or an Inference Gym model (they hold their own),
        ``model_kwargs`` for a plain log density, a plain log density without
        ``init``, or one that cannot be called as ``model(x, *model_args)``.
    """
    if not isinstance(model_args, (tuple, list)):
        raise InputError(f"model_args must be a tuple of the model's positional arguments, got {type(model_args).__name__}",
                         f"pass model_args=({type(model_args).__name__} value,) for one argument")
    if model_kwargs is not None and not isinstance(model_kwargs, dict):
        raise InputError(f"model_kwargs must be a dict of the model's keyword arguments, got {type(model_kwargs).__name__}")
    kwargs = model_kwargs or {}
    is_gym = hasattr(model, "default_event_space_bijector") and hasattr(model, "unnormalized_log_prob")
    if (isinstance(model, Target) or is_gym) and (model_args or kwargs):
        raise InputError(
            f"model_args and model_kwargs are the data of a numpyro model or a plain log density; "
            f"a {'Target' if isinstance(model, Target) else 'Inference Gym model'} holds its own",
            "build the target with its data, or pass the model function",
        )
    if isinstance(model, Target):
        return model
    if is_gym:
        from jaxsamp.targets.inference_gym_adapter import from_inference_gym

        return from_inference_gym(model)
    if callable(model) and _is_numpyro_model(model, model_args, kwargs):
        from jaxsamp.targets.numpyro_adapter import from_numpyro

        return from_numpyro(model, *model_args, **kwargs)
    if callable(model):
        if init is None or isinstance(init, str) or callable(init):
            raise InputError(
                "a plain log-density function needs init= positions (one state, or one per chain) "
                "to know the shape of a state",
                "pass init=jnp.zeros(d), or wrap the function with jaxsamp.targets.from_function(fn, example)",
            )
        if kwargs:
            raise InputError(
                f"a plain log density takes its data as model_args, model(x, *model_args); got model_kwargs "
                f"{sorted(kwargs)}", "pass model_args=(...) in the order of the function's arguments after x",
            )
        example = jnp.asarray(init, dtype=jnp.result_type(float))
        return from_function(model, example if example.ndim <= 1 else example[0], data=tuple(model_args))
    raise InputError(f"model must be a Target, a numpyro model, an Inference Gym model or a function, got {type(model).__name__}")


def check_starting_points(target: Target, positions, *, gradient: bool = False, what: str = "chains start",
                          hint: str = "give init= positions inside the support") -> int:
    """The number of ``positions`` where ``target``'s log density (with ``gradient``: it or its gradient) is NaN/inf;
    an InputError, before any work, when it is every one of them.

    The one check of a run's starting points, for :func:`sample`, the ``mcmc`` experiment
    kind and :func:`jaxsamp.fit` (which checks the gradient too where its method follows it).

    Parameters
    ----------
    target : Target
    positions : array, shape (n, *event_shape)
    gradient : bool
        Also check the gradient of the log density (real-valued states only).
    what : str
        What the positions are, in the error: ``"all {n} {what} where ..."``.
    hint : str
        The error's hint.
    """
    n = len(positions)
    bad = health.count_nonfinite_log_prob(target.log_density, positions, gradient=gradient)
    if bad == n:
        values_bad = health.count_nonfinite_log_prob(target.log_density, positions) if gradient else bad
        culprit = (f"{target.name}.log_prob" if values_bad == n else f"the gradient of {target.name}.log_prob"
                   if values_bad == 0 else f"{target.name}.log_prob or its gradient")
        raise InputError(f"all {n} {what} where {culprit} is NaN/inf", hint)
    return bad


def _constrained(target: Target, positions):
    """The draws in the model's own space: ``target.constrain`` mapped over chains and draws, when it has one."""
    if not hasattr(target, "constrain"):
        return positions
    return batched(target.constrain, 2)(positions)  # a numpyro model's data: traced leaves of its constrain


def _info_stats(info) -> dict:
    """The per-draw statistics: the sampler's own fields and, under ``guard_finite``, its NaN rejections."""
    out = {}
    if hasattr(info, "rejected_nonfinite"):
        out["rejected_nonfinite"], info = info.rejected_nonfinite, info.inner
    for name in INFO_FIELDS:
        if hasattr(info, name):
            out["tree_depth" if name == "num_trajectory_expansions" else name] = getattr(info, name)
    return out


def _chains(kernel, *, thin: int, chain_method: str):
    """Every chain's ``kernel`` (thinned, its non-finite proposals rejected): what a registered sampler runs.

    Made by :func:`~jaxsamp.core.compiled.cached_kernel` with the registered
    kernel as its traced argument, so the chains are compiled once per settings.
    """
    return ensemble(guard_finite(thin_kernel(kernel, thin) if thin > 1 else kernel), chain_method)


def _draw_trace(state, info):
    """What the driver keeps of every draw: the positions and the per-draw statistics."""
    return position_of(state), _info_stats(info)


def _settings_identity(target: Target, sampler: str, settings: dict) -> dict:
    """The call's settings, mixed into the driver's fingerprint (which adds the log density and the init values)."""
    return {"target": target.name, "event_shape": list(target.event_shape), "sampler": sampler, **settings}


# --------------------------------------------------------------------------
# the one call
# --------------------------------------------------------------------------


def sample(
    model,
    *,
    key=0,
    sampler: str = "nuts",
    num_chains: int = 4,
    num_warmup: int = 1000,
    num_samples: int = 1000,
    thin: int = 1,
    init=None,
    warmup_method: str = "window",
    pool: bool = False,
    dense: bool = False,
    chain_method: str = "auto",
    model_args: tuple = (),
    model_kwargs: dict | None = None,
    progress: bool = True,
    checkpoint: str | Path | None = None,
    strict: bool = False,
    **sampler_params,
) -> Posterior:
    """Sample ``model`` with ``num_chains`` chains: warm-up, then ``num_samples`` draws each.

    Parameters
    ----------
    model : Target, numpyro model, Inference Gym model, or callable
        A plain callable is a log density ``model(x, *model_args)`` of one flat
        state ``x`` (give ``init``).
    key : PRNG key or int
        A key, or an integer seed (Python or NumPy integer, 0-d integer array).
    sampler : str
        ``"nuts"`` or ``"hmc"`` (adapted by the warm-up), or any other
        registered sampler (``jaxsamp list``), run with ``sampler_params`` and
        ``num_warmup`` steps of burn-in. ``warmup_method="chees"`` samples with
        ``blackjax.dynamic_hmc``, ``"meads"`` with ``blackjax.ghmc``.
    num_chains, num_warmup, num_samples, thin : int
        ``thin`` kernel steps per kept draw.
    init : array, str or callable, optional
        Starting points (:func:`~jaxsamp.mcmc.starting_points`).
    warmup_method : {"window", "chees", "meads"}
    pool, dense : bool
        Window warm-up: pool the mass matrix across chains; adapt a dense one.
    chain_method : {"auto", "vectorized", "sequential"}
        Step the chains in lock-step (``jax.vmap``) or one after another inside
        the same compiled program (``lax.map``): the same transitions and keys,
        equal to float round-off, after which NUTS draws differ (equally valid).
        NUTS chains in lock-step each pay for the deepest tree of the step;
        one after another, each pays for its own. ``"auto"`` (the default) is
        ``"vectorized"`` on an accelerator; on a CPU it times the model's
        gradient at the starting points for every chain batched and one after
        another, and runs the chains in lock-step when batching is at least
        1.5 times faster (:mod:`jaxsamp.mcmc.chain_method`, measured across
        models in the ``chains`` benchmark suite); the choice is stored in a
        ``checkpoint`` folder and is :attr:`Posterior.chain_method`. Pass a
        method explicitly for draws that repeat bit for bit in another process.
        ChEES and MEADS warm-ups adapt across chains and are always vectorized.
    model_args, model_kwargs
        Data: a numpyro model's arguments (``model(*model_args,
        **model_kwargs)``), or a plain log density's arguments after the state
        (``model(x, *model_args)``; arrays and numbers, no ``model_kwargs``).
        The data's arrays are traced arguments of the compiled programs, not
        constants in them: a second call with new data values of the same
        shapes and dtypes compiles nothing (a numpyro model's other arguments,
        Python numbers and strings, are fixed in its compilation, as are arrays
        whose values it needs in Python: new values there compile again). A
        plain log density that closes over its data cannot have them traced:
        new data in a new closure compile everything again, so pass them as
        ``model_args``.
    progress : bool
    checkpoint : path, optional
        A folder for the warm-up's and the sampling's checkpoints: a killed
        call resumes there bit for bit. A folder written by another run is
        refused: the fingerprint covers the settings, the log density's
        computation with its parameters and data, and the starting points
        (:func:`jaxsamp.run`).
    strict : bool
        Raise :class:`RunHealthError` instead of warning when the run is unhealthy.
    **sampler_params
        ``target_acceptance``, ``max_num_doublings`` (NUTS),
        ``num_integration_steps`` (HMC), or a registered sampler's parameters.

    Returns
    -------
    Posterior

    Raises
    ------
    InputError
        Bad settings, ``model_args`` or ``model_kwargs`` (see
        :func:`as_model_target`), or starting points where every chain's log
        density is NaN/inf.

    Notes
    -----
    What a second call costs: the same model function (or :class:`Target`
    object) and settings reuse every compilation of the first call (target,
    starting points, warm-up, sampler, health check, constraining), with the
    same data or new data of the same shapes and dtypes (the log density is a
    :class:`jax.tree_util.Partial` whose leaves are the data,
    :attr:`Target.log_density <jaxsamp.core.target.Target.log_density>`). This
    holds for every warm-up method and every registered sampler: ChEES and MEADS
    run as a cached function of the log density and the starting points, and a
    registered sampler's kernel, with its chains and burn-in, is a
    :func:`~jaxsamp.core.compiled.cached_kernel` of the log density (and of
    tuned values such as MCLMC's step size), its settings static. New shapes,
    new settings, another function object (for a lattice sampler, another
    target object), or a closure over new data compile again.
    """
    num_chains = check_int("num_chains", num_chains, ge=1)
    num_warmup = check_int("num_warmup", num_warmup, ge=0)
    num_samples = check_int("num_samples", num_samples, ge=1)
    thin = check_int("thin", thin, ge=1)
    if chain_method != "auto" and chain_method not in CHAIN_METHODS:
        raise InputError(f"chain_method must be one of auto, {', '.join(CHAIN_METHODS)}, got {chain_method!r}")
    if warmup_method not in METHODS:
        raise InputError(f"warmup_method must be one of {', '.join(METHODS)}, got {warmup_method!r}")
    adapted = sampler in WINDOW_ALGORITHMS or warmup_method != "window"
    if not adapted:
        SAMPLERS.validate(sampler, sampler_params, skip=("target",))
    key = as_key("key", key)
    target = as_model_target(model, init, model_args, model_kwargs)
    k_init, k_warm, k_draw = jax.random.split(key, 3)
    positions = starting_points(target, k_init, num_chains, init)
    bad = check_starting_points(target, positions)
    folder = None if checkpoint is None else Path(checkpoint)
    gain = None
    if chain_method == "auto":
        chain_method, gain = choose_chain_method(target.log_density, positions, folder=folder,
                                                 gradient=not target.domain.is_discrete)
    settings = {"num_chains": num_chains, "num_warmup": num_warmup, "thin": thin, "warmup_method": warmup_method,
                "pool": pool, "dense": dense, "chain_method": chain_method, **sampler_params}
    options = {"progress": progress, "identity": _settings_identity(target, sampler, settings)}

    warm = None
    started = time.perf_counter()
    with _one_completed_warning(folder, num_samples):
        if adapted:
            if num_warmup == 0:
                raise InputError(f"{sampler} with warmup_method={warmup_method!r} needs num_warmup >= 20")
            algorithm = sampler if sampler in WINDOW_ALGORITHMS else "nuts"
            warm, _ = warmup(
                target.log_density, positions, k_warm, num_warmup, method=warmup_method, algorithm=algorithm,
                pool=pool, dense=dense, chain_method=chain_method,
                checkpoint=None if folder is None else folder / "warmup", **options, **sampler_params,
            )
            # blackjax's HMC and NUTS reject NaN proposals themselves: no guard_finite in their inner loop
            kernel = warm.sampling_kernel(target.log_density, thin=thin, guard=False, chain_method=chain_method)
            states = kernel.init(warm)
        else:
            single = SAMPLERS.get(sampler, target, **sampler_params)  # cached functions, the target's data as leaves
            kernel = cached_kernel(_chains, single, thin=thin, chain_method=chain_method)
            states = kernel.init(positions, k_warm)
            if num_warmup:
                burn = cached_kernel(_chains, single, thin=1, chain_method=chain_method)
                states, _ = run(burn.step, states, k_warm, num_warmup, desc="burn-in", health=False,
                                checkpoint=None if folder is None else folder / "burn_in", **options)
        jax.block_until_ready(states)
        seconds = {"warmup": time.perf_counter() - started}
        started = time.perf_counter()
        start, initial = position_of(states), states
        states, (draws, info) = run(
            kernel.step, states, k_draw, num_samples, trace=_draw_trace, health=False,  # _health checks more
            desc="sampling", checkpoint=None if folder is None else folder / "sampling", **options,
        )
    jax.block_until_ready(states)
    seconds["sampling"] = time.perf_counter() - started
    positions_cd = jnp.swapaxes(draws, 0, 1)  # (chains, draws, d)
    info = {k: np.asarray(jnp.swapaxes(v, 0, 1)) for k, v in info.items()}
    nonfinite = info.pop("rejected_nonfinite", None)
    previous = jnp.concatenate([jnp.asarray(start)[:, None], positions_cd[:, :-1]], axis=1)
    moved = np.asarray(jnp.any((positions_cd != previous).reshape(num_chains, num_samples, -1), axis=-1)).sum(0)
    posterior = Posterior(_constrained(target, positions_cd), positions_cd, info, warm, target, seconds)
    posterior.chain_method, posterior.batching_gain = chain_method, gain
    posterior.warnings = _health(
        posterior, start, position_of(states), bad, moved, None if nonfinite is None else nonfinite.sum(0)
    ) + chain_health.chain_warnings(initial, states, num_samples, check_start=False, check_moved=False)
    for w in posterior.warnings:
        if strict:
            raise RunHealthError(w, "inspect posterior.warmup and the draws; more warm-up or another sampler may help")
        warnings.warn(w, RunHealthWarning, stacklevel=2)
    return posterior


@contextlib.contextmanager
def _one_completed_warning(folder, num_samples: int):
    """One :class:`~jaxsamp.core.checkpoint.CompletedRunWarning` for a whole run found complete in ``folder``.

    Each phase (warm-up or burn-in, then sampling) checkpoints in its own sub-folder and the driver warns for each
    one that holds all its steps: a finished run re-run would say so once per phase, and a run resumed in its
    sampling phase would be told its warm-up was done. Inside the block those warnings are held back; one is
    issued, naming the folder, when the sampling phase was complete. Every other warning passes through.
    """
    if folder is None:
        yield
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    completed = False
    for w in caught:
        if issubclass(w.category, ckpt.CompletedRunWarning):
            held = re.match(r"checkpoint folder (.+?) already holds", str(w.message))
            completed = completed or (held is not None and Path(held.group(1)).name == "sampling")
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
    if completed:
        warnings.warn(f"checkpoint folder {folder} already holds this whole run (warm-up and all {num_samples} draws "
                      "per chain): the stored draws are returned, nothing is recomputed (another folder, or deleting "
                      "this one, runs it again)", ckpt.CompletedRunWarning, stacklevel=3)


def _health(posterior: Posterior, start, end, bad_starts: int, moved, nonfinite) -> list[str]:
    """The run's health warnings: starts, stuck chains, acceptance, NaN proposals, divergences, R-hat."""
    acceptance = posterior.info.get("acceptance_rate")
    out = health.initial_warnings(bad_starts, posterior.num_chains) + health.chain_warnings(
        num_chains=posterior.num_chains,
        start=np.asarray(start),
        end=np.asarray(end),
        moved=moved,
        acceptance=None if acceptance is None else np.nanmean(acceptance, axis=0),
        nonfinite=nonfinite,
        metropolis=True,
        continuous=not posterior.target.domain.is_discrete,  # a discrete chain may return to its start
    )
    if posterior.num_divergences:
        out.append(
            f"{posterior.num_divergences} divergent transitions after warm-up "
            f"({100 * posterior.num_divergences / (posterior.num_chains * posterior.num_samples):.2g}% of draws)"
        )
    if posterior.num_chains > 1 and posterior.num_samples >= 4:
        from jaxsamp.diagnostics.mcmc import r_hat_and_ess_bulk

        out += health.convergence_warnings(*r_hat_and_ess_bulk(posterior.positions), posterior.num_chains)
    return out
