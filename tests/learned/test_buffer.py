"""The jittable FIFO replay buffer."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsamp.learned import buffer as replay


def _item(shape=(3, 3)):
    return {"x": jnp.zeros(shape, jnp.int8), "t": jnp.zeros((), jnp.float32)}


def test_int8_spins_round_trip_exactly():
    spins = jax.random.rademacher(jax.random.key(0), (50, 3, 3), dtype=jnp.float32)
    times = jax.random.uniform(jax.random.key(1), (50,))
    buf = jax.jit(replay.add)(replay.init(_item(), 64), {"x": spins, "t": times})
    assert buf.data["x"].dtype == jnp.int8 and int(buf.size) == 50
    np.testing.assert_array_equal(np.asarray(buf.data["x"][:50]).astype(np.float32), np.asarray(spins))
    np.testing.assert_array_equal(np.asarray(buf.data["t"][:50]), np.asarray(times))
    got = jax.jit(replay.sample, static_argnums=2)(buf, jax.random.key(2), 200)
    assert got["x"].dtype == jnp.int8
    # every sampled pair is one of the stored pairs, intact
    stored = {(tuple(np.asarray(s).ravel()), float(t)) for s, t in zip(spins.astype(jnp.int8), times)}
    assert all((tuple(np.asarray(s).ravel()), float(t)) in stored for s, t in zip(got["x"], got["t"]))


def test_fifo_overwrites_the_oldest_items():
    buf = replay.init({"v": jnp.zeros((), jnp.int32)}, 5)
    buf = replay.add(buf, {"v": jnp.arange(3)})
    buf = replay.add(buf, {"v": jnp.arange(3, 7)})
    assert int(buf.size) == 5 and int(buf.position) == 2
    # slots 0, 1 hold the newest items 5, 6; items 0, 1 are gone
    np.testing.assert_array_equal(np.asarray(buf.data["v"]), [5, 6, 2, 3, 4])


def test_sampling_only_sees_valid_items():
    buf = replay.add(replay.init({"v": jnp.zeros((), jnp.int32)}, 100), {"v": jnp.array([7, 9])})
    got = np.asarray(replay.sample(buf, jax.random.key(0), 500)["v"])
    assert set(got.tolist()) == {7, 9}
    # uniform over the two valid items: 250 +- 5 sigma (sigma = sqrt(500 / 4) = 11.2)
    assert abs((got == 7).sum() - 250) < 56


def test_a_cleared_buffer_samples_only_what_is_added_after():
    buf = replay.add(replay.init({"v": jnp.zeros((), jnp.int32)}, 4), {"v": jnp.array([1, 2, 3])})
    buf = replay.add(replay.clear(buf), {"v": jnp.array([8])})
    assert (int(buf.size), int(buf.position)) == (1, 1)
    assert set(np.asarray(replay.sample(buf, jax.random.key(0), 50)["v"]).tolist()) == {8}


def test_buffer_is_a_pytree_that_scans():
    def body(buf, i):
        return replay.add(buf, {"v": jnp.full((2,), i)}), None

    buf, _ = jax.lax.scan(body, replay.init({"v": jnp.zeros((), jnp.int32)}, 4), jnp.arange(5))
    np.testing.assert_array_equal(np.asarray(buf.data["v"]), [4, 4, 3, 3])


def test_bytes_per_item_counts_the_storage_dtype():
    assert replay.bytes_per_item(replay.init(_item((8, 8)), 10)) == 64 + 4


def test_bad_batches_are_rejected():
    buf = replay.init(_item(), 4)
    with pytest.raises(ValueError, match="does not fit"):
        replay.add(buf, {"x": jnp.zeros((5, 3, 3)), "t": jnp.zeros(5)})
    with pytest.raises(ValueError, match="item shape"):
        replay.add(buf, {"x": jnp.zeros((2, 4, 3)), "t": jnp.zeros(2)})
    with pytest.raises(ValueError, match="capacity"):
        replay.init(_item(), 0)
