"""Multi-chain warm-up that hands over its states and its adapted parameters.

Every chain is warmed up at once and the result, a :class:`Warmup`, holds the
warmed-up states of all chains and the adapted parameters as a PyTree you can
inspect, save, and pass on: ``warm.sampling_kernel(log_prob)`` is the kernel
that samples with them (``kernel.init(warm)`` starts it).

* ``window`` -- Stan's windowed adaptation (Stan Development Team, *Stan
  Reference Manual*, "HMC algorithm parameters"; Hoffman & Gelman 2014, Sec.
  3.2) on every chain at once: dual averaging of the step size, then doubling
  slow windows that estimate the (diagonal or dense) inverse mass matrix, then a
  final fast window. It runs through :func:`jaxsamp.run` one MCMC step at a
  time, so a warm-up shows progress, writes checkpoints and resumes bit for bit.
  With ``pool=True`` the mass-matrix estimate at the end of each slow window is
  pooled across chains (Welford states combined with the parallel formula of
  Chan, Golub & LeVeque 1979), which is what many short chains need; the step
  sizes stay per chain. The building blocks are blackjax's
  (``mass_matrix_adaptation``, ``dual_averaging_adaptation``, ``build_schedule``
  and the kernels); this module holds the schedule loop and the pooling.
* ``chees`` -- ChEES-HMC (Hoffman, Radul & Sountsov 2021, AISTATS) through
  ``blackjax.chees_adaptation``: step size and jittered trajectory length shared
  by all chains, for GPU-sized ensembles; samples with ``blackjax.dynamic_hmc``.
* ``meads`` -- MEADS (Hoffman & Sountsov 2022, AISTATS) through
  ``blackjax.meads_adaptation``: generalised HMC with cross-chain step size,
  preconditioning and damping; samples with ``blackjax.ghmc``.

blackjax runs ChEES and MEADS as one compiled loop with no intermediate state,
so through the driver they are a single step: the finished warm-up is
checkpointed and a resumed run does not repeat it, but a warm-up killed midway
restarts.

The window warm-up's and the sampling kernel's functions are built once per
setting (cached) and take the log density as an argument: a kernel is their
:class:`jax.tree_util.Partial` with the log density bound, which the driver
passes to its compiled chunk as a traced argument, so a log density whose data
are leaves (a numpyro model's, :attr:`jaxsamp.core.target.Target.log_density`)
shares one compilation with every other data set of the same shapes. ChEES's
and MEADS's one driver step is the same kind of function
(:func:`~jaxsamp.core.compiled.cached_function`), with the log density and the
starting points bound.

Where the chains start (:func:`starting_points`): the user's positions (one
state for all chains, jittered, or one per chain), ``N(0, scale^2 I)`` draws, the
model's prior (numpyro models), or any ``init(key, n)`` callable, e.g. a
variational fit's sampler.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
import optax
from blackjax.adaptation.mass_matrix import (
    MassMatrixAdaptationState,
    WelfordAlgorithmState,
    mass_matrix_adaptation,
)
from blackjax.adaptation.step_size import dual_averaging_adaptation
from blackjax.adaptation.window_adaptation import WindowAdaptationState, build_schedule
from blackjax.mcmc.dynamic_hmc import halton_sequence
from flax import struct
from jax.flatten_util import ravel_pytree
from jax.tree_util import Partial

from jaxsamp.core.combinators import guard_finite, over_chains
from jaxsamp.core.compiled import as_partial, batched, cached_function
from jaxsamp.core.combinators import thin as thin_kernel
from jaxsamp.core.driver import run
from jaxsamp.core.errors import InputError
from jaxsamp.core.protocols import Kernel
from jaxsamp.core.validation import check_array, check_float, check_int

#: The HMC-family algorithms the window warm-up adapts.
WINDOW_ALGORITHMS = {"nuts": blackjax.nuts, "hmc": blackjax.hmc}
#: Warm-up methods and the sampler each one tunes.
#: The window algorithms' own parameters, fixed during the warm-up.
_WINDOW_FIXED = {"nuts": ("max_num_doublings",), "hmc": ("num_integration_steps",)}
METHODS = {"window": "nuts or hmc", "chees": "dynamic_hmc", "meads": "ghmc"}


@struct.dataclass
class Warmup:
    """A finished warm-up: what the sampling phase starts from.

    A PyTree whose leaves are the states and the adapted parameters; the method,
    the algorithm and the discrete settings are static (part of the tree's
    structure), so a Warmup can be saved leaf by leaf, restored with its treedef,
    vmapped and passed on.

    Attributes
    ----------
    states : PyTree
        The warmed-up sampler states of all chains (leading chain axis).
    parameters : dict of arrays
        The adapted parameters. ``window``: ``step_size`` (one per chain) and
        ``inverse_mass_matrix`` (per chain; identical across chains when
        pooled). ``chees``: shared ``step_size``, ``inverse_mass_matrix`` and
        ``num_leapfrog_steps``. ``meads``: shared ``step_size``,
        ``momentum_inverse_scale``, ``alpha``, ``delta``.
    method : str
        ``window``, ``chees`` or ``meads``.
    algorithm : str
        What the window warm-up adapted: ``nuts`` or ``hmc``.
    static : tuple of (name, int)
        Discrete settings: ``max_num_doublings`` (NUTS), ``num_integration_steps``
        (HMC), ``halton_bits`` (the length of ChEES's jitter sequence).
    """

    states: Any
    parameters: dict
    method: str = struct.field(pytree_node=False, default="window")
    algorithm: str = struct.field(pytree_node=False, default="nuts")
    static: tuple = struct.field(pytree_node=False, default=())

    def sampling_kernel(self, logdensity_fn: Callable, thin: int = 1, guard: bool = True,
                        chain_method: str = "vectorized") -> Kernel:
        """The kernel that samples with these parameters: :func:`sampling_kernel` for this warm-up."""
        return sampling_kernel(self.method, logdensity_fn, self.algorithm, thin, guard, self.static, chain_method)


class WindowWarmupState(NamedTuple):
    """State of the window warm-up between driver steps."""

    chains: Any  # blackjax HMCState with a leading chain axis
    adaptation: WindowAdaptationState  # one per chain
    step: jax.Array  # warm-up steps done (indexes the schedule)


class WarmupInfo(NamedTuple):
    """What one warm-up step did, per chain (``num_integration_steps``: its gradient evaluations)."""

    acceptance_rate: jax.Array
    is_divergent: jax.Array
    step_size: jax.Array
    num_integration_steps: jax.Array


# --------------------------------------------------------------------------
# where the chains start
# --------------------------------------------------------------------------


def starting_points(target, key, num_chains: int, init=None, *, scale: float = 1.0, jitter: float = 0.1):
    """``num_chains`` starting positions for ``target``, shape ``(num_chains, *event_shape)``.

    Parameters
    ----------
    target : Target
    key : PRNG key
    num_chains : int
    init : array, str or callable, optional
        ``None``: the target's own rule when it has one (``init_positions``:
        numpyro's uniform initialisation for numpyro models), uniform states for
        discrete domains and the sphere, else ``N(0, scale^2 I)``; ``"normal"``: ``N(0, scale^2
        I)``; ``"prior"``: the model's prior (numpyro models); an array of
        shape ``event_shape`` (every chain starts there plus ``jitter`` times
        ``N(0, I)``) or ``(num_chains, *event_shape)`` (used as given); a
        callable ``init(key, n)`` returning ``(n, *event_shape)`` positions (for
        example a variational fit's sampler).
    scale, jitter : float

    Raises
    ------
    InputError
        Positions of the wrong shape or with NaN/inf entries, or an unknown rule.
    """
    num_chains = check_int("num_chains", num_chains, ge=1)
    shape = (num_chains, *target.event_shape)
    kind = target.domain.kind
    if init is None and hasattr(target, "init_positions"):
        positions = target.init_positions(key, num_chains)
    elif init is None and kind == "spin":
        positions = jnp.where(jax.random.bernoulli(key, 0.5, shape), 1.0, -1.0)
    elif init is None and kind == "categorical":
        positions = jax.random.randint(key, shape, 0, target.domain.num_categories)
    elif init is None and kind == "sphere":
        positions = jax.random.normal(key, shape)
        positions = positions / jnp.linalg.norm(positions, axis=-1, keepdims=True)
    elif init is None or (isinstance(init, str) and init == "normal"):
        positions = check_float("scale", scale, gt=0) * jax.random.normal(key, shape)
    elif isinstance(init, str) and init == "prior":
        if not hasattr(target, "sample_prior"):
            raise InputError(f"init='prior' needs a model with a prior (a numpyro model); {target.name} has none")
        positions = target.sample_prior(key, num_chains)
    elif isinstance(init, str):
        raise InputError(f"init must be 'normal', 'prior', an array or a callable, got {init!r}")
    elif callable(init):
        positions = jnp.asarray(init(key, num_chains))
    else:
        if np.iscomplexobj(check_array("init", init, finite=False)):
            raise InputError("init must be real positions, got a complex array", "pass init.real if that is what you mean")
        positions = jnp.asarray(init, dtype=jnp.result_type(float))
        if positions.shape == tuple(target.event_shape):
            positions = positions + check_float("jitter", jitter, ge=0) * jax.random.normal(key, shape)
    if tuple(positions.shape) != shape:
        raise InputError(
            f"starting points must have shape {shape} (or one state {tuple(target.event_shape)}), "
            f"got {tuple(positions.shape)}"
        )
    if not bool(jnp.all(jnp.isfinite(positions))):
        raise InputError("starting points must be finite")
    return positions


# --------------------------------------------------------------------------
# window warm-up (Stan), through the driver
# --------------------------------------------------------------------------


def _pool_welford(wc: WelfordAlgorithmState) -> WelfordAlgorithmState:
    """One Welford state from per-chain ones (leading chain axis): Chan, Golub & LeVeque's parallel formula."""
    n = wc.sample_size.astype(wc.mean.dtype)  # (M,)
    total = jnp.sum(n)
    mean = jnp.sum(n[:, None] * wc.mean, axis=0) / total
    delta = wc.mean - mean  # (M, d)
    if wc.m2.ndim == 2:  # diagonal
        m2 = jnp.sum(wc.m2, axis=0) + jnp.sum(n[:, None] * delta**2, axis=0)
    else:
        m2 = jnp.sum(wc.m2, axis=0) + jnp.einsum("c,ci,cj->ij", n, delta, delta)
    return WelfordAlgorithmState(mean, m2, jnp.sum(wc.sample_size))


def window_warmup_kernel(
    logdensity_fn: Callable,
    num_steps: int,
    *,
    algorithm: str = "nuts",
    pool: bool = False,
    dense: bool = False,
    target_acceptance: float = 0.8,
    initial_step_size: float = 1.0,
    chain_method: str = "vectorized",
    **fixed,
) -> Kernel:
    """Stan's windowed adaptation of all chains as a driver kernel (see the module docstring).

    ``init(positions)`` takes positions with a leading chain axis and returns a
    :class:`WindowWarmupState`; ``step(key, state)`` is one MCMC step of every
    chain followed by one adaptation update; infos are :class:`WarmupInfo`.
    Finish with :func:`window_parameters`. ``fixed`` are the algorithm's other
    parameters (``max_num_doublings`` for NUTS, ``num_integration_steps`` for HMC).
    ``chain_method`` steps the chains in lock-step or one after another
    (:func:`~jaxsamp.core.combinators.over_chains`): the same transitions, to float round-off.

    The kernel's ``init`` and ``step`` are :class:`jax.tree_util.Partial` s of
    functions built once per setting (cached) with ``logdensity_fn`` bound as
    their argument (:func:`~jaxsamp.core.compiled.as_partial`): the driver
    compiles one warm-up for every log density of the same function and data
    shapes, whatever the data values (a plain function counts by identity).
    """
    init, step = _window_warmup(num_steps, algorithm, pool, dense, target_acceptance, initial_step_size,
                                chain_method, tuple(sorted(fixed.items())))
    logdensity = as_partial(logdensity_fn)
    return Kernel(Partial(init, logdensity), Partial(step, logdensity))


@functools.lru_cache(maxsize=64)
def _window_warmup(num_steps, algorithm, pool, dense, target_acceptance, initial_step_size, chain_method, fixed):
    """:func:`window_warmup_kernel`'s ``init(logdensity_fn, positions)`` and ``step(logdensity_fn, key, state)``, cached on the settings."""
    fixed = dict(fixed)
    if algorithm not in WINDOW_ALGORITHMS:
        raise InputError(f"algorithm must be one of {', '.join(WINDOW_ALGORITHMS)}, got {algorithm!r}")
    num_steps = check_int("num_steps", num_steps, ge=20)
    check_float("target_acceptance", target_acceptance, gt=0, lt=1)
    check_float("initial_step_size", initial_step_size, gt=0)
    sampler = WINDOW_ALGORITHMS[algorithm]
    mcmc_kernel = sampler.build_kernel()
    mm_init, mm_update, mm_final = mass_matrix_adaptation(not dense)
    da_init, da_update, da_final = dual_averaging_adaptation(target_acceptance)
    schedule = jnp.asarray(build_schedule(num_steps), dtype=jnp.int32)

    def init(logdensity_fn, positions, rng_key=None):
        chains = jax.vmap(lambda x: sampler.init(x, logdensity_fn))(positions)
        dim = ravel_pytree(jax.tree.map(lambda a: a[0], positions))[0].shape[0]
        imm_state = mm_init(dim)
        one = WindowAdaptationState(
            da_init(initial_step_size), imm_state, jnp.float32(initial_step_size), imm_state.inverse_mass_matrix
        )
        n = jax.tree.leaves(positions)[0].shape[0]
        return WindowWarmupState(chains, jax.tree.map(lambda a: jnp.broadcast_to(a, (n, *jnp.shape(a))), one), jnp.int32(0))

    def adapt(adaptation, position, acceptance, slow):
        ss = da_update(adaptation.ss_state, acceptance)
        imm_state = jax.lax.cond(slow, lambda: mm_update(adaptation.imm_state, position), lambda: adaptation.imm_state)
        return WindowAdaptationState(ss, imm_state, jnp.exp(ss.log_step_size), adaptation.inverse_mass_matrix)

    def restart_step_size(adaptation, imm_state):
        ss = da_init(da_final(adaptation.ss_state))
        return WindowAdaptationState(ss, imm_state, jnp.exp(ss.log_step_size), imm_state.inverse_mass_matrix)

    def end_window(adaptation):
        if pool:
            previous = adaptation.imm_state.inverse_mass_matrix[0]
            pooled = mm_final(MassMatrixAdaptationState(previous, _pool_welford(adaptation.imm_state.wc_state)))
            n = adaptation.step_size.shape[0]
            imm_states = jax.tree.map(lambda a: jnp.broadcast_to(a, (n, *jnp.shape(a))), pooled)
        else:
            imm_states = jax.vmap(mm_final)(adaptation.imm_state)
        return jax.vmap(restart_step_size)(adaptation, imm_states)

    def step(logdensity_fn, rng_key, state):
        stage = schedule[jnp.minimum(state.step, num_steps - 1)]
        keys = jax.random.split(rng_key, jax.tree.leaves(state.chains.position)[0].shape[0])
        ad = state.adaptation
        chains, info = over_chains(
            lambda k, s, h, imm: mcmc_kernel(k, s, logdensity_fn, h, imm, **fixed), chain_method
        )(keys, state.chains, ad.step_size, ad.inverse_mass_matrix)
        flat = jax.vmap(lambda x: ravel_pytree(x)[0])(chains.position)
        ad = jax.vmap(adapt, in_axes=(0, 0, 0, None))(ad, flat, info.acceptance_rate, stage[0] == 1)
        ad = jax.lax.cond(stage[1] == 1, end_window, lambda a: a, ad)
        return (
            WindowWarmupState(chains, ad, state.step + 1),
            WarmupInfo(info.acceptance_rate, info.is_divergent, state.adaptation.step_size, info.num_integration_steps),
        )

    return init, step


def window_parameters(state: WindowWarmupState) -> dict:
    """The adapted parameters at the end of a window warm-up (per chain): averaged step size and mass matrix."""
    return {
        "step_size": jnp.exp(state.adaptation.ss_state.log_step_size_avg),
        "inverse_mass_matrix": state.adaptation.imm_state.inverse_mass_matrix,
    }


def _warmup_trace(state, info):
    return info


def _halton_bits(num_warmup: int, max_sampling_steps: int) -> int:
    """Bits of ChEES's Halton jitter sequence: enough for the warm-up and the sampling steps after it."""
    return int(np.ceil(np.log2(num_warmup + max_sampling_steps)))


# --------------------------------------------------------------------------
# ChEES and MEADS (blackjax), one driver step
# --------------------------------------------------------------------------


def _chees(logdensity_fn, positions, key, *, num_steps, target_acceptance, learning_rate, max_sampling_steps):
    num_chains = positions.shape[0]
    adaptation = blackjax.chees_adaptation(
        logdensity_fn, num_chains, target_acceptance_rate=target_acceptance, mass_matrix_estimation="diagonal"
    )
    (states, params), _ = adaptation.run(
        key, positions, 0.1, optax.adam(learning_rate), num_steps, max_sampling_steps=max_sampling_steps
    )
    parameters = {
        "step_size": params["step_size"],
        "inverse_mass_matrix": params["inverse_mass_matrix"],
        "num_leapfrog_steps": params["integration_steps_params"][0],
    }
    return states, parameters


#: blackjax's MEADS folds (``meads_adaptation``'s ``num_folds`` default): a fold's step size comes from another
#: fold's position spread, so each fold needs two chains or more (one chain has spread 0: NaN parameters).
MEADS_FOLDS = 4


def _meads(logdensity_fn, positions, key, *, num_steps):
    adaptation = blackjax.meads_adaptation(logdensity_fn, positions.shape[0])
    (states, params), _ = adaptation.run(key, positions, num_steps)
    return states, {k: params[k] for k in ("step_size", "momentum_inverse_scale", "alpha", "delta")}


# --------------------------------------------------------------------------
# the entry point and the sampling kernels
# --------------------------------------------------------------------------


def warmup(
    logdensity_fn: Callable,
    positions,
    key,
    num_steps: int = 1000,
    *,
    method: str = "window",
    algorithm: str = "nuts",
    pool: bool = False,
    dense: bool = False,
    target_acceptance: float | None = None,
    initial_step_size: float = 1.0,
    learning_rate: float = 0.025,
    max_sampling_steps: int = 1000,
    chain_method: str = "vectorized",
    progress: bool = True,
    checkpoint=None,
    identity: str | None = None,
    **fixed,
) -> tuple[Warmup, Any]:
    """Warm up every chain at once; return the :class:`Warmup` and the warm-up trace.

    Parameters
    ----------
    logdensity_fn : callable
        Log density of one flat state.
    positions : array, shape (num_chains, d)
        Starting points (:func:`starting_points`).
    key : PRNG key
    num_steps : int
        Warm-up steps per chain (at least 20 for ``window``).
    method : {"window", "chees", "meads"}
        MEADS needs a multiple of 4 chains, at least 8 (:data:`MEADS_FOLDS`).
    algorithm : {"nuts", "hmc"}
        What the window warm-up adapts (ignored by ChEES and MEADS).
    pool : bool
        Window warm-up: pool the mass-matrix estimate across chains.
    dense : bool
        Window warm-up: adapt a dense inverse mass matrix.
    target_acceptance : float, optional
        Default 0.8 (window), blackjax's 0.651 (ChEES); MEADS has none.
    initial_step_size : float
        Where the window warm-up's dual averaging starts.
    learning_rate : float
        Adam learning rate of ChEES's trajectory-length optimisation.
    max_sampling_steps : int
        ChEES: the sampling steps its jitter sequence must cover.
    chain_method : {"vectorized", "sequential"}
        Window warm-up: chains in lock-step or one after another
        (:func:`~jaxsamp.core.combinators.over_chains`). ChEES and MEADS adapt
        across chains and are always vectorized.
    progress, checkpoint, identity
        Passed to :func:`jaxsamp.run`.
    **fixed
        The window algorithm's other parameters (``max_num_doublings``,
        ``num_integration_steps``).

    Returns
    -------
    Warmup
        The warmed-up states and the adapted parameters.
    trace : WarmupInfo or None
        Per step and chain (``window`` only).
    """
    options = {"progress": progress, "checkpoint": checkpoint, "identity": identity, "desc": f"warm-up ({method})"}
    own = {"window": ("target_acceptance", "initial_step_size", *_WINDOW_FIXED.get(algorithm, ())),
           "chees": ("target_acceptance", "initial_step_size", "learning_rate", "max_sampling_steps"), "meads": ()}
    unknown = sorted(set(fixed) - set(own.get(method, ())))
    if unknown:
        raise InputError(
            f"{algorithm if method == 'window' else method} warm-up: unknown parameter {unknown[0]!r}; "
            f"accepted: {', '.join(own.get(method, ())) or 'none'}"
        )
    if method == "window":
        if algorithm == "hmc":
            fixed.setdefault("num_integration_steps", 10)
        fixed = {k: check_int(k, v, ge=1) for k, v in fixed.items()}
        kernel = window_warmup_kernel(
            logdensity_fn, num_steps, algorithm=algorithm, pool=pool, dense=dense,
            target_acceptance=0.8 if target_acceptance is None else target_acceptance,
            initial_step_size=initial_step_size, chain_method=chain_method, **fixed,
        )
        state, trace = run(kernel.step, batched(kernel.init, 0)(positions), key, num_steps, trace=_warmup_trace,
                           health=False, **options)
        result = Warmup(state.chains, window_parameters(state), "window", algorithm, tuple(sorted(fixed.items())))
        return result, trace
    if method == "chees":
        target = 0.651 if target_acceptance is None else check_float("target_acceptance", target_acceptance, gt=0, lt=1)
        settings = {"num_steps": num_steps, "target_acceptance": target, "learning_rate": learning_rate,
                    "max_sampling_steps": max_sampling_steps}
        static = (("halton_bits", _halton_bits(num_steps, max_sampling_steps)),)
    elif method == "meads":
        chains = jax.tree.leaves(positions)[0].shape[0]
        if chains % MEADS_FOLDS or chains < 2 * MEADS_FOLDS:
            raise InputError(
                f"MEADS splits the chains into {MEADS_FOLDS} folds and sets each fold's step size from another "
                f"fold's spread, which needs at least 2 chains per fold: a multiple of {MEADS_FOLDS}, at least "
                f"{2 * MEADS_FOLDS}; got {chains} chains", f"num_chains={max(2 * MEADS_FOLDS, -(-chains // MEADS_FOLDS) * MEADS_FOLDS)}",
            )
        settings, static = {"num_steps": num_steps}, ()
    else:
        raise InputError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    adapt = functools.partial(_ADAPTATIONS[method], logdensity_fn, **settings)
    states, parameters = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), jax.eval_shape(adapt, positions, key))
    # the log density and the starting points are traced arguments: new data of the same shapes compile nothing
    step = cached_function(_one_shot, logdensity_fn, positions, method=method, **settings)
    result, _ = run(step, Warmup(states, parameters, method, algorithm, static), key, 1, health=False, **options)
    return result, None


