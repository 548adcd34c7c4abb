"""Chain ESS / R-hat through blackjax on processes with known answers, and the ArviZ export."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsamp.diagnostics.mcmc import chain_ess, chain_rhat, to_inference_data

STEPS, CHAINS = 2000, 4


@jax.jit
def _ar1(key, rho):
    """Stationary AR(1) chains, one per entry of ``rho``, in the driver's (steps, chains, k) layout."""
    noise = jax.random.normal(key, (STEPS, CHAINS, rho.shape[0]))

    def step(x, e):
        x = rho * x + jnp.sqrt(1 - rho**2) * e
        return x, x

    return jax.lax.scan(step, noise[0], noise[1:])[1]


def test_ess_matches_the_ar1_integrated_autocorrelation_time():
    # ESS = N (1 - rho) / (1 + rho) for AR(1); the estimator's own spread is ~10% here,
    # so a 30% band is several of its standard deviations.
    rho = jnp.asarray([0.0, 0.8, 0.8, 0.8])
    ess = np.asarray(jax.jit(chain_ess)({"x": _ar1(jax.random.key(0), rho)})["x"])
    n = (STEPS - 1) * CHAINS
    np.testing.assert_allclose(ess, n * (1 - rho) / (1 + rho), rtol=0.3)


def test_rhat_is_one_for_mixed_chains_and_large_for_shifted_chains():
    rhat = jax.jit(chain_rhat)
    mixed = _ar1(jax.random.key(2), jnp.asarray([0.5]))[..., 0]
    assert float(rhat(mixed)) < 1.01
    assert float(rhat(mixed + jnp.arange(CHAINS)[None, :])) > 1.5


def test_inference_data_export():
    pytest.importorskip("arviz")
    x = _ar1(jax.random.key(3), jnp.asarray([0.3, 0.3]))
    trace = {"x": x, "energy": x[..., 0] ** 2}
    idata = to_inference_data(trace)
    assert idata.posterior["x"].shape == (CHAINS, STEPS - 1, 2)
    assert idata.posterior["energy"].shape == (CHAINS, STEPS - 1)
    np.testing.assert_allclose(idata.posterior["energy"].values, np.asarray(trace["energy"]).T)
    assert to_inference_data(x).posterior["x"].shape == (CHAINS, STEPS - 1, 2)
