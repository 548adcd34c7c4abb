"""Polynomial Stein discrepancy: features against autodiff, and the oracle table of the PSD paper."""

import functools
from math import comb

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsamp.diagnostics.polynomial_stein import monomial_exponents, polynomial_stein_discrepancy, psd_test, stein_features


def gaussian_score(x):
    return -x


@pytest.mark.parametrize("dim,order", [(1, 3), (3, 4), (5, 2)])
def test_monomials(dim, order):
    exps = monomial_exponents(dim, order)
    assert exps.shape == (comb(dim + order, order) - 1, dim)
    assert len({tuple(e) for e in exps}) == len(exps)
    assert exps.sum(1).min() == 1 and exps.sum(1).max() == order


def test_features_are_the_langevin_stein_operator_on_monomials():
    # A_p m = laplacian(m) + s . grad(m), by autodiff, for a non-Gaussian score
    def score(x):
        return -(x**3) + jnp.roll(x, 1)

    exps = monomial_exponents(3, 4)
    x = jax.random.normal(jax.random.key(0), (6, 3)) * 1.3

    def stein_op(a, y):
        m = lambda z: jnp.prod(z**a)  # noqa: E731
        return jnp.trace(jax.hessian(m)(y)) + score(y) @ jax.grad(m)(y)

    ref = jax.jit(jax.vmap(jax.vmap(stein_op, (0, None)), (None, 0)))(jnp.asarray(exps, jnp.float32), x)
    got = stein_features(x, jax.vmap(score)(x), exps)
    np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=1e-4, atol=1e-4)
    # the worked examples of the digest: x_k -> s_k, x_k^2 -> 2 + 2 x_k s_k
    s = jax.vmap(score)(x)
    np.testing.assert_allclose(np.asarray(got[:, 0]), np.asarray(s[:, 0]), rtol=1e-6)
    k2 = [tuple(e) for e in exps].index((2, 0, 0))
    np.testing.assert_allclose(np.asarray(got[:, k2]), np.asarray(2 + 2 * x[:, 0] * s[:, 0]), rtol=1e-5)


def test_streaming_blocks_do_not_change_the_discrepancy():
    x = jax.random.normal(jax.random.key(1), (1000, 3)) + 0.2
    full = polynomial_stein_discrepancy(x, gaussian_score, 2, block_size=1000)
    blocked = polynomial_stein_discrepancy(x, gaussian_score, 2, block_size=128)
    assert float(blocked) == pytest.approx(float(full), rel=1e-5)
    # the mean shift shows in the first-order features: Zbar_k = E[-x_k] = -0.2
    assert float(polynomial_stein_discrepancy(x, gaussian_score, 1)) == pytest.approx(0.2 * np.sqrt(3), rel=0.15)


# Oracle table of the PSD paper (research/methods.md Sec. 1; d = 3, n = 1000): bootstrap test at level
# 0.05 over R repetitions. Error budget: a rejection count K ~ Binomial(R, rate). Under a null, rate ~ 0.05,
# so K <= R (0.05 + 5 sqrt(0.05 * 0.95 / R)) = 15 at R = 100 (5 sigma); "detected" means rate ~ 1 in the
# paper, and K >= 90 fails with negligible probability for any rate >= 0.98. (Power falls as r grows past
# the order that carries the signal, because the extra features dilute it: ~0.9 for the variance change
# at r = 3 here, 0.19 for the mean shift at r = 4 in the digest, so each row is tested at its own order.)
D, N, R = 3, 1000, 100
SIZE_MAX, POWER_MIN = 15, 90


def _draw(kind, key):
    z = jax.random.normal(key, (R, N, D))
    if kind == "mean_shift":
        return z + 0.3
    if kind == "variance":
        return z * jnp.asarray([np.sqrt(1.7), 1.0, 1.0])
    if kind == "laplace":
        return jax.random.laplace(key, (R, N, D)) / np.sqrt(2.0)  # unit variance
    return z


@functools.partial(jax.jit, static_argnames=("order", "method"))
def _rejections(key, xs, order, method="bootstrap"):
    keys = jax.random.split(key, R)
    test = lambda k, x: psd_test(k, x, gaussian_score, order, method=method, num_bootstrap=100, num_null_draws=4000)  # noqa: E731
    return jnp.sum(jax.vmap(test)(keys, xs).reject)


@pytest.mark.slow
def test_oracle_table():
    data = {kind: _draw(kind, jax.random.key(i)) for i, kind in enumerate(["null", "mean_shift", "variance", "laplace"])}
    expected = {  # (kind, order): detected?
        ("null", 1): False, ("null", 2): False, ("null", 3): False, ("null", 4): False,
        ("mean_shift", 1): True,
        ("variance", 1): False, ("variance", 2): True,
        ("laplace", 3): False, ("laplace", 4): True,
    }
    for (kind, order), detected in expected.items():
        k = int(_rejections(jax.random.key(100 + order), data[kind], order))
        assert (k >= POWER_MIN) if detected else (k <= SIZE_MAX), (kind, order, k)
    # the asymptotic weighted chi-square null: size at r = 2 and the variance change detected
    assert int(_rejections(jax.random.key(7), data["null"], 2, "asymptotic")) <= SIZE_MAX
    assert int(_rejections(jax.random.key(8), data["variance"], 2, "asymptotic")) >= POWER_MIN
