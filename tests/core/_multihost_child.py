"""One process of the two-process (multi-host) test; run by tests/core/test_multihost.py.

``python _multihost_child.py PORT PROCESS_ID OUT_DIR`` joins a two-process JAX
cluster on localhost (two forced CPU devices per process, four in all), shards
64 MALA chains over ``chain_mesh()`` spanning both processes, runs them
through the driver to step 20 with a checkpoint, resumes to step 50 from that
checkpoint, and has process 0 write the gathered final positions to
``OUT_DIR/multihost.npz``. ``python _multihost_child.py single OUT_DIR`` runs the
same chains in one process on four devices and writes ``OUT_DIR/single.npz``.
"""

import os
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=" + ("4" if sys.argv[1] == "single" else "2")
os.environ["JAX_PLATFORMS"] = "cpu"

import jax  # noqa: E402

if sys.argv[1] != "single":
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=f"localhost:{sys.argv[1]}", num_processes=2, process_id=int(sys.argv[2])
    )

from pathlib import Path  # noqa: E402

import blackjax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.experimental import multihost_utils  # noqa: E402

from jaxsamp.core import chain_mesh, ensemble, run, shard  # noqa: E402

out = Path(sys.argv[-1])
assert jax.device_count() == 4, jax.devices()
log_prob = lambda x: -0.5 * jnp.sum(x**2) - 0.25 * jnp.sum(x**4)  # noqa: E731
kernel = shard(ensemble(blackjax.mala(log_prob, 0.4)), chain_mesh())
x0 = np.asarray(jax.random.normal(jax.random.key(0), (64, 5)))
state = kernel.init(x0)
assert len(state.position.sharding.device_set) == 4
key = jax.random.key(1)


def trace(s, info):
    return jnp.mean(info.is_accepted.astype(jnp.float32))


checkpoint = out / ("ckpt_single" if sys.argv[1] == "single" else "ckpt_multihost")
run(kernel.step, state, key, 20, trace=trace, chunk=10, progress=False, checkpoint=checkpoint, fingerprint="mh")
final, accepted = run(kernel.step, state, key, 50, trace=trace, chunk=10, progress=False, checkpoint=checkpoint, fingerprint="mh")
positions = np.asarray(multihost_utils.process_allgather(final.position, tiled=True))
accepted = np.asarray(multihost_utils.process_allgather(accepted, tiled=True))
if jax.process_index() == 0:
    name = "single.npz" if sys.argv[1] == "single" else "multihost.npz"
    np.savez(out / name, positions=positions, accepted=accepted, processes=jax.process_count())
print(f"MULTIHOST-OK process {jax.process_index()} of {jax.process_count()}", flush=True)
