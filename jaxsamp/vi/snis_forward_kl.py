"""Forward KL by self-normalised importance sampling (SNIS-fKL), with the variational family as proposal.

``KL(p || q_phi) = E_p[log p - log q_phi]`` has gradient ``-E_p[grad log q_phi]``.
With draws ``x_1..x_K`` of the proposal ``pi = stopgrad(q_phi)`` and
self-normalised weights ``w_k = softmax_k(log p~(x_k) - log pi(x_k))`` the loss is::

    L(phi) = sum_k w_k [ log p~(x_k) - log q_phi(x_k) ],   grad L = -sum_k w_k grad log q_phi(x_k),

the wake-phase update of ``q`` in reweighted wake-sleep (Bornschein & Bengio
2015, ICLR) and the SNIS forward-KL baseline of SoftCVI (Ward,
Beaumont & Fasiolo 2025, ICLR, experiments; reference code
``softcvi/losses.py::SelfNormImportanceWeightedForwardKLLoss``). Only the
draws' values enter: no gradient flows through the sampler, so any family with a
``log_prob`` works. The estimator is biased for finite ``K`` (consistent as
``K -> inf``).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import optax

from jaxsamp.core.protocols import Trainer
from jaxsamp.core.validation import PositiveFloat, PositiveInt, check_fields
from jaxsamp.vi.families import Family
from jaxsamp.vi.training import objective_trainer


@dataclasses.dataclass(frozen=True)
class SNISForwardKLSettings:
    """Hyper-parameters of the SNIS forward-KL objective.

    Attributes
    ----------
    num_samples : int
        Draws ``K`` of the proposal per step (the weights are normalised over them).
    learning_rate : float
        Adam's learning rate (when no optimiser is given).
    """

    num_samples: PositiveInt = 8
    learning_rate: PositiveFloat = 1e-2

    def __post_init__(self):
        check_fields(self)


def snis_forward_kl_loss(params, key, *, family: Family, log_density,
                         settings: SNISForwardKLSettings) -> tuple[jax.Array, jax.Array]:
    """The SNIS estimate of ``KL(p || q_params)`` (up to ``log Z``) on ``K`` proposal draws.

    An objective of :func:`~jaxsamp.vi.training.objective_trainer` (its arguments are described there), with
    ``settings`` a :class:`SNISForwardKLSettings`.

    Returns
    -------
    loss : scalar
        ``sum_k w_k (log p~(x_k) - log q(x_k))``.
    log_w : array, shape (K,)
        ``log p~(x) - log pi(x)`` of the draws, without gradient.
    """
    x, log_proposal = family.sample_and_log_prob(jax.lax.stop_gradient(params), key, settings.num_samples)
    log_p = log_density(x)
    log_w = log_p - log_proposal
    loss = jnp.sum(jax.nn.softmax(log_w) * (log_p - family.log_prob(params, x)))
    return loss, log_w


def snis_forward_kl_trainer(target, family: Family, settings: SNISForwardKLSettings = SNISForwardKLSettings(),
                            optimizer: optax.GradientTransformation | None = None) -> Trainer:
    """Fit ``family`` to ``target`` by the SNIS forward KL: a :class:`~jaxsamp.core.Trainer` for :func:`jaxsamp.run`.

    The arguments are those of :func:`~jaxsamp.vi.training.objective_trainer`, the loss fixed and ``settings`` a
    :class:`SNISForwardKLSettings`.
    """
    return objective_trainer(target, family, snis_forward_kl_loss, settings, optimizer)
