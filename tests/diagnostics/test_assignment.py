"""The batched assignment solver against scipy.optimize.linear_sum_assignment."""

import jax
import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment as scipy_lsa

from jaxsamp.diagnostics.assignment import linear_sum_assignment

solve = jax.jit(linear_sum_assignment)


@pytest.mark.parametrize("n", [1, 3, 13, 30])
def test_matches_scipy_on_random_instances(n):
    rng = np.random.default_rng(n)
    cost = (3.0 * rng.normal(size=(200, n, n))).astype(np.float32)  # negative entries too
    cols = np.asarray(solve(cost))
    # continuous costs: the optimum is unique almost surely, so the permutations agree
    np.testing.assert_array_equal(cols, np.stack([scipy_lsa(c.astype(np.float64))[1] for c in cost]))


def test_ties_give_an_optimal_permutation():
    rng = np.random.default_rng(0)
    cost = rng.integers(0, 3, size=(2, 250, 6, 6)).astype(np.float32)  # many equal optima; two batch axes
    cols = np.asarray(solve(cost))
    assert cols.shape == (2, 250, 6)
    assert all(sorted(c) == list(range(6)) for c in cols.reshape(-1, 6))
    total = np.take_along_axis(cost, cols[..., None], -1).sum((-1, -2))
    np.testing.assert_array_equal(total, [[c[scipy_lsa(c)].sum() for c in b] for b in cost])


def test_rejects_non_square_costs():
    with pytest.raises(ValueError, match=r"\(\.\.\., n, n\)"):
        linear_sum_assignment(np.zeros((3, 4, 5), np.float32))
