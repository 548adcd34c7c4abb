"""The inverted-file index: a partition of the vectors, exact with every list probed, high recall on clustered data."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsamp.core.errors import InputError
from jaxsamp.selection.inverted_file_index import build_ivf_index, ivf_argmax
from jaxsamp.selection.vmf_exploration import max_inner_product, uniform_actions, vmf_exp_select
from jaxsamp.targets.sphere import sample_vmf


def test_lists_partition_the_vectors_by_nearest_centroid_in_whole_pages():
    vectors = uniform_actions(jax.random.key(0), 3000, 8)
    index = build_ivf_index(jax.random.key(1), vectors, 24, page_size=32)
    sizes, num_pages, first_page = (np.asarray(a) for a in (index.sizes, index.num_pages, index.first_page))
    assert index.num_vectors == 3000 and sizes.sum() == 3000
    np.testing.assert_array_equal(num_pages, -(-sizes // 32))  # each list in as few pages as hold it
    np.testing.assert_array_equal(first_page, np.cumsum(num_pages) - num_pages)
    assert index.pages.shape == (num_pages.sum(), 32, 8) and index.page_ids.shape == (num_pages.sum(), 32)
    page_ids = np.asarray(index.page_ids)
    stored = page_ids >= 0
    assert sorted(page_ids[stored]) == list(range(3000))
    np.testing.assert_array_equal(np.asarray(index.pages)[~stored], 0.0)  # padding is zero rows
    np.testing.assert_allclose(np.asarray(index.pages)[stored], np.asarray(vectors)[page_ids[stored]])
    page_list = np.repeat(np.arange(24), num_pages)
    owner = np.broadcast_to(page_list[:, None], page_ids.shape)[stored]
    nearest = np.argmax(np.asarray(vectors)[page_ids[stored]] @ np.asarray(index.centroids).T, axis=-1)
    np.testing.assert_array_equal(owner, nearest)
    np.testing.assert_allclose(np.linalg.norm(np.asarray(index.centroids), axis=-1), 1.0, rtol=1e-5)


def _best_in_probed_lists(index, vectors, queries, nprobe):
    """Reference search in numpy: the exact maximiser among the vectors of each query's nprobe best lists."""
    owner = np.argmax(np.asarray(vectors) @ np.asarray(index.centroids).T, axis=-1)
    scores = np.asarray(queries) @ np.asarray(vectors).T
    probed = np.argsort(-(np.asarray(queries) @ np.asarray(index.centroids).T), axis=-1)[:, :nprobe]
    allowed = (owner[None, :, None] == probed[:, None, :]).any(-1)
    return np.argmax(np.where(allowed, scores, -np.inf), axis=-1)


def test_the_paged_search_is_the_best_vector_of_the_probed_lists_in_any_batch():
    """Against a numpy reference on random data (same argmax for every query), for one query at a time,
    an uneven batch and the whole set at once: batching shares the pages' reads, never the lists probed."""
    vectors = uniform_actions(jax.random.key(15), 4000, 8)
    index = build_ivf_index(jax.random.key(16), vectors, 20, page_size=64)
    queries = uniform_actions(jax.random.key(17), 150, 8)
    want = _best_in_probed_lists(index, vectors, queries, 3)
    for batch_size in (1, 7, 150):
        np.testing.assert_array_equal(np.asarray(ivf_argmax(index, queries, 3, batch_size=batch_size)), want)


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
    with pytest.raises(InputError, match="batch_size"):
        ivf_argmax(index, vectors[:3], 2, batch_size=0)
    with pytest.raises(InputError, match="page_size"):
        build_ivf_index(jax.random.key(0), vectors, 10, page_size=0)
    with pytest.raises(InputError, match="need a query"):
        vmf_exp_select(jax.random.key(0), jnp.ones(3) / 3**0.5, index, 1.0, 5)
