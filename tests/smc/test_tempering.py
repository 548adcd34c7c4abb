"""Conditional ESS and the bisection for the next temperature (deterministic checks)."""

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core import WeightedSamples
from jaxsamp.smc import conditional_ess, next_temperature

U = jax.random.normal(jax.random.key(0), (1000,)) * 3.0  # d/dt log pi_t at 1000 particles


def test_cess_is_the_ess_of_the_increments_after_resampling():
    increment = 0.3 * U
    expected = WeightedSamples(None, increment).ess
    np.testing.assert_allclose(conditional_ess(jnp.zeros(1000), increment), expected, rtol=1e-5)


def test_cess_with_weights_matches_its_definition():
    log_w = jax.random.normal(jax.random.key(1), (1000,))
    increment = 0.2 * U
    W = np.asarray(jax.nn.softmax(log_w), np.float64)
    v = np.exp(np.asarray(increment, np.float64))
    np.testing.assert_allclose(conditional_ess(log_w, increment), (W @ v) ** 2 / (W @ v**2), rtol=1e-4)


def test_next_temperature_hits_the_target_cess():
    t = jnp.float32(0.2)
    t_next, calls = next_temperature(jnp.zeros(1000), lambda s: (s - t) * U, t, 0.7, 30)
    assert 0.2 < float(t_next) < 1.0 and int(calls) == 31
    np.testing.assert_allclose(conditional_ess(jnp.zeros(1000), (t_next - t) * U), 0.7, atol=1e-4)


def test_next_temperature_jumps_to_one_when_the_step_is_easy():
    t = jnp.float32(0.9)
    t_next, calls = next_temperature(jnp.zeros(1000), lambda s: (s - t) * 1e-3 * U, t, 0.5, 30)
    assert float(t_next) == 1.0 and int(calls) == 1
