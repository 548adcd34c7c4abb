"""Samplers on the sphere: they leave a vMF mixture invariant, stay on the sphere and report acceptance."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsamp.core import ensemble, run
from jaxsamp.core.errors import InputError
from jaxsamp.mcmc.sphere import exp_map, geodesic_random_walk, log_map, sphere_mala
from jaxsamp.targets.sphere import VmfMixture

TARGET = VmfMixture([[1.0, 0.0, 0.0, 0.0], [0.0, -1.0, 0.0, 0.0], [0.0, 0.0, 0.6, 0.8]], [8.0, 15.0, 4.0],
                    weights=[0.5, 0.3, 0.2])


def test_exp_and_log_maps_are_inverse():
    x = jnp.array([0.0, 0.6, 0.8])
    v = jnp.array([0.3, -0.4, 0.3])  # tangent at x: v . x = 0
    y = exp_map(x, v)
    np.testing.assert_allclose(float(jnp.linalg.norm(y)), 1.0, atol=1e-6)
    np.testing.assert_allclose(log_map(x, y), v, atol=1e-5)


@pytest.mark.parametrize("make_kernel, step", [(sphere_mala, 0.15), (geodesic_random_walk, 0.3)],
                         ids=["mala", "random_walk"])
def test_kernel_leaves_a_vmf_mixture_invariant(make_kernel, step):
    """Start 2000 chains at exact draws, run 20 steps: mean and second moments stay the exact ones.

    Budget: 5 standard errors of each moment over the 2000 (independent) chains,
    the errors of the exact moments themselves (from 200 000 exact draws) added.
    """
    n = 2000
    exact = np.asarray(TARGET.sample(jax.random.key(0), 200_000), np.float64)
    start = TARGET.sample(jax.random.key(1), n)
    chains = ensemble(make_kernel(TARGET.log_prob, step))
    state, accept = run(chains.step, chains.init(start), jax.random.key(2), 20, progress=False,
                        trace=lambda s, info: info.acceptance_rate.mean())
    x = np.asarray(state.position, np.float64)
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-5)
    assert 0.3 < float(np.mean(accept)) < 0.99
    for f in (lambda z: z, lambda z: z[:, :, None] * z[:, None, :]):
        got, want = f(x), f(exact)
        se = np.sqrt(got.var(0) / n + want.var(0) / len(want))
        assert np.all(np.abs(got.mean(0) - want.mean(0)) < 5 * se + 1e-9)


def test_chains_move_between_modes_and_errors():
    """From one mode, MALA chains reach the others; a bad step size is a clear error."""
    chains = ensemble(sphere_mala(TARGET.log_prob, 0.3))
    start = jnp.tile(jnp.array([1.0, 0.0, 0.0, 0.0]), (200, 1))
    state, _ = run(chains.step, chains.init(start), jax.random.key(3), 150, progress=False)
    assert float(jnp.mean(state.position[:, 1] < -0.5)) > 0.05  # some chains found the second mode
    with pytest.raises(InputError, match="step_size"):
        sphere_mala(TARGET.log_prob, -0.1)
