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

:class:`SoftCVI` is the method (``jaxsamp.fit("softcvi", ...)``); ``K`` is its ``batch_size``.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated

import jax
import jax.numpy as jnp

from jaxsamp.core.validation import OneOf, PositiveFloat, Probability, check_fields
from jaxsamp.vi.families import FamilySpec
from jaxsamp.vi.training import VariationalObjective

NEGATIVE_DISTRIBUTIONS = ("proposal", "posterior")


@dataclasses.dataclass(frozen=True)
class SoftCVISettings:
    """Hyper-parameters of SoftCVI (the draws per step, ``K``, are the method's ``batch_size``).

    Attributes
    ----------
    alpha : float
        Tempering ``alpha in [0, 1]`` of the negative distribution.
    negative_distribution : {"proposal", "posterior"}
        ``p^- = pi^alpha`` or ``p~^alpha``.
    learning_rate : float
        Adam's learning rate (when no optimiser is given).
    family : str or dict
        The variational family: a name or ``{"name": ..., constructor arguments}``
        (:func:`~jaxsamp.vi.families.family_from_spec`); default a RealNVP affine coupling flow.
    """

    alpha: Probability = 0.75
    negative_distribution: Annotated[str, OneOf(NEGATIVE_DISTRIBUTIONS)] = "proposal"
    learning_rate: PositiveFloat = 1e-2
    family: FamilySpec = "coupling_flow"

    def __post_init__(self):
        check_fields(self)


class SoftCVI(VariationalObjective):
    """SoftCVI (Ward, Beaumont & Fasiolo 2025, ICLR; the loss of their section 3): ``q`` as a soft-label classifier.

    ``SoftCVI(target, settings, batch_size)`` is a :class:`~jaxsamp.core.Trainer`
    on the family ``settings.family`` (on ``R^d``, ``d`` the target's), with
    ``sample(state, key, n)``, ``log_q(state, z)`` and ``evaluate(state, key, n)``
    (:class:`~jaxsamp.vi.training.VariationalEvaluation` lists its figures).

    Parameters
    ----------
    target : Target
        Real-valued with flat states ``(d,)``.
    settings : SoftCVISettings
    batch_size : int
        ``K >= 2``: draws of the proposal per step, the candidates of one classification.
    optimizer : optax.GradientTransformation, optional
        Default Adam at ``settings.learning_rate``.

    Notes
    -----
    The step's metrics: ``loss`` (the cross-entropy ``-sum_k y_k yhat_k``, nats; at
    best the labels' entropy, which grows towards ``log K`` as ``q`` nears ``p``, so
    it is not judged for progress), ``elbo`` (mean ``log p~ - log q`` of the ``K``
    draws, nats), ``ess`` (their normalised ESS), ``log_Z_hat`` (their importance
    estimate of ``log Z``).

    Settings per target: the paper used ``K = 8``, ``alpha = 0.75`` (or 1) with the
    proposal as negative distribution, Adam at ``1e-3``-``3e-3`` for 50 000 steps on
    its posteriors. Standardise the target to unit scale where you can (the flow
    starts at ``N(0, I)``); on a target far from the origin or much wider or
    narrower, a lower ``alpha`` (flatter ``p^-``) keeps the labels from collapsing
    on one draw early on. A full-rank Gaussian (``family="full_rank_gaussian"``)
    is the cheap choice for a near-Gaussian posterior, and with it the zero-variance
    property makes SoftCVI converge to round-off at the exact posterior.
    """

    name = "softcvi"
    min_batch = 2

    def loss(self, params, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        """The SoftCVI loss ``-sum_k y_k yhat_k`` on ``K`` draws of ``stopgrad(q_params)``.

        Returns
        -------
        loss : scalar
            The cross-entropy of the soft labels and the predictions.
        log_w : array, shape (K,)
            ``log p~(theta) - log pi(theta)`` of the draws, without gradient.
        """
        family, settings = self.family, self.settings
        theta, log_proposal = family.sample_and_log_prob(jax.lax.stop_gradient(params), key, self.batch_size)
        log_p = self.log_density(theta)
        unscaled_negative = log_proposal if settings.negative_distribution == "proposal" else log_p
        log_negative = settings.alpha * unscaled_negative
        labels = jax.nn.softmax(log_p - log_negative)
        log_predictions = jax.nn.log_softmax(family.log_prob(params, theta) - log_negative)
        return -jnp.sum(labels * log_predictions), log_p - log_proposal
