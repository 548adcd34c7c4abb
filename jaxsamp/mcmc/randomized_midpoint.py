"""Randomized midpoint method (RMM) for overdamped and underdamped Langevin, sequential and parallel.

Shen & Lee, "The Randomized Midpoint Method for Log-Concave Sampling", NeurIPS
2019 (arXiv 1909.05503), Alg. 1 (underdamped) and Sec. 4 (parallel rounds);
Gupta, Cai & Chen, "Faster Diffusion Sampling with Randomized Midpoints:
Sequential and Parallel", ICLR 2025 (arXiv 2406.00924). Digest:
``research/methods.md`` Sec. 3. With ``f = -log pi``:

**Overdamped.** Draw ``alpha ~ U[0, 1]``, ``a = alpha h``::

    x_mid = x - a grad f(x) + sqrt(2) B_a,      x' = x - h grad f(x_mid) + sqrt(2) B_h,

with ``B_h = B_a + (an independent N(0, h - a) increment)``: the drift integral
``int_0^h grad f(x_s) ds`` is estimated without bias by ``h grad f(x_a)``.

**Underdamped** ``dx = v dt``, ``dv = -gamma v dt - u grad f dt + sqrt(2 gamma u) dB``
(stationary law ``pi(x) N(v; 0, u I)``; Shen & Lee take ``gamma = 2``,
``u = 1 / L``), with ``phi(t) = (1 - e^{-gamma t}) / gamma``::

    x_mid = x + phi(a) v - (u / gamma)(a - phi(a)) grad f(x) + W_1
    x'    = x + phi(h) v - u h phi(h - a) grad f(x_mid) + W_2
    v'    = e^{-gamma h} v - u h e^{-gamma (h - a)} grad f(x_mid) + W_3

where ``(W_1, W_2, W_3)`` are the EXACT jointly Gaussian Brownian integrals of
the OU part (i.i.d. over coordinates), covariance :func:`underdamped_noise_cov`.
Its square root is taken with ``eigh`` (clipping round-off negatives), since
the covariance is nearly singular for small ``a`` and Cholesky fails there.

**Parallel rounds** (overdamped; Shen & Lee Sec. 4, Gupta et al. Sec. 4
[reconstructed: check the papers' exact quadrature]): split ``[0, h]`` into
``R`` cells of length ``d = h / R`` with one random point ``tau_r = (r - 1 +
alpha_r) d`` per cell, and Picard-iterate all the points at once for ``K`` rounds::

    X_r^(k) = x - d sum_{j<r} grad f(X_j^(k-1)) - alpha_r d grad f(X_{r-1}^(k-1)) + sqrt(2) B_{tau_r}
    x'      = x - d sum_r grad f(X_r^(K)) + sqrt(2) B_h

(``X_r^(0) = X_0 = x``). The ``R`` gradients of a round are one batched call, so
a step costs ``1 + K`` sequential calls and ``1 + K R`` gradients. ``R = K = 1``
is exactly the sequential overdamped RMM, which is how it is built here.

``alpha`` is drawn inside ``step`` from the step key, so under ``ensemble``
every chain draws its own (a shared ``alpha`` would correlate the chains).
"""

from __future__ import annotations

from typing import Annotated, Callable, NamedTuple

import jax
import jax.numpy as jnp

from jaxsamp.core.compiled import cached_kernel
from jaxsamp.core.errors import InputError
from jaxsamp.core.protocols import Kernel
from jaxsamp.core.registry import SAMPLERS
from jaxsamp.core.validation import (
    OneOf,
    PositiveFloat,
    PositiveInt,
    check_float,
    check_int,
)


class MidpointInfo(NamedTuple):
    """``alpha``: the random fraction(s) drawn, shape ``(num_cells,)``; call counts of the step."""

    alpha: jax.Array
    num_sequential_calls: jax.Array
    num_target_evals: jax.Array


# --------------------------------------------------------------------------
# overdamped (sequential = parallel with one cell and one round)
# --------------------------------------------------------------------------


class OverdampedMidpointState(NamedTuple):
    position: jax.Array


