"""Funnel: the density against scipy, log Z = 0 by quadrature, exact samples by KS tests."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxsamp.targets.funnel import Funnel, funnel

# A Kolmogorov-Smirnov p-value below 1e-3 has probability 1e-3 under an exact sampler.
KS_P_MIN = 1e-3


def test_log_prob_matches_independent_normals():
    t = funnel(dim=10)
    x = np.random.default_rng(0).normal(size=(50, 10)) * np.array([3.0] + [2.0] * 9)
    with jax.enable_x64(True):
        lp = np.asarray(jax.jit(jax.vmap(t.log_prob))(jnp.asarray(x)))
    ref = stats.norm.logpdf(x[:, 0], scale=3.0) + stats.norm.logpdf(x[:, 1:], scale=np.exp(x[:, :1] / 2)).sum(1)
    np.testing.assert_allclose(lp, ref, rtol=1e-12)


def test_log_Z_is_zero_by_quadrature():
    """int exp(log p) over (x0, x1) for d = 2, with x1 = e^{x0/2} u (trapezoid, error < 1e-9)."""
    t = funnel(dim=2)
    x0 = np.linspace(-36.0, 36.0, 2401)
    u = np.linspace(-12.0, 12.0, 1201)
    grid0, gridu = np.meshgrid(x0, u, indexing="ij")
    x1 = np.exp(grid0 / 2) * gridu
    with jax.enable_x64(True):
        lp = jax.jit(jax.vmap(t.log_prob))(jnp.asarray(np.stack([grid0, x1], -1).reshape(-1, 2)))
        dens = np.exp(np.asarray(lp)).reshape(grid0.shape) * np.exp(grid0 / 2)
    z = np.trapezoid(np.trapezoid(dens, u, axis=1), x0)
    assert t.log_Z == 0.0
    assert abs(np.log(z)) < 1e-9


def test_samples_match_the_marginals():
    t = funnel(dim=10)
    x = np.asarray(jax.jit(t.sample, static_argnums=1)(jax.random.key(0), 4000), np.float64)
    assert stats.kstest(x[:, 0], stats.norm(scale=3.0).cdf).pvalue > KS_P_MIN
    # marginal CDF of x1: int N(x0; 0, 9) Phi(x1 e^{-x0/2}) dx0, by 80-point Gauss-Hermite in x0
    nodes, weights = np.polynomial.hermite_e.hermegauss(80)

    def cdf(v):
        return (weights * stats.norm.cdf(v[:, None] * np.exp(-3.0 * nodes / 2))).sum(1) / weights.sum()

    for j in (1, 5, 9):
        assert stats.kstest(x[:, j], cdf).pvalue > KS_P_MIN


def test_invalid_parameters():
    with pytest.raises(ValueError, match="dim >= 2"):
        Funnel(dim=1)
    with pytest.raises(ValueError, match="scale > 0"):
        Funnel(scale=0.0)