#: The blackjax adaptations run in one driver step, by warm-up method.
_ADAPTATIONS = {"chees": _chees, "meads": _meads}


def _one_shot(logdensity_fn: Callable, positions, *, method: str, **settings) -> Callable:
    """A driver step that runs a whole blackjax adaptation (ChEES, MEADS) from ``positions`` and returns its :class:`Warmup`.

    Made by :func:`~jaxsamp.core.compiled.cached_function` in each trace, with
    the log density and the positions traced, so it is compiled once per
    method, settings and shapes.
    """

    def step(key, warm: Warmup):
        states, parameters = _ADAPTATIONS[method](logdensity_fn, positions, key, **settings)
        return warm.replace(states=states, parameters=parameters), None

    return step


class TunedState(NamedTuple):
    """The sampling phase's state: the chains' sampler states and the warm-up's parameters.

    The parameters travel in the state (not in the step function), so the
    compiled sampling step is reused by every call with the same settings.
    """

    chains: Any
    parameters: dict

    @property
    def position(self):
        return self.chains.position

    @property
    def logdensity(self):
        """The chains' log densities (read by the end-of-run check, :mod:`jaxsamp.core.chain_health`)."""
        return self.chains.logdensity


def sampling_kernel(
    method: str,
    logdensity_fn: Callable,
    algorithm: str = "nuts",
    thin: int = 1,
    guard: bool = True,
    static: tuple = (),
    chain_method: str = "vectorized",
) -> Kernel:
    """The batched kernel that samples with a warm-up's parameters (per chain for ``window``).

    Parameters
    ----------
    method : {"window", "chees", "meads"}
    logdensity_fn : callable
    algorithm : {"nuts", "hmc"}
        The window warm-up's algorithm.
    thin : int
        Kernel steps per returned step (:func:`~jaxsamp.core.thin`).
    guard : bool
        Wrap each chain's kernel in :func:`~jaxsamp.core.guard_finite` (infos
        are then ``GuardInfo`` with ``moved`` and ``rejected_nonfinite``).
    static : tuple of (name, int)
        ``Warmup.static``; :meth:`Warmup.sampling_kernel` passes it.
    chain_method : {"vectorized", "sequential"}
        Chains in lock-step (``jax.vmap``) or one after another (``lax.map``,
        :func:`~jaxsamp.core.combinators.over_chains`): the same transitions, to float round-off.

    Returns
    -------
    Kernel
        ``init(warmup)`` takes a :class:`Warmup` and returns a :class:`TunedState`;
        ``step(key, state)`` moves every chain, chain ``c`` with
        ``jax.random.split(key, n)[c]``. The step is a :class:`jax.tree_util.Partial`
        of a function built once per setting (cached, however the arguments are
        passed) with ``logdensity_fn`` bound as its argument, so repeated runs with
        the same settings and a log density of the same function and data shapes
        compile once, whatever the data values.
    """
    init, step = _sampling_kernel(method, algorithm, thin, guard, static, chain_method)
    return Kernel(init, Partial(step, as_partial(logdensity_fn)))


