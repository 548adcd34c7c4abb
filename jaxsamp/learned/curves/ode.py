"""Sampling along a Boltzmann curve by ODE, with exact importance weights, and velocity diagnostics.

Samples start at ``x_0 ~ rho_0 = N(0, s^2 I)`` and follow ``dx/dt = v_t(x)``
(:mod:`jaxsamp.learned.curves.interpolations`). Along each path the ODE
carries, next to ``x``:

* ``int_0^t div v_s(x_s) ds``, so the model density is known by the
  instantaneous change of variables (Chen et al. 2018, "Neural ordinary
  differential equations", Thm. 1): ``log q_1(x_1) = log rho_0(x_0) - int div v``,
  and every sample gets the weight ``log w = log p~(x_1) - log q_1(x_1)``
  against the target: ``WeightedSamples`` with ``.ess`` and ``.log_Z``;
* ``int_0^t R_s(x_s) ds``, the continuity residual along the path. Since
  ``d/dt f_t(x_t) = d/dt f_t + <grad f_t, v_t>``, the change-of-variables weight
  equals ``log Z_0 + int C - int R`` on every path: the Jarzynski-type weight of
  the escorted dynamics (Vaikuntanathan & Jarzynski 2008; the continuous-space
  form of LEAPS' weights), whose estimator is
  ``log Z_1 ~ log Z_0 + int C + log mean exp(-int R)``. The two are equal in
  exact arithmetic and differ only by the integrator's error (the Jarzynski form
  integrates ``d/dt f_t(x_t)`` by quadrature where the other evaluates ``f`` at the
  ends), so they are a consistency check on the ODE solve, not independent
  estimates; both are reported. With ``v = 0`` and the linear interpolation,
  the Jarzynski weight is ``f_0(x_0) - f_1(x_0)``: importance sampling, i.e.
  AIS without MCMC moves.

**Langevin corrections** (an annealed-transport hybrid, as annealed flow
transport, Arbel, Matthews & Doucet 2021, "Annealed flow transport Monte
Carlo", ICML, Alg. 1): every ``every`` ODE steps the samples take ``num_steps``
MALA steps (blackjax, through :func:`~jaxsamp.core.ensemble` and
:func:`~jaxsamp.core.repeat`) that leave ``rho_t ∝ exp(-f_t)`` invariant. The
change-of-variables density is then lost, but the weight survives as AFT's: each
ODE segment from ``t_a`` (after the moves) to ``t_b`` adds
``f_{t_a}(x_a) - f_{t_b}(x_b) + int_{t_a}^{t_b} div v``, and the moves add
nothing; without moves the sum telescopes to the change-of-variables weight.
The residual integral continues from the moved states, so the Jarzynski form
stays equal to it segment by segment.

**Integrator.** Fixed-step RK4 in a ``lax.scan`` (Máté & Fleuret use RK4 with 50
steps), chosen over diffrax by measurement (``scripts/compare_curve_integrators.py``,
``benchmarks/results/compare_curve_integrators.json``): on a trained linear-interpolation
velocity (gmm2d), the mean log-weight error against a 4096-step reference was 5.4e-5
for RK4 at 64 velocity-and-divergence evaluations and 5.2e-6 at 128, against
diffrax's adaptive Tsit5 1.4e-4 at 91 and 5.5e-6 at 151, and Dopri5 3.7e-4 at 67 and
2.9e-5 at 109 (256 samples integrated as one state, float32). The adaptive solvers
pay more evaluations for the same accuracy, so diffrax is not a dependency. A fixed
grid is also what the Langevin corrections, the jitted scan and the evaluation counts
need: every path costs exactly ``4 K`` evaluations for ``K`` steps.

**Target evaluations** (one evaluation = the target's log density, with any of
its derivatives, at one state): ``4 K + 1`` per sample (the residual's terms at
every RK4 stage, which also give the gradient-flow velocity, and ``f_1`` at the
end), plus ``1 + num_steps`` per Langevin correction.

**Velocity diagnostics**: the mean and the maximum of ``|v_t(x_t)|`` over the
samples at every grid time, and, for 1-D curves given by their log densities,
the exact velocity ``v_t(x) = -d/dt F_t(x) / rho_t(x)`` (``F_t`` the CDF: the
continuity equation in 1-D has this one solution that vanishes at infinity),
which shows the linear interpolation's "teleportation of mass".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import blackjax
import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core.combinators import ensemble, repeat
from jaxsamp.core.errors import InputError
from jaxsamp.core.protocols import WeightedSamples
from jaxsamp.learned.curves.interpolations import (
    CurveFields,
    Interpolation,
    continuity_residual,
    value_and_divergence,
)


class LangevinCorrection(NamedTuple):
    """MALA moves between ODE steps: ``num_steps`` moves of ``step_size`` after every ``every`` ODE steps."""

    num_steps: int
    every: int = 1
    step_size: float = 0.05


class CurveSamples(NamedTuple):
    """What :func:`transport` returns.

    Attributes
    ----------
    samples : WeightedSamples
        ``x_1`` (n, d) with the change-of-variables (AFT with corrections) log-weights;
        ``log_Z0`` is the base's, so ``samples.log_Z`` estimates the target's ``log Z``.
    jarzynski : WeightedSamples
        The same states with log-weights ``-int R dt`` and ``log_Z0 = log Z_0 + int C dt``.
    times : (K + 1,)
    speed_mean, speed_max : (K + 1,)
        Mean and maximum over samples of ``|v_t(x_t)|`` at each grid time.
    target_evals : int32
        Target evaluations of the whole run (module docstring).
    acceptance : scalar
        Mean MALA acceptance of the corrections (NaN without them).
    """

    samples: WeightedSamples
    jarzynski: WeightedSamples
    times: jax.Array
    speed_mean: jax.Array
    speed_max: jax.Array
    target_evals: jax.Array
    acceptance: jax.Array


def rk4_step(field: Callable, t, h, y):
    """One classical Runge-Kutta step of ``dy/dt = field(t, y)`` for a PyTree ``y``; also returns ``field(t, y)``."""
    axpy = lambda a, u, w: jax.tree.map(lambda p, q: p + a * q, u, w)
    k1 = field(t, y)
    k2 = field(t + h / 2, axpy(h / 2, y, k1))
    k3 = field(t + h / 2, axpy(h / 2, y, k2))
    k4 = field(t + h, axpy(h, y, k3))
    new = jax.tree.map(
        lambda p, a, b, c, d: p + h / 6 * (a + 2 * b + 2 * c + d), y, k1, k2, k3, k4
    )
    return new, k1


def flow_map(velocity: Callable, x: jax.Array, t, h) -> tuple[jax.Array, jax.Array]:
    """One RK4 step ``Phi`` of ``dx/dt = v_t(x)`` from ``t`` over ``h`` at one state, and its log-determinant.

    The log-determinant is the same RK4 step of ``d/dt log det = div v_t(x_t)``
    (Chen et al. 2018, Thm. 1): the integrator's own divergence term, as
    :func:`transport` carries it, so the flow maps of a grid compose to
    :func:`transport`'s ODE and their log-determinants add up to its
    ``int div v`` (exact traces, :func:`~jaxsamp.learned.curves.interpolations.value_and_divergence`).

    Returns
    -------
    x_next : (d,)
    log_det : ()
    """

    def field(s, y):
        return value_and_divergence(lambda z: velocity(z, s), y[0])

    (x_next, log_det), _ = rk4_step(field, t, h, (x, jnp.zeros((), x.dtype)))
    return x_next, log_det


def integrate(velocity: Callable, x: jax.Array, t_end, num_steps: int) -> jax.Array:
    """``x_{t_end}`` of ``dx/dt = velocity(x, t)`` from ``x_0 = x`` (one state) by ``num_steps`` RK4 steps of ``t_end / K``."""
    h = t_end / num_steps

    def body(y, k):
        return rk4_step(lambda t, z: velocity(z, t), k * h, h, y)[0], None

    return jax.lax.scan(body, x, jnp.arange(num_steps, dtype=x.dtype))[0]


def _check(num_samples, num_steps, langevin):
    for name, value in (("num_samples", num_samples), ("num_steps", num_steps)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"{name} must be a positive int, got {value!r}")
    if langevin is not None and langevin.num_steps > 0:
        if langevin.every < 1 or num_steps % langevin.every:
            raise InputError(
                f"langevin every={langevin.every} must divide the {num_steps} ODE steps"
            )
        if not langevin.step_size > 0:
            raise InputError(
                f"the Langevin step size must be > 0, got {langevin.step_size}"
            )


def transport(
    interpolation: Interpolation,
    fields: CurveFields,
    key,
    num_samples: int,
    num_steps: int,
    langevin: LangevinCorrection | None = None,
    x0: jax.Array | None = None,
) -> CurveSamples:
    """``num_samples`` samples of ``rho_1`` by the ODE along the curve, with both weights (module docstring).

    Parameters
    ----------
    interpolation : Interpolation
    fields : CurveFields
        The curve's ``g``, ``v`` and ``C`` at one state (``v`` fixed by ``g`` for the gradient flow).
    key : PRNG key
    num_samples : int
    num_steps : int
        ``K`` RK4 steps of ``1 / K``.
    langevin : LangevinCorrection, optional
        MALA corrections between ODE steps (``every`` must divide ``K``).
    x0 : (num_samples, d), optional
        Starting points, which must be draws from ``rho_0`` for the weights to
        hold (default: drawn from ``key``).

    Returns
    -------
    CurveSamples
    """
    _check(num_samples, num_steps, langevin)
    correct = langevin is not None and langevin.num_steps > 0
    every = langevin.every if correct else num_steps
    h = 1.0 / num_steps
    k_base, k_moves = jax.random.split(key)
    if x0 is None:
        x0 = interpolation.base_scale * jax.random.normal(
            k_base, (num_samples, interpolation.dim)
        )
    elif x0.shape != (num_samples, interpolation.dim):
        raise InputError(
            f"x0 must have shape ({num_samples}, {interpolation.dim}), got {x0.shape}"
        )
    dtype = x0.dtype

    def one(t, y):
        x = y[0]
        v, div = value_and_divergence(lambda z: fields.velocity(z, t), x)
        residual = continuity_residual(
            interpolation.terms(fields.g, x, t), v, div, fields.rate(t)
        )
        return v, div, residual

    def field(t, y):
        return jax.vmap(one, in_axes=(None, 0))(t, y)

    def ode_step(y, k):
        t = k * h
        y, (v, _, _) = rk4_step(field, t, h, y)
        speed = jnp.linalg.norm(v, axis=-1)
        return y, (jnp.mean(speed), jnp.max(speed))

    def block(carry, b):
        y, log_w, f_start = carry
        y, speeds = jax.lax.scan(
            ode_step, y, b * every + jnp.arange(every, dtype=dtype)
        )
        accept = jnp.full((), jnp.nan, dtype)
        if correct:
            t_c = (b + 1) * every * h
            log_density = lambda z: -interpolation.f(fields.g, z, t_c)
            kernel = ensemble(
                repeat(
                    blackjax.mala(log_density, langevin.step_size), langevin.num_steps
                )
            )
            state = kernel.init(y[0])
            log_w = (
                log_w + f_start + state.logdensity
            )  # f_{t_a}(x_a) - f_{t_b}(x_b^-) for the segment just done
            state, info = kernel.step(jax.random.fold_in(k_moves, b), state)
            f_start, accept = -state.logdensity, jnp.mean(info.acceptance_rate)
            y = (state.position, y[1], y[2])
        return (y, log_w, f_start), (speeds, accept)

    f_base = jax.vmap(interpolation.base_energy)(x0)
    zeros = jnp.zeros((num_samples,), dtype)
    carry = ((x0, zeros, zeros), zeros, f_base)
    (y, log_w, f_start), (speeds, accept) = jax.lax.scan(
        block, carry, jnp.arange(num_steps // every, dtype=dtype)
    )
    x1, log_det, int_r = y
    f1, _grad_f1 = jax.vmap(interpolation.target_energy)(x1)
    log_w = (
        log_w + f_start - f1 + log_det
    )  # the last segment (or the whole path without corrections)
    v1 = jax.vmap(fields.velocity, in_axes=(0, None))(x1, jnp.ones((), dtype))
    speed1 = jnp.linalg.norm(v1, axis=-1)
    speed_mean = jnp.concatenate([speeds[0].reshape(-1), jnp.mean(speed1)[None]])
    speed_max = jnp.concatenate([speeds[1].reshape(-1), jnp.max(speed1)[None]])
    rate_integral = _integral(fields.rate, dtype)
    num_corrections = num_steps // every if correct else 0
    evals = num_samples * (
        4 * num_steps
        + 1
        + num_corrections * (1 + (langevin.num_steps if correct else 0))
    )
    return CurveSamples(
        samples=WeightedSamples(x1, log_w, interpolation.log_Z0),
        jarzynski=WeightedSamples(x1, -int_r, interpolation.log_Z0 + rate_integral),
        times=jnp.linspace(0.0, 1.0, num_steps + 1, dtype=dtype),
        speed_mean=speed_mean,
        speed_max=speed_max,
        target_evals=jnp.asarray(evals, jnp.int32),
        acceptance=jnp.nanmean(accept) if correct else jnp.full((), jnp.nan, dtype),
    )


GAUSS_LEGENDRE_NODES = 32


def _integral(rate: Callable, dtype) -> jax.Array:
    """``int_0^1 C(t) dt`` by 32-point Gauss-Legendre quadrature."""
    nodes, weights = np.polynomial.legendre.leggauss(GAUSS_LEGENDRE_NODES)
    t = jnp.asarray(0.5 * (nodes + 1.0), dtype)
    return 0.5 * jnp.sum(jnp.asarray(weights, dtype) * jax.vmap(rate)(t))


def rate_integral(rate: Callable, dtype=jnp.float32) -> jax.Array:
    """``int_0^1 C(t) dt`` (32-point Gauss-Legendre): the curve's own estimate of ``log Z_1 - log Z_0``."""
    return _integral(rate, dtype)


