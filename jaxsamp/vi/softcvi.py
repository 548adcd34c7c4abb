"""SoftCVI: variational inference as soft-label contrastive classification (Ward, Beaumont & Fasiolo 2025, ICLR).

Draw ``theta_1..theta_K ~ pi = stopgrad(q_phi)``, ``K >= 2``. With a negative
distribution ``p^-`` (research/methods.md section 6, from the reference code
``softcvi/losses.py::SoftContrastiveEstimationLoss``):

* ``"proposal"``: ``log p^-(theta) = alpha log pi(theta)``;
* ``"posterior"``: ``log p^-(theta) = alpha log p~(theta)``;

the soft labels and the classifier's log predictions are::

    y_k     = softmax_k(log p~(theta_k) - log p^-(theta_k)),
    yhat_k  = log_softmax_k(log q_phi(theta_k) - log p^-(theta_k)),
    L(phi)  = -sum_k y_k yhat_k.

Only ``yhat`` depends on ``phi``, through ``log q_phi`` at fixed draws, so::

    grad L = sum_k (softmax_k(log q_phi - log p^-) - y_k) grad log q_phi(theta_k),

which is **zero for every sample set** when ``q_phi`` is proportional to ``p~``
(the paper's zero-variance property). ``alpha = 1`` with ``"proposal"`` makes the
labels self-normalised importance weights; ``alpha = 0`` makes ``p^-`` flat.
The paper's experiments use ``K = 8`` and ``alpha`` 0.75 or 1 with ``"proposal"``.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated

import jax
import jax.numpy as jnp
import optax

from jaxsamp.core.protocols import Trainer
from jaxsamp.core.validation import (
    Interval,
    OneOf,
    PositiveFloat,
    Probability,
    check_fields,
)
from jaxsamp.vi.families import Family
from jaxsamp.vi.training import objective_trainer

NEGATIVE_DISTRIBUTIONS = ("proposal", "posterior")


@dataclasses.dataclass(frozen=True)
class SoftCVISettings:
    """Hyper-parameters of SoftCVI.

    Attributes
    ----------
    num_samples : int
        ``K >= 2``: draws of the proposal per step, the candidates of one classification.
    alpha : float
        Tempering ``alpha in [0, 1]`` of the negative distribution.
    negative_distribution : {"proposal", "posterior"}
        ``p^- = pi^alpha`` or ``p~^alpha``.
    learning_rate : float
        Adam's learning rate (when no optimiser is given).
    """

    num_samples: Annotated[int, Interval(ge=2)] = 8
    alpha: Probability = 0.75
    negative_distribution: Annotated[str, OneOf(NEGATIVE_DISTRIBUTIONS)] = "proposal"
    learning_rate: PositiveFloat = 1e-2

    def __post_init__(self):
        check_fields(self)


def softcvi_loss(params, key, *, family: Family, log_density, settings: SoftCVISettings) -> tuple[jax.Array, jax.Array]:
    """The SoftCVI loss ``-sum_k y_k yhat_k`` on ``K`` draws of ``stopgrad(q_params)``.

    An objective of :func:`~jaxsamp.vi.training.objective_trainer` (its arguments are described there), with
    ``settings`` a :class:`SoftCVISettings`.

    Returns
    -------
    loss : scalar
        The cross-entropy of the soft labels and the predictions.
    log_w : array, shape (K,)
        ``log p~(theta) - log pi(theta)`` of the draws, without gradient.
    """
    theta, log_proposal = family.sample_and_log_prob(jax.lax.stop_gradient(params), key, settings.num_samples)
    log_p = log_density(theta)
    unscaled_negative = log_proposal if settings.negative_distribution == "proposal" else log_p
    log_negative = settings.alpha * unscaled_negative
    labels = jax.nn.softmax(log_p - log_negative)
    log_predictions = jax.nn.log_softmax(family.log_prob(params, theta) - log_negative)
    return -jnp.sum(labels * log_predictions), log_p - log_proposal


def softcvi_trainer(target, family: Family, settings: SoftCVISettings = SoftCVISettings(),
                    optimizer: optax.GradientTransformation | None = None) -> Trainer:
    """Fit ``family`` to ``target`` with SoftCVI: a :class:`~jaxsamp.core.Trainer` for :func:`jaxsamp.run`.

    The arguments are those of :func:`~jaxsamp.vi.training.objective_trainer`, the loss fixed and ``settings`` a
    :class:`SoftCVISettings`.
    """
    return objective_trainer(target, family, softcvi_loss, settings, optimizer)