@functools.lru_cache(maxsize=64)
def _sampling_kernel(method, algorithm, thin, guard, static, chain_method):
    """:func:`sampling_kernel`'s ``init(warmup)`` and ``step(logdensity_fn, key, state)``, cached on the settings."""
    if method not in METHODS:
        raise InputError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    thin = check_int("thin", thin, ge=1)

    settings = dict(static)

    def wrap(kernel: Kernel) -> Kernel:
        kernel = thin_kernel(kernel, thin) if thin > 1 else kernel
        return guard_finite(kernel) if guard else kernel

    def one_chain(logdensity_fn, parameters) -> Kernel:
        """Chain's kernel for one chain's parameters (traced values inside the vmap)."""
        if method == "window":
            sampler = WINDOW_ALGORITHMS[algorithm]
            mcmc_kernel = sampler.build_kernel()
            return wrap(Kernel(
                lambda x, rng_key=None: sampler.init(x, logdensity_fn),
                lambda k, s: mcmc_kernel(k, s, logdensity_fn, parameters["step_size"],
                                         parameters["inverse_mass_matrix"], **settings),
            ))
        if method == "chees":
            bits = settings["halton_bits"]
            algo = blackjax.dynamic_hmc(
                logdensity_fn,
                parameters["step_size"],
                parameters["inverse_mass_matrix"],
                next_random_arg_fn=lambda i: i + 1,
                integration_steps_fn=lambda i, n: jnp.asarray(jnp.ceil(halton_sequence(i, bits) * n), dtype=int),
                integration_steps_params=(parameters["num_leapfrog_steps"],),
            )
        else:
            algo = blackjax.ghmc(logdensity_fn, **parameters)
        return wrap(Kernel(algo.init, algo.step))

    def init(warm: Warmup, rng_key=None) -> TunedState:
        return TunedState(warm.states, warm.parameters)

    def step(logdensity_fn, rng_key, state: TunedState):
        n = jax.tree.leaves(state.chains.position)[0].shape[0]
        keys = jax.random.split(rng_key, n)
        if method == "window":  # window parameters have a chain axis
            chains, info = over_chains(lambda k, s, p: one_chain(logdensity_fn, p).step(k, s), chain_method)(
                keys, state.chains, state.parameters)
        else:
            chains, info = over_chains(lambda k, s: one_chain(logdensity_fn, state.parameters).step(k, s),
                                       chain_method)(keys, state.chains)
        return TunedState(chains, state.parameters), info

    return init, step


__all__ = [
    "METHODS", "WINDOW_ALGORITHMS", "TunedState", "Warmup", "WarmupInfo", "WindowWarmupState", "sampling_kernel",
    "starting_points", "warmup", "window_parameters", "window_warmup_kernel",
]
