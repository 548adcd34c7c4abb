"""Metropolis-adjusted samplers on the unit sphere S^{d-1}: tangent-space MALA and the geodesic random walk.

From ``x`` on the sphere, a tangent vector

    v = (h / 2) P_x grad log pi(x) + sqrt(h) P_x xi,    P_x = I - x x^T,   xi ~ N(0, I_d),

is followed along the great circle: ``y = exp_x(v) = cos|v| x + sin|v| v / |v|``.
Proposals with ``|v| >= pi`` (where the exponential map stops being one-to-one)
are replaced by staying at ``x``, so for ``y != x`` the proposal density on the
sphere is the tangent Gaussian at ``v = log_x(y)`` times the Jacobian of ``exp_x``,
``(sin|v| / |v|)^{-(d-2)}``. The reverse move from ``y`` needs
``v' = log_y(x) = theta (x - cos(theta) y) / sin(theta)`` with the same geodesic
distance ``theta = |v|``, so the Jacobians cancel in the Metropolis-Hastings ratio::

    log alpha = log pi(y) - log pi(x)
                - |v' - (h/2) P_y grad log pi(y)|^2 / (2h) + |v - (h/2) P_x grad log pi(x)|^2 / (2h),

and the kernel leaves ``pi`` (a density with respect to surface measure) exactly
invariant. Without the gradient (``geodesic_random_walk``) the proposal is
symmetric. Manifold MALA in this form: Girolami & Calderhead (2011, sec. 5) and
Byrne & Girolami (2013), "Geodesic Monte Carlo on embedded manifolds".

The kernels are blackjax-shaped (``init``/``step``) and work in every combinator;
a ``log_prob`` that is not finite at a proposal rejects it.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import chex
import jax
import jax.numpy as jnp

from jaxsamp.core.compiled import cached_kernel
from jaxsamp.core.protocols import Kernel
from jaxsamp.core.registry import SAMPLERS
from jaxsamp.core.validation import PositiveFloat, check_float


class SphereState(NamedTuple):
    """A unit vector with its cached log density and Euclidean gradient."""

    position: jax.Array
    logdensity: jax.Array
    logdensity_grad: jax.Array


class SphereInfo(NamedTuple):
    """``acceptance_rate`` (the MH probability), ``is_accepted``, ``num_target_evals`` (1 per step)."""

    acceptance_rate: jax.Array
    is_accepted: jax.Array
    num_target_evals: jax.Array


def tangent(x, v):
    """Projection ``(I - x x^T) v`` of ``v`` onto the tangent space at the unit vector ``x``."""
    return v - (v @ x) * x


def exp_map(x, v):
    """The point at geodesic distance ``|v|`` from ``x`` in the tangent direction ``v``."""
    norm = jnp.linalg.norm(v)
    direction = v / jnp.where(norm > 0, norm, 1.0)
    return jnp.cos(norm) * x + jnp.sin(norm) * direction


def log_map(x, y):
    """The tangent vector at ``x`` whose exponential is ``y`` (principal branch; ``y`` not antipodal)."""
    cos = jnp.clip(x @ y, -1.0, 1.0)
    theta = jnp.arccos(cos)
    sin = jnp.sin(theta)
    return jnp.where(sin > 1e-12, theta / jnp.where(sin > 1e-12, sin, 1.0), 1.0) * (y - cos * x)


def _init(position, logdensity_fn) -> SphereState:
    position = jnp.asarray(position)
    chex.assert_rank(position, 1)
    chex.assert_type(position, float)
    logdensity, grad = jax.value_and_grad(logdensity_fn)(position)
    return SphereState(position, logdensity, grad)


def _kernel(logdensity_fn: Callable, step_size: float, use_gradient: bool) -> Kernel:
    h = step_size

    def drift(state):
        return 0.5 * h * tangent(state.position, state.logdensity_grad) if use_gradient else 0.0

    def step(key, state: SphereState):
        k_noise, k_accept = jax.random.split(key)
        x = state.position
        xi = jax.random.normal(k_noise, x.shape, x.dtype)
        v = drift(state) + jnp.sqrt(h) * tangent(x, xi)
        inside = jnp.linalg.norm(v) < jnp.pi
        y = exp_map(x, v)
        y = y / jnp.linalg.norm(y)  # stay on the sphere to rounding
        logdensity, grad = jax.value_and_grad(logdensity_fn)(y)
        proposal = SphereState(y, logdensity, grad)
        back = log_map(y, x)
        log_q_forward = -jnp.sum((v - drift(state)) ** 2) / (2 * h)
        log_q_backward = -jnp.sum((back - drift(proposal)) ** 2) / (2 * h)
        log_alpha = logdensity - state.logdensity + log_q_backward - log_q_forward
        log_alpha = jnp.where(inside & jnp.isfinite(log_alpha), log_alpha, -jnp.inf)
        accept = jnp.log(jax.random.uniform(k_accept, dtype=x.dtype)) < log_alpha
        new = jax.tree.map(lambda a, b: jnp.where(accept, a, b), proposal, state)
        info = SphereInfo(jnp.minimum(1.0, jnp.exp(log_alpha)), accept, jnp.int32(1))
        return new, info

    return Kernel(lambda position, rng_key=None: _init(position, logdensity_fn), step)


def sphere_mala(logdensity_fn: Callable, step_size: float) -> Kernel:
    """Tangent-space MALA on ``S^{d-1}`` with geodesic moves and an exact MH correction (module docstring).

    Parameters
    ----------
    logdensity_fn : callable
        ``log pi(x)`` for one unit vector ``x`` (d,), w.r.t. surface measure, up to a constant.
    step_size : float
        ``h``: the tangent proposal has covariance ``h P_x``.
    """
    return _kernel(logdensity_fn, check_float("step_size", step_size, gt=0), True)


def geodesic_random_walk(logdensity_fn: Callable, step_size: float) -> Kernel:
    """Random-walk Metropolis along great circles (the gradient-free case of :func:`sphere_mala`)."""
    return _kernel(logdensity_fn, check_float("step_size", step_size, gt=0), False)


@SAMPLERS.register("sphere_mala")
def sphere_mala_sampler(target, step_size: PositiveFloat = 0.1) -> Kernel:
    """Tangent-space MALA with geodesic moves on the sphere (Metropolis-adjusted)."""
    return cached_kernel(sphere_mala, target.log_density, step_size=step_size)


@SAMPLERS.register("geodesic_random_walk")
def geodesic_random_walk_sampler(target, step_size: PositiveFloat = 0.1) -> Kernel:
    """Random-walk Metropolis along great circles of the sphere."""
    return cached_kernel(geodesic_random_walk, target.log_density, step_size=step_size)
