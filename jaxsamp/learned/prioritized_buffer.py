"""A jittable prioritised replay buffer over a PyTree of arrays.

Schaul et al. (2016), "Prioritized experience replay" (ICLR): item ``i`` is drawn
with probability ``P(i) = p_i / sum_j p_j``, ``p_i = (priority_i + eps)^alpha``,
with ``priority_i`` the item's last loss (a TD error). As in the TLM paper's
soft-DQN code (Gritsaev et al. 2025, ``hypergrid/algorithms/torchrl_buffer.py``,
torchrl's ``PrioritizedSampler``), new items enter with the priority of their
current loss, the sampled items' priorities are replaced after each update, and
no importance weights are applied (its ``beta`` only scales weights it never uses).

Storage is first-in first-out (the slots of :mod:`jaxsamp.learned.buffer`), and
draws use the inverse CDF of the priorities (one cumulative sum and a sorted
search, ``O(capacity + n log capacity)``), so the buffer is a plain PyTree that
lives inside a jitted train step and is checkpointed with the rest of the state.
Batches may carry a validity mask: only the valid items are written, packed in
order (a rollout of fixed length with finished trajectories adds just its real
transitions).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxsamp.core.data_parallel import batch_constraint, register_batch_storage
from jaxsamp.core.errors import InputError
from jaxsamp.learned import buffer as fifo

PyTree = Any
EPS = 1e-8


@register_batch_storage  # data-parallel training shards the storage with the batch
class PrioritizedBuffer(NamedTuple):
    """FIFO storage of up to ``capacity`` items with a sampling weight each.

    Attributes
    ----------
    data : PyTree
        Leaves of shape ``(capacity, *item_shape)``.
    weight : (capacity,) float32
        ``(priority + eps)^alpha`` of every stored item, 0 in empty slots.
    position, size : int32 arrays
        Next slot written, and number of valid items.
    """

    data: PyTree
    weight: jax.Array
    position: jax.Array
    size: jax.Array

    @property
    def capacity(self) -> int:
        return self.weight.shape[0]


def init(example: PyTree, capacity: int) -> PrioritizedBuffer:
    """An empty buffer for items shaped and typed like ``example`` (ONE item)."""
    empty = fifo.init(example, capacity)
    return PrioritizedBuffer(empty.data, jnp.zeros((capacity,), jnp.float32), empty.position, empty.size)


def add(
    buffer: PrioritizedBuffer, batch: PyTree, priority: jax.Array, alpha: float, valid: jax.Array | None = None
) -> PrioritizedBuffer:
    """Write the valid items of ``batch`` (leading axis ``n <= capacity``) with sampling weight ``(priority + eps)^alpha``.

    Parameters
    ----------
    batch : PyTree with leaves ``(n, *item_shape)``.
    priority : (n,) non-negative (a loss per item).
    alpha : float, the priority exponent (0: uniform sampling).
    valid : (n,) bool, optional; invalid items are skipped and the valid ones packed in order.
    """
    sizes = {a.shape[0] for a in jax.tree.leaves(batch)}
    if len(sizes) != 1:
        raise InputError(f"batch leaves have different leading sizes {sorted(sizes)}")
    (n,) = sizes
    capacity = buffer.capacity
    if n > capacity:
        raise InputError(f"batch of {n} items does not fit a buffer of capacity {capacity}")
    if jax.tree.structure(batch) != jax.tree.structure(buffer.data):
        raise InputError("batch does not have the buffer's tree structure")
    if priority.shape != (n,):
        raise InputError(f"priority must have shape ({n},), got {priority.shape}")
    valid = jnp.ones((n,), bool) if valid is None else valid
    rank = jnp.cumsum(valid.astype(jnp.int32)) - 1
    slots = jnp.where(valid, (buffer.position + rank) % capacity, capacity)  # out of range: dropped
    data = jax.tree.map(
        lambda store, new: store.at[slots].set(new.astype(store.dtype), mode="drop"), buffer.data, batch
    )
    weight = buffer.weight.at[slots].set(((priority + EPS) ** alpha).astype(jnp.float32), mode="drop")
    count = jnp.sum(valid.astype(jnp.int32))
    return PrioritizedBuffer(
        data, weight, (buffer.position + count) % capacity, jnp.minimum(buffer.size + count, capacity)
    )


def sample(buffer: PrioritizedBuffer, key: jax.Array, n: int) -> tuple[jax.Array, PyTree]:
    """``n`` items drawn with replacement with probability proportional to their weight: ``(indices, items)``.

    The buffer must hold at least one item with a positive weight (an empty
    buffer returns slot 0, which holds zeros).
    """
    cumulative = jnp.cumsum(buffer.weight)
    u = jax.random.uniform(key, (n,), cumulative.dtype) * cumulative[-1]
    index = jnp.minimum(jnp.searchsorted(cumulative, u, side="right"), jnp.maximum(buffer.size - 1, 0))
    return index, batch_constraint(jax.tree.map(lambda store: store[index], buffer.data))


def update_priorities(
    buffer: PrioritizedBuffer, index: jax.Array, priority: jax.Array, alpha: float
) -> PrioritizedBuffer:
    """Set the sampling weight of items ``index`` to ``(priority + eps)^alpha``."""
    return buffer._replace(weight=buffer.weight.at[index].set(((priority + EPS) ** alpha).astype(jnp.float32)))
