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

:class:`SNISForwardKL` is the method (``jaxsamp.fit("snis_fkl", ...)``); ``K`` is its ``batch_size``.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from jaxsamp.core.validation import PositiveFloat, check_fields
from jaxsamp.vi.families import FamilySpec
from jaxsamp.vi.training import VariationalObjective


@dataclasses.dataclass(frozen=True)
class SNISForwardKLSettings:
    """Hyper-parameters of the SNIS forward-KL objective (the draws per step, ``K``, are the method's ``batch_size``).

    Attributes
    ----------
    learning_rate : float
        Adam's learning rate (when no optimiser is given).
    family : str or dict
        The variational family: a name or ``{"name": ..., constructor arguments}``
        (:func:`~jaxsamp.vi.families.family_from_spec`); default a RealNVP affine coupling flow.
    """

    learning_rate: PositiveFloat = 1e-2
    family: FamilySpec = "coupling_flow"

    def __post_init__(self):
        check_fields(self)


class SNISForwardKL(VariationalObjective):
    """Minimise the forward KL ``KL(p || q)`` by self-normalised importance sampling from ``stopgrad(q)``.

    The wake-phase ``q`` update of reweighted wake-sleep (Bornschein & Bengio 2015)
    and the SNIS-fKL baseline of SoftCVI (Ward et al. 2025). ``SNISForwardKL(target,
    settings, batch_size)`` is a :class:`~jaxsamp.core.Trainer` on the family
    ``settings.family`` (on ``R^d``, ``d`` the target's), with ``sample(state, key, n)``,
    ``log_q(state, z)`` and ``evaluate(state, key, n)``
    (:class:`~jaxsamp.vi.training.VariationalEvaluation` lists its figures).

    Parameters
    ----------
    target : Target
        Real-valued with flat states ``(d,)``.
    settings : SNISForwardKLSettings
    batch_size : int
        Draws ``K`` of the proposal per step (the weights are normalised over them).
    optimizer : optax.GradientTransformation, optional
        Default Adam at ``settings.learning_rate``.

    Notes
    -----
    The step's metrics: ``loss`` (``sum_k w_k (log p~ - log q)``, the SNIS estimate of
    ``KL(p || q) - log Z``, nats; with a poor proposal the weights sit on one draw and
    it underestimates the KL, so it can rise while ``q`` improves: not judged for
    progress), ``elbo`` (mean ``log w`` of the ``K`` draws), ``ess`` (their normalised
    ESS), ``log_Z_hat`` (their importance estimate of ``log Z``).

    Settings per target: the forward KL is mass-covering, but its gradient is only as
    good as the weights: when ``q`` starts far from ``p`` (ESS near ``1/K``) the
    updates chase single draws. Start ``q`` over the target's mass (standardise the
    target, or widen the family's ``init_scale``) and use more draws (``K`` 16-64) than
    for the ELBO; the paper's baseline used ``K = 8``.
    """

    name = "snis_fkl"

    def loss(self, params, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        """The SNIS estimate of ``KL(p || q_params)`` (up to ``log Z``) on ``K`` proposal draws.

        Returns
        -------
        loss : scalar
            ``sum_k w_k (log p~(x_k) - log q(x_k))``.
        log_w : array, shape (K,)
            ``log p~(x) - log pi(x)`` of the draws, without gradient.
        """
        x, log_proposal = self.family.sample_and_log_prob(jax.lax.stop_gradient(params), key, self.batch_size)
        log_p = self.log_density(x)
        log_w = log_p - log_proposal
        loss = jnp.sum(jax.nn.softmax(log_w) * (log_p - self.family.log_prob(params, x)))
        return loss, log_w
