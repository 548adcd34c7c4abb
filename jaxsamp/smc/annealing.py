"""AIS and SMC along an :class:`~jaxsamp.core.target.AnnealingPath`, as a kernel over temperature levels.

Annealed importance sampling (Neal 2001, "Annealed importance sampling",
Statistics and Computing 11, eqs. 2-3) and sequential Monte Carlo samplers (Del
Moral, Doucet & Jasra 2006, JRSS B 68, Sec. 3.3) share one step, from level
``t`` to level ``t'``:

1. reweight: ``log w_i += log pi_{t'}(x_i) - log pi_t(x_i)``;
2. resample (SMC only) when ``ESS < ess_threshold``, with a blackjax resampler,
   adding ``log mean_i w_i`` to the running log-normaliser and resetting ``w = 1``;
3. move every particle with ``num_mcmc_steps`` steps of an inner kernel that
   leaves ``pi_{t'}`` invariant (any :class:`~jaxsamp.core.Kernel`: blackjax
   MALA/HMC for continuous paths, :mod:`jaxsamp.mcmc.discrete` for lattices).

``log Z_1 ≈ log Z_0 + sum_{resamplings} log mean w + log mean w_final`` is an
unbiased estimate of ``Z_1`` (not of ``log Z_1``) for a fixed schedule (Del Moral
2004; Neal 2001 for AIS). The next temperature is either read from a fixed
schedule or chosen by bisection on the conditional ESS
(:mod:`jaxsamp.smc.tempering`).

**Transitions and segments.** ``smc(..., transition=...)`` moves the particles
from ``t`` to ``t'`` with a forward kernel before the reweighting, and reweights
by the transition's exact incremental weight ``pi_{t'}(x') B(x | x') / (pi_t(x)
F(x' | x))`` instead of ``pi_{t'}(x) / pi_t(x)`` (Del Moral, Doucet & Jasra 2006,
Sec. 3; :mod:`jaxsamp.smc.transitions`): a learned transport (SCLD, CMCD) then runs
as SMC, resampled and moved like tempered SMC. With ``segment_length = K`` the
resampling and the inner-kernel moves happen only at levels that are multiples of
``K`` and at the last level (the sub-trajectory boundaries of SCLD, Chen et al.,
ICLR 2025); in between the weights accumulate. ``SMCInfo.log_Z_increment`` is
``log sum_i W_i w_i`` of each level (``W`` the normalised weights before it, ``w``
its incremental weights); over the active levels these sum to the run's ``log Z``
estimate minus ``log Z_0``.

Because :func:`smc` is a :class:`~jaxsamp.core.Kernel` whose step advances one
level, it runs through :func:`jaxsamp.core.run` (jitted scan, checkpoints,
resume) and :func:`jaxsamp.core.ensemble` turns it into many independent SMC
runs. :func:`anneal` is the one-call convenience; :func:`run_smc` runs a kernel built once, again and again,
compiling once (what :meth:`jaxsamp.Fitted.smc` does).

**Sharded particles.** Every cross-particle quantity (the weights' log-sum-exp, the
ESS, the conditional ESS of the adaptive bisection, the resampling's cumulative sum
and the gather of the chosen ancestors) is an ordinary ``jnp`` operation on the
global particle arrays, so :func:`jaxsamp.core.shard` places the particles (and
their log-weights) on a device mesh and XLA lowers those operations to
collectives: resampling draws from the global weights by global particle index,
the bisection uses the global ESS, and log Z is reduced over all devices. The
per-particle move runs where its particle lives. ``anneal(..., mesh=...)`` does this;
the keys depend on the particle index only, so a sharded run draws what an
unsharded one does (its sums differ only in floating-point reduction order).

**Counting target evaluations.** One target evaluation is one evaluation, for one
particle, of ``log pi_t`` (with or without its gradient) or of the lattice
``flip_log_ratios``. Every level reports in ``SMCInfo.num_target_evals`` the total
over particles of: the reweighting (1 per particle when ``d/dt log pi_t`` does
not depend on ``t`` -- geometric and lattice paths, where ``log pi_{t'} - log
pi_t = (t' - t) d/dt log pi_t`` -- else 2, plus the bisection's calls when the
schedule is adaptive) or the transition's own count, the inner kernel's
initialisation at the new level (``evals_per_init``) and its steps
(``evals_of_info``).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import blackjax.smc.resampling as resampling
import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core.combinators import num_chains, position_of
from jaxsamp.core.driver import run
from jaxsamp.core.sharding import shard
from jaxsamp.core.errors import InputError, RunHealthError
from jaxsamp.core.protocols import Kernel, WeightedSamples
from jaxsamp.core.target import AnnealingPath
from jaxsamp.core.validation import check_int
from jaxsamp.smc.tempering import next_temperature

_lse = jax.scipy.special.logsumexp

RESAMPLERS = {
    "systematic": resampling.systematic,
    "stratified": resampling.stratified,
    "multinomial": resampling.multinomial,
    "residual": resampling.residual,
}


class SMCState(NamedTuple):
    """The particle system at one temperature.

    Attributes
    ----------
    position : PyTree
        Particles, leading axis ``n``.
    log_w : array (n,)
        Importance log-weights accumulated since the last resampling.
    log_Z_resampled : scalar
        ``sum log mean_i w_i`` over past resamplings (the part of the
        log-normaliser estimate already cashed in).
    t : scalar
        Current temperature in ``[0, 1]``.
    level : int32
        Number of levels done.
    """

    position: Any
    log_w: jax.Array
    log_Z_resampled: jax.Array
    t: jax.Array
    level: jax.Array


class SMCInfo(NamedTuple):
    """What one level did (zeros and ``active = False`` once ``t = 1``).

    Attributes
    ----------
    t : scalar
        Temperature reached.
    ess : scalar
        Normalised ESS ``(sum w)^2 / (n sum w^2)`` after reweighting, before any resampling.
    resampled : bool
    acceptance_rate : scalar
        Mean acceptance of the inner kernel (NaN if its info has none).
    num_target_evals : int32
        Target evaluations of this level, summed over particles (module docstring).
    active : bool
        False for a step taken after the path was finished (a no-op).
    log_Z_increment : scalar
        ``log sum_i W_i w_i``: ``W`` the normalised weights before the level, ``w``
        its incremental weights (0 when inactive). Summed over the active levels
        it is the run's ``log Z`` estimate minus ``path.log_Z0``.
    """

    t: jax.Array
    ess: jax.Array
    resampled: jax.Array
    acceptance_rate: jax.Array
    num_target_evals: jax.Array
    active: jax.Array
    log_Z_increment: jax.Array


def inner_target_evals(info) -> jax.Array:
    """Target evaluations of one inner-kernel step, read from its info.

    ``info.num_target_evals`` (jaxsamp kernels), else ``info.num_integration_steps``
    (blackjax HMC/NUTS: one gradient per leapfrog step), else 1 (MALA, RMH,
    MCLMC: one evaluation per step).
    """
    for name in ("num_target_evals", "num_integration_steps"):
        if hasattr(info, name):
            return jnp.asarray(getattr(info, name), jnp.int32)
    return jnp.int32(1)


def _acceptance(info) -> jax.Array:
    return jnp.asarray(getattr(info, "acceptance_rate", jnp.nan), jnp.float32)


def affine_in_t(path: AnnealingPath, example) -> bool:
    """Whether ``path.dlog_prob_dt(x, t)`` ignores ``t`` (then ``log pi_t`` is affine in ``t``).

    Decided at trace time from the jaxpr of ``dlog_prob_dt`` at an abstract
    ``example`` state: True when the ``t`` input feeds no operation. Geometric
    and lattice paths are affine; a derivative computed through a function that
    receives ``t`` is conservatively treated as not affine.
    """
    spec = jax.tree.map(lambda a: jax.ShapeDtypeStruct(jnp.shape(a), jnp.result_type(a)), example)
    closed = jax.make_jaxpr(path.dlog_prob_dt)(spec, jax.ShapeDtypeStruct((), jnp.float32))
    t_var = closed.jaxpr.invars[-1]  # after the state's leaves (a PyTree state has several)
    uses = [v for eqn in closed.jaxpr.eqns for v in eqn.invars] + list(closed.jaxpr.outvars)
    return not any(v is t_var for v in uses)


def path_member(path: AnnealingPath, t):
    """``pi_t`` as a :class:`~jaxsamp.core.target.Target` (``path.at(t)``), for building inner kernels.

    When the path gives single-site log-ratios (lattice paths), the member has
    ``flip_log_ratios(x) = path.flip_log_ratios(x, t)`` too, so the discrete
    samplers of :mod:`jaxsamp.mcmc.discrete` can be built on it by name, and the
    target's ``nearest_neighbour`` (so that the checkerboard kernel refuses a member
    of an energy of one's own, as it refuses the energy).
    """
    member = path.at(t)
    if hasattr(path, "flip_log_ratios"):
        member.flip_log_ratios = lambda x: path.flip_log_ratios(x, t)
    if hasattr(path.target, "nearest_neighbour"):
        member.nearest_neighbour = path.target.nearest_neighbour
    return member


def linear_schedule(num_levels: int) -> np.ndarray:
    """``num_levels + 1`` equally spaced temperatures from 0 to 1."""
    if num_levels < 1:
        raise InputError(f"num_levels must be >= 1, got {num_levels}")
    return np.linspace(0.0, 1.0, num_levels + 1)


def smc(
    path: AnnealingPath,
    make_kernel: Callable[[jax.Array], Kernel],
    *,
    schedule=None,
    target_cess: float | None = None,
    num_mcmc_steps: int = 1,
    ess_threshold: float = 0.5,
    resampling_fn: Callable | str = "systematic",
    evals_per_init: int | None = None,
    evals_of_info: Callable[[Any], jax.Array] = inner_target_evals,
    num_bisection_steps: int = 24,
    transition: Callable | None = None,
    segment_length: int = 1,
) -> Kernel:
    """SMC sampler (or AIS with ``ess_threshold=0``) along ``path``, one temperature level per step.

    Parameters
    ----------
    path : AnnealingPath
        ``log_prob(x, t)``, ``dlog_prob_dt(x, t)``, ``log_Z0``.
    make_kernel : callable
        ``make_kernel(t) -> Kernel`` leaving ``pi_t`` invariant for a traced
        scalar ``t`` (e.g. ``lambda t: blackjax.mala(lambda x: path.log_prob(x, t), 0.1)``,
        or ``lambda t: checkerboard(lambda x: path.flip_log_ratios(x, t))``).
    schedule : array (K + 1,), optional
        Fixed increasing temperatures from 0 to 1 (:func:`linear_schedule`).
        Exactly one of ``schedule`` and ``target_cess`` is given.
    target_cess : float in (0, 1), optional
        Adaptive tempering: each next temperature is chosen by bisection so that
        the conditional ESS of the step is ``target_cess`` (Zhou et al. 2016).
    num_mcmc_steps : int
        Inner-kernel steps per level (``>= 0``).
    ess_threshold : float in [0, 1]
        Resample when the normalised ESS falls below it; ``0`` never resamples
        (AIS, Neal 2001), ``1`` always does.
    resampling_fn : str or callable
        A name in :data:`RESAMPLERS` or a blackjax-style ``(key, weights, n) -> idx``.
    evals_per_init : int, optional
        Target evaluations of ``make_kernel(t).init`` per particle; by default 1
        when the kernel state caches a ``logdensity`` (blackjax kernels), else 0.
    evals_of_info : callable
        Target evaluations of one inner step from its info (:func:`inner_target_evals`).
    num_bisection_steps : int
        Bisection steps of the adaptive schedule.
    transition : callable, optional
        ``transition(key, positions, t, t_next) -> (positions, log_increment, evals)``:
        moves the particles from level ``t`` to ``t_next`` and returns each one's
        exact incremental log weight ``log pi_{t'}(x') + log B(x | x') - log pi_t(x)
        - log F(x' | x)`` (``B`` a normalised backward kernel) and the target
        evaluations spent, summed over particles (:mod:`jaxsamp.smc.transitions`,
        e.g. :func:`~jaxsamp.smc.transitions.langevin_transition`). ``None``: no
        move before the reweighting (tempered SMC). Needs a fixed ``schedule``.
    segment_length : int
        Resample (when the ESS is below ``ess_threshold``) and run the inner
        kernel only at levels that are multiples of it and at the last level; the
        weights accumulate in between (SCLD's sub-trajectories). 1: every level.

    Returns
    -------
    Kernel
        ``init(positions)`` takes particles drawn from ``pi_0`` (leading axis
        ``n``) and returns an :class:`SMCState` at ``t = 0``; ``step(key, state)``
        advances one level and returns ``(state, SMCInfo)``. Once ``t = 1`` further
        steps change nothing (``info.active = False``).
    """
    if (schedule is None) == (target_cess is None):
        raise InputError("give exactly one of schedule (fixed) and target_cess (adaptive)")
    if transition is not None and target_cess is not None:
        raise InputError(
            "a transition needs a fixed schedule, got target_cess: its weights depend on the move, "
            "which the bisection of adaptive tempering cannot run ahead of",
            hint="pass schedule=linear_schedule(num_levels) instead of target_cess",
        )
    check_int("segment_length", segment_length, ge=1)
    if target_cess is not None and not 0.0 < target_cess < 1.0:
        raise InputError(f"target_cess must lie in (0, 1), got {target_cess}")
    if schedule is not None:
        schedule = np.asarray(schedule, dtype=np.float64)
        if schedule.ndim != 1 or len(schedule) < 2 or schedule[0] != 0.0 or schedule[-1] != 1.0:
            raise InputError("schedule must be a 1-D array of temperatures from 0.0 to 1.0")
        if np.any(np.diff(schedule) <= 0):
            raise InputError("schedule must be strictly increasing")
        schedule_arr = jnp.asarray(schedule, jnp.float32)
    if not 0.0 <= ess_threshold <= 1.0:
        raise InputError(f"ess_threshold must lie in [0, 1], got {ess_threshold}")
    if num_mcmc_steps < 0:
        raise InputError(f"num_mcmc_steps must be >= 0, got {num_mcmc_steps}")
    if isinstance(resampling_fn, str):
        if resampling_fn not in RESAMPLERS:
            raise InputError(f"unknown resampling {resampling_fn!r}; known: {', '.join(RESAMPLERS)}")
        resampling_fn = RESAMPLERS[resampling_fn]

    log_prob = jax.vmap(path.log_prob, in_axes=(0, None))
    dlog_prob_dt = jax.vmap(path.dlog_prob_dt, in_axes=(0, None))

    def init(positions, rng_key=None):
        n = num_chains(positions)
        return SMCState(
            positions, jnp.zeros((n,), jnp.float32), jnp.float32(0.0), jnp.float32(0.0), jnp.int32(0)
        )

    def reweight(state):
        """Next temperature, log-weight increments and their cost per particle."""
        x, t = state.position, state.t
        if affine_in_t(path, jax.tree.map(lambda a: a[0], x)):
            u = dlog_prob_dt(x, t)
            if target_cess is None:
                t_next = schedule_arr[state.level + 1]
            else:
                t_next, _ = next_temperature(
                    state.log_w, lambda s: (s - t) * u, t, target_cess, num_bisection_steps
                )
            return t_next, (t_next - t) * u, jnp.int32(1)
        log_p = log_prob(x, t)
        if target_cess is None:
            t_next, calls = schedule_arr[state.level + 1], jnp.int32(0)
        else:
            t_next, calls = next_temperature(
                state.log_w, lambda s: log_prob(x, s) - log_p, t, target_cess, num_bisection_steps
            )
        return t_next, log_prob(x, t_next) - log_p, 2 + calls

    def move(key, x, t):
        kernel = make_kernel(t)
        one = jax.tree.map(lambda a: a[0], x)
        init_cost = evals_per_init
        if init_cost is None:
            init_cost = int(hasattr(jax.eval_shape(kernel.init, one), "logdensity"))

        def move_one(k, xi):
            def body(s, kj):
                s, info = kernel.step(kj, s)
                return s, (_acceptance(info), evals_of_info(info))

            s, (acc, evals) = jax.lax.scan(body, kernel.init(xi), jax.random.split(k, num_mcmc_steps))
            return position_of(s), jnp.mean(acc), init_cost + jnp.sum(evals, dtype=jnp.int32)

        n = num_chains(x)
        return jax.vmap(move_one)(jax.random.split(key, n), x)

    def mcmc(key, x, t_next):
        x, acc, move_cost = move(key, x, t_next)
        return x, jnp.mean(acc), jnp.sum(move_cost, dtype=jnp.int32)

    def no_mcmc(key, x, t_next):
        return x, jnp.float32(jnp.nan), jnp.int32(0)

    def advance(key, state):
        key_resample, key_move = jax.random.split(key)
        n = num_chains(state.position)
        if transition is None:
            x = state.position
            t_next, increment, reweight_cost = reweight(state)  # t_next is exactly 1.0 at the last level
            reweight_evals = n * reweight_cost
        else:  # a third key beside split(key)'s two: the resampling and move keys stay the default's
            t_next = schedule_arr[state.level + 1]
            x, increment, reweight_evals = transition(jax.random.fold_in(key, 2), state.position, state.t, t_next)
            chex.assert_shape(increment, (n,))
        log_w = state.log_w + increment
        ess = jnp.exp(2.0 * _lse(log_w) - _lse(2.0 * log_w)) / n
        log_Z_increment = _lse(log_w) - _lse(state.log_w)
        do_resample = ess < ess_threshold
        if segment_length > 1:
            at_boundary = ((state.level + 1) % segment_length == 0) | (t_next >= 1.0)
            do_resample = do_resample & at_boundary

        def resample(_):
            idx = resampling_fn(key_resample, jax.nn.softmax(log_w), n)
            cashed = _lse(log_w) - jnp.log(n)
            resampled = jax.tree.map(lambda a: a[idx], x)
            return resampled, jnp.zeros_like(log_w), state.log_Z_resampled + cashed

        def keep(_):
            return x, log_w, state.log_Z_resampled

        x, log_w, log_Z_res = jax.lax.cond(do_resample, resample, keep, None)
        if num_mcmc_steps == 0:
            x, acceptance, move_evals = no_mcmc(key_move, x, t_next)
        elif segment_length == 1:
            x, acceptance, move_evals = mcmc(key_move, x, t_next)
        else:
            x, acceptance, move_evals = jax.lax.cond(at_boundary, mcmc, no_mcmc, key_move, x, t_next)
        new = SMCState(x, log_w, log_Z_res, t_next, state.level + 1)
        evals = reweight_evals + move_evals
        info = SMCInfo(
            t_next, ess, do_resample, acceptance, evals.astype(jnp.int32), jnp.bool_(True), log_Z_increment
        )
        return new, info

    def step(rng_key, state):
        chex.assert_shape(state.log_w, (num_chains(state.position),))

        def finished(_):
            info = SMCInfo(
                state.t, jnp.float32(0.0), jnp.bool_(False), jnp.float32(jnp.nan), jnp.int32(0), jnp.bool_(False),
                jnp.float32(0.0),
            )
            return state, info

        return jax.lax.cond(state.t >= 1.0, finished, lambda _: advance(rng_key, state), None)

    return Kernel(init, step)


def weighted_samples(state: SMCState, path: AnnealingPath) -> WeightedSamples:
    """The particles with their weights; ``.log_Z`` is the SMC estimate of ``log Z_t``.

    ``log_Z0`` of the result folds in the base's ``log Z_0`` and the log-normaliser
    already cashed in at resampling times.
    """
    return WeightedSamples(state.position, state.log_w, path.log_Z0 + state.log_Z_resampled)


class AnnealResult(NamedTuple):
    """Output of :func:`anneal`.

    Attributes
    ----------
    samples : WeightedSamples
        Final particles and weights; ``samples.log_Z`` estimates ``log Z_1``.
    num_target_evals : int
        Target evaluations of the whole run, summed over particles (exact).
    num_levels : int
        Temperature levels taken.
    trace : SMCInfo
        Per-level infos (leading axis ``max_levels``; ``active`` marks real levels).
    """

    samples: WeightedSamples
    num_target_evals: int
    num_levels: int
    trace: SMCInfo


def anneal(
    key: jax.Array,
    path: AnnealingPath,
    make_kernel: Callable[[jax.Array], Kernel],
    num_particles: int,
    *,
    schedule=None,
    target_cess: float | None = None,
    max_levels: int = 1000,
    positions=None,
    progress: bool = False,
    checkpoint=None,
    checkpoint_every: int | None = None,
    chunk: int | None = None,
    identity: str | None = None,
    mesh=None,
    transition: Callable | None = None,
    segment_length: int = 1,
    **smc_options,
) -> AnnealResult:
    """Run AIS/SMC from ``pi_0`` to ``pi_1`` with the driver; return weighted samples and the cost.

    Parameters
    ----------
    key : PRNG key
    path, make_kernel, schedule, target_cess
        As in :func:`smc`.
    num_particles : int
    max_levels : int
        Steps the driver runs with an adaptive schedule (extra steps after
        ``t = 1`` are no-ops); a fixed schedule runs exactly its levels.
    positions : PyTree, optional
        Initial particles; by default ``path.base.sample(key_init, num_particles)``.
    progress, checkpoint, checkpoint_every, chunk, identity
        Passed to :func:`jaxsamp.core.run` (a killed run resumes from its checkpoint).
    mesh : jax.sharding.Mesh or True, optional
        Shard the particles over this 1-D mesh (``True``: all devices,
        :func:`jaxsamp.core.chain_mesh`); ``num_particles`` must be divisible
        by its size. See "Sharded particles" in the module docstring.
    transition, segment_length
        As in :func:`smc`: a move with its exact incremental weights before each
        reweighting, and resampling and inner moves only at segment boundaries.
    **smc_options
        ``num_mcmc_steps``, ``ess_threshold``, ``resampling_fn``, ... of :func:`smc`.

    Raises
    ------
    InputError
        Fewer than two particles (log Z and the ESS are averages over particles).
    RunHealthError
        If an adaptive schedule did not reach ``t = 1`` within ``max_levels``.
    """
    check_int("num_particles", num_particles, ge=2)
    kernel = smc(
        path, make_kernel, schedule=schedule, target_cess=target_cess, transition=transition,
        segment_length=segment_length, **smc_options,
    )
    if mesh is not None and mesh is not False:
        kernel = shard(kernel, None if mesh is True else mesh)
    num_steps = len(schedule) - 1 if schedule is not None else max_levels
    return run_smc(key, kernel, path, num_particles, num_steps, positions=positions, progress=progress,
                   checkpoint=checkpoint, checkpoint_every=checkpoint_every, chunk=chunk, identity=identity)


def _level_info(state: SMCState, info: SMCInfo) -> SMCInfo:
    """The driver's trace of an SMC run: each level's info (one function, so that the driver's compiled chunks are
    reused from call to call)."""
    return info


def run_smc(
    key: jax.Array,
    kernel: Kernel,
    path: AnnealingPath,
    num_particles: int,
    num_steps: int,
    *,
    positions=None,
    progress: bool = False,
    checkpoint=None,
    checkpoint_every: int | None = None,
    chunk: int | None = None,
    identity: str | None = None,
) -> AnnealResult:
    """Run an SMC kernel built by :func:`smc` from ``pi_0`` to ``pi_1`` with the driver: what :func:`anneal` runs.

    A kernel built once and run many times compiles once: the driver's chunks are
    compiled per step function and trace function, and both are the same objects from
    call to call (a second call with the same number of particles only samples, as
    :meth:`jaxsamp.Fitted.smc` does). The draws are :func:`anneal`'s for the same key,
    bit for bit.

    Parameters
    ----------
    key : PRNG key
        Split into the key of the initial particles and the driver's key.
    kernel : Kernel
        :func:`smc`'s kernel along ``path`` (sharded or not).
    path : AnnealingPath
        Its ``base`` draws the initial particles; its ``log_Z0`` starts the estimate.
    num_particles : int
        At least 2.
    num_steps : int
        Levels the driver runs (a fixed schedule's levels, or ``max_levels`` for an adaptive one).
    positions, progress, checkpoint, checkpoint_every, chunk, identity
        As in :func:`anneal`.

    Returns
    -------
    AnnealResult

    Raises
    ------
    InputError
        Fewer than two particles.
    RunHealthError
        The path did not reach ``t = 1`` within ``num_steps`` levels.
    """
    check_int("num_particles", num_particles, ge=2)
    key_init, key_run = jax.random.split(key)
    if positions is None:
        positions = path.base.sample(key_init, num_particles)
    state, trace = run(
        kernel.step,
        kernel.init(positions),
        key_run,
        num_steps,
        trace=_level_info,
        progress=progress,
        checkpoint=checkpoint,
        checkpoint_every=checkpoint_every,
        chunk=chunk,
        identity=identity,
        desc="smc",
        health=False,  # particles are judged by their weights and t reaching 1 (below), not by the chain check
    )
    if float(state.t) < 1.0:
        raise RunHealthError(
            f"annealing stopped at t = {float(state.t):.4g} after {num_steps} levels",
            "raise max_levels (run.num_steps in a config) or lower target_cess",
        )
    evals = int(np.asarray(trace.num_target_evals, dtype=np.int64).sum())
    return AnnealResult(weighted_samples(state, path), evals, int(state.level), trace)
