"""IMQ kernel Stein discrepancy: the Stein kernel against autodiff, null U-statistic, bootstrap test."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsamp.diagnostics.stein import imq_stein_kernel, kernel_stein_discrepancy, ksd_test, rademacher_multipliers

D = 3


def score(x):
    return -x  # N(0, I)


def test_stein_kernel_matches_autodiff():
    def k(a, b):
        return (0.7**2 + jnp.sum((a - b) ** 2)) ** -0.4

    def h(a, b):
        sa, sb = score(a), score(b)
        grad_x, grad_y = jax.grad(k, 0)(a, b), jax.grad(k, 1)(a, b)
        return sa @ sb * k(a, b) + sa @ grad_y + sb @ grad_x + jnp.trace(jax.jacfwd(jax.grad(k, 0), 1)(a, b))

    x = jax.random.normal(jax.random.key(0), (5, D)) * 1.5
    y = jax.random.normal(jax.random.key(1), (4, D))
    got = imq_stein_kernel(x, -x, y, -y, c=0.7, beta=-0.4)
    ref = jax.jit(jax.vmap(jax.vmap(h, (None, 0)), (0, None)))(x, y)
    np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=1e-5, atol=1e-6)


def test_null_u_statistic_is_zero_in_mean():
    # U is unbiased for KSD^2 = 0 under the null; 5 standard errors over 20 repetitions.
    xs = jax.random.normal(jax.random.key(2), (20, 400, D))
    stats = jax.jit(jax.vmap(lambda x: kernel_stein_discrepancy(x, score, block_size=128)))(xs)
    u, v = np.asarray(stats.u_statistic), np.asarray(stats.v_statistic)
    assert abs(u.mean()) < 5 * u.std(ddof=1) / np.sqrt(len(u))
    assert np.all(v > u)  # V adds the positive diagonal h(x, x) / n
    # blocking does not change the numbers
    one = kernel_stein_discrepancy(xs[0], score, block_size=400)
    np.testing.assert_allclose(float(one.u_statistic), u[0], rtol=1e-4, atol=1e-6)


def test_bootstrap_test_has_its_size_and_detects_a_mean_shift():
    # size: over 100 null repetitions the rejection count is Binomial(100, 0.05); 5 sigma -> <= 15
    test = jax.jit(jax.vmap(lambda k, x: ksd_test(k, x, score, num_bootstrap=200, block_size=128)))
    keys = jax.random.split(jax.random.key(4), 100)
    xs = jax.random.normal(jax.random.key(3), (100, 200, D))
    null = test(keys, xs)
    assert int(jnp.sum(null.reject)) <= 15
    shifted = test(keys, xs + 0.5)
    assert int(jnp.sum(shifted.reject)) == 100
    n = xs.shape[1]
    v = kernel_stein_discrepancy(xs[0], score).v_statistic
    assert float(null.statistic[0]) == pytest.approx(n * float(v), rel=1e-4)


def test_rademacher_multipliers_are_fair_independent_signs():
    """Values +-1; column means and pairwise column correlations within 5 sigma of 0 (sigma = 1/sqrt(n))."""
    n, b = 20000, 70  # 70 = 2 full words + 6 bits of a third
    w = np.asarray(rademacher_multipliers(jax.random.key(0), n, b, jnp.float32))
    assert w.shape == (n, b) and set(np.unique(w)) == {-1.0, 1.0}
    assert np.abs(w.mean(0)).max() < 5 / np.sqrt(n)
    corr = (w.T @ w) / n - np.eye(b)
    assert np.abs(corr).max() < 5 / np.sqrt(n) * 1.5  # max over 2415 pairs: allow a little over 5 sigma
