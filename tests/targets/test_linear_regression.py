"""The conjugate linear regression: unnormalised density = evidence x exact posterior, at any point."""

import jax
import numpy as np

import jaxsamp


def test_log_density_minus_log_posterior_is_the_evidence_everywhere():
    """Float64: log p~(beta) - log N(beta; m, S) = log Z to 1e-8 at prior and posterior draws alike."""
    with jax.enable_x64(True):
        target = jaxsamp.targets.get("conjugate_linear_regression", num_covariates=5, num_observations=30, noise_sd=0.5)
        posterior = target.posterior(np.float64)
        beta = np.concatenate([np.random.default_rng(0).normal(size=(4, 5)),
                               np.asarray(target.sample(jax.random.key(1), 4), np.float64)])
        gap = np.asarray(jax.vmap(target.log_prob)(beta)) - np.asarray(posterior.log_prob(beta))
        np.testing.assert_allclose(gap, target.log_Z, rtol=0, atol=1e-8)
