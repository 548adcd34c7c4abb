"""The fast row reductions: first_argmax is jnp.argmax (ties included); categorical_rows draws from the weights."""

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

from jaxsamp.selection.row_reductions import GROUP, categorical_rows, first_argmax


def test_first_argmax_is_argmax_with_its_tie_rule():
    scores = jnp.round(jax.random.normal(jax.random.key(0), (40, 300)), 1)  # rounded: many ties, first one wins
    for axis in (0, 1, -1):
        np.testing.assert_array_equal(np.asarray(first_argmax(scores, axis)), np.asarray(jnp.argmax(scores, axis)))
    assert int(first_argmax(jnp.full((5,), -jnp.inf))) == 0


def test_categorical_rows_follows_the_weights_across_groups():
    """k = 300 (two full groups and a padded one), some zero weights: 20 000 rows of the same weights give
    counts whose chi-square p > 1e-3, and a zero weight is never drawn."""
    k = 300
    assert k % GROUP
    weights = jnp.exp(jax.random.normal(jax.random.key(1), (k,))).at[::7].set(0.0)
    picks = np.asarray(categorical_rows(jax.random.key(2), jnp.tile(weights, (20_000, 1))))
    p = np.asarray(weights, np.float64)
    p /= p.sum()
    counts = np.bincount(picks, minlength=k)
    assert counts[::7].sum() == 0
    bins = np.arange(k) // 10  # 30 bins of 10 weights: a few hundred draws each
    assert stats.chisquare(np.bincount(bins, counts), 20_000 * np.bincount(bins, p)).pvalue > 1e-3
