"""Samplers of the noisy variable ``y`` for Bernoulli-noise denoising: one-stage, two-stage, multi-measurement.

Bach & Saremi (2025), "Sampling binary data by denoising through score
functions", ICML. The noise model's draws (eq. 1: :func:`flip_probability`,
:func:`measure`) are here; the identity ``E[x | y] = alpha^-1 grad log q_alpha(y)``
and the denoisers are in :mod:`jaxsamp.learned.binary.bernoulli_denoising`, whose
docstring derives equations (1)-(5) used here. The paper's update formulas were not available; these
kernels are our construction from that identity, and the tests check each
against exact enumeration.

Every sampler is a :class:`~jaxsamp.core.Kernel` over ``y`` at a fixed
*offset* ``h_0 = alpha sum_{j<k} y_j`` (the committed measurements; ``0`` for
the first), targeting ``q(y_k | y_<k) ∝ exp(A(h_0 + alpha y_k))`` (eq. 4),
whose score is ``alpha g(h_0 + alpha y)`` with ``g`` the posterior mean. The
state caches ``g`` at the current point, so every step costs exactly ONE
denoiser evaluation (``NoisyInfo.num_denoiser_evals``), which makes the
samplers comparable at equal network evaluations.

**One-stage (Langevin-like).** The discrete Langevin proposal of Zhang, Liu &
Liu (2022, "A Langevin-like sampler for discrete distributions", ICML, eq. 3),
``Q(y' | y) ∝ exp(1/2 grad f(y) . (y' - y) - |y' - y|^2 / (2 eta))`` with
``f = log q`` and ``grad f = alpha g``. On ``{-1, 1}^d``, ``|y' - y|^2 = 2 d - 2 y . y'``,
so the proposal factorises into independent bits with log-odds

    log Q(y'_i = +1 | y) / Q(y'_i = -1 | y) = alpha g_i + 2 y_i / eta.

``eta`` is the step size: large ``eta`` proposes from the score alone, small
``eta`` stays near ``y``. Without correction the chain's stationary law is
close to, not equal to, ``q``. The Metropolis-Hastings correction
(``correction="exact"``) accepts with ``min(1, q(y') Q(y | y') / (q(y) Q(y' | y)))``,
``log q(y') - log q(y) = A(h_0 + alpha y') - A(h_0 + alpha y)``, and leaves ``q``
exactly invariant; it needs ``A`` (a tractable target). With only a learned
denoiser, ``correction="trapezoid"`` estimates that difference by the
trapezoid rule along the segment from ``y`` to ``y'`` of the smooth extension
of ``log q`` (eq. 3): ``alpha/2 (g(y) + g(y')) . (y' - y)`` -- approximate, but
free (both ``g`` are needed for ``Q`` anyway).

**Two-stage.** Draw clean bits ``x_i ~ Bernoulli`` with mean ``g_i(h_0 + alpha y)``,
then a fresh measurement ``y' = x * z`` (eq. 1). When the posterior is a
product (a product prior) this is data-augmentation Gibbs sampling of
``p(x) p(y | x)`` and leaves ``q`` invariant exactly; in general it replaces
the posterior by the product of its marginals. Marginally over ``x`` the
proposal is a product Bernoulli, ``E[y'_i | y] = tanh(alpha) g_i``, so the same
Metropolis-Hastings corrections apply (``correction="exact"`` makes it exact
for any target).

**Multi-measurement.** With ``num_measurements = m``, after
``steps_per_measurement = K`` moves the next step *commits* the current ``y``
(``h_0 <- h_0 + alpha y``) and starts the next measurement from the same
``y`` (a commit step moves nothing and costs its one evaluation: ``g`` at the
new offset). ``m`` measurements take :func:`schedule_length` ``= m K + m - 1``
steps. The final denoising (:func:`denoise`) reads the clean sample from
``h = h_0 + alpha y``: ``sign(g(h))`` (the Hamming-optimal denoiser, which
maximises the expected number of correct bits) or a draw of independent bits
with means ``g(h)``; with ``m`` measurements ``g`` is as sharp as one
measurement at ``m alpha``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Annotated, NamedTuple

import jax
import jax.numpy as jnp

from jaxsamp.core.combinators import ensemble
from jaxsamp.core.driver import run
from jaxsamp.core.errors import InputError
from jaxsamp.core.protocols import Kernel
from jaxsamp.core.validation import OneOf, PositiveFloat, PositiveInt, check_fields

MOVES = ("one_stage", "two_stage")
CORRECTIONS = ("none", "trapezoid", "exact")
READOUTS = ("sign", "bernoulli")


class NoisyState(NamedTuple):
    """State of a Bernoulli-noise sampler (one chain).

    Attributes
    ----------
    position : array (event shape), +-1
        The current measurement ``y``.
    offset : array (event shape)
        ``h_0 = alpha sum`` of the committed measurements.
    mean : array (event shape)
        ``g(h_0 + alpha y)``: the denoiser at the current point.
    log_partition : scalar
        ``A(h_0 + alpha y)`` when the exact ``A`` is used (``correction="exact"``), else 0.
    measurement : int32
        Index of the current measurement (0-based).
    count : int32
        Moves made in the current measurement.
    """

    position: jax.Array
    offset: jax.Array
    mean: jax.Array
    log_partition: jax.Array
    measurement: jax.Array
    count: jax.Array


class NoisyInfo(NamedTuple):
    """What one step did: ``acceptance_rate`` (0 or 1 per chain), ``committed`` (a commit step), one denoiser evaluation."""

    acceptance_rate: jax.Array
    committed: jax.Array
    num_denoiser_evals: jax.Array


def flip_probability(alpha) -> jax.Array:
    """``P(y_i != x_i) = 1 / (1 + e^{2 alpha}) = sigmoid(-2 alpha)``: the noise level of eq. (1)."""
    return jax.nn.sigmoid(-2.0 * jnp.asarray(alpha, jnp.float32))


def measure(key, x: jax.Array, alpha) -> jax.Array:
    """A noisy measurement ``y = x * z`` of +-1 states ``x`` (any shape): each bit flipped with :func:`flip_probability`."""
    flip = jax.random.uniform(key, x.shape) < flip_probability(alpha)
    return jnp.where(flip, -x, x).astype(x.dtype)


def schedule_length(num_measurements: int, steps_per_measurement: int) -> int:
    """Steps for ``m`` measurements of ``K`` moves each: ``m K`` moves and ``m - 1`` commits."""
    return num_measurements * steps_per_measurement + num_measurements - 1


def proposal_log_odds(move: str, mean: jax.Array, y: jax.Array, alpha, step_size) -> jax.Array:
    """Log-odds of ``y'_i = +1`` under the move's product-Bernoulli proposal from ``y`` with denoiser mean ``g``.

    ``one_stage``: ``alpha g_i + 2 y_i / eta``; ``two_stage``: ``2 atanh(tanh(alpha) g_i)``
    (the law of ``y'`` after ``x ~ Bernoulli(g)`` and a measurement).
    """
    if move == "one_stage":
        return alpha * mean + 2.0 * y / step_size
    t = jnp.tanh(alpha) * mean
    return jnp.log1p(t) - jnp.log1p(-t)


def measurement_kernel(
    denoiser: Callable,
    alpha: float,
    move: str = "one_stage",
    step_size: float = 1.0,
    correction: str = "none",
    log_partition: Callable | None = None,
    num_measurements: int = 1,
    steps_per_measurement: int = 1,
) -> Kernel:
    """A Bernoulli-noise sampler over ``y`` (module docstring), as a Kernel for ONE chain (batch with ``ensemble``).

    Parameters
    ----------
    denoiser : callable
        ``g(h)``: the posterior mean ``E[x | h]`` for ONE ``h`` of the event shape
        (learned: :func:`~jaxsamp.learned.binary.bernoulli_denoising.posterior_mean`; exact: :func:`~jaxsamp.learned.binary.bernoulli_denoising.exact_posterior_mean`).
    alpha : float
        The noise parameter.
    move : {"one_stage", "two_stage"}
    step_size : float
        ``eta`` of the one-stage proposal (unused by the two-stage move).
    correction : {"none", "trapezoid", "exact"}
        Metropolis-Hastings correction; ``exact`` needs ``log_partition``.
    log_partition : callable, optional
        The exact ``A(h)`` of ONE ``h``.
    num_measurements, steps_per_measurement : int
        ``m`` and ``K`` of multi-measurement sampling (``m = 1``: a plain chain on ``q_alpha``).

    Returns
    -------
    Kernel
        ``init(y) -> NoisyState`` (one denoiser evaluation); ``step(key, state) -> (NoisyState, NoisyInfo)``.
    """
    if move not in MOVES:
        raise InputError(f"move must be one of {MOVES}, got {move!r}")
    if correction not in CORRECTIONS:
        raise InputError(f"correction must be one of {CORRECTIONS}, got {correction!r}")
    if correction == "exact" and log_partition is None:
        raise InputError(
            "correction='exact' needs the target's log partition A(h) (log_partition=...)",
            "a learned denoiser alone supports correction='trapezoid' or 'none'",
        )
    if not (alpha > 0 and step_size > 0):
        raise InputError(f"alpha and step_size must be > 0, got alpha={alpha}, step_size={step_size}")
    if num_measurements < 1 or steps_per_measurement < 1:
        raise InputError(
            f"num_measurements and steps_per_measurement must be >= 1, got {num_measurements}, {steps_per_measurement}"
        )
    exact = correction == "exact"

    def evaluate(h):
        return denoiser(h), (log_partition(h) if exact else jnp.zeros((), h.dtype))

    def init(position, rng_key=None):
        y = jnp.asarray(position, jnp.float32)
        offset = jnp.zeros_like(y)
        mean, log_a = evaluate(alpha * y)
        return NoisyState(y, offset, mean, log_a, jnp.int32(0), jnp.int32(0))

    def step(rng_key, state: NoisyState):
        k_move, k_noise, k_accept = jax.random.split(rng_key, 3)
        y, mean = state.position, state.mean
        log_odds = proposal_log_odds(move, mean, y, alpha, step_size)
        if move == "one_stage":
            proposal = jnp.where(jax.random.uniform(k_move, y.shape) < jax.nn.sigmoid(log_odds), 1.0, -1.0)
        else:  # literally: clean bits from the denoiser's means, then a fresh measurement
            clean = jnp.where(jax.random.uniform(k_move, y.shape) < 0.5 * (1.0 + mean), 1.0, -1.0)
            proposal = measure(k_noise, clean, alpha)
        commit = (state.count >= steps_per_measurement) & (state.measurement < num_measurements - 1)
        offset = jnp.where(commit, state.offset + alpha * y, state.offset)
        candidate = jnp.where(commit, y, proposal).astype(y.dtype)
        new_mean, new_log_a = evaluate(offset + alpha * candidate)
        if correction == "none":
            accept = jnp.bool_(True)
        else:
            reverse = proposal_log_odds(move, new_mean, candidate, alpha, step_size)
            log_forward = jnp.sum(jax.nn.log_sigmoid(candidate * log_odds))
            log_reverse = jnp.sum(jax.nn.log_sigmoid(y * reverse))
            if exact:
                log_q_change = new_log_a - state.log_partition
            else:
                log_q_change = 0.5 * alpha * jnp.sum((mean + new_mean) * (candidate - y))
            log_ratio = log_q_change + log_reverse - log_forward
            accept = jnp.log(jax.random.uniform(k_accept)) < log_ratio
        accept = accept | commit
        new = NoisyState(
            jnp.where(accept, candidate, y),
            offset,
            jnp.where(accept, new_mean, mean),
            jnp.where(accept, new_log_a, state.log_partition),
            state.measurement + commit.astype(jnp.int32),
            jnp.where(commit, 0, state.count + 1).astype(jnp.int32),
        )
        info = NoisyInfo(jnp.where(commit, 1.0, accept.astype(jnp.float32)), commit, jnp.int32(1))
        return new, info

    return Kernel(init, step)


def denoise(state: NoisyState, readout: str = "sign", key=None) -> jax.Array:
    """The final denoising: clean samples from the state's ``g(h_0 + alpha y)`` (any batch shape).

    ``sign``: ``x_i = +1`` where ``g_i >= 0``, else -1 (Hamming-optimal);
    ``bernoulli``: independent bits with means ``g`` (needs ``key``). No denoiser evaluation.
    """
    if readout == "sign":
        return jnp.where(state.mean >= 0, 1.0, -1.0)
    if readout == "bernoulli":
        if key is None:
            raise InputError("readout='bernoulli' needs a PRNG key")
        return jnp.where(jax.random.uniform(key, state.mean.shape) < 0.5 * (1.0 + state.mean), 1.0, -1.0)
    raise InputError(f"readout must be one of {READOUTS}, got {readout!r}")


def uniform_noise(key, num_chains: int, event_shape) -> jax.Array:
    """``num_chains`` uniform +-1 states: the start of every chain (``q_alpha`` at ``alpha -> 0``)."""
    return jnp.where(jax.random.bernoulli(key, 0.5, (num_chains, *event_shape)), 1.0, -1.0)


@dataclasses.dataclass(frozen=True)
class SamplerSettings:
    """How the noisy chains are run.

    Attributes
    ----------
    move : {"one_stage", "two_stage"}
    step_size : float
        ``eta`` of the one-stage proposal (1).
    correction : {"none", "trapezoid", "exact"}
        Metropolis-Hastings correction (``exact`` only with a tractable target).
    num_measurements : int
        ``m`` (1: single measurement).
    steps_per_measurement : int
        ``K`` moves per measurement (the chain length when ``m = 1``).
    readout : {"sign", "bernoulli"}
        The final denoising.
    """

    move: Annotated[str, OneOf(MOVES)] = "one_stage"
    step_size: PositiveFloat = 1.0
    correction: Annotated[str, OneOf(CORRECTIONS)] = "none"
    num_measurements: PositiveInt = 1
    steps_per_measurement: PositiveInt = 100
    readout: Annotated[str, OneOf(READOUTS)] = "sign"

    def __post_init__(self):
        check_fields(self)

    @property
    def num_steps(self) -> int:
        """:func:`schedule_length` of these settings."""
        return schedule_length(self.num_measurements, self.steps_per_measurement)

    @property
    def denoiser_evals_per_sample(self) -> int:
        """One at ``init``, one per step: ``m (K + 1)``."""
        return 1 + self.num_steps

    def kernel(self, denoiser: Callable, alpha: float, log_partition: Callable | None = None) -> Kernel:
        """:func:`measurement_kernel` with these settings."""
        return measurement_kernel(
            denoiser,
            alpha,
            self.move,
            self.step_size,
            self.correction,
            log_partition,
            self.num_measurements,
            self.steps_per_measurement,
        )


def sample(
    settings: SamplerSettings,
    denoiser: Callable,
    alpha: float,
    key,
    num_chains: int,
    event_shape,
    log_partition: Callable | None = None,
    **run_options,
) -> tuple[jax.Array, NoisyState, dict]:
    """``num_chains`` clean samples: independent chains from uniform noise, run by the driver, then denoised.

    Each chain costs ``settings.denoiser_evals_per_sample`` denoiser evaluations.
    ``run_options`` go to :func:`jaxsamp.run` (``progress``, ``checkpoint``, ...).

    Returns
    -------
    x : array ``(num_chains, *event_shape)``, +-1
    state : NoisyState of the final chains
    trace : dict with the per-step mean ``acceptance_rate`` over chains
    """
    k_init, k_run, k_out = jax.random.split(key, 3)
    chains = ensemble(settings.kernel(denoiser, alpha, log_partition))
    state = jax.jit(chains.init)(uniform_noise(k_init, num_chains, event_shape))
    run_options = {"progress": False, **run_options}
    state, trace = run(
        chains.step,
        state,
        k_run,
        settings.num_steps,
        trace=lambda s, info: {"acceptance_rate": jnp.mean(info.acceptance_rate)},
        **run_options,
    )
    return denoise(state, settings.readout, k_out), state, trace


__all__ = [
    "CORRECTIONS",
    "MOVES",
    "READOUTS",
    "NoisyInfo",
    "NoisyState",
    "SamplerSettings",
    "denoise",
    "flip_probability",
    "measure",
    "measurement_kernel",
    "proposal_log_odds",
    "sample",
    "schedule_length",
    "uniform_noise",
]
