"""What every variational objective shares: its train state, the optax step, the target check, the weighted samples.

An objective is a loss ``loss(params, key) -> (loss, log_w)`` where ``log_w`` are
the log importance weights ``log p~(x) - log q(x)`` of the draws it used (no
gradient through them). :func:`objective_trainer` turns it into a
:class:`~jaxsamp.core.Trainer` whose state :class:`VIState` holds the family's
parameters and the optax state, so :func:`jaxsamp.run` trains, checkpoints and
resumes it. :func:`weighted_samples` turns a trained family into
:class:`~jaxsamp.core.WeightedSamples`, so ESS, ``log Z`` and the diagnostics
work on VI results as on any sampler.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from jaxsamp.core.errors import InputError
from jaxsamp.core.protocols import Trainer, WeightedSamples
from jaxsamp.core.validation import check_int
from jaxsamp.vi.families import Family

Loss = Callable[[object, jax.Array], tuple[jax.Array, jax.Array]]


class VIState(NamedTuple):
    """Train state of a variational objective: a plain PyTree the driver checkpoints.

    Attributes
    ----------
    params : PyTree
        The family's parameters (``nnx.split`` state).
    opt_state : optax.OptState
    step : int32 array
        Updates done.
    """

    params: object
    opt_state: optax.OptState
    step: jax.Array


def batch_log_density(target, dim: int, user: str) -> Callable[[jax.Array], jax.Array]:
    """``x (n, dim) -> log p~(x) (n,)`` of a real-valued ``target`` on ``R^dim``.

    Raises
    ------
    InputError
        A target that is not real-valued with a flat state ``(dim,)``; the message names ``user``.
    """
    if target.domain.kind != "real" or tuple(target.event_shape or ()) != (dim,):
        raise InputError(
            f"{user} lives on R^{dim}: the target must be real-valued with states of shape "
            f"({dim},), got {target.name!r} ({target.domain.kind}, event shape {target.event_shape})"
        )
    return jax.vmap(target.log_prob)


def objective_trainer(target, family: Family, loss_fn, settings,
                      optimizer: optax.GradientTransformation | None = None) -> Trainer:
    """A :class:`~jaxsamp.core.Trainer` minimising an objective over the family's parameters.

    ``init(key)`` draws fresh parameters; ``step(key, state)`` takes one
    optimiser step on ``grad loss(params, key)`` and reports ``loss``, ``elbo``
    (mean ``log_w``), ``ess`` (normalised) and ``log_Z_hat`` of the loss's draws.

    Parameters
    ----------
    target : Target
        Real-valued, states of shape ``(family.dim,)``.
    family : Family
    loss_fn : callable
        The objective, ``loss_fn(params, key, *, family, log_density, settings) -> (loss, log_w)``
        (``elbo_loss``, ``snis_forward_kl_loss``, ``softcvi_loss``): ``params`` the
        family's parameters, ``key`` a PRNG key, ``log_density`` the target's batched
        log density ``x (n, d) -> log p~(x) (n,)``; it returns the scalar loss and the
        log importance weights of the draws it used, without gradient.
    settings
        The objective's settings dataclass, with ``num_samples`` and ``learning_rate``.
    optimizer : optax.GradientTransformation, optional
        Default ``optax.adam(settings.learning_rate)``.
    """
    log_density = batch_log_density(target, family.dim, family.name)
    loss = functools.partial(loss_fn, family=family, log_density=log_density, settings=settings)
    optimizer = optimizer or optax.adam(settings.learning_rate)

    def init(key: jax.Array) -> VIState:
        params = family.init(key)
        return VIState(params, optimizer.init(params), jnp.int32(0))

    def step(key: jax.Array, state: VIState) -> tuple[VIState, dict]:
        (value, log_w), grads = jax.value_and_grad(loss, has_aux=True)(state.params, key)
        updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
        weights = WeightedSamples(None, log_w)
        metrics = {"loss": value, "elbo": jnp.mean(log_w), "ess": weights.ess, "log_Z_hat": weights.log_Z}
        return VIState(optax.apply_updates(state.params, updates), opt_state, state.step + 1), metrics

    return Trainer(init, step)


def weighted_samples(target, family: Family, params, key: jax.Array, n: int) -> WeightedSamples:
    """``n`` draws of ``q_params`` weighted against ``target``: ``log_w = log p~(x) - log q(x)``.

    ``.log_Z`` is then the importance-sampling estimate of the target's ``log Z``
    and ``.ess`` the normalised effective sample size.
    """
    n = check_int("n", n, ge=1)
    params = jax.lax.stop_gradient(params)
    x, log_q = family.sample_and_log_prob(params, key, n)
    return WeightedSamples(x, batch_log_density(target, family.dim, family.name)(x) - log_q, 0.0)
