"""Importance-weight diagnostics against exact answers (Gaussian importance sampling)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsamp.core import WeightedSamples
from jaxsamp.core.errors import InputError
from jaxsamp.diagnostics.weights import elbo, eubo, figures, importance_ess, log_weight_variance


def test_ess_is_n_for_equal_weights_and_one_for_a_dominant_weight():
    n = 1000
    equal = WeightedSamples(jnp.zeros(n), jnp.full(n, 3.7))
    assert float(importance_ess(equal)) == pytest.approx(n, rel=1e-5)
    assert float(importance_ess(equal, normalized=True)) == pytest.approx(1.0, rel=1e-5)
    dominant = WeightedSamples(jnp.zeros(n), jnp.zeros(n).at[17].set(60.0))
    assert float(importance_ess(dominant)) == pytest.approx(1.0, rel=1e-5)


def test_float32_log_weights_of_magnitude_1e3_do_not_overflow():
    log_w = jnp.asarray([1000.0, 1000.0, -1000.0, 999.0], jnp.float32)
    ws = WeightedSamples(jnp.zeros(4), log_w, log_Z0=2.0)
    w = np.exp(np.array([0.0, 0.0, -2000.0, -1.0]))  # relative weights, exact in float64
    assert float(importance_ess(ws)) == pytest.approx(w.sum() ** 2 / (w**2).sum(), rel=1e-5)
    assert float(ws.log_Z) == pytest.approx(2.0 + 1000.0 + np.log(w.sum() / 4), rel=1e-6)
    assert np.isfinite(float(log_weight_variance(ws))) and np.isfinite(float(elbo(ws)))


def test_log_Z_is_exact_when_the_proposal_is_proportional_to_the_target():
    # p~(x) = e^2.5 N(x; 0, 1), q = N(0, 1): every log-weight equals log Z
    x = jax.random.normal(jax.random.key(0), (500,))
    log_q = jax.scipy.stats.norm.logpdf(x)
    ws = WeightedSamples(x, (2.5 + log_q) - log_q)
    s = figures(ws, log_Z_exact=2.5, target_log_w=np.full(7, 2.5))
    assert s["log_Z_abs_err"] == pytest.approx(0.0, abs=1e-6) and s["log_Z_hat"] == pytest.approx(2.5, abs=1e-6)
    assert s["ess"] == pytest.approx(1.0, rel=1e-5)  # normalised, as every ess in jaxsamp
    assert float(log_weight_variance(ws)) == pytest.approx(0.0, abs=1e-10)
    assert s["elbo"] == pytest.approx(2.5, abs=1e-6) and s["eubo"] == pytest.approx(2.5, abs=1e-6)
    assert s["log_Z_forward_abs_err"] == pytest.approx(0.0, abs=1e-6) and s["nonfinite_samples"] == 0


def test_figures_leave_out_nonfinite_weights_score_sets_and_check_their_count():
    """Hand-computed: log w = (0, log 3, nan, log 2) with log Z0 = 1: finite mean weight 2, ELBO mean of logs."""
    log_w = np.array([0.0, np.log(3.0), np.nan, np.log(2.0)])
    s = figures(WeightedSamples(None, log_w, 1.0), log_Z_exact=1.0 + np.log(2.0), num_sets=2)
    assert s["nonfinite_samples"] == 1 and s["log_Z_hat"] == pytest.approx(1.0 + np.log(2.0))
    assert s["elbo"] == pytest.approx(1.0 + np.log(6.0) / 3) and s["ess"] == pytest.approx(36 / (3 * 14), rel=1e-6)
    # sets (0, log 3) and (nan, log 2): log mean 2 and log 2, both exact
    assert s["log_Z_hat_sets_mean"] == pytest.approx(1.0 + np.log(2.0)) and s["log_Z_abs_err_sets_mean"] == pytest.approx(0.0, abs=1e-12)
    assert "eubo" not in s and s["log_Z_abs_err"] == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(InputError, match="num_sets"):
        figures(WeightedSamples(None, log_w), num_sets=5)


def test_gaussian_importance_sampling_log_Z_elbo_and_eubo():
    # target p~(x) = e^3 N(x; 1, 1) (log Z = 3), proposal q = N(0, 2^2).
    # Exact: ELBO = 3 - KL(q||p) = 3 - (log(1/2) + 5/2 - 1/2); EUBO = 3 + KL(p||q) = 3 + (log 2 + 2/8 - 1/2).
    n = 20_000
    kq, kp = jax.random.split(jax.random.key(1))

    def log_w(x):
        return 3.0 + jax.scipy.stats.norm.logpdf(x, 1.0, 1.0) - jax.scipy.stats.norm.logpdf(x, 0.0, 2.0)

    xq = 2.0 * jax.random.normal(kq, (n,))
    ws = WeightedSamples(xq, log_w(xq))
    w = np.exp(np.asarray(ws.log_w) - 3.0)
    # error budget: 5 standard errors of each Monte-Carlo mean (delta method for log Z)
    assert float(ws.log_Z) == pytest.approx(3.0, abs=5 * w.std() / w.mean() / np.sqrt(n))
    se = 5 * float(jnp.std(ws.log_w)) / np.sqrt(n)
    assert float(elbo(ws)) == pytest.approx(3.0 - (np.log(0.5) + 2.0), abs=se)
    xp = 1.0 + jax.random.normal(kp, (n,))
    target = WeightedSamples(xp, log_w(xp))
    assert float(eubo(target)) == pytest.approx(3.0 + np.log(2.0) - 0.25, abs=5 * float(jnp.std(target.log_w)) / np.sqrt(n))
    assert float(elbo(ws)) < float(ws.log_Z) < float(eubo(target))
    assert 0 < float(importance_ess(ws, normalized=True)) < 1
