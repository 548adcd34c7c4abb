"""The exact oracle of the VI tests: a full-rank Gaussian fitted to the conjugate linear regression posterior.

:class:`~jaxsamp.targets.linear_regression.ConjugateLinearRegression` at its defaults
(50 covariates, 200 observations, seed 0); from ``q = N(0, I)``, the prior,
``KL(q || p)`` is 57 nats.
"""

from __future__ import annotations

import jax
import optax

import jaxsamp
from jaxsamp.learned.vi.families import family_from_spec
from jaxsamp.targets.linear_regression import ConjugateLinearRegression

NUM_COVARIATES = 50


def kl_to_posterior(target: ConjugateLinearRegression, family, params) -> float:
    """Closed-form ``KL(q_params || posterior)`` (distrax's Gaussian KL)."""
    return float(family.distribution(params).kl_divergence(target.posterior()))


TRAIN_STEPS = 15_000
INITIAL_KL = 57.0  # KL(N(0, I) || posterior) at seed 0, the family's default start


def trained_kl(method, settings, batch_size: int, seed: int = 0) -> tuple[float, float]:
    """``(KL before, KL after)`` of a full-rank Gaussian trained from ``N(0, I)`` for ``TRAIN_STEPS`` steps.

    ``method.build(target, settings, batch_size=, optimizer=)`` is the objective (``method`` its
    module; ``settings.family`` a full-rank Gaussian); the optimiser is Adam with a cosine decay
    from 5e-3 to 1e-4, run by the driver in one jitted scan.
    """
    target = ConjugateLinearRegression()
    schedule = optax.cosine_decay_schedule(5e-3, TRAIN_STEPS, alpha=1e-4 / 5e-3)
    sampler = method.build(target, settings, batch_size=batch_size, optimizer=optax.adam(schedule))
    family = family_from_spec(NUM_COVARIATES, settings.family)
    assert family.name == "full_rank_gaussian"
    state = sampler.init(jax.random.key(seed))
    final, _ = jaxsamp.run(sampler.step, state, jax.random.key(seed + 1), TRAIN_STEPS, progress=False)
    return kl_to_posterior(target, family, state.params), kl_to_posterior(target, family, final.params)
