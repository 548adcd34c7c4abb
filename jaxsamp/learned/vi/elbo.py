"""The reparameterised ELBO, optionally with the sticking-the-landing gradient.

For draws ``x_i = T_phi(eps_i)``, ``eps_i ~ base``, ``i = 1..n``, the loss is the
negative ELBO with the reparameterisation trick (Kingma & Welling 2014, ICLR, the SGVB
estimator; Titsias & Lazaro-Gredilla 2014, ICML; equation numbers not checked)::

    L(phi) = (1/n) sum_i [ log q_phi(x_i) - log p~(x_i) ]  ~=  KL(q_phi || p) - log Z.

Sticking the landing (Roeder, Wu & Duvenaud 2017, NeurIPS, the path-derivative estimator) evaluates
``log q`` at stop-gradient parameters, ``log q_{stopgrad(phi)}(x_i)``: the loss
value is the same, the score-function term (zero in expectation) leaves the
gradient, which is then exactly zero when ``q_phi = p``.

:func:`build` makes the method (``jaxsamp.fit("elbo", ...)``); ``n`` is its ``batch_size``.
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

#: Reparameterised draws of ``q`` per step when ``build`` is given no ``batch_size``.
BATCH_SIZE = 8


@dataclasses.dataclass(frozen=True)
class ELBOSettings:
    """Hyper-parameters of the ELBO objective (the draws per step are the method's ``batch_size``).

    Attributes
    ----------
    stick_the_landing : bool
        Drop the score-function term (Roeder et al. 2017).
    learning_rate : float
        Adam's learning rate (when no optimiser is given).
    family : str or dict
        The variational family: a name or ``{"name": ..., constructor arguments}``
        (:func:`~jaxsamp.learned.vi.families.family_from_spec`); default a RealNVP affine coupling flow.
    """

    stick_the_landing: bool = False
    learning_rate: PositiveFloat = 1e-2
    family: FamilySpec = "coupling_flow"

    def __post_init__(self):
        check_fields(self)


def loss(problem: training.Problem, settings: ELBOSettings, params, key: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The negative ELBO on ``problem.batch_size`` reparameterised draws (with ``settings.stick_the_landing``, STL's).

    Returns
    -------
    loss : scalar
        ``mean(log q(x) - log p~(x))``.
    log_w : array, shape (batch_size,)
        ``log p~(x) - log q(x)`` of the draws, without gradient.
    """
    family = problem.family
    x, log_q = family.sample_and_log_prob(key, params, problem.batch_size)
    if settings.stick_the_landing:
        log_q = family.log_prob(jax.lax.stop_gradient(params), x)
    log_w = problem.log_density(x) - log_q
    return -jnp.mean(log_w), jax.lax.stop_gradient(log_w)


def build(target, settings: ELBOSettings | None = None, *, batch_size: int | None = None,
          optimizer: optax.GradientTransformation | None = None) -> LearnedSampler:
    """The reparameterised ELBO (Kingma & Welling 2014, reverse KL) on a variational family, optionally sticking the landing.

    Parameters
    ----------
    target : Target
        Real-valued with flat states ``(d,)``; the family ``settings.family`` lives on ``R^d``.
    settings : ELBOSettings, optional
        Default ``ELBOSettings()``.
    batch_size : int, optional
        Reparameterised draws ``n`` of ``q`` per step (default :data:`BATCH_SIZE`).
    optimizer : optax.GradientTransformation, optional
        Default Adam at ``settings.learning_rate``.

    Returns
    -------
    LearnedSampler
        :func:`~jaxsamp.learned.vi.training.objective`'s: ``sample(key, state, n)`` gives
        draws of ``q`` weighted by ``log p~ - log q``; ``evaluate`` the figures of
        :func:`~jaxsamp.learned.vi.training.evaluation_figures`.

    Notes
    -----
    The step's metrics: ``loss`` (the negative ELBO ``mean(log q - log p~)``, nats: a
    fixed objective, ``KL(q || p) - log Z``, so a loss that does not fall is a warning),
    ``elbo`` (its negation), ``ess`` (normalised ESS of the step's draws),
    ``log_Z_hat`` (their importance estimate of ``log Z``).

    Settings per target: the reverse KL is mode-seeking, so on a multimodal target
    ``q`` settles on one mode (the ESS says so); a few draws per step (4-16) suffice
    since the reparameterised gradient has low variance. ``stick_the_landing=True``
    makes the gradient vanish at ``q = p``, which matters once ``q`` can represent
    ``p`` (a Gaussian posterior with a full-rank family). The target's draws are
    pushed through ``log p~`` and its gradient, so it must be finite and smooth where
    ``q`` puts mass (a flow starts at ``N(0, I)``).
    """
    settings = settings_or_default(settings, ELBOSettings)
    problem = training.problem("elbo", target, settings.family, BATCH_SIZE if batch_size is None else batch_size)
    return training.objective(target, problem, settings, loss, optimizer or optax.adam(settings.learning_rate),
                              TrainingHealth(judge_progress=True))
