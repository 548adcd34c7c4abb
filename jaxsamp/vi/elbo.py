"""The reparameterised ELBO, optionally with the sticking-the-landing gradient.

For draws ``x_i = T_phi(eps_i)``, ``eps_i ~ base``, ``i = 1..n``, the loss is the
negative ELBO with the reparameterisation trick (Kingma & Welling 2014, ICLR, the SGVB
estimator; Titsias & Lazaro-Gredilla 2014, ICML; equation numbers not checked)::

    L(phi) = (1/n) sum_i [ log q_phi(x_i) - log p~(x_i) ]  ~=  KL(q_phi || p) - log Z.

Sticking the landing (Roeder, Wu & Duvenaud 2017, NeurIPS, the path-derivative estimator) evaluates
``log q`` at stop-gradient parameters, ``log q_{stopgrad(phi)}(x_i)``: the loss
value is the same, the score-function term (zero in expectation) leaves the
gradient, which is then exactly zero when ``q_phi = p``.
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
class ELBOSettings:
    """Hyper-parameters of the ELBO objective.

    Attributes
    ----------
    num_samples : int
        Draws of ``q`` per step.
    stick_the_landing : bool
        Drop the score-function term (Roeder et al. 2017).
    learning_rate : float
        Adam's learning rate (when no optimiser is given).
    """

    num_samples: PositiveInt = 8
    stick_the_landing: bool = False
    learning_rate: PositiveFloat = 1e-2

    def __post_init__(self):
        check_fields(self)


def elbo_loss(params, key, *, family: Family, log_density, settings: ELBOSettings) -> tuple[jax.Array, jax.Array]:
    """The negative ELBO on ``settings.num_samples`` reparameterised draws.

    An objective of :func:`~jaxsamp.vi.training.objective_trainer` (its arguments are described there), with
    ``settings`` a :class:`ELBOSettings`.

    Returns
    -------
    loss : scalar
        ``mean(log q(x) - log p~(x))``.
    log_w : array, shape (num_samples,)
        ``log p~(x) - log q(x)`` of the draws, without gradient.
    """
    x, log_q = family.sample_and_log_prob(params, key, settings.num_samples)
    if settings.stick_the_landing:
        log_q = family.log_prob(jax.lax.stop_gradient(params), x)
    log_w = log_density(x) - log_q
    return -jnp.mean(log_w), jax.lax.stop_gradient(log_w)


def elbo_trainer(target, family: Family, settings: ELBOSettings = ELBOSettings(),
                 optimizer: optax.GradientTransformation | None = None) -> Trainer:
    """Fit ``family`` to ``target`` by maximising the ELBO: a :class:`~jaxsamp.core.Trainer` for :func:`jaxsamp.run`.

    The arguments are those of :func:`~jaxsamp.vi.training.objective_trainer`, the loss fixed and ``settings`` a
    :class:`ELBOSettings`.
    """
    return objective_trainer(target, family, elbo_loss, settings, optimizer)
