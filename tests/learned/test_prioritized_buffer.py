"""The prioritised replay buffer: packing of valid items, FIFO wrap-around, draws proportional to (priority + eps)^alpha."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxsamp.core.errors import InputError
from jaxsamp.learned import prioritized_buffer as pb


def test_valid_items_are_packed_in_order_and_wrap_around():
    buffer = pb.init((jnp.zeros(2, jnp.int32), jnp.zeros((), jnp.float32)), capacity=6)
    items = (jnp.arange(12, dtype=jnp.int32).reshape(6, 2), jnp.arange(6, dtype=jnp.float32))
    valid = jnp.asarray([True, False, True, True, False, True])
    buffer = pb.add(buffer, items, jnp.ones(6), 1.0, valid)
    assert int(buffer.size) == 4 and int(buffer.position) == 4
    np.testing.assert_array_equal(np.asarray(buffer.data[1])[:4], [0, 2, 3, 5])
    np.testing.assert_array_equal(np.asarray(buffer.data[0])[:4, 0], [0, 4, 6, 10])
    np.testing.assert_array_equal(np.asarray(buffer.weight), [1, 1, 1, 1, 0, 0])
    buffer = pb.add(buffer, items, 3.0 * jnp.ones(6), 1.0, jnp.asarray([False, True, True, True, False, False]))
    assert int(buffer.size) == 6 and int(buffer.position) == 1  # slots 4, 5, then 0 (the oldest overwritten)
    np.testing.assert_array_equal(np.asarray(buffer.data[1]), [3, 2, 3, 5, 1, 2])
    np.testing.assert_allclose(np.asarray(buffer.weight), [3, 1, 1, 1, 3, 3], rtol=1e-6)


def test_draws_are_proportional_to_the_priority_weights():
    """Chi-square of 50 000 draws against (p + eps)^alpha / sum: p > 1e-6 at this seed; empty slots never drawn."""
    buffer = pb.init(jnp.zeros((), jnp.int32), capacity=8)
    priority = jnp.asarray([1.0, 4.0, 9.0, 0.0, 16.0])
    buffer = pb.add(buffer, jnp.arange(5, dtype=jnp.int32), priority, alpha=0.5)
    index, items = jax.jit(pb.sample, static_argnums=2)(buffer, jax.random.key(0), 50_000)
    np.testing.assert_array_equal(np.asarray(index), np.asarray(items))
    counts = np.bincount(np.asarray(index), minlength=8)
    assert counts[3] == 0 and counts[5:].sum() == 0  # zero priority and never-written slots
    want = np.sqrt(np.asarray([1, 4, 9, 16]) + pb.EPS)
    assert stats.chisquare(counts[[0, 1, 2, 4]], 50_000 * want / want.sum()).pvalue > 1e-6
    buffer = pb.update_priorities(buffer, jnp.asarray([4]), jnp.asarray([0.0]), 0.5)
    index, _ = jax.jit(pb.sample, static_argnums=2)(buffer, jax.random.key(1), 5000)
    assert 4 not in np.asarray(index)


def test_bad_batches():
    buffer = pb.init(jnp.zeros((), jnp.int32), capacity=4)
    with pytest.raises(InputError, match="does not fit"):
        pb.add(buffer, jnp.arange(5, dtype=jnp.int32), jnp.ones(5), 1.0)
    with pytest.raises(InputError, match="priority"):
        pb.add(buffer, jnp.arange(3, dtype=jnp.int32), jnp.ones(2), 1.0)