def parallel_randomized_midpoint(
    logdensity_fn: Callable, step_size: float, num_cells: int = 4, num_rounds: int = 2
) -> Kernel:
    """Overdamped RMM with ``num_cells`` random points Picard-iterated for ``num_rounds`` parallel rounds.

    Parameters
    ----------
    logdensity_fn : callable
        ``log pi`` of one position (an array).
    step_size : float
        ``h``.
    num_cells, num_rounds : int
        ``R`` and ``K`` (see the module docstring); ``R = K = 1`` is the
        sequential overdamped RMM.
    """
    step_size = check_float("step_size", step_size, gt=0)
    num_cells, num_rounds = check_int("num_cells", num_cells, ge=1), check_int("num_rounds", num_rounds, ge=1)
    h, r_cells = step_size, num_cells
    cell = h / r_cells
    grad_log_pi = jax.grad(logdensity_fn)
    batched_grad = jax.vmap(grad_log_pi)

    def init_fn(position, rng_key=None):
        return OverdampedMidpointState(jnp.asarray(position))

    def step_fn(rng_key, state):
        x = state.position
        key_alpha, key_b = jax.random.split(rng_key)
        alpha = jax.random.uniform(key_alpha, (r_cells,), x.dtype)
        starts = jnp.arange(r_cells, dtype=x.dtype) * cell
        taus = starts + alpha * cell
        # Brownian motion at the interleaved times tau_1 < d < tau_2 < 2d < ... < tau_R < h
        times = jnp.stack([taus, starts + cell], axis=1).ravel()
        variances = jnp.diff(times, prepend=0.0)
        increments = jnp.sqrt(variances).reshape((-1,) + (1,) * x.ndim) * jax.random.normal(
            key_b, (2 * r_cells, *x.shape), x.dtype
        )
        brownian = jnp.cumsum(increments, axis=0)
        b_tau, b_h = brownian[0::2], brownian[-1]
        g0 = grad_log_pi(x)
        frac = (alpha * cell).reshape((-1,) + (1,) * x.ndim)

        def picard_round(grads, _):
            # grads[r] = grad log pi at X_r of the previous round; X_0 = x has gradient g0
            before = jnp.cumsum(grads, axis=0) - grads  # sum_{j<r}
            left = jnp.concatenate([g0[None], grads[:-1]], axis=0)  # gradient at X_{r-1}
            points = x + cell * before + frac * left + jnp.sqrt(2.0) * b_tau
            return batched_grad(points), None

        grads0 = jnp.broadcast_to(g0, (r_cells, *x.shape))
        grads, _ = jax.lax.scan(picard_round, grads0, None, length=num_rounds)
        new_x = x + cell * jnp.sum(grads, axis=0) + jnp.sqrt(2.0) * b_h
        info = MidpointInfo(alpha, jnp.int32(1 + num_rounds), jnp.int32(1 + num_rounds * r_cells))
        return OverdampedMidpointState(new_x), info

    return Kernel(init_fn, step_fn)


def overdamped_randomized_midpoint(logdensity_fn: Callable, step_size: float) -> Kernel:
    """Sequential overdamped RMM (two gradients per step): Shen & Lee 2019, Sec. 4 with one point."""
    return parallel_randomized_midpoint(logdensity_fn, step_size, num_cells=1, num_rounds=1)


# --------------------------------------------------------------------------
# underdamped
# --------------------------------------------------------------------------


def underdamped_noise_cov(a, h, friction, inverse_mass):
    """Exact covariance of ``(W_1, W_2, W_3)`` per coordinate (methods.md Sec. 3).

    With ``s2 = 2 gamma u``, ``c = e^{-gamma (h - a)}``, ``E(t) = 1 - e^{-gamma t}``,
    ``E2(t) = 1 - e^{-2 gamma t}``::

        C11 = s2/g^2 [a - 2E(a)/g + E2(a)/(2g)]     C22 = same with h
        C33 = s2 E2(h)/(2g)
        C12 = s2/g^2 [a - (1+c)E(a)/g + c E2(a)/(2g)]
        C13 = s2 c/g [E(a)/g - E2(a)/(2g)]          C23 = s2/g [E(h)/g - E2(h)/(2g)]

    ``W_1 = int_0^a s phi(a - r) dB_r``, ``W_2 = int_0^h s phi(h - r) dB_r`` and
    ``W_3 = int_0^h s e^{-g (h - r)} dB_r`` (position at ``a``, position and
    velocity at ``h`` of the OU part). For ``g a << 1``, ``C11 ~ s2 a^3 / 3``
    comes out of a float32 cancellation with an absolute error ``~ 1e-7 a``
    (a noise error ``~ 3e-4 sqrt(a)``); :func:`psd_sqrt` absorbs the resulting
    slightly indefinite matrices.
    """
    g = friction
    s2 = 2.0 * g * inverse_mass
    e1 = lambda t: -jnp.expm1(-g * t)  # noqa: E731
    e2 = lambda t: -jnp.expm1(-2.0 * g * t)  # noqa: E731
    c = jnp.exp(-g * (h - a))
    c11 = s2 / g**2 * (a - 2.0 * e1(a) / g + e2(a) / (2.0 * g))
    c22 = s2 / g**2 * (h - 2.0 * e1(h) / g + e2(h) / (2.0 * g))
    c33 = s2 * e2(h) / (2.0 * g)
    c12 = s2 / g**2 * (a - (1.0 + c) * e1(a) / g + c * e2(a) / (2.0 * g))
    # E(t)/g - E2(t)/(2g) = E(t)^2 / (2g): no cancellation
    c13 = s2 * c / g * e1(a) ** 2 / (2.0 * g)
    c23 = s2 / g * e1(h) ** 2 / (2.0 * g)
    return jnp.array([[c11, c12, c13], [c12, c22, c23], [c13, c23, c33]])


