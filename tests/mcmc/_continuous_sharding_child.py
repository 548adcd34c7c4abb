"""Runs under XLA_FLAGS=--xla_force_host_platform_device_count=8 (set by test_blackjax_kernels).

Continuous samplers of jaxsamp.mcmc, built by name, go through
``shard(ensemble(kernel))`` and the driver on 8 devices, and their states stay
laid out over the 8 devices.
"""

import sys

import jax
import numpy as np

import jaxsamp.mcmc  # noqa: F401  (registers)
from jaxsamp.core import chain_mesh, ensemble, position_of, run, shard
from jaxsamp.core.registry import SAMPLERS
from jaxsamp.targets import Gaussian

assert jax.device_count() == 8, jax.devices()
target = Gaussian(np.zeros(4), np.eye(4) + 0.3)
# the unusual states: cached gradients and a while loop over windows (speculative), an integer
# level counter (ALMC) and a blackjax state whose init needs a key (MCLMC). Every sampler also
# runs through shard(ensemble(.)) on one device in the unit tests.
cases = {
    "speculative_langevin": {"step_size": 0.1, "window": 3},
    "annealed_langevin": {"num_levels": 5, "total_time": 1.0, "lambda0": 2.0},
    "mclmc": {"L": 1.0, "step_size": 0.3},
}
x0 = jax.random.normal(jax.random.key(0), (16, 4))
mesh = chain_mesh()
for name, params in cases.items():
    kernel = shard(ensemble(SAMPLERS.get(name, target, **params)), mesh)
    state = kernel.init(x0, jax.random.key(1))
    state, _ = run(kernel.step, state, jax.random.key(2), 4, chunk=2, progress=False)
    pos = position_of(state)
    assert len(pos.sharding.device_set) == 8, (name, pos.sharding)
    assert np.all(np.isfinite(np.asarray(pos))), name
    print(name, "ok", flush=True)
print("CONTINUOUS-SHARDING-OK")
sys.exit(0)
