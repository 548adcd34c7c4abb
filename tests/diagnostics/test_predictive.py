"""Predictive metrics against direct computations on a model whose predictive densities are known in closed form.

Oracle: a linear-Gaussian "network" ``mu = a + b x``, ``sigma = exp(c)`` with random
draws ``(a, b, c)``; LPPD as a direct float64 log-mean-exp of scipy's normal
densities, RMSE of the mean prediction, and the 90 % interval from the mixture's
quantiles found by bisection (a different route from the metric's CDF test).
"""

import jax.numpy as jnp
import numpy as np
import pytest
from scipy import optimize, stats

from jaxsamp.core.errors import InputError
from jaxsamp.diagnostics.predictive import lppd, predictive_metrics


def linear_model(theta, x):
    return theta[0] + theta[1] * x[:, 0], jnp.exp(theta[2]) * jnp.ones(x.shape[0])


@pytest.fixture(scope="module")
def case():
    rng = np.random.default_rng(0)
    draws = np.stack([rng.normal(0.2, 0.3, (5, 3)), rng.normal(1.0, 0.2, (5, 3)), rng.normal(-0.5, 0.4, (5, 3))], -1)
    x = rng.normal(size=(40, 1))
    y = 0.1 + 1.1 * x[:, 0] + 0.7 * rng.normal(size=40)
    return draws.astype(np.float32), x.astype(np.float32), y.astype(np.float32)


def _densities(draws, x, y):
    flat = draws.reshape(-1, 3).astype(np.float64)
    mu = flat[:, :1] + flat[:, 1:2] * x[:, 0].astype(np.float64)
    return mu, np.exp(flat[:, 2:]) * np.ones_like(mu), y.astype(np.float64)


def test_lppd_equals_direct_log_mean_exp(case):
    draws, x, y = case
    mu, sigma, y64 = _densities(draws, x, y)
    direct = np.mean(np.log(np.mean(stats.norm.pdf(y64, mu, sigma), axis=0)))
    got = predictive_metrics(linear_model, draws, x, y)
    assert got["lppd"] == pytest.approx(direct, abs=2e-5)
    assert float(lppd(stats.norm.logpdf(y64, mu, sigma))) == pytest.approx(direct, rel=1e-6)  # float32
    for t in (1, 3, 5):  # the running curve: the first t draws of every chain
        mu_t, sigma_t, _ = _densities(draws[:t], x, y)
        want = np.mean(np.log(np.mean(stats.norm.pdf(y64, mu_t, sigma_t), axis=0)))
        assert got["lppd_curve"][t - 1] == pytest.approx(want, abs=2e-5)
    np.testing.assert_allclose(got["test_log_lik"], stats.norm.logpdf(y64, mu, sigma).mean(1).reshape(5, 3), atol=2e-5)


def test_rmse_and_coverage_equal_direct_computations(case):
    draws, x, y = case
    mu, sigma, y64 = _densities(draws, x, y)
    got = predictive_metrics(linear_model, draws, x, y)
    assert got["rmse"] == pytest.approx(np.sqrt(np.mean((mu.mean(0) - y64) ** 2)), rel=1e-5)

    def quantile(i, q):
        return optimize.brentq(lambda v: stats.norm.cdf(v, mu[:, i], sigma[:, i]).mean() - q, -50, 50, xtol=1e-12)

    inside = [quantile(i, 0.05) <= y64[i] <= quantile(i, 0.95) for i in range(len(y64))]
    assert 0 < sum(inside) < len(inside)  # the case has points both inside and outside
    assert got["coverage"] == pytest.approx(np.mean(inside), abs=1e-6)  # a float32 fraction


def test_bad_inputs_are_clear_errors(case):
    draws, x, y = case
    with pytest.raises(InputError, match="draws must be"):
        predictive_metrics(linear_model, draws[0], x, y)
    with pytest.raises(InputError, match="rows but y has"):
        predictive_metrics(linear_model, draws, x[:3], y)
    with pytest.raises(InputError, match="interval"):
        predictive_metrics(linear_model, draws, x, y, interval=1.0)
