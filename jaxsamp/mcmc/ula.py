"""Unadjusted Langevin algorithm (ULA / LMC): the baseline every sampler is compared with.

One step of size ``h`` is the Euler-Maruyama discretisation of the overdamped
Langevin diffusion ``dX = grad log pi(X) dt + sqrt(2) dB``::

    x' = x + h grad log pi(x) + sqrt(2 h) xi,    xi ~ N(0, I)

(Roberts & Tweedie 1996, eq. 1.3; Durmus & Moulines 2017, eq. 2). There is no
Metropolis correction, so the chain leaves a biased law ``pi_h`` invariant: for
a Gaussian with precision ``P`` it is ``N(mean, (P (I - h P / 2))^-1)``
(:func:`ula_gaussian_stationary_cov`). blackjax has no ULA kernel (its ``sgld``
is a stochastic-gradient variant driven by data batches), so it lives here.

The ULA transition ``q(. | x) = N(langevin_mean(x), 2 h I)`` is also what
:mod:`jaxsamp.mcmc.speculative_langevin` reproduces exactly and what
:mod:`jaxsamp.mcmc.block_langevin` runs on one block of coordinates.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core.compiled import cached_kernel
from jaxsamp.core.protocols import Kernel
from jaxsamp.core.registry import SAMPLERS
from jaxsamp.core.validation import PositiveFloat, check_float


class ULAState(NamedTuple):
    """Position with its cached log density and gradient (blackjax's MALA state layout)."""

    position: jax.Array
    logdensity: jax.Array
    logdensity_grad: jax.Array


class ULAInfo(NamedTuple):
    """``num_target_evals``: log-density-and-gradient evaluations in the step (always 1)."""

    num_target_evals: jax.Array


def init(position: jax.Array, logdensity_fn: Callable) -> ULAState:
    """A ULA state at ``position`` (one log-density-and-gradient evaluation)."""
    position = jnp.asarray(position)
    chex.assert_type(position, float)
    logdensity, grad = jax.value_and_grad(logdensity_fn)(position)
    return ULAState(position, logdensity, grad)


def langevin_mean(position: jax.Array, logdensity_grad: jax.Array, step_size) -> jax.Array:
    """Mean ``x + h grad log pi(x)`` of the ULA transition from ``x``."""
    return position + step_size * logdensity_grad


def ula(logdensity_fn: Callable, step_size: float) -> Kernel:
    """The ULA kernel ``x' = x + h grad log pi(x) + sqrt(2h) xi``.

    Parameters
    ----------
    logdensity_fn : callable
        ``log pi`` (unnormalised) of one position, an array of any shape.
    step_size : float
        ``h > 0``. ULA is stable on a Gaussian when ``h < 2 / lambda_max(P)``.

    Returns
    -------
    Kernel
        ``init(position, rng_key=None) -> ULAState`` and
        ``step(key, state) -> (ULAState, ULAInfo)``. The noise of a step is
        ``jax.random.normal(key, position.shape)``.
    """
    step_size = check_float("step_size", step_size, gt=0)

    def init_fn(position, rng_key=None):
        return init(position, logdensity_fn)

    def step_fn(rng_key, state: ULAState):
        x = state.position
        noise = jax.random.normal(rng_key, x.shape, x.dtype)
        new_x = langevin_mean(x, state.logdensity_grad, step_size) + jnp.sqrt(2.0 * step_size) * noise
        return init(new_x, logdensity_fn), ULAInfo(jnp.int32(1))

    return Kernel(init_fn, step_fn)


def ula_gaussian_stationary_cov(precision, step_size: float) -> np.ndarray:
    """Exact stationary covariance of ULA on ``N(m, P^-1)``: ``(P (I - h P / 2))^-1``.

    The ULA map is linear, ``x' - m = (I - h P)(x - m) + sqrt(2h) xi``, so the
    stationary covariance solves ``C = (I - hP) C (I - hP) + 2h I``.
    """
    p = np.asarray(precision, dtype=np.float64)
    return np.linalg.inv(p @ (np.eye(p.shape[0]) - 0.5 * step_size * p))


@SAMPLERS.register("ula")
def ula_sampler(target, step_size: PositiveFloat = 0.05) -> Kernel:
    """Unadjusted Langevin algorithm (Euler-Maruyama Langevin, no MH correction)."""
    return cached_kernel(ula, target.log_density, step_size=step_size)
