"""Child process of test_warmup's negative control: the old one-chain tuning, compiled with XLA's default flags.

Whether one-chain tuning fails from these points depends on the last bits of its
adaptation, so the control reproduces the failure as users met it: without the
suite's fast-compile flags. Prints ``max |z|`` of the final positions and the health
warnings as one JSON line.
"""

import json
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import jaxsamp.mcmc  # noqa: F401  (registers the samplers)
from jaxsamp.core import ensemble, guard_finite, run
from jaxsamp.core.registry import SAMPLERS
from jaxsamp.diagnostics import health
from jaxsamp.targets import from_function

sys.path.insert(0, str(Path(__file__).parent))
from _far_gaussian import CENTRE, DIM, SCALES, far_gaussian, users_points

target = from_function(far_gaussian, jnp.zeros(DIM))
# the registry's hmc with tune_steps: blackjax.window_adaptation on ONE chain from N(0, I)
hmc = SAMPLERS.get("hmc", target, tune_steps=300, num_integration_steps=10)
kernel = ensemble(guard_finite(hmc))
x0 = users_points()
state, tr = run(kernel.step, kernel.init(x0), jax.random.key(4), 100, progress=False,
                trace=lambda s, i: (jnp.mean(i.inner.acceptance_rate), jnp.sum(i.moved)))
warnings = health.chain_warnings(num_chains=8, start=np.asarray(x0), end=np.asarray(state.position),
                                 acceptance=np.asarray(tr[0]), moved=np.asarray(tr[1]), metropolis=True)
max_z = float(np.abs((np.asarray(state.position) - CENTRE) / SCALES).max())
print(json.dumps({"max_z": max_z, "warnings": warnings}))
