"""Gaussian mixtures: GMM40's definition, log Z = 0 by quadrature and importance sampling, modes."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsamp.targets.mixture import GaussianMixture, gmm


@pytest.fixture(scope="module")
def gmm40():
    return gmm()


def test_gmm40_definition(gmm40):
    means = jax.random.uniform(jax.random.PRNGKey(0), (40, 2), minval=-40.0, maxval=40.0)
    np.testing.assert_allclose(gmm40.means_np, np.asarray(means, np.float64))
    np.testing.assert_allclose(gmm40.scales_np, 1.0)
    np.testing.assert_allclose(gmm40.weights_np, 1 / 40)
    assert gmm40.log_Z == 0.0 and gmm40.event_shape == (2,)


def test_log_Z_is_zero_by_grid_quadrature(gmm40):
    # spacing 0.25 on unit-variance modes: the trapezoid error is of order exp(-2 pi^2 / 0.25^2)
    g = np.linspace(-50, 50, 401)
    pts = np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)
    with jax.enable_x64(True):
        lp = np.asarray(jax.jit(jax.vmap(gmm40.log_prob))(jnp.asarray(pts))).reshape(g.size, g.size)
    assert abs(np.log(np.trapezoid(np.trapezoid(np.exp(lp), g, axis=1), g))) < 1e-9


def test_log_Z_is_zero_by_importance_sampling(gmm40):
    """Z = E_q[p / q] with q uniform on [-50, 50]^2; |Z_hat - 1| within 5 standard errors."""
    n = 200_000
    u = jax.random.uniform(jax.random.key(3), (n, 2), minval=-50.0, maxval=50.0)
    ratio = np.exp(np.asarray(jax.jit(jax.vmap(gmm40.log_prob))(u), np.float64)) * 100.0**2
    z_hat, se = ratio.mean(), ratio.std() / math.sqrt(n)
    assert abs(z_hat - 1.0) < 5 * se
    assert se < 0.02  # the test has power: a 10% error in Z would fail it


def test_sample_moments(gmm40):
    n = 20000
    x = np.asarray(jax.jit(gmm40.sample, static_argnums=1)(jax.random.key(0), n), np.float64)
    mu = gmm40.means_np
    mean = mu.mean(0)
    var = (mu**2).mean(0) - mean**2 + 1.0  # law of total variance
    assert np.all(np.abs(x.mean(0) - mean) < 5 * np.sqrt(var / n))
    # sample variance: standard error sqrt((m4 - var^2) / n) with m4 the exact 4th central moment
    c = mu - mean
    m4 = (c**4).mean(0) + 6 * (c**2).mean(0) + 3.0
    assert np.all(np.abs(x.var(0) - var) < 5 * np.sqrt((m4 - var**2) / n))


def test_assign_modes():
    t = GaussianMixture([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]], 1.0, weights=[0.5, 0.3, 0.2])
    n = 30000
    x = jax.jit(t.sample, static_argnums=1)(jax.random.key(1), n)
    counts = np.bincount(np.asarray(jax.jit(t.assign_modes)(x)), minlength=3)
    # modes 10 sigma apart: assignment = component except with prob < 1e-6; binomial z-test, 5 sigma
    p = t.weights_np
    assert np.all(np.abs(counts / n - p) < 5 * np.sqrt(p * (1 - p) / n))
    np.testing.assert_array_equal(t.assign_modes(jnp.asarray(t.means_np, jnp.float32)), [0, 1, 2])


def test_invalid_weights():
    with pytest.raises(ValueError, match="weights"):
        GaussianMixture([[0.0], [1.0]], 1.0, weights=[1.0])
