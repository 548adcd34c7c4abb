"""Adaptive tempering: the next temperature of an SMC sampler by bisection on the conditional ESS.

Zhou, Johansen & Aston (2016), "Toward automatic model comparison: an adaptive
sequential Monte Carlo approach", JCGS 25, eq. 3.3: with normalised weights
``W_i`` and incremental weights ``v_i = pi_{t'}(x_i) / pi_t(x_i)``, the conditional
effective sample size

    CESS(t') = (sum_i W_i v_i)^2 / sum_i W_i v_i^2        (in (0, 1])

measures how much moving from ``t`` to ``t'`` degrades the current particle
system, whether or not it was just resampled (after resampling it is the
ordinary ESS of the increments, the criterion of Jasra et al. 2011).
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp

_lse = jax.scipy.special.logsumexp


def conditional_ess(log_w: jax.Array, log_increment: jax.Array) -> jax.Array:
    """``CESS`` of Zhou et al. (2016, eq. 3.3) as a fraction in ``(0, 1]``.

    Parameters
    ----------
    log_w : array (n,)
        Current unnormalised log-weights.
    log_increment : array (n,)
        ``log pi_{t'}(x_i) - log pi_t(x_i)``.
    """
    log_W = log_w - _lse(log_w)
    return jnp.exp(2.0 * _lse(log_W + log_increment) - _lse(log_W + 2.0 * log_increment))


def next_temperature(
    log_w: jax.Array,
    log_increment_fn: Callable[[jax.Array], jax.Array],
    t: jax.Array,
    target_cess: float,
    num_bisection_steps: int,
) -> jax.Array:
    """The next temperature ``t' in (t, 1]`` at which ``CESS(t') ≈ target_cess``.

    Returns ``1`` when the whole remaining step keeps ``CESS >= target_cess``;
    otherwise bisects ``num_bisection_steps`` times on ``[t, 1]``, assuming CESS
    decreases in ``t'``, and returns the upper end of the final bracket (so the
    temperature always increases; its CESS is at or just below the target).

    Parameters
    ----------
    log_w : array (n,)
    log_increment_fn : callable
        ``t' -> log pi_{t'}(x) - log pi_t(x)`` at the current particles, shape (n,).
    t : scalar
        Current temperature.
    target_cess : float in (0, 1)
    num_bisection_steps : int

    Returns
    -------
    t_next : scalar
    num_calls : int32 scalar
        Calls of ``log_increment_fn`` made: 1, or ``1 + num_bisection_steps``
        when it bisected (what a path without a closed-form increment pays in
        target evaluations per particle).
    """

    def too_far(s):
        return conditional_ess(log_w, log_increment_fn(s)) < target_cess

    one = jnp.ones_like(t)

    def bisect(_):
        def body(_, bracket):
            lo, hi = bracket
            mid = 0.5 * (lo + hi)
            far = too_far(mid)
            return jnp.where(far, lo, mid), jnp.where(far, mid, hi)

        return jax.lax.fori_loop(0, num_bisection_steps, body, (t, one))[1]

    far = too_far(one)
    t_next = jax.lax.cond(far, bisect, lambda _: one, None)
    return t_next, jnp.where(far, 1 + num_bisection_steps, 1).astype(jnp.int32)
