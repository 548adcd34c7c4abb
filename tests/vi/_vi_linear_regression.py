"""Bayesian linear regression with a conjugate Gaussian posterior: the exact oracle of the VI tests.

``beta ~ N(0, I_d)``, ``y = X beta + eps``, ``eps ~ N(0, sigma^2 I_n)``, with ``d = 50``
covariates and ``n = 200`` observations (the SoftCVI paper's task sizes). The
posterior is ``N(m, S)`` with ``S^-1 = I + X^T X / sigma^2`` and ``m = S X^T y / sigma^2``,
and the evidence ``log Z = log N(y; 0, sigma^2 I + X X^T)``, all in float64 closed form.
The covariates are drawn ``N(0, 1/n)`` so that the data carry about as much
information as the prior (posterior precision ~ 2 I): from ``q = N(0, I)``, the
prior, ``KL(q || p)`` is 57 nats.
"""

from __future__ import annotations

import distrax
import jax
import jax.numpy as jnp
import numpy as np
import optax

import jaxsamp
from jaxsamp.core.target import Target
from jaxsamp.vi.families import FullRankGaussian

NUM_COVARIATES, NUM_OBSERVATIONS, NOISE_SD = 50, 200, 1.0


class ConjugateLinearRegression(Target):
    """The unnormalised posterior ``N(beta; 0, I) prod_i N(y_i; x_i^T beta, sigma^2)`` of the coefficients."""

    name = "conjugate_linear_regression"

    def __init__(self, seed: int = 0):
        rng = np.random.default_rng(seed)
        d, n, s2 = NUM_COVARIATES, NUM_OBSERVATIONS, NOISE_SD**2
        self.event_shape = (d,)
        self.x = rng.normal(size=(n, d)) / np.sqrt(n)
        self.y = self.x @ rng.normal(size=d) + NOISE_SD * rng.normal(size=n)
        self.posterior_precision = np.eye(d) + self.x.T @ self.x / s2
        self.posterior_cov = np.linalg.inv(self.posterior_precision)
        self.posterior_mean = self.posterior_cov @ self.x.T @ self.y / s2
        marginal_cov = s2 * np.eye(n) + self.x @ self.x.T
        _, logdet = np.linalg.slogdet(marginal_cov)
        self.log_Z = float(-0.5 * (n * np.log(2 * np.pi) + logdet + self.y @ np.linalg.solve(marginal_cov, self.y)))

    def _log_prob(self, beta):
        d, n = NUM_COVARIATES, NUM_OBSERVATIONS
        residual = jnp.asarray(self.y, beta.dtype) - jnp.asarray(self.x, beta.dtype) @ beta
        log_prior = -0.5 * (beta @ beta + d * jnp.log(2 * jnp.pi))
        log_likelihood = -0.5 * (residual @ residual / NOISE_SD**2 + n * jnp.log(2 * jnp.pi * NOISE_SD**2))
        return log_prior + log_likelihood

    def posterior(self, dtype=jnp.float32) -> distrax.Distribution:
        """The exact posterior as a distrax distribution."""
        return distrax.MultivariateNormalFullCovariance(jnp.asarray(self.posterior_mean, dtype),
                                                        jnp.asarray(self.posterior_cov, dtype))

    def posterior_cholesky(self) -> tuple[np.ndarray, np.ndarray]:
        """``(m, L)`` with ``S = L L^T`` (float64)."""
        return self.posterior_mean, np.linalg.cholesky(self.posterior_cov)


def kl_to_posterior(target: ConjugateLinearRegression, family, params) -> float:
    """Closed-form ``KL(q_params || posterior)`` (distrax's Gaussian KL)."""
    return float(family.distribution(params).kl_divergence(target.posterior()))


TRAIN_STEPS = 15_000
INITIAL_KL = 57.0  # KL(N(0, I) || posterior) at seed 0, the family's default start


def trained_kl(make_trainer, settings, seed: int = 0) -> tuple[float, float]:
    """``(KL before, KL after)`` of a full-rank Gaussian trained from ``N(0, I)`` for ``TRAIN_STEPS`` steps.

    ``make_trainer(target, family, settings, optimizer)`` builds the objective's
    trainer; the optimiser is Adam with a cosine decay from 5e-3 to 1e-4, run by
    the driver in one jitted scan.
    """
    target = ConjugateLinearRegression()
    family = FullRankGaussian(NUM_COVARIATES)
    schedule = optax.cosine_decay_schedule(5e-3, TRAIN_STEPS, alpha=1e-4 / 5e-3)
    trainer = make_trainer(target, family, settings, optax.adam(schedule))
    state = trainer.init(jax.random.key(seed))
    final, _ = jaxsamp.run(trainer.step, state, jax.random.key(seed + 1), TRAIN_STEPS, progress=False)
    return kl_to_posterior(target, family, state.params), kl_to_posterior(target, family, final.params)