# --------------------------------------------------------------------------
# exact 1-D velocities (the teleportation diagnostic)
# --------------------------------------------------------------------------


class ExactSpeeds(NamedTuple):
    """The exact 1-D velocity of a curve along ``t``: each field has shape ``(len(times),)``.

    Attributes
    ----------
    times : the interior grid times.
    rms : ``sqrt(E_{rho_t}[v_t^2])`` over the bulk, the Wasserstein speed ``|rho'_t|_{W2}`` (a lower bound of it).
    max : ``max |v_t(x)|`` over the bulk, where ``rho_t(x) >= bulk * max rho_t``.
    """

    times: np.ndarray
    rms: np.ndarray
    max: np.ndarray


def exact_speeds_1d(
    log_density: Callable,
    grid: np.ndarray,
    times: np.ndarray,
    bulk: float = 1e-8,
    dt: float = 1e-4,
) -> ExactSpeeds:
    """Speeds of the unique velocity of a 1-D curve of densities, in float64.

    ``v_t(x) = -d/dt F_t(x) / rho_t(x)`` with ``F_t`` the CDF of ``rho_t``:
    ``d/dt rho_t = rho_t (d/dt log rho~_t - E_{rho_t}[d/dt log rho~_t])`` with the
    log density's ``t``-derivative by a central difference of step ``dt``, and its
    integral in ``x`` by the trapezoid rule on ``grid``. Where ``rho_t`` is tiny the
    quotient is dominated by rounding (about ``1e-16 / rho_t``), so both figures
    are taken over the bulk ``rho_t >= bulk * max rho_t``: there they are exact to
    the quadrature's accuracy, and the root mean square is a lower bound of the
    full one.

    Parameters
    ----------
    log_density : callable
        ``log_density(x (G,), t) -> (G,)``, the unnormalised log density of ``rho_t`` (NumPy, float64).
    grid : (G,) equally spaced points covering the mass of every ``rho_t``.
    times : (T,) times in ``(dt, 1 - dt)``.
    bulk : float
    dt : float
    """
    grid = np.asarray(grid, np.float64)
    h = grid[1] - grid[0]
    rms, top = [], []
    for t in np.asarray(times, np.float64):
        log_p = np.asarray(log_density(grid, t), np.float64)
        p = np.exp(log_p - np.max(log_p))
        p /= np.sum(0.5 * h * (p[1:] + p[:-1]))
        rate = (
            np.asarray(log_density(grid, t + dt))
            - np.asarray(log_density(grid, t - dt))
        ) / (2 * dt)
        dp = p * (rate - np.sum(0.5 * h * (p * rate)[1:] + 0.5 * h * (p * rate)[:-1]))
        flux = -np.concatenate([[0.0], np.cumsum(0.5 * h * (dp[1:] + dp[:-1]))])
        inside = p >= bulk * np.max(p)
        v = flux[inside] / p[inside]
        rms.append(np.sqrt(np.sum(p[inside] * v**2) * h))
        top.append(np.max(np.abs(v)))
    return ExactSpeeds(np.asarray(times, np.float64), np.asarray(rms), np.asarray(top))


