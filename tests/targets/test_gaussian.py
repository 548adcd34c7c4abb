"""Gaussian target: density and log Z against scipy and quadrature, exact sample moments."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxsamp.targets.gaussian import Gaussian, gaussian


def test_log_prob_minus_log_Z_is_scipy_logpdf():
    t = gaussian(dim=4, scale=2.0, correlation=0.3, mean=[1.0, -1.0, 0.5, 0.0])
    x = np.random.default_rng(0).normal(size=(20, 4)) * 3
    with jax.enable_x64(True):
        lp = np.asarray(jax.jit(jax.vmap(t.log_prob))(jnp.asarray(x)))
    ref = stats.multivariate_normal(t.mean_np, t.cov_np).logpdf(x)
    np.testing.assert_allclose(lp - t.log_Z, ref, rtol=1e-12)


def test_log_Z_by_grid_quadrature():
    t = gaussian(dim=2, scale=1.5, correlation=-0.4)
    g = np.linspace(-15, 15, 1201)
    pts = np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)
    with jax.enable_x64(True):
        dens = np.exp(np.asarray(jax.jit(jax.vmap(t.log_prob))(jnp.asarray(pts)))).reshape(g.size, g.size)
    assert abs(np.log(np.trapezoid(np.trapezoid(dens, g, axis=1), g)) - t.log_Z) < 1e-9


def test_sample_moments():
    t = gaussian(dim=3, scale=2.0, correlation=0.5, mean=[1.0, 2.0, 3.0])
    n = 20000
    x = np.asarray(jax.jit(t.sample, static_argnums=1)(jax.random.key(0), n), np.float64)
    # mean: z-test per coordinate, 5 sigma; covariance: entries' standard error
    # sqrt((S_ii S_jj + S_ij^2) / n), 5 sigma
    se_mean = np.sqrt(np.diag(t.cov_np) / n)
    assert np.all(np.abs(x.mean(0) - t.mean_np) < 5 * se_mean)
    s = t.cov_np
    se_cov = np.sqrt((np.outer(np.diag(s), np.diag(s)) + s**2) / n)
    assert np.all(np.abs(np.cov(x.T) - s) < 5 * se_cov)


def test_invalid_parameters():
    with pytest.raises(ValueError, match="correlation"):
        gaussian(dim=3, correlation=0.99 + 0.02)
    with pytest.raises(ValueError, match="positive definite"):
        Gaussian(np.zeros(2), np.array([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match=r"cov must have shape \(2, 2\)"):
        Gaussian(np.zeros(2), np.eye(3))
