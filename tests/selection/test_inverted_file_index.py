"""The inverted-file index: a partition of the vectors, exact with every list probed, high recall on clustered data."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsamp.core.errors import InputError
from jaxsamp.selection.inverted_file_index import build_ivf_index, ivf_argmax
from jaxsamp.selection.vmf_exploration import max_inner_product, uniform_actions, vmf_exp_select
from jaxsamp.targets.sphere import sample_vmf


def test_lists_partition_the_vectors_by_nearest_centroid():
    vectors = uniform_actions(jax.random.key(0), 3000, 8)
    index = build_ivf_index(jax.random.key(1), vectors, 24)
    n = index.num_vectors
    assert n == 3000 and int(index.sizes.sum()) == n and index.window == int(index.sizes.max())
    ids = np.asarray(index.ids)
    assert sorted(ids[:n]) == list(range(n)) and np.all(ids[n:] == -1)
    owner = np.repeat(np.arange(24), np.asarray(index.sizes))
    nearest = np.argmax(np.asarray(index.vectors[:n] @ index.centroids.T), axis=-1)
    np.testing.assert_array_equal(owner, nearest)
    np.testing.assert_allclose(np.asarray(index.vectors[:n]), np.asarray(vectors)[ids[:n]])
    np.testing.assert_allclose(np.linalg.norm(np.asarray(index.centroids), axis=-1), 1.0, rtol=1e-5)


def test_probing_every_list_is_the_exact_search():
    vectors = uniform_actions(jax.random.key(2), 2000, 6)
    index = build_ivf_index(jax.random.key(3), vectors, 16)
    queries = uniform_actions(jax.random.key(4), 200, 6)
    exact = np.argmax(np.asarray(queries @ vectors.T), axis=-1)
    np.testing.assert_array_equal(np.asarray(ivf_argmax(index, queries, 16)), exact)
    found = np.asarray(ivf_argmax(index, queries, 2))
    assert np.all(np.asarray(jnp.sum(queries * vectors[found], -1)) <= np.asarray(jnp.max(queries @ vectors.T, -1)) + 1e-6)


def test_few_probes_find_the_best_vector_in_clustered_data():
    """20 tight vMF clusters (kappa 300, 200 vectors each) on S^15, 15 queries (kappa 100) per centre: 2 of 20
    lists give recall >= 0.97 (the budget leaves room for a query between two clusters)."""
    centres = uniform_actions(jax.random.key(5), 20, 16)
    draw = jax.vmap(sample_vmf, in_axes=(0, 0, None, None), out_axes=0)
    vectors = draw(jax.random.split(jax.random.key(7), 20), centres, 300.0, 200).reshape(4000, 16)
    index = build_ivf_index(jax.random.key(8), vectors, 20)
    queries = draw(jax.random.split(jax.random.key(9), 20), centres, 100.0, 15).reshape(300, 16)
    exact = np.argmax(np.asarray(queries @ vectors.T), axis=-1)
    assert np.mean(np.asarray(ivf_argmax(index, queries, 2)) == exact) >= 0.97


def test_vmf_exp_through_a_fully_probed_index_matches_the_exact_search():
    actions = uniform_actions(jax.random.key(10), 1500, 5)
    index = build_ivf_index(jax.random.key(11), actions, 12)
    query = actions[0]
    exact = vmf_exp_select(jax.random.key(12), query, actions, 5.0, 300)
    via_index = vmf_exp_select(jax.random.key(12), query, index, 5.0, 300, nprobe=12)
    np.testing.assert_array_equal(np.asarray(via_index), np.asarray(exact))
    directions = sample_vmf(jax.random.key(13), query, 5.0, 50)
    np.testing.assert_array_equal(np.asarray(ivf_argmax(index, directions, 12)),
                                  np.asarray(max_inner_product(directions, actions, "exact", 0.95)))


def test_bad_settings_are_clear_errors():
    vectors = uniform_actions(jax.random.key(14), 100, 4)
    with pytest.raises(InputError, match="num_lists"):
        build_ivf_index(jax.random.key(0), vectors, 101)
    with pytest.raises(InputError, match="train_size"):
        build_ivf_index(jax.random.key(0), vectors, 10, train_size=5)
    with pytest.raises(InputError, match="vectors"):
        build_ivf_index(jax.random.key(0), vectors[0], 2)
    index = build_ivf_index(jax.random.key(0), vectors, 10)
    with pytest.raises(InputError, match="nprobe"):
        ivf_argmax(index, vectors[:3], 11)
    with pytest.raises(InputError, match="need a query"):
        vmf_exp_select(jax.random.key(0), jnp.ones(3) / 3**0.5, index, 1.0, 5)
