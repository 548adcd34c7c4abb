"""One process of the two-process (multi-host) test; run by tests/core/test_multihost.py.

``python _multihost_child.py PORT PROCESS_ID OUT_DIR`` joins a two-process JAX
cluster on localhost (two forced CPU devices per process, four in all), shards
64 MALA chains over ``chain_mesh()`` spanning both processes, runs them
through the driver to step 20 with a checkpoint, resumes to step 50 from that
checkpoint, and has process 0 write the gathered final positions to
``OUT_DIR/multihost.npz``; then it trains PIS data-parallel over the same four
devices (:func:`jaxsamp.core.data_parallel.data_parallel`) through the driver to
step 4 with a checkpoint, resumes to step 8, and adds the parameters and loss
trace. ``python _multihost_child.py single OUT_DIR`` runs the same chains and
training in one process on four devices and writes ``OUT_DIR/single.npz``.
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
from jaxsamp.core.data_parallel import data_parallel  # noqa: E402
from jaxsamp.learned.diffusion.pis_dds import PisSettings, build_pis  # noqa: E402
from jaxsamp.targets.gaussian import Gaussian  # noqa: E402

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

# a Trainer: PIS trained data-parallel (16 paths per step split over the 4 devices), stopped at step 4 with a
# checkpoint and resumed to step 8; its parameters are replicated, so each process holds them whole
pis = data_parallel(build_pis(Gaussian(np.array([1.0, -0.5]), np.diag([0.25, 0.64])),
                              PisSettings(num_time_steps=8, hidden=16, num_layers=1, learning_rate=1e-2), batch_size=16))
train0 = pis.init(jax.random.key(2))
loss = lambda s, metrics: metrics["loss"]  # noqa: E731
ckpt_pis = out / ("pis_single" if sys.argv[1] == "single" else "pis_multihost")
run(pis.step, train0, key, 4, trace=loss, chunk=2, progress=False, checkpoint=ckpt_pis, fingerprint="mh-pis")
trained, losses = run(pis.step, train0, key, 8, trace=loss, chunk=2, progress=False, checkpoint=ckpt_pis,
                      fingerprint="mh-pis")
whole = lambda a: np.asarray(a.addressable_shards[0].data)  # noqa: E731  (a replicated array, on this process)
assert all(len(a.sharding.device_set) == 4 and a.sharding.is_fully_replicated for a in jax.tree.leaves(trained.params))
params = {f"p{i}": whole(a) for i, a in enumerate(jax.tree.leaves(trained.params))}
if jax.process_index() == 0:
    name = "single.npz" if sys.argv[1] == "single" else "multihost.npz"
    np.savez(out / name, positions=positions, accepted=accepted, processes=jax.process_count(), losses=whole(losses),
             **params)
print(f"MULTIHOST-OK process {jax.process_index()} of {jax.process_count()}", flush=True)
