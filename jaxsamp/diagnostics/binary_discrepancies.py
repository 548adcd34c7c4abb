"""Distances for samples of +-1 states: total variation to an enumerated law, and MMD with a Hamming kernel.

* :func:`empirical_distribution` and :func:`total_variation`: the histogram
  of samples over all ``2^d`` states (``d <= 20``) and
  ``TV(p, q) = 1/2 sum_x |p(x) - q(x)|`` against an exact law by enumeration.
  An empirical TV of ``n`` exact samples is not 0: :func:`expected_tv_of_exact_samples`
  gives its expectation, the noise floor of the estimate.
* :func:`hamming_mmd`: the MMD (:func:`jaxsamp.diagnostics.discrepancies.mmd`)
  with the exponential Hamming kernel ``k(a, b) = exp(-H(a, b) / ell)``,
  ``H`` the number of differing bits. For +-1 vectors ``|a - b|^2 = 4 H``,
  so this is the Gaussian kernel of bandwidth ``h = sqrt(2 ell)``, and it is
  characteristic on the hypercube (Gretton et al. 2012).
"""

from __future__ import annotations

import math

import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.diagnostics.discrepancies import mmd
from jaxsamp.targets.binary import state_index


def empirical_distribution(samples: jax.Array) -> jax.Array:
    """Frequencies of every state of ``{-1, 1}^d`` (order of :func:`~jaxsamp.targets.binary.spin_states`).

    Parameters
    ----------
    samples : array (n, ...) of +-1; trailing axes are flattened (``d <= 20``).

    Returns
    -------
    array (2^d,), summing to 1
    """
    flat = samples.reshape(samples.shape[0], -1)
    counts = jnp.bincount(state_index(flat), length=2 ** flat.shape[1])
    return counts / flat.shape[0]


def total_variation(samples: jax.Array, probs) -> float:
    """``1/2 sum_x |p_hat(x) - p(x)|`` between the samples' histogram and an exact law ``probs`` (2^d,)."""
    p_hat = np.asarray(empirical_distribution(samples), np.float64)
    probs = np.asarray(probs, np.float64)
    chex.assert_equal_shape([p_hat, probs])
    return 0.5 * float(np.abs(p_hat - probs / probs.sum()).sum())


def expected_tv_of_exact_samples(probs, n: int, num_draws: int = 20, seed: int = 0) -> tuple[float, float]:
    """Mean and sd of the TV between ``n`` exact samples' histogram and ``probs``: the noise floor (multinomial draws)."""
    probs = np.asarray(probs, np.float64)
    probs = probs / probs.sum()
    rng = np.random.default_rng(seed)
    tvs = [0.5 * np.abs(rng.multinomial(n, probs) / n - probs).sum() for _ in range(num_draws)]
    return float(np.mean(tvs)), float(np.std(tvs, ddof=1))


def chi_square_p_value(samples: jax.Array, probs, min_expected: float = 5.0) -> float:
    """Pearson chi-square p-value of the samples' counts against ``probs`` (2^d,), rare states pooled.

    States with expected count below ``min_expected`` are pooled into one cell,
    so the chi-square approximation holds; the test has ``cells - 1`` degrees of freedom.
    """
    from scipy import stats  # imported here: 0.6 s of start-up that only this test needs

    n = samples.shape[0]
    counts = np.asarray(empirical_distribution(samples), np.float64) * n
    expected = np.asarray(probs, np.float64) / np.sum(probs) * n
    keep = expected >= min_expected
    obs = np.append(counts[keep], counts[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    if exp[-1] < min_expected:  # nothing (or too little) pooled: fold it into the last kept cell
        obs, exp = np.append(obs[:-2], obs[-2:].sum()), np.append(exp[:-2], exp[-2:].sum())
    exp = exp * (obs.sum() / exp.sum())  # equal totals to the last bit, as scipy requires
    return float(stats.chisquare(obs, exp).pvalue)


def hamming_mmd(x: jax.Array, y: jax.Array, length_scale: float) -> jax.Array:
    """MMD (V-statistic) between two sets of +-1 states with the kernel ``exp(-Hamming(a, b) / length_scale)``.

    Parameters
    ----------
    x : array (n, ...) of +-1
    y : array (m, ...) of +-1 (same trailing shape)
    length_scale : float
        ``ell`` in bits.

    Returns
    -------
    scalar, ``sqrt(max(MMD^2, 0))``
    """
    x = jnp.asarray(x, jnp.float32).reshape(x.shape[0], -1)
    y = jnp.asarray(y, jnp.float32).reshape(y.shape[0], -1)
    return mmd(x, y, bandwidth=math.sqrt(2.0 * length_scale))
