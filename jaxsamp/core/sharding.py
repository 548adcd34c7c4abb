"""Put the chain / walker / batch axis of a state on a device mesh.

The same code runs on one CPU, 8 forced CPU devices
(``XLA_FLAGS=--xla_force_host_platform_device_count=8``), one GPU, or many
hosts after ``jax.distributed.initialize()``. Per-chain work needs no
communication: with the state's leading axis sharded, ``jit`` partitions the
vmapped step across devices. Cross-chain statistics (SMC weights, log Z,
resampling) are ordinary ``jnp`` reductions that XLA lowers to collectives;
:func:`map_chains` gives explicit per-device code through ``jax.shard_map``.
"""

from __future__ import annotations

from typing import Any, Callable

import jax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxsamp.core.errors import InputError
from jaxsamp.core.protocols import Kernel

CHAINS = "chains"


def chain_mesh(num_devices: int | None = None, axis: str = CHAINS) -> jax.sharding.Mesh:
    """A 1-D mesh over ``num_devices`` devices (default: all) with axis ``axis``."""
    n = num_devices or jax.device_count()
    if n > jax.device_count():
        raise InputError(f"asked for {n} devices, only {jax.device_count()} are visible")
    # Auto axes: jit partitions the vmapped per-chain work by itself, so kernels
    # written for one device (all of blackjax) run unchanged on the mesh.
    return jax.make_mesh((n,), (axis,), devices=jax.devices()[:n], axis_types=(jax.sharding.AxisType.Auto,))


def _chain_sharding(mesh, axis):
    return NamedSharding(mesh, P(axis))


def shard_state(state: Any, mesh: jax.sharding.Mesh | None = None, axis: str = CHAINS) -> Any:
    """Place every leaf's leading axis on ``mesh[axis]`` (scalars are replicated).

    Raises
    ------
    ValueError
        When the number of chains is not divisible by the number of devices.
    """
    mesh = mesh or chain_mesh(axis=axis)
    size = mesh.shape[axis]

    def place(leaf):
        if not hasattr(leaf, "ndim") or leaf.ndim == 0:
            return jax.device_put(leaf, NamedSharding(mesh, P()))
        if leaf.shape[0] % size:
            raise InputError(
                f"the chain axis has length {leaf.shape[0]}, not divisible by the "
                f"{size} devices of mesh axis {axis!r}"
            )
        return jax.device_put(leaf, _chain_sharding(mesh, axis))

    return jax.tree.map(place, state)


def shard(kernel, mesh: jax.sharding.Mesh | None = None, axis: str = CHAINS) -> Kernel:
    """Shard an :func:`~jaxsamp.core.combinators.ensemble` kernel's chain axis over a mesh.

    ``init`` places the state on the mesh and ``step`` constrains the new state
    to the same layout, so the chains stay where they are for the whole run.
    Each chain's computation is the same as unsharded, so the numbers are too.
    """
    mesh = mesh or chain_mesh(axis=axis)

    def constrain(state):
        def c(leaf):
            if not hasattr(leaf, "ndim") or leaf.ndim == 0:
                return leaf
            return jax.lax.with_sharding_constraint(leaf, _chain_sharding(mesh, axis))

        return jax.tree.map(c, state)

    def init(positions, rng_key=None):
        return shard_state(kernel.init(shard_state(positions, mesh, axis), rng_key), mesh, axis)

    def step(rng_key, state):
        new_state, info = kernel.step(rng_key, state)
        return constrain(new_state), info

    return Kernel(init, step)


def map_chains(fn: Callable, mesh: jax.sharding.Mesh | None = None, axis: str = CHAINS) -> Callable:
    """Run ``fn`` on each device's block of chains with ``jax.shard_map``.

    Inside ``fn`` use ``jax.lax.psum(x, axis)`` / ``all_gather`` for statistics
    across all chains (e.g. a global log Z from per-device log-weights). All
    inputs and outputs are split along their leading axis.
    """
    mesh = mesh or chain_mesh(axis=axis)
    return jax.shard_map(fn, mesh=mesh, in_specs=P(axis), out_specs=P(axis))
