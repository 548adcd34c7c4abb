"""blackjax kernels by name: moment z-tests on a Gaussian through ensemble + run, and tuning.

Each sampler is built from ``SAMPLERS`` (tuned ones run their blackjax tuner
once, eagerly, inside the factory), wrapped in ``shard(ensemble(.))`` (one
device here; 8 in the subprocess test) and run by the driver for 32 chains x
600 steps from N(0, I) starts; after 100 burn-in steps
the time-averaged mean and covariance must match the target within 5 standard
errors across chains (MCLMC is unadjusted: its bias at the tuned step size is
far below that error bar on this target).
"""

import os
import subprocess
import sys
from pathlib import Path

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _moment_checks import assert_chain_moments

import jaxsamp.mcmc  # noqa: F401  (registers)
from jaxsamp.core import ensemble, run, shard
from jaxsamp.core.registry import SAMPLERS
from jaxsamp.core.target import from_function
from jaxsamp.mcmc.blackjax_kernels import window_adapt
from jaxsamp.targets import Gaussian

COV = np.array([[1.0, 0.6, 0.0], [0.6, 2.0, -0.3], [0.0, -0.3, 0.5]])
MEAN = np.array([1.0, -0.5, 0.25])
TARGET = Gaussian(MEAN, COV)

CASES = {
    "mala": {"step_size": 0.4},
    "hmc": {"num_integration_steps": 8, "tune_steps": 300},  # blackjax.window_adaptation in the factory
    "mclmc": {"tune_steps": 600},
    "adjusted_mclmc": {"tune_steps": 600},
}


def _assert_moments(kernel):
    chains = shard(ensemble(kernel))
    state = chains.init(jax.random.normal(jax.random.key(0), (32, 3)), jax.random.key(1))
    _, trace = run(chains.step, state, jax.random.key(2), 600, trace=lambda s, i: s.position, progress=False)
    assert_chain_moments(np.asarray(trace)[100:], MEAN, COV)


@pytest.mark.parametrize("name", list(CASES))
def test_sampler_moments_on_a_gaussian(name):
    _assert_moments(SAMPLERS.get(name, TARGET, **CASES[name]))


def test_window_adapted_nuts_finds_the_scales_and_the_moments():
    # the diagonal inverse mass matrix ~ the marginal variances (within 30% after 500 warm-up steps)
    _, params = window_adapt(blackjax.nuts, TARGET.log_prob, jnp.zeros(3), jax.random.key(3), 500)
    np.testing.assert_allclose(np.asarray(params["inverse_mass_matrix"]), np.diag(COV), rtol=0.3)
    _assert_moments(blackjax.nuts(TARGET.log_prob, **params))


def _scaled_gaussian(x, scale):
    return -0.5 * jnp.sum((x / scale) ** 2)


def test_a_tuned_mclmc_compiles_once_for_every_data_set(compilations):
    """The tuner takes the log density as a traced argument, the kernel the tuned values: new data compile nothing.

    Wider data give other tuned values, leaves of a step of the same function,
    structure, shapes and dtypes: what the driver compiles once for
    (:func:`jaxsamp.run`; the chains through ``jaxsamp.sample`` in test_sample.py).
    """
    scales, new_scales = jnp.ones(3), jnp.full(3, 3.0, jnp.float32)

    def tuned(scale):
        return SAMPLERS.get("mclmc", from_function(_scaled_gaussian, jnp.zeros(3), data=(scale,)), tune_steps=30)

    first = tuned(scales)
    del compilations[:]
    second = tuned(new_scales)
    assert compilations == [], f"{len(compilations)} compilations"
    assert second.step.func is first.step.func
    assert jax.tree.structure(second.step) == jax.tree.structure(first.step)
    avals = [[(jnp.shape(a), jnp.result_type(a)) for a in jax.tree.leaves(k.step)] for k in (first, second)]
    assert avals[0] == avals[1]
    step_sizes = [float(k.step.args[0][1]) for k in (first, second)]  # (log density, step size, L, mass): leaves
    assert step_sizes[0] != step_sizes[1]


def test_mclmc_needs_both_or_neither_parameter():
    with pytest.raises(ValueError, match="both L and step_size"):
        SAMPLERS.get("mclmc", TARGET, L=1.0)


@pytest.mark.multidevice
def test_continuous_samplers_run_sharded_on_8_devices():
    env = {**os.environ, "XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=8", "JAX_PLATFORMS": "cpu"}
    child = Path(__file__).with_name("_continuous_sharding_child.py")
    proc = subprocess.run([sys.executable, str(child)], env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "CONTINUOUS-SHARDING-OK" in proc.stdout
