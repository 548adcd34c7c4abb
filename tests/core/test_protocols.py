import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsamp.core import WeightedSamples


def test_ess_equal_weights_is_one_and_log_z_is_mean():
    ws = WeightedSamples(jnp.zeros((50, 2)), jnp.full((50,), 3.0), log_Z0=1.5)
    assert float(ws.ess) == pytest.approx(1.0, rel=1e-6)
    assert float(ws.log_Z) == pytest.approx(4.5, rel=1e-6)


def test_ess_single_dominant_weight():
    log_w = jnp.array([0.0, -1e3, -1e3, -1e3])
    assert float(WeightedSamples(jnp.zeros(4), log_w).ess) == pytest.approx(0.25, rel=1e-6)


def test_ess_and_log_z_do_not_overflow_in_float32():
    log_w = jnp.array([1e3, 1e3 - 1.0, -1e3], dtype=jnp.float32)
    ws = WeightedSamples(jnp.zeros(3), log_w)
    w = np.exp(np.array([0.0, -1.0, -2000.0]))
    expected_ess = w.sum() ** 2 / (3 * (w**2).sum())
    assert np.isfinite(float(ws.log_Z)) and np.isfinite(float(ws.ess))
    assert float(ws.ess) == pytest.approx(expected_ess, rel=1e-5)
    assert float(ws.log_Z) == pytest.approx(1e3 + np.log(w.sum() / 3), rel=1e-6)


def test_importance_sampling_log_z_of_a_gaussian():
    # q = N(0, 2^2), unnormalised p = exp(-x^2/2): log Z = 0.5 log(2 pi).
    # With n = 20000 the estimator's sd is ~ 0.006; budget 5 sigma.
    key = jax.random.key(0)
    x = 2.0 * jax.random.normal(key, (20000,))
    log_q = -0.5 * (x / 2.0) ** 2 - jnp.log(2.0) - 0.5 * jnp.log(2 * jnp.pi)
    ws = WeightedSamples(x, -0.5 * x**2 - log_q)
    assert float(ws.log_Z) == pytest.approx(0.5 * np.log(2 * np.pi), abs=0.03)
