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

:func:`build` makes the method (``jaxsamp.fit("snis_forward_kl", ...)``); ``K`` is its ``batch_size``.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import optax

from jaxsamp.core.protocols import LearnedSampler, TrainingHealth
from jaxsamp.core.validation import PositiveFloat, check_fields, settings_or_default
from jaxsamp.learned.vi import training
from jaxsamp.learned.vi.families import FamilySpec

#: Proposal draws ``K`` per step when ``build`` is given no ``batch_size`` (the SoftCVI paper's baseline's).
BATCH_SIZE = 8


@dataclasses.dataclass(frozen=True)
class SNISForwardKLSettings:
    """Hyper-parameters of the SNIS forward-KL objective (the draws per step, ``K``, are the method's ``batch_size``).

    Attributes
    ----------
    learning_rate : float
        Adam's learning rate (when no optimiser is given).
    family : str or dict
        The variational family: a name or ``{"name": ..., constructor arguments}``
        (:func:`~jaxsamp.learned.vi.families.family_from_spec`); default a RealNVP affine coupling flow.
    """

    learning_rate: PositiveFloat = 1e-2
    family: FamilySpec = "coupling_flow"

    def __post_init__(self):
        check_fields(self)


def loss(problem: training.Problem, settings: SNISForwardKLSettings, params,
         key: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The SNIS estimate of ``KL(p || q_params)`` (up to ``log Z``) on ``K = problem.batch_size`` proposal draws.

    Returns
    -------
    loss : scalar
        ``sum_k w_k (log p~(x_k) - log q(x_k))``.
    log_w : array, shape (K,)
        ``log p~(x) - log pi(x)`` of the draws, without gradient.
    """
    family = problem.family
    x, log_proposal = family.sample_and_log_prob(key, jax.lax.stop_gradient(params), problem.batch_size)
    log_p = problem.log_density(x)
    log_w = log_p - log_proposal
    return jnp.sum(jax.nn.softmax(log_w) * (log_p - family.log_prob(params, x))), log_w


def build(target, settings: SNISForwardKLSettings | None = None, *, batch_size: int | None = None,
          optimizer: optax.GradientTransformation | None = None) -> LearnedSampler:
    """Forward KL by self-normalised importance sampling from the variational family itself (Bornschein & Bengio 2015).

    The wake-phase ``q`` update of reweighted wake-sleep (Bornschein & Bengio 2015)
    and the SNIS-fKL baseline of SoftCVI (Ward et al. 2025).

    Parameters
    ----------
    target : Target
        Real-valued with flat states ``(d,)``; the family ``settings.family`` lives on ``R^d``.
    settings : SNISForwardKLSettings, optional
        Default ``SNISForwardKLSettings()``.
    batch_size : int, optional
        Draws ``K`` of the proposal per step, over which the weights are normalised
        (default :data:`BATCH_SIZE`).
    optimizer : optax.GradientTransformation, optional
        Default Adam at ``settings.learning_rate``.

    Returns
    -------
    LearnedSampler
        :func:`~jaxsamp.learned.vi.training.objective`'s (its docstring lists what each function does).

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
    settings = settings_or_default(settings, SNISForwardKLSettings)
    batch_size = BATCH_SIZE if batch_size is None else batch_size
    problem = training.problem("snis_forward_kl", target, settings.family, batch_size)
    return training.objective(target, problem, settings, loss, optimizer or optax.adam(settings.learning_rate),
                              TrainingHealth(judge_progress=False))
