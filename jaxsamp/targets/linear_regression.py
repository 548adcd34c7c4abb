"""Bayesian linear regression with a conjugate Gaussian posterior: exact posterior, exact evidence, exact samples.

``beta ~ N(0, I_d)``, ``y = X beta + eps``, ``eps ~ N(0, sigma^2 I_n)``. The posterior is
``N(m, S)`` with ``S^-1 = I + X^T X / sigma^2`` and ``m = S X^T y / sigma^2``, and the
evidence is ``log Z = log N(y; 0, sigma^2 I + X X^T)`` (Bishop 2006, *Pattern Recognition
and Machine Learning*, eqs. 3.53-3.54 and 3.86), all in float64 closed form. The
defaults are the SoftCVI paper's task sizes (Ward, Beaumont & Fasiolo 2025, ICLR:
50 covariates, 200 observations). The covariates are drawn ``N(0, 1/n)``, so the data
carry about as much information as the prior (posterior precision about ``2 I``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import jax.numpy as jnp
import numpy as np

from jaxsamp.core.registry import TARGETS
from jaxsamp.core.target import Target
from jaxsamp.core.validation import NonNegativeInt, PositiveFloat, PositiveInt

if TYPE_CHECKING:
    import distrax


class ConjugateLinearRegression(Target):
    """The unnormalised posterior ``N(beta; 0, I) prod_i N(y_i; x_i^T beta, sigma^2)`` of the coefficients.

    Parameters
    ----------
    num_covariates, num_observations : int
        ``d`` and ``n``.
    noise_sd : float
        ``sigma``.
    seed : int
        Seed of the simulated covariates, coefficients and noise.
    """

    name = "conjugate_linear_regression"

    def __init__(self, num_covariates: int = 50, num_observations: int = 200, noise_sd: float = 1.0, seed: int = 0):
        rng = np.random.default_rng(seed)
        d, n, s2 = num_covariates, num_observations, noise_sd**2
        self.event_shape, self.noise_sd = (d,), float(noise_sd)
        self.x = rng.normal(size=(n, d)) / np.sqrt(n)
        self.y = self.x @ rng.normal(size=d) + noise_sd * rng.normal(size=n)
        self.posterior_precision = np.eye(d) + self.x.T @ self.x / s2
        self.posterior_cov = np.linalg.inv(self.posterior_precision)
        self.posterior_mean = self.posterior_cov @ self.x.T @ self.y / s2
        marginal_cov = s2 * np.eye(n) + self.x @ self.x.T
        _, logdet = np.linalg.slogdet(marginal_cov)
        self.log_Z = float(-0.5 * (n * np.log(2 * np.pi) + logdet + self.y @ np.linalg.solve(marginal_cov, self.y)))

    def _log_prob(self, beta):
        (d,), n = self.event_shape, len(self.y)
        residual = jnp.asarray(self.y, beta.dtype) - jnp.asarray(self.x, beta.dtype) @ beta
        log_prior = -0.5 * (beta @ beta + d * jnp.log(2 * jnp.pi))
        log_likelihood = -0.5 * (residual @ residual / self.noise_sd**2 + n * jnp.log(2 * jnp.pi * self.noise_sd**2))
        return log_prior + log_likelihood

    def posterior(self, dtype=jnp.float32) -> distrax.Distribution:
        """The exact posterior ``N(m, S)`` as a distrax distribution (distrax imported here: it is not needed to sample)."""
        import distrax

        return distrax.MultivariateNormalFullCovariance(jnp.asarray(self.posterior_mean, dtype),
                                                        jnp.asarray(self.posterior_cov, dtype))

    def posterior_cholesky(self) -> tuple[np.ndarray, np.ndarray]:
        """``(m, L)`` with ``S = L L^T`` (float64)."""
        return self.posterior_mean, np.linalg.cholesky(self.posterior_cov)

    def sample(self, key, n):
        """Exact posterior draws, shape ``(n, d)``, in the default float dtype (float64 under ``jax.enable_x64``)."""
        return self.posterior(jnp.result_type(float)).sample(seed=key, sample_shape=(n,))


@TARGETS.register("conjugate_linear_regression")
def conjugate_linear_regression(num_covariates: PositiveInt = 50, num_observations: PositiveInt = 200,
                                noise_sd: PositiveFloat = 1.0, seed: NonNegativeInt = 0) -> ConjugateLinearRegression:
    """Bayesian linear regression, N(0, I) prior: exact Gaussian posterior, exact log Z and exact samples."""
    return ConjugateLinearRegression(num_covariates, num_observations, noise_sd, seed)
