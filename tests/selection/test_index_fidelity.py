"""The index's selection fidelity: a coupling bound on the total variation to exact vMF-exp, and nprobe chosen by it."""

import jax
import numpy as np
import pytest

from jaxsamp.core.errors import InputError
from jaxsamp.selection.index_fidelity import choose_nprobe, perturbed_directions, selection_tv_bound
from jaxsamp.selection.inverted_file_index import build_ivf_index, ivf_argmax
from jaxsamp.selection.vmf_exploration import max_inner_product, uniform_actions

ACTIONS = uniform_actions(jax.random.key(0), 3000, 3)  # S^2: vMF draws by inverse CDF, quick to compile
INDEX = build_ivf_index(jax.random.key(1), ACTIONS, 32, page_size=32)
QUERIES = uniform_actions(jax.random.key(2), 64, 3)


def test_the_bound_dominates_the_total_variation_of_the_coupled_selections():
    """On the common draws, the empirical TV between the two pick histograms is at most the disagreement rate
    (the coupling inequality holds for the empirical laws too); every list probed, both are 0."""
    directions = perturbed_directions(jax.random.key(3), QUERIES, 5.0, 32)
    assert directions.shape == (64 * 32, 3)
    exact = np.asarray(max_inner_product(directions, ACTIONS, "exact", 0.0))
    found = np.asarray(ivf_argmax(INDEX, directions, 1))
    bound, se = selection_tv_bound(INDEX, directions, exact, 1)
    tv = 0.5 * np.abs(np.bincount(found, minlength=3000) - np.bincount(exact, minlength=3000)).sum() / len(exact)
    assert bound == pytest.approx(np.mean(found != exact)) and 0 < tv <= bound
    assert se == pytest.approx(np.sqrt(bound * (1 - bound) / len(exact)))
    assert selection_tv_bound(INDEX, directions, exact, 32) == (0.0, 0.0)


def test_choose_nprobe_takes_the_smallest_candidate_within_the_threshold():
    choice = choose_nprobe(jax.random.key(4), INDEX, ACTIONS, QUERIES, 5.0, threshold=0.05, draws_per_query=8)
    tried = list(choice.tv_bounds)
    assert tried == [1, 2, 4, 8, 16, 32][: len(tried)] and tried[-1] == choice.nprobe
    assert choice.tv_bound <= 0.05 < min(bound for p, bound in choice.tv_bounds.items() if p < choice.nprobe)
    assert choice.recall_at_1 == pytest.approx(1 - choice.tv_bound) and 1 < choice.nprobe < 32
    assert choose_nprobe(jax.random.key(4), INDEX, ACTIONS, QUERIES, 5.0, threshold=0.0, candidates=[32]).nprobe == 32


def test_bad_settings_are_clear_errors():
    with pytest.raises(InputError, match="threshold"):
        choose_nprobe(jax.random.key(0), INDEX, ACTIONS, QUERIES, 5.0, threshold=1.5)
    with pytest.raises(InputError, match="candidates"):
        choose_nprobe(jax.random.key(0), INDEX, ACTIONS, QUERIES, 5.0, candidates=[8, 4])
    with pytest.raises(InputError, match="draws_per_query"):
        choose_nprobe(jax.random.key(0), INDEX, ACTIONS, QUERIES, 5.0, draws_per_query=0)