def psd_sqrt(cov):
    """A square root ``S`` with ``S S^T = cov`` from ``eigh`` (negative round-off eigenvalues clipped)."""
    w, v = jnp.linalg.eigh(cov)
    return v * jnp.sqrt(jnp.clip(w, 0.0))[None, :]


class UnderdampedMidpointState(NamedTuple):
    position: jax.Array
    velocity: jax.Array


def underdamped_randomized_midpoint(
    logdensity_fn: Callable, step_size: float, friction: float = 2.0, inverse_mass: float = 1.0
) -> Kernel:
    """Underdamped RMM (Shen & Lee 2019, Alg. 1) with the exact joint Gaussian noise.

    Parameters
    ----------
    logdensity_fn : callable
        ``log pi`` of one position (an array).
    step_size : float
        ``h``.
    friction : float
        ``gamma`` (Shen & Lee: 2).
    inverse_mass : float
        ``u`` (Shen & Lee: ``1 / L`` for an ``L``-smooth ``f``); the velocity's
        stationary law is ``N(0, u I)``.

    Returns
    -------
    Kernel
        ``init(position, rng_key=None)`` draws ``v ~ N(0, u I)`` from ``rng_key``
        (zero velocity without a key). Two gradients per step.
    """
    h = check_float("step_size", step_size, gt=0)
    g, u = check_float("friction", friction, gt=0), check_float("inverse_mass", inverse_mass, gt=0)
    grad_log_pi = jax.grad(logdensity_fn)
    phi = lambda t: -jnp.expm1(-g * t) / g  # noqa: E731

    def init_fn(position, rng_key=None):
        x = jnp.asarray(position)
        if rng_key is None:
            return UnderdampedMidpointState(x, jnp.zeros_like(x))
        return UnderdampedMidpointState(x, jnp.sqrt(u) * jax.random.normal(rng_key, x.shape, x.dtype))

    def step_fn(rng_key, state):
        x, v = state.position, state.velocity
        key_alpha, key_w = jax.random.split(rng_key)
        alpha = jax.random.uniform(key_alpha, (), x.dtype)
        a = alpha * h
        root = psd_sqrt(underdamped_noise_cov(a, h, g, u)).astype(x.dtype)
        w1, w2, w3 = jnp.tensordot(root, jax.random.normal(key_w, (3, *x.shape), x.dtype), axes=1)
        # grad f = -grad log pi
        x_mid = x + phi(a) * v + (u / g) * (a - phi(a)) * grad_log_pi(x) + w1
        g_mid = grad_log_pi(x_mid)
        new_x = x + phi(h) * v + u * h * phi(h - a) * g_mid + w2
        new_v = jnp.exp(-g * h) * v + u * h * jnp.exp(-g * (h - a)) * g_mid + w3
        return UnderdampedMidpointState(new_x, new_v), MidpointInfo(alpha[None], jnp.int32(2), jnp.int32(2))

    return Kernel(init_fn, step_fn)


@SAMPLERS.register("randomized_midpoint")
def randomized_midpoint_sampler(
    target,
    step_size: PositiveFloat = 0.1,
    dynamics: Annotated[str, OneOf(("underdamped", "overdamped"))] = "underdamped",
    friction: PositiveFloat = 2.0,
    inverse_mass: PositiveFloat = 1.0,
    num_cells: PositiveInt = 1,
    num_rounds: PositiveInt = 1,
) -> Kernel:
    """Randomized midpoint Langevin (Shen & Lee 2019): underdamped, overdamped, or parallel Picard rounds."""
    if dynamics == "underdamped":
        if (num_cells, num_rounds) != (1, 1):
            raise InputError("parallel rounds (num_cells, num_rounds) are implemented for dynamics='overdamped'")
        return cached_kernel(underdamped_randomized_midpoint, target.log_density, step_size=step_size,
                             friction=friction, inverse_mass=inverse_mass)
    return cached_kernel(parallel_randomized_midpoint, target.log_density, step_size=step_size, num_cells=num_cells,
                         num_rounds=num_rounds)
