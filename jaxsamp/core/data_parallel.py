"""Data-parallel training of any :class:`~jaxsamp.core.Trainer` over a device mesh.

``data_parallel(trainer, mesh)`` is the one mechanism by which every learned
sampler (diffusion, LEAPS, GFlowNets, Bernoulli denoising, Boltzmann curves,
the variational objectives) trains on many devices: the batch of paths /
walkers / trajectories / draws of one step is split over the mesh axis, the
parameters and optimiser states are replicated, and XLA reduces the gradient
across devices from the sharding annotations (GSPMD; no ``shard_map``, no
explicit ``pmean``). The wrapped trainer is again a Trainer, so the driver
(:func:`jaxsamp.run`), its checkpoints and resume take it unchanged, on one
host or many (after ``jax.distributed.initialize()``).

How it works:

* **Layout of the train state.** ``init`` places every leaf replicated
  (``P()``), except the storage of replay buffers, whose leading (capacity)
  axis is sharded (``P(axis)``): buffers grow with the batch, parameters do not.
  Which nodes of a state are batch storage is declared, not guessed: a class
  registered with :func:`register_batch_storage` (the FIFO
  :class:`~jaxsamp.learned.buffer.ReplayBuffer` and the
  :class:`~jaxsamp.learned.prioritized_buffer.PrioritizedBuffer` are) has its
  leaves whose leading axis equals its ``capacity`` sharded; its counters, and
  every other leaf (parameters, their averages, optimiser states, step counts,
  a GFlowNet's history ring, a denoiser's fixed training set), are replicated.
  ``step`` constrains the new state to the same layout, so it stays put.
* **The batch.** While the wrapped ``step`` is traced, :func:`batch_constraint`
  (the identity otherwise) puts the leading axis of what it is given on the
  mesh axis. Each family calls it once on its freshly drawn batch: the SDE
  paths' start and noise (:func:`jaxsamp.learned.diffusion.sde.simulate`), a
  replay buffer's draws, LEAPS' walkers, a GFlowNet's rollouts, TPS-DPS's
  paths, the denoiser's noisy batch, the curves' collocation points, a
  variational family's draws. XLA then partitions the per-sample work and
  inserts the all-reduce of the gradient's batch sum.
* **Random numbers do not depend on the device count.** The batch is drawn from
  the step's one key as on one device; the constraint only says where its rows
  live (with ``jax_threefry_partitionable``, the default, a sharded draw has the
  values of the unsharded one). A run on 8 devices therefore equals the
  one-device run up to the order of floating-point reductions over the batch
  (a sum split into per-device partial sums): parameters agree to float32
  round-off per step, not bit for bit, and the difference grows only as the
  training dynamics amplify round-off.

Every batch a step constrains must have a length divisible by the mesh axis
(an :class:`~jaxsamp.core.errors.InputError` at the first trace says which);
so must every buffer's capacity (an InputError at ``init``).
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxsamp.core.errors import InputError
from jaxsamp.core.protocols import LearnedSampler, Trainer
from jaxsamp.core.sharding import chain_mesh

BATCH = "batch"

_LAYOUT: contextvars.ContextVar[tuple[jax.sharding.Mesh, str] | None] = contextvars.ContextVar("layout", default=None)
_BATCH_STORAGE: set[type] = set()


def register_batch_storage(cls: type) -> type:
    """Declare ``cls`` (a PyTree node with a ``capacity`` attribute) as batch storage: sharded by :func:`data_parallel`.

    Its leaves whose leading axis has length ``capacity`` are split over the mesh
    axis; its other leaves (counters) are replicated. Returns ``cls``, so it can
    decorate the class.
    """
    _BATCH_STORAGE.add(cls)
    return cls


def batch_mesh(num_devices: int | None = None, axis: str = BATCH) -> jax.sharding.Mesh:
    """A 1-D mesh over ``num_devices`` devices (default: all, across every process) with axis ``axis``."""
    return chain_mesh(num_devices, axis)


def _not_divisible(what: str, length: int, mesh, axis: str) -> InputError:
    size = mesh.shape[axis]
    return InputError(
        f"data_parallel: {what} has length {length}, not divisible by the {size} devices of mesh axis {axis!r}",
        f"use batch sizes (and buffer capacities) that are multiples of {size}",
    )


def batch_constraint(batch: Any) -> Any:
    """``batch`` with its leaves' leading axis placed on the active mesh axis; the identity outside :func:`data_parallel`.

    Call it on a freshly drawn batch (a PyTree whose every non-scalar leaf has
    the batch as its leading axis), at the level where that axis is the leading
    one (not inside a ``vmap`` over it). Scalars are left alone.

    Raises
    ------
    InputError
        A leaf whose leading axis is not divisible by the mesh axis' size.
    """
    layout = _LAYOUT.get()
    if layout is None:
        return batch
    mesh, axis = layout
    sharding = NamedSharding(mesh, P(axis))

    def place(leaf):
        if jnp.ndim(leaf) == 0:
            return leaf
        if leaf.shape[0] % mesh.shape[axis]:
            raise _not_divisible("a batch drawn in the training step", leaf.shape[0], mesh, axis)
        return jax.lax.with_sharding_constraint(leaf, sharding)

    return jax.tree.map(place, batch)


@contextlib.contextmanager
def _batch_layout(mesh: jax.sharding.Mesh, axis: str):
    token = _LAYOUT.set((mesh, axis))
    try:
        yield
    finally:
        _LAYOUT.reset(token)


def _is_storage(node) -> bool:
    return type(node) in _BATCH_STORAGE


def state_shardings(state: Any, mesh: jax.sharding.Mesh, axis: str = BATCH) -> Any:
    """The :func:`data_parallel` layout of a train state: a PyTree of ``NamedSharding`` of ``state``'s structure.

    Raises
    ------
    InputError
        A batch-storage node whose capacity is not divisible by the mesh axis.
    """
    replicated, split = NamedSharding(mesh, P()), NamedSharding(mesh, P(axis))

    def layout(node):
        if not _is_storage(node):
            return replicated
        capacity = node.capacity
        if capacity % mesh.shape[axis]:
            raise _not_divisible(f"the {type(node).__name__}'s capacity", capacity, mesh, axis)
        return jax.tree.map(lambda leaf: split if jnp.ndim(leaf) and leaf.shape[0] == capacity else replicated,
                            node)

    return jax.tree.map(layout, state, is_leaf=_is_storage)


def _put(leaf, sharding: NamedSharding):
    """``leaf`` placed with ``sharding``; a host value (the same on every process) onto a mesh spanning processes."""
    if sharding.is_fully_addressable or isinstance(leaf, jax.core.Tracer) or (
        isinstance(leaf, jax.Array) and not leaf.is_fully_addressable
    ):
        return jax.device_put(leaf, sharding)
    host = np.asarray(jax.device_get(leaf))
    return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])


def place_state(state: Any, mesh: jax.sharding.Mesh, axis: str = BATCH) -> Any:
    """``state`` placed in the :func:`data_parallel` layout (:func:`state_shardings`)."""
    return jax.tree.map(_put, state, state_shardings(state, mesh, axis))


def data_parallel(trainer, mesh: jax.sharding.Mesh | None = None, axis: str = BATCH):
    """``trainer`` trained data-parallel over ``mesh[axis]``: the same kind of thing, of the same state.

    A wrapper in optax's manner: a :class:`~jaxsamp.core.LearnedSampler` in, a
    LearnedSampler out (its ``init`` and ``step`` wrapped; ``sample``, ``evaluate``
    and its health as they were), or a :class:`~jaxsamp.core.Trainer` in, a Trainer out.

    Parameters
    ----------
    trainer : LearnedSampler, Trainer or object with ``init(key)`` and ``step(key, state)``
        Any learned method (a registered method's ``build``) or Trainer.
    mesh : jax.sharding.Mesh, optional
        Default :func:`batch_mesh` over every device.
    axis : str
        The mesh axis the batch is split over.

    Returns
    -------
    LearnedSampler or Trainer
        ``init(key)`` is ``trainer.init(key)`` placed by :func:`place_state`;
        ``step(key, state)`` runs ``trainer.step`` with :func:`batch_constraint`
        active and constrains the new state to the same layout. Run it with
        :func:`jaxsamp.run` as the bare trainer; the module docstring says what
        is split, what is replicated and why the numbers equal the one-device
        run's up to reduction order.
    """
    mesh = mesh or batch_mesh(axis=axis)
    if axis not in mesh.shape:
        raise InputError(f"mesh has no axis {axis!r}; its axes are {tuple(mesh.shape)}")

    def init(key):
        return place_state(trainer.init(key), mesh, axis)

    def step(key, state):
        with _batch_layout(mesh, axis):
            new, metrics = trainer.step(key, state)
        return jax.tree.map(jax.lax.with_sharding_constraint, new, state_shardings(new, mesh, axis)), metrics

    if isinstance(trainer, LearnedSampler):
        return trainer._replace(init=init, step=step)
    return Trainer(init, step)


__all__ = ["BATCH", "batch_constraint", "batch_mesh", "data_parallel", "place_state", "register_batch_storage",
           "state_shardings"]
