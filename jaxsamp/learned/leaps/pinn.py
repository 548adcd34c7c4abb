"""LEAPS' physics-informed loss and its step-count curriculum (Holderrieth, Albergo & Jaakkola 2025, ICML).

The weights of :mod:`jaxsamp.learned.leaps.simulation` have zero variance when the integrand ``K_t(x)`` equals
``d_t log Z_t`` for every ``x``. The PINN loss asks exactly that, with a learned free energy ``F_phi(t)`` (an MLP
of ``t``; at the optimum ``F_phi(t) = -log Z_t + const``)::

    L(theta, phi) = E_{(x, t)} [ (K_t^theta(x) + d_t F_phi(t))^2 ]

(:func:`pinn_residuals`, :func:`pinn_loss`); :func:`free_energy_log_Z` is the free-energy network's own estimate of
``log Z_1``. The curriculum (the reference's ``inverse_repeat_quadratic``) grows the rollouts' Euler steps ``k``
from 1 to ``K`` with linearly increasing repeats (:func:`curriculum_schedule`) on random grids of ``[0, k / K]``
(:func:`curriculum_grid`). :mod:`jaxsamp.learned.leaps.training` trains with them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core.errors import InputError
from jaxsamp.learned.leaps import simulation

if TYPE_CHECKING:
    from jaxsamp.learned.leaps.training import LeapsModel


# --------------------------------------------------------------------------
# curriculum
# --------------------------------------------------------------------------


def curriculum_schedule(start: int, k_max: int, num_steps: int, warm_up: int = 0) -> np.ndarray:
    """Number of Euler steps ``k`` for each update: ``start .. k_max``, repeats growing linearly.

    Value ``start + i`` is repeated about ``1 + i d`` times with ``d`` chosen so
    that the counts sum to ``num_steps`` (the reference's
    ``inverse_repeat_quadratic``), after ``warm_up`` updates at ``start``. Past the
    end of the schedule training uses ``k_max``.
    """
    n = k_max - start + 1
    if num_steps <= 0 or n == 1:
        body = np.full(max(num_steps, 0), k_max, np.int32)
    else:
        if num_steps < n:
            raise InputError(f"curriculum_steps={num_steps} must be >= the {n} step counts it visits")
        d = 2.0 * (num_steps - n) / (n * (n - 1))
        cum = np.concatenate([[0.0], np.cumsum(1.0 + d * np.arange(n))])
        bounds = np.round(cum * num_steps / cum[-1]).astype(np.int64)
        bounds[0], bounds[-1] = 0, num_steps
        body = np.repeat(np.arange(start, k_max + 1, dtype=np.int32), np.diff(bounds))
    out = np.concatenate([np.full(warm_up, start, np.int32), body, [np.int32(k_max)]])
    return out.astype(np.int32)


def curriculum_grid(key: jax.Array, k: jax.Array, k_max: int) -> jax.Array:
    """A random grid of ``k`` steps on ``[0, k / k_max]``, padded to ``k_max + 1`` points.

    ``sort({0, k/k_max} ∪ (k - 1) iid U(0, k/k_max))`` followed by copies of
    ``k / k_max`` (zero-length steps, skipped by ``simulate(num_active=k)``).
    """
    final_t = k / k_max
    u = jax.random.uniform(key, (k_max - 1,)) * final_t
    u = jnp.where(jnp.arange(k_max - 1) < k - 1, u, final_t)
    return jnp.concatenate([jnp.zeros((1,)), jnp.sort(u), jnp.reshape(final_t, (1,))]).astype(jnp.float32)


# --------------------------------------------------------------------------
# loss
# --------------------------------------------------------------------------


def pinn_residuals(model: LeapsModel, params, path, x: jax.Array, t: jax.Array) -> jax.Array:
    """``K_t(x) + d_t F_phi(t)`` for a batch of pairs ``x`` ``(B, *event_shape)``, ``t`` ``(B,)``."""
    rate_fn = model.rate_fn(params)
    free_energy = model.free_energy_fn(params)

    def one(xi, ti):
        G = rate_fn(xi, ti)
        K = simulation.jarzynski_integrand(G, path.flip_log_ratios(xi, ti), path.dlog_prob_dt(xi, ti))
        dF = jax.jvp(free_energy, (ti,), (jnp.ones_like(ti),))[1]
        return K + dF

    return jax.vmap(one)(x, t)


def pinn_loss(model: LeapsModel, params, path, x: jax.Array, t: jax.Array) -> jax.Array:
    """LEAPS' physics-informed loss: the mean squared residual of :func:`pinn_residuals`."""
    return jnp.mean(pinn_residuals(model, params, path, x, t) ** 2)


def free_energy_log_Z(model: LeapsModel, params, path) -> jax.Array:
    """``log Z_0 + F_phi(0) - F_phi(1)``: the free-energy network's own estimate of ``log Z_1``."""
    free_energy = model.free_energy_fn(params)
    return path.log_Z0 + free_energy(jnp.float32(0.0)) - free_energy(jnp.float32(1.0))


__all__ = ["curriculum_grid", "curriculum_schedule", "free_energy_log_Z", "pinn_loss", "pinn_residuals"]
