"""Runs under XLA_FLAGS=--xla_force_host_platform_device_count=8 (set by test_sharding)."""

import sys
import tempfile

import blackjax
import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core import WeightedSamples, chain_mesh, ensemble, map_chains, run, shard

assert jax.device_count() == 8, jax.devices()
log_prob = lambda x: -0.5 * jnp.sum(x**2) - 0.25 * jnp.sum(x**4)  # noqa: E731
base = ensemble(blackjax.mala(log_prob, 0.4))
x0 = jax.random.normal(jax.random.key(0), (64, 5))
key = jax.random.key(1)

plain, _ = run(base.step, base.init(x0), key, 50, chunk=10, progress=False)
sharded_kernel = shard(base, chain_mesh())
s0 = sharded_kernel.init(x0)
assert len(s0.position.sharding.device_set) == 8
sharded, _ = run(sharded_kernel.step, s0, key, 50, chunk=10, progress=False)
assert len(sharded.position.sharding.device_set) == 8, sharded.position.sharding
np.testing.assert_array_equal(np.asarray(plain.position), np.asarray(sharded.position))

# checkpoint/resume of a sharded state keeps its layout and its numbers
with tempfile.TemporaryDirectory() as d:
    run(sharded_kernel.step, s0, key, 20, chunk=10, progress=False, checkpoint=d)
    resumed, _ = run(sharded_kernel.step, s0, key, 50, chunk=10, progress=False, checkpoint=d)
assert len(resumed.position.sharding.device_set) == 8
np.testing.assert_array_equal(np.asarray(plain.position), np.asarray(resumed.position))

# explicit collectives: a global log Z from per-device log-weights with shard_map + psum
log_w = jax.random.normal(jax.random.key(2), (64,)) * 3.0


def per_device(lw):
    m = jax.lax.pmax(jnp.max(lw), "chains")
    total = jax.lax.psum(jnp.sum(jnp.exp(lw - m)), "chains")
    return jnp.broadcast_to(m + jnp.log(total), lw.shape)


lse = map_chains(per_device)(log_w)
expected = jax.scipy.special.logsumexp(log_w)
np.testing.assert_allclose(np.asarray(lse), float(expected), rtol=1e-6)
np.testing.assert_allclose(float(WeightedSamples(None, log_w).log_Z), float(expected - jnp.log(64)), rtol=1e-6)

# a chain count that does not divide the devices is a clear error
try:
    shard(base).init(x0[:60])
except ValueError as err:
    assert "not divisible" in str(err)
else:
    raise AssertionError("expected a ValueError for 60 chains on 8 devices")
print("SHARDING-OK")
sys.exit(0)
