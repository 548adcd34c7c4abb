"""Runs under XLA_FLAGS=--xla_force_host_platform_device_count=8 (set by test_annealing).

SMC with its particles sharded over 8 devices against the same run on one device: a fixed schedule that
resamples, and adaptive tempering (the bisection on the global conditional ESS). The draws depend on the
particle index only, so the particles, the resampling decisions and the levels agree; the sums differ only
in floating-point reduction order (tolerance 1e-5).
"""

import sys

import blackjax
import jax
import numpy as np

from jaxsamp.smc import anneal, linear_schedule
from jaxsamp.targets import get
from jaxsamp.targets.annealing import geometric_path

assert jax.device_count() == 8, jax.devices()
path = geometric_path(get("gaussian", dim=2, scale=0.5, mean=[1.0, -0.5]), base_scale=1.0)


def make_kernel(t):
    return blackjax.mala(lambda x: path.log_prob(x, t), 0.2)


for options in ({"schedule": linear_schedule(5), "ess_threshold": 0.95}, {"target_cess": 0.8, "max_levels": 40, "ess_threshold": 0.9}):
    one = anneal(jax.random.key(0), path, make_kernel, 256, num_mcmc_steps=2, **options)
    eight = anneal(jax.random.key(0), path, make_kernel, 256, num_mcmc_steps=2, mesh=True, **options)
    assert len(eight.samples.x.sharding.device_set) == 8, eight.samples.x.sharding
    assert len(eight.samples.log_w.sharding.device_set) == 8, eight.samples.log_w.sharding
    assert one.num_levels == eight.num_levels and one.num_target_evals == eight.num_target_evals
    np.testing.assert_array_equal(np.asarray(one.trace.resampled), np.asarray(eight.trace.resampled))
    assert np.asarray(one.trace.resampled).sum() >= 2, "the run must resample for the check to mean anything"
    np.testing.assert_allclose(np.asarray(one.trace.t), np.asarray(eight.trace.t), atol=1e-5)
    np.testing.assert_allclose(np.asarray(one.samples.x), np.asarray(eight.samples.x), atol=1e-5)
    np.testing.assert_allclose(float(one.samples.log_Z), float(eight.samples.log_Z), atol=1e-5)
    assert abs(float(eight.samples.log_Z) - path.target.log_Z) < 0.2  # 256 particles: about 4 sd
try:
    anneal(jax.random.key(0), path, make_kernel, 252, schedule=linear_schedule(4), mesh=True)
except ValueError as err:
    assert "not divisible" in str(err)
else:
    raise AssertionError("expected an error for 252 particles on 8 devices")
print("SHARDED-SMC-OK")
sys.exit(0)
