"""Transitions for SMC along an annealing path, with their exact incremental log weights.

A *transition* moves every particle from level ``t`` to level ``t'`` of an
:class:`~jaxsamp.core.target.AnnealingPath` with a forward kernel ``F`` and
returns, per particle, the incremental log weight of SMC samplers with a
backward kernel ``B`` (Del Moral, Doucet & Jasra 2006, JRSS B 68, Sec. 3)::

    log w = log pi_{t'}(x') + log B(x | x') - log pi_t(x) - log F(x' | x).

``B`` is any *normalised* kernel, so ``E[w] = Z_{t'} / Z_t`` exactly for
``x ~ pi_t / Z_t`` and ``x' ~ F(. | x)``, for every forward kernel: a learned (or
badly tuned) ``F`` costs variance, never bias.
:func:`~jaxsamp.smc.annealing.smc` takes such a callable as ``transition=``::

    transition(key, positions, t, t_next) -> (positions, log_increment, evals)

with ``positions`` the particle batch (leading axis ``n``), ``log_increment`` of
shape ``(n,)`` and ``evals`` (int32) the target evaluations spent, summed over
particles, counted as in the module docstring of :mod:`jaxsamp.smc.annealing`.

:func:`langevin_transition` is the Euler-Maruyama step of the controlled
Langevin SDE that CMCD (Vargas et al., "Transport meets variational inference:
controlled Monte Carlo diffusions", ICLR 2024) and SCLD (Chen et al.,
"Sequential controlled Langevin diffusions", ICLR 2025) discretise, with their
exact discrete-time weights; with no control it is unadjusted Langevin
annealing (ULA-SMC).
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from jaxsamp.core.combinators import num_chains
from jaxsamp.core.errors import InputError
from jaxsamp.core.target import AnnealingPath
from jaxsamp.smc.annealing import affine_in_t

Transition = Callable[[jax.Array, object, jax.Array, jax.Array], tuple[object, jax.Array, jax.Array]]


def _flat(tree) -> jax.Array:
    return ravel_pytree(tree)[0]


def _log_prob_and_score_after(path: AnnealingPath, x_next, t, t_next, affine: bool):
    """``log pi_{t'}(x')`` and ``grad log pi_t(x')``: one target evaluation when ``affine``, else two.

    On a path affine in ``t`` (geometric, lattice) the target enters
    ``log_prob(x', s)`` outside its ``s``-dependence, so evaluating ``s = t``
    and ``s = t'`` together (``vmap`` over ``s`` with ``x'`` unbatched) evaluates
    the target once.
    """
    if affine:

        def at_both_times(y):
            log_probs = jax.vmap(path.log_prob, in_axes=(None, 0))(y, jnp.stack([t, t_next]))
            return log_probs[0], log_probs[1]

        (_, log_p_next), score = jax.value_and_grad(at_both_times, has_aux=True)(x_next)
        return log_p_next, score
    return path.log_prob(x_next, t_next), jax.grad(path.log_prob)(x_next, t)


def _langevin_move(path, x, t, t_next, step_size, control, affine, propose):
    """One particle's ``(x', log w)``, with ``x' = propose(mean of F, std of F)`` (flat).

    ``F(x' | x) = N(x' ; x + h (grad log pi_t(x) + u(x, t)), 2h I)`` and
    ``B(x | x') = N(x ; x' + h (grad log pi_t(x') - u(x', t')), 2h I)`` share
    their covariance, so their normalising constants cancel in ``log B - log F``.
    """
    h = step_size(t) if callable(step_size) else step_size
    flat_x, unravel = ravel_pytree(x)
    log_p, score = jax.value_and_grad(path.log_prob)(x, t)
    drift = _flat(score) if control is None else _flat(score) + _flat(control(x, t))
    mean_forward = flat_x + h * drift
    flat_next = propose(mean_forward, jnp.sqrt(2.0 * h))
    x_next = unravel(flat_next)
    log_p_next, score_next = _log_prob_and_score_after(path, x_next, t, t_next, affine)
    drift_back = _flat(score_next) if control is None else _flat(score_next) - _flat(control(x_next, t_next))
    mean_backward = flat_next + h * drift_back
    log_backward_over_forward = (jnp.sum((flat_next - mean_forward) ** 2) - jnp.sum((flat_x - mean_backward) ** 2)) / (
        4.0 * h
    )
    return x_next, log_p_next - log_p + log_backward_over_forward


def langevin_log_increment(path: AnnealingPath, x, x_next, t, t_next, step_size, control=None) -> jax.Array:
    """The exact incremental log weight of one controlled Langevin step ``x -> x_next`` from level ``t`` to ``t_next``.

    The discrete-time weight of CMCD/SCLD (Vargas et al., ICLR 2024; Chen et al.,
    ICLR 2025, the per-step factor of the sub-trajectory importance weight)::

        log w = log pi_{t'}(x') + log B(x | x') - log pi_t(x) - log F(x' | x),
        F(x' | x) = N(x' ; x + h (grad log pi_t(x) + u(x, t)), 2h I),
        B(x | x') = N(x ; x' + h (grad log pi_t(x') - u(x', t')), 2h I),

    with ``h = step_size`` (``sigma^2 dt``). Both kernels use the score at level
    ``t``, only the control in ``B`` is read at ``t'`` (as SCLD's reference code
    does). It weighs a *given* pair of states, e.g. the steps of stored,
    stop-gradiented sub-trajectories re-weighted under the current control
    parameters (SCLD's buffer loss); :func:`langevin_transition` draws ``x'`` and
    uses the same formula.

    Parameters
    ----------
    path : AnnealingPath
        ``log_prob(x, t)`` differentiable in ``x``.
    x, x_next : PyTree
        One particle before and after the step.
    t, t_next : scalar
        Path times, ``t < t_next``.
    step_size : float or callable
        ``h > 0``, or ``h(t)``.
    control : callable, optional
        ``control(x, t) -> u`` for one particle (same structure as ``x``); ``None``
        means ``u = 0`` (unadjusted Langevin annealing).

    Returns
    -------
    scalar
        ``log w``; differentiable in ``x``, ``x_next`` and whatever ``control`` closes over.
    """
    x_given = _flat(x_next)
    _, log_w = _langevin_move(
        path, x, t, t_next, step_size, control, affine_in_t(path, x), lambda mean, std: x_given
    )
    return log_w


def langevin_transition(path: AnnealingPath, step_size, *, control=None) -> Transition:
    """One Euler-Maruyama step of the controlled Langevin SDE per level, as an SMC transition.

    Each particle moves by ``x' ~ F(. | x) = N(x + h (grad log pi_t(x) + u(x, t)), 2h I)``
    (the discretisation of ``dX = sigma^2 (grad log pi_t + u) dt + sqrt(2) sigma dW``
    with ``sigma^2 dt = h``; CMCD, Vargas et al., ICLR 2024; SCLD, Chen et al.,
    ICLR 2025) and gets the exact incremental log weight of
    :func:`langevin_log_increment`. ``E[w] = Z_{t'} / Z_t`` for every control, so
    ``smc(..., transition=langevin_transition(path, h))`` is unbiased for ``Z``;
    the control only changes the variance (which, for a control that transports
    the path exactly, vanishes as the steps shrink: CMCD's optimum).

    Parameters
    ----------
    path : AnnealingPath
        On R^d (positions: any PyTree of floats per particle).
    step_size : float or callable
        ``h > 0``, or ``h(t)`` for a traced scalar ``t``.
    control : callable, optional
        ``control(x, t) -> u`` for one particle; ``None`` gives ``u = 0``: unadjusted
        Langevin annealing (ULA-SMC). The transition is differentiable in whatever
        ``control`` closes over (SCLD trains through it).

    Returns
    -------
    callable
        ``transition(key, positions, t, t_next) -> (positions, log_increment, evals)``
        (module docstring). ``evals`` is ``2 n`` on a path affine in ``t`` (the
        value and gradient at ``x``, then at ``x'``: one evaluation serves
        ``log pi_{t'}(x')`` and ``grad log pi_t(x')``), else ``3 n``.

    Raises
    ------
    InputError
        A step size that is not positive.
    """
    if isinstance(step_size, (int, float, np.number)) and not step_size > 0.0:  # traced sizes are the caller's
        raise InputError(f"step_size must be > 0, got {step_size}", hint="sigma^2 dt of the Langevin step")

    def transition(key, positions, t, t_next):
        n = num_chains(positions)
        affine = affine_in_t(path, jax.tree.map(lambda a: a[0], positions))

        def move_one(particle_key, x):
            def draw(mean, std):
                return mean + std * jax.random.normal(particle_key, mean.shape, mean.dtype)

            return _langevin_move(path, x, t, t_next, step_size, control, affine, draw)

        x_next, log_increment = jax.vmap(move_one)(jax.random.split(key, n), positions)
        return x_next, log_increment, jnp.int32(n * (2 if affine else 3))

    return transition
