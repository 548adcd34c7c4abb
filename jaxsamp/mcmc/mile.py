"""Microcanonical Langevin Ensembles (MILE): MCLMC chains started from a deep ensemble's members.

Sommer, Robnik, Nozadze, Seljak & Rügamer (2025), "Microcanonical Langevin
Ensembles: Advancing the Sampling of Bayesian Neural Networks", ICLR
(arXiv:2502.06335); the procedure of its code (``src/training/warmup.py``,
``experiments/replicate_uci/mclmc.yaml``), research/methods.md §5:

1. a deep ensemble of ``K`` members (:mod:`jaxsamp.mcmc.deep_ensemble`);
2. per member, unadjusted MCLMC tuned on a fixed budget of ``tune_steps``
   integrator steps split 80/10/10:

   (a) the step size from the energy error: after every step
       ``xi = dE^2 / (d V*) + 1e-8`` with the target energy variance per dimension
       ``V*`` decaying linearly from 0.5 to 0.1 over phases (a) and (b),
       ``w = exp(-(log xi / (6 * 1.5))^2 / 2)``, decayed sums
       ``X <- c X + w xi / eps^6`` and ``W <- c W + w`` with ``c = (N - 1) / (N + 1)``,
       ``N = 100``, and ``eps = (X / W)^(-1/6)`` capped at ``eps_max`` (which a
       non-finite step multiplies by 0.8, the step being rejected); ``eps_0 = 1e-3``,
       ``L_0 = max(sqrt(d), 15)``;
   (b) the same, while accumulating step-size-weighted means of ``x`` and ``x^2``;
       then ``L = sqrt(sum_i Var x_i)``;
   (c) a run at fixed ``(L, eps)`` whose per-parameter ESS (FFT, on at most 2000
       randomly chosen parameters) sets ``L = 0.4 eps mean(steps / ESS)``;
3. sampling: the members are the chains of one :func:`~jaxsamp.core.ensemble`
   kernel of :func:`~jaxsamp.core.thin`-ned MCLMC steps run by :func:`jaxsamp.run`
   (progress, checkpoints, bit-identical resume, optional sharding of the
   member axis); the posterior is the union of the members' draws.

From blackjax: the MCLMC step (``blackjax.mcmc.mclmc.build_kernel``: the
isokinetic McLachlan integrator with partial momentum refreshment), its state
and parameters (``IntegratorState``, ``MCLMCAdaptationState``), the tuner's
non-finite-step handler (``mclmc_adaptation.handle_nans``), the streaming
average (``blackjax.util.incremental_value_update``) and the FFT ESS
(``blackjax.diagnostics.effective_sample_size``). Written here, because
``blackjax.mclmc_find_L_and_step_size`` has no place for them: the decaying
``V*`` schedule inside the step-size predictor, MILE's ``eps_0`` and ``L_0``, the
phases as driver kernels, and the ESS on a subset of the parameters.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, NamedTuple

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
from blackjax.adaptation.mclmc_adaptation import MCLMCAdaptationState, handle_nans
from blackjax.diagnostics import effective_sample_size
from blackjax.mcmc.integrators import IntegratorState
from blackjax.util import incremental_value_update

from jaxsamp.core.combinators import ensemble, thin
from jaxsamp.core.driver import run
from jaxsamp.core.errors import InputError
from jaxsamp.core.protocols import Kernel
from jaxsamp.core.sharding import shard as shard_kernel
from jaxsamp.core.validation import Interval, PositiveFloat, PositiveInt, check_array, check_fields

#: Integrator steps' gradient evaluations: the isokinetic McLachlan scheme evaluates the gradient twice a step.
GRADS_PER_MCLMC_STEP = 2


@dataclasses.dataclass(frozen=True)
class MileSettings:
    """MILE's tuning and sampling budgets (defaults: the reference's ``replicate_uci/mclmc.yaml``).

    Attributes
    ----------
    tune_steps : int
        Tuning budget in integrator steps per member (50 000), split
        ``step_size_fraction`` / ``variance_fraction`` / the rest (0.8 / 0.1 / 0.1)
        over phases (a), (b), (c).
    energy_variance_start, energy_variance_end : float
        ``V*`` at the start and end of phases (a) + (b) (0.5, 0.1; linear decay).
    initial_step_size : float
        ``eps_0`` (1e-3).
    trust_in_estimate : float
        The 1.5 in the weight ``w``.
    num_effective_samples : int
        ``N`` of the decay ``(N - 1) / (N + 1)`` (100).
    L_factor : float
        The 0.4 of phase (c).
    max_ess_parameters : int
        Parameters the ESS of phase (c) looks at, at most (2000).
    num_samples : int
        Draws kept per member (1000).
    thinning : int
        Integrator steps per kept draw (10): ``num_samples * thinning`` sampling steps.
    """

    tune_steps: Annotated[int, Interval(ge=10)] = 50_000
    step_size_fraction: Annotated[float, Interval(gt=0, lt=1)] = 0.8
    variance_fraction: Annotated[float, Interval(ge=0, lt=1)] = 0.1
    energy_variance_start: PositiveFloat = 0.5
    energy_variance_end: PositiveFloat = 0.1
    initial_step_size: PositiveFloat = 1e-3
    trust_in_estimate: PositiveFloat = 1.5
    num_effective_samples: PositiveInt = 100
    L_factor: PositiveFloat = 0.4
    max_ess_parameters: PositiveInt = 2000
    num_samples: Annotated[int, Interval(ge=4)] = 1000
    thinning: PositiveInt = 10

    def __post_init__(self):
        check_fields(self)
        if self.step_size_fraction + self.variance_fraction > 1:
            raise InputError(
                f"step_size_fraction + variance_fraction must be <= 1, got "
                f"{self.step_size_fraction} + {self.variance_fraction}"
            )

    @property
    def phase_steps(self) -> tuple[int, int, int]:
        """Steps of phases (a), (b), (c): ``int(tune_steps * fraction)`` for (a) and (b), the rest for (c)."""
        n1, n2 = int(self.tune_steps * self.step_size_fraction), int(self.tune_steps * self.variance_fraction)
        return n1, n2, self.tune_steps - n1 - n2


# --------------------------------------------------------------------------
# phases (a) and (b): one chain's tuning as a driver kernel
# --------------------------------------------------------------------------


class MclmcTuningState(NamedTuple):
    """One member's state during phases (a) and (b).

    Attributes
    ----------
    chain : blackjax IntegratorState
        Position, unit velocity, log density and its gradient.
    params : MCLMCAdaptationState
        Current ``L`` (``L_0`` throughout), ``step_size`` and a unit inverse mass.
    step_size_max : array
        Cap on the step size (``inf`` until a non-finite step).
    weight_sum, weighted_xi : array
        The decayed sums ``W`` and ``X`` of the step-size predictor.
    moments : (array, array (2, d))
        Streaming ``(total weight, [E x, E x^2])`` of phase (b).
    count : int array
        Tuning steps done.
    """

    chain: IntegratorState
    params: MCLMCAdaptationState
    step_size_max: jax.Array
    weight_sum: jax.Array
    weighted_xi: jax.Array
    moments: tuple
    count: jax.Array

    @property
    def position(self):
        return self.chain.position


class MclmcTuningInfo(NamedTuple):
    """Per step: the energy error, the step size used, the target ``V*`` and whether the step was finite."""

    energy_change: jax.Array
    step_size: jax.Array
    energy_variance_target: jax.Array
    success: jax.Array


def energy_variance_target(count, settings: MileSettings) -> jax.Array:
    """``V*`` at tuning step ``count``: linear from start to end over phases (a) + (b) (the reference's schedule)."""
    n1, n2, _ = settings.phase_steps
    progress = jnp.minimum(count / (n1 + n2 + 1), 1.0)
    return settings.energy_variance_start - (settings.energy_variance_start - settings.energy_variance_end) * progress


def mclmc_tuning_kernel(logdensity_fn: Callable, dim: int, settings: MileSettings) -> Kernel:
    """Phases (a) and (b) of MILE's tuning for ONE chain, as a kernel (wrap with ``ensemble`` for members).

    ``init(position, rng_key)`` starts blackjax's MCLMC state at ``position`` (a
    random unit velocity from ``rng_key``) with ``eps_0`` and ``L_0 = max(sqrt(d), 15)``;
    each ``step`` is one MCLMC step followed by the step-size update of the
    module docstring, and from step ``n1`` on the weighted moments of phase (b).
    Run it for ``n1 + n2`` steps, then :func:`variance_L`.
    """
    n1, _, _ = settings.phase_steps
    mclmc = blackjax.mcmc.mclmc.build_kernel()
    decay = (settings.num_effective_samples - 1.0) / (settings.num_effective_samples + 1.0)
    scale = 6.0 * settings.trust_in_estimate

    def init(position, rng_key=None):
        key = jax.random.key(0) if rng_key is None else rng_key
        chain = blackjax.mcmc.mclmc.init(position, logdensity_fn, key)
        dtype = jnp.result_type(position)
        params = MCLMCAdaptationState(
            jnp.asarray(max(np.sqrt(dim), 15.0), dtype),
            jnp.asarray(settings.initial_step_size, dtype),
            jnp.asarray(1.0, dtype),
        )
        zero = jnp.zeros((), dtype)
        return MclmcTuningState(
            chain,
            params,
            jnp.asarray(jnp.inf, dtype),
            zero,
            zero,
            (zero, jnp.zeros((2, dim), dtype)),
            jnp.int32(0),
        )

    def step(rng_key, state: MclmcTuningState):
        kernel_key, nan_key = jax.random.split(rng_key)
        params = state.params
        proposal, info = mclmc(
            kernel_key, state.chain, logdensity_fn, params.inverse_mass_matrix, params.L, params.step_size
        )
        success, chain, step_size_max, energy_change = handle_nans(
            state.chain, proposal, params.step_size, state.step_size_max, info.energy_change, info.nonans, nan_key
        )
        v_star = energy_variance_target(state.count, settings).astype(energy_change.dtype)
        xi = jnp.square(energy_change) / (dim * v_star) + 1e-8
        weight = jnp.exp(-0.5 * jnp.square(jnp.log(xi) / scale))
        weighted_xi = decay * state.weighted_xi + weight * xi / params.step_size**6
        weight_sum = decay * state.weight_sum + weight
        step_size = jnp.minimum(jnp.power(weighted_xi / weight_sum, -1.0 / 6.0), step_size_max)
        x = chain.position
        in_phase_b = (state.count >= n1).astype(x.dtype)
        moments = incremental_value_update(
            jnp.stack([x, jnp.square(x)]), state.moments, weight=in_phase_b * success * step_size
        )
        new = MclmcTuningState(
            chain,
            params._replace(step_size=step_size),
            step_size_max,
            weight_sum,
            weighted_xi,
            moments,
            state.count + 1,
        )
        return new, MclmcTuningInfo(energy_change, params.step_size, v_star, success)

    return Kernel(init, step)


def variance_L(state: MclmcTuningState) -> jax.Array:
    """Phase (b)'s ``L = sqrt(sum_i Var x_i)`` from the weighted moments (``L_0`` when nothing was averaged)."""
    total, (mean, mean_sq) = state.moments
    return jnp.where(total > 0, jnp.sqrt(jnp.sum(jnp.maximum(mean_sq - mean**2, 0.0))), state.params.L)


def ess_L(samples: jax.Array, step_size, L_factor: float = 0.4) -> jax.Array:
    """Phase (c)'s ``L = L_factor * eps * mean_i(n / ESS_i)`` from one chain's draws ``(n, p)``.

    ESS by blackjax's FFT estimator; parameters whose ESS is not finite and
    positive are left out of the mean.
    """
    n = samples.shape[0]
    ess = effective_sample_size(samples[None])
    tau = n / ess
    ok = jnp.isfinite(tau) & (ess > 0)
    return L_factor * step_size * jnp.sum(jnp.where(ok, tau, 0.0)) / jnp.maximum(jnp.sum(ok), 1)


# --------------------------------------------------------------------------
# phase (c) and sampling: MCLMC with each chain's own (L, eps) in its state
# --------------------------------------------------------------------------


class MclmcChainState(NamedTuple):
    """One member's MCLMC state with its tuned ``L`` and step size (carried through hand-offs)."""

    chain: IntegratorState
    L: jax.Array
    step_size: jax.Array

    carried_fields = ("L", "step_size")

    @property
    def position(self):
        return self.chain.position


def mclmc_chain_kernel(logdensity_fn: Callable, L: float = 1.0, step_size: float = 0.1) -> Kernel:
    """Unadjusted MCLMC (blackjax's step) for ONE chain whose ``L`` and step size live in its state.

    ``init(position, rng_key)`` uses the given ``L`` and ``step_size``; a tuned
    state is built with :func:`tuned_chain_state`. With the parameters in the
    state, ``ensemble`` gives every member its own.
    """
    mclmc = blackjax.mcmc.mclmc.build_kernel()

    def init(position, rng_key=None):
        key = jax.random.key(0) if rng_key is None else rng_key
        dtype = jnp.result_type(position)
        return MclmcChainState(
            blackjax.mcmc.mclmc.init(position, logdensity_fn, key), jnp.asarray(L, dtype), jnp.asarray(step_size, dtype)
        )

    def step(rng_key, state: MclmcChainState):
        chain, info = mclmc(rng_key, state.chain, logdensity_fn, 1.0, state.L, state.step_size)
        return MclmcChainState(chain, state.L, state.step_size), info

    return Kernel(init, step)


def tuned_chain_state(tuning: MclmcTuningState, L) -> MclmcChainState:
    """The sampling state that continues a tuning state (same chain) with ``L`` and the tuned step size."""
    return MclmcChainState(tuning.chain, jnp.asarray(L, tuning.params.L.dtype), tuning.params.step_size)


@jax.jit
def _after_variance_phase(tuning: MclmcTuningState) -> MclmcChainState:
    """Every member's sampling state after phase (b), with ``L`` from the variances."""
    return jax.vmap(tuned_chain_state)(tuning, jax.vmap(variance_L)(tuning))


@jax.jit
def _with_ess_L(sampling: MclmcChainState, draws: jax.Array, L_factor) -> MclmcChainState:
    """Every member's sampling state after phase (c): ``L`` from its draws ``(n3, K, p)``."""
    new_L = jax.vmap(ess_L, in_axes=(1, 0, None))(draws, sampling.step_size, L_factor)
    return sampling._replace(L=new_L.astype(sampling.L.dtype))


# --------------------------------------------------------------------------
# the pipeline
# --------------------------------------------------------------------------


class EnsembleDraws(NamedTuple):
    """What MILE and the NUTS ensemble (BDE) return.

    Attributes
    ----------
    draws : array (num_samples, K, d)
        Kept draws in the driver's layout (draw, member, parameter).
    cumulative_grad_evals : array (num_samples,)
        Gradient evaluations of the sampling phase, all members, up to and
        including each kept draw.
    tuning_grad_evals : float
        Gradient evaluations of tuning / warm-up, all members.
    tuning_seconds, sampling_seconds : float
        Wall times of the two phases (compilation included).
    parameters : dict of arrays (K,)
        The tuned parameters per member (MILE: ``L``, ``step_size``; BDE: ``step_size``).
    tuning_trace : PyTree or None
        Per tuning step and member (MILE: :class:`MclmcTuningInfo`).
    energy_change : array (num_samples, K) or None
        MILE: the energy error of the last integrator step before each kept draw.
    """

    draws: np.ndarray
    cumulative_grad_evals: np.ndarray
    tuning_grad_evals: float
    tuning_seconds: float
    sampling_seconds: float
    parameters: dict
    tuning_trace: Any = None
    energy_change: np.ndarray | None = None


def settings_fingerprint(*parts) -> str:
    """SHA-256 of the settings that determine a run's numbers (for the driver's checkpoint check)."""
    text = json.dumps(
        [dataclasses.asdict(p) if dataclasses.is_dataclass(p) else p for p in parts], sort_keys=True, default=str
    )
    return hashlib.sha256(text.encode()).hexdigest()


def check_members(members) -> jax.Array:
    """Starting points ``(K, d)``: finite floats, ``K >= 1``, ``d >= 2``; returned as a JAX array, bits unchanged."""
    arr = check_array("members", members, ndim=2, dtype="float")
    if arr.shape[0] < 1 or arr.shape[1] < 2:
        raise InputError(f"members must have shape (K >= 1, d >= 2), got {arr.shape}")
    return jnp.asarray(members)


def _phase_options(checkpoint_dir, name: str, progress: bool, checkpoint_every, chunk, identity) -> dict:
    return {
        "progress": progress,
        "chunk": chunk,
        "checkpoint_every": checkpoint_every,
        "checkpoint": None if checkpoint_dir is None else Path(checkpoint_dir) / name,
        "identity": f"{identity}:{name}",
        "desc": name.replace("_", " "),
    }


def _timed(fn):
    start = time.perf_counter()
    out = jax.block_until_ready(fn())
    return out, time.perf_counter() - start


def sample_mile(
    logdensity_fn: Callable,
    members,
    key,
    settings: MileSettings = MileSettings(),
    *,
    progress: bool = True,
    checkpoint_dir=None,
    checkpoint_every: int | None = None,
    chunk: int | None = None,
    identity: str | None = None,
    shard: bool = False,
) -> EnsembleDraws:
    """Tune MCLMC on every member and sample, all members at once, through :func:`jaxsamp.run`.

    Parameters
    ----------
    logdensity_fn : callable
        Log posterior of ONE flat parameter vector (``target.log_prob``).
    members : array (K, d)
        The deep ensemble's members; member ``k`` starts chain ``k`` exactly.
    key : PRNG key
        Split into the keys of initialisation, phases (a) + (b), the parameter
        subset of (c), phase (c) and sampling.
    settings : MileSettings
    progress, checkpoint_every, chunk
        Passed to :func:`jaxsamp.run`.
    checkpoint_dir : path, optional
        Each phase checkpoints into its own sub-folder (``mile_tune``,
        ``mile_tune_L``, ``mile_sample``); a killed run resumes bit for bit.
    identity : str, optional
        The run's settings, mixed into each phase's checkpoint fingerprint with what
        :func:`jaxsamp.run` derives from the computation and the initial state
        (default: a hash of ``settings`` and the members' shape).
    shard : bool
        Place the member axis on a mesh over all devices (:func:`jaxsamp.shard`). The numbers then
        agree with an unsharded run to float32 round-off, not bit for bit (measured on 4 forced CPU
        devices: 2e-7 in the first energy errors, 2e-5 in the draws after 56 steps), because XLA
        compiles the per-device batch of members differently.

    Returns
    -------
    EnsembleDraws
    """
    members = check_members(members)
    num_members, dim = members.shape
    n1, n2, n3 = settings.phase_steps
    if identity is None:
        identity = settings_fingerprint(settings, list(members.shape))
    options = lambda name: _phase_options(checkpoint_dir, name, progress, checkpoint_every, chunk, identity)
    wrap = shard_kernel if shard else (lambda k: k)
    k_init, k_tune, k_subset, k_ess, k_sample = jax.random.split(key, 5)

    tuner = wrap(ensemble(mclmc_tuning_kernel(logdensity_fn, dim, settings)))
    chains = wrap(ensemble(mclmc_chain_kernel(logdensity_fn)))

    def tune():
        state = jax.jit(tuner.init)(members, k_init)
        state, trace = run(tuner.step, state, k_tune, n1 + n2, trace=lambda s, info: info, health=False,
                           **options("mile_tune"))
        sampling = _after_variance_phase(state)
        if n3 >= 2:
            chosen = np.random.default_rng(np.asarray(jax.random.key_data(k_subset))).permutation(dim)
            subset = jnp.asarray(np.sort(chosen[: min(settings.max_ess_parameters, dim)]))
            sampling, draws = run(
                chains.step, sampling, k_ess, n3, trace=lambda s, info: s.position[:, subset], health=False,
                **options("mile_tune_L"),
            )
            sampling = _with_ess_L(sampling, draws, settings.L_factor)
        return sampling, trace

    (sampling, trace), tuning_seconds = _timed(tune)
    sampler = wrap(ensemble(thin(mclmc_chain_kernel(logdensity_fn), settings.thinning)))

    def sample():
        return run(
            sampler.step,
            sampling,
            k_sample,
            settings.num_samples,
            trace=lambda s, info: (s.position, info.energy_change),
            **options("mile_sample"),
        )

    (final, (draws, energy_change)), sampling_seconds = _timed(sample)
    per_draw = GRADS_PER_MCLMC_STEP * settings.thinning * num_members
    return EnsembleDraws(
        draws=np.asarray(draws),
        cumulative_grad_evals=per_draw * np.arange(1, settings.num_samples + 1, dtype=np.float64),
        tuning_grad_evals=float(num_members * (1 + GRADS_PER_MCLMC_STEP * (n1 + n2 + (n3 if n3 >= 2 else 0)))),
        tuning_seconds=tuning_seconds,
        sampling_seconds=sampling_seconds,
        parameters={"L": np.asarray(final.L), "step_size": np.asarray(final.step_size)},
        tuning_trace=jax.tree.map(np.asarray, trace),
        energy_change=np.asarray(energy_change),
    )