def mixture_curves_1d(means, scales, weights, base_scale: float = 1.0) -> dict:
    """Log densities ``(x, t) -> log rho_t(x)`` of the linear and the gradient-flow curve to a 1-D Gaussian mixture.

    Linear: ``(1 - t) log N(x; 0, s^2) + t log p(x)``; gradient flow (the
    variance-preserving curve ``t X_1 + s sqrt(1 - t^2) Z``): the mixture of
    ``N(t m_k, t^2 s_k^2 + (1 - t^2) s^2)``. For :func:`exact_speeds_1d`.
    """
    means, scales = np.asarray(means, np.float64), np.asarray(scales, np.float64)
    weights = np.asarray(weights, np.float64) / np.sum(weights)

    def log_mixture(x, m, v):
        comps = (
            np.log(weights)
            - 0.5 * (x[:, None] - m) ** 2 / v
            - 0.5 * np.log(2 * np.pi * v)
        )
        top = np.max(comps, axis=1, keepdims=True)
        return (top + np.log(np.sum(np.exp(comps - top), axis=1, keepdims=True)))[:, 0]

    def linear(x, t):
        return -(1 - t) * 0.5 * x**2 / base_scale**2 + t * log_mixture(
            x, means, scales**2
        )

    def gradient_flow(x, t):
        return log_mixture(x, t * means, t**2 * scales**2 + (1 - t**2) * base_scale**2)

    return {"linear": linear, "gradient_flow": gradient_flow}
