"""vMF exploration: uniform at kappa = 0, close to Boltzmann in the paper's regime, search modes agree, errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxsamp.core.errors import InputError
from jaxsamp.selection.inverted_file_index import build_ivf_index, ivf_argmax
from jaxsamp.selection.vmf_exploration import (
    ACTION_BLOCK,
    boltzmann_probabilities,
    boltzmann_select,
    boltzmann_select_batch,
    first_order_probabilities,
    uniform_actions,
    vmf_exp_select,
    vmf_exp_select_batch,
)
from jaxsamp.targets.sphere import sample_vmf

QUERY = jnp.array([0.0, 0.0, 1.0])


def test_kappa_zero_draws_uniform_directions():
    """With kappa = 0 the direction is uniform, so action i is played with its Voronoi cell's share of the sphere.

    (Uniform over actions when the actions spread evenly.) Cell shares from 400 000
    independent uniform directions; chi-square of 40 000 draws over 40 actions, budget p > 1e-3.
    """
    actions = uniform_actions(jax.random.key(0), 40, 3)
    picks = np.asarray(vmf_exp_select(jax.random.key(1), QUERY, actions, 0.0, 40_000))
    counts = np.bincount(picks, minlength=40)
    cells = np.bincount(np.asarray(jnp.argmax(uniform_actions(jax.random.key(2), 400_000, 3) @ actions.T, -1)),
                        minlength=40) / 400_000
    assert stats.chisquare(counts, 40_000 * cells).pvalue > 1e-3


def test_selection_probabilities_approach_boltzmann_in_the_papers_regime():
    """d = 3, n = 3000 uniform actions, kappa = 3: per similarity bin, vMF-exp within 10 % of Boltzmann.

    200 000 draws; 8 bins of <V, X_i>; budget per bin: 10 % of the Boltzmann mass plus
    5 standard errors of the estimated bin frequency. The first-order approximation
    is within 10 % of Boltzmann in every bin as well.
    """
    n, kappa, draws = 3000, 3.0, 200_000
    actions = uniform_actions(jax.random.key(3), n, 3)
    sims = np.asarray(actions @ QUERY)
    bins = np.minimum(((sims + 1) / 2 * 8).astype(int), 7)
    p_b = np.bincount(bins, np.asarray(boltzmann_probabilities(QUERY, actions, kappa), np.float64), minlength=8)
    picks = np.asarray(vmf_exp_select(jax.random.key(4), QUERY, actions, kappa, draws))
    p_v = np.bincount(bins[picks], minlength=8) / draws
    se = np.sqrt(p_v * (1 - p_v) / draws)
    assert np.all(np.abs(p_v - p_b) < 0.1 * p_b + 5 * se), (p_v, p_b)
    p_first = np.bincount(bins, np.asarray(first_order_probabilities(QUERY, actions, kappa), np.float64), minlength=8)
    assert np.all(np.abs(p_first - p_b) < 0.1 * p_b), (p_first, p_b)


def test_boltzmann_draws_and_search_modes():
    """Boltzmann draws match P_B (chi-square, p > 1e-3); the approximate search returns the exact argmax on CPU."""
    actions = uniform_actions(jax.random.key(5), 30, 4)
    query = jnp.array([0.5, 0.5, 0.5, 0.5])
    picks = np.asarray(boltzmann_select(jax.random.key(6), query, actions, 2.0, 30_000))
    p = np.asarray(boltzmann_probabilities(query, actions, 2.0), np.float64)
    assert stats.chisquare(np.bincount(picks, minlength=30), 30_000 * p / p.sum()).pvalue > 1e-3
    exact = vmf_exp_select(jax.random.key(7), query, actions, 5.0, 500)
    approx = vmf_exp_select(jax.random.key(7), query, actions, 5.0, 500, search="approximate", recall=1.0)
    np.testing.assert_array_equal(exact, approx)


def test_batched_boltzmann_draws_exactly_across_action_blocks():
    """One draw for each of 20 000 copies of a query over 20 000 actions (three blocks of ACTION_BLOCK): the pick's
    similarity bin (8 bins) and its tenth of the action array (which cuts across the blocks) follow P_B
    (chi-square, p > 1e-3 each): the block-by-block reservoir is an exact Boltzmann draw."""
    n = 20_000
    assert n > 2 * ACTION_BLOCK
    actions = uniform_actions(jax.random.key(8), n, 3)
    picks = np.asarray(boltzmann_select_batch(jax.random.key(9), jnp.tile(QUERY, (n, 1)), actions, 3.0))
    p = np.asarray(boltzmann_probabilities(QUERY, actions, 3.0), np.float64)
    sims = np.asarray(actions @ QUERY)
    for groups, k in ((np.minimum(((sims + 1) / 2 * 8).astype(int), 7), 8), (np.arange(n) * 10 // n, 10)):
        expected = n * np.bincount(groups, p / p.sum(), minlength=k)
        assert stats.chisquare(np.bincount(groups[picks], minlength=k), expected).pvalue > 1e-3


def test_batched_vmf_exp_is_each_query_selected_on_its_own():
    """vmf_exp_select_batch draws query b's direction with the b-th split key, so the exact search picks what
    vmf_exp_select picks with that key, and the index what ivf_argmax finds for those directions."""
    actions = uniform_actions(jax.random.key(10), 2000, 3)
    queries = uniform_actions(jax.random.key(11), 40, 3)
    keys = jax.random.split(jax.random.key(13), 40)
    alone = jax.vmap(lambda k, q: vmf_exp_select(k, q, actions, 5.0, 1)[0])(keys, queries)
    np.testing.assert_array_equal(np.asarray(vmf_exp_select_batch(jax.random.key(13), queries, actions, 5.0)),
                                  np.asarray(alone))
    index = build_ivf_index(jax.random.key(12), actions, 16, page_size=32)
    directions = jax.vmap(lambda k, q: sample_vmf(k, q, 5.0, 1)[0])(keys, queries)
    np.testing.assert_array_equal(np.asarray(vmf_exp_select_batch(jax.random.key(13), queries, index, 5.0, nprobe=3)),
                                  np.asarray(ivf_argmax(index, directions, 3)))


def test_bad_shapes_are_clear_errors():
    with pytest.raises(InputError, match="query"):
        vmf_exp_select(jax.random.key(0), QUERY, jnp.ones((5, 4)), 1.0, 3)
    with pytest.raises(InputError, match="search"):
        vmf_exp_select(jax.random.key(0), QUERY, jnp.ones((5, 3)), 1.0, 3, search="hnsw")
    with pytest.raises(InputError, match="queries"):
        vmf_exp_select_batch(jax.random.key(0), QUERY, jnp.ones((5, 3)), 1.0)
    with pytest.raises(InputError, match="queries"):
        boltzmann_select_batch(jax.random.key(0), QUERY, jnp.ones((5, 3)), 1.0)
