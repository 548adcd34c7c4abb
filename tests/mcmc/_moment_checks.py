"""Moment z-tests shared by the continuous-kernel tests.

Both checks compare estimated first and second moments with exact values and
fail when any entry is more than ``sigmas`` standard errors away. The standard
errors are estimated from the data themselves, so they hold for any law with
finite fourth moments:

* :func:`assert_iid_moments`: i.i.d. samples (e.g. the final states of
  independent chains started from independent points);
* :func:`assert_chain_moments` / :func:`assert_chain_averages`: a trace of many
  independent chains; each chain's time average is one draw, so the error bar
  is the spread of the per-chain averages over the chains (valid whatever the
  autocorrelation).
"""

from __future__ import annotations

import numpy as np


def _check(name, estimate, exact, se, sigmas):
    z = np.abs(estimate - exact) / np.maximum(se, 1e-12)
    assert np.all(z < sigmas), (
        f"{name}: max |z| = {z.max():.2f} >= {sigmas}\nestimate=\n{estimate}\nexact=\n{exact}\nse=\n{se}"
    )


def _per_draw_products(x, mean):
    r = x - mean
    return (r[..., :, None] * r[..., None, :]).reshape(*x.shape[:-1], -1)


def assert_iid_moments(samples, mean, cov, sigmas: float = 5.0):
    """Mean and covariance (about the exact mean) of i.i.d. ``samples`` (n, d) within ``sigmas`` s.e."""
    x = np.asarray(samples, dtype=np.float64)
    mean, cov = np.asarray(mean, np.float64), np.asarray(cov, np.float64)
    n = x.shape[0]
    _check("mean", x.mean(0), mean, x.std(0, ddof=1) / np.sqrt(n), sigmas)
    prods = _per_draw_products(x, mean)
    _check("cov", prods.mean(0), cov.ravel(), prods.std(0, ddof=1) / np.sqrt(n), sigmas)


def assert_chain_averages(features, exact, sigmas: float = 5.0, name: str = "average"):
    """Time averages of per-step ``features`` (steps, chains, k) equal ``exact`` (k,) within ``sigmas`` s.e. across chains."""
    f = np.asarray(features, dtype=np.float64)
    chain_avgs = f.mean(0)
    _check(name, chain_avgs.mean(0), np.asarray(exact, np.float64), chain_avgs.std(0, ddof=1) / np.sqrt(f.shape[1]), sigmas)


def assert_chain_moments(trace, mean, cov, sigmas: float = 5.0):
    """Time-averaged mean and covariance of a trace (steps, chains, d) within ``sigmas`` s.e. across chains."""
    x = np.asarray(trace, dtype=np.float64)
    mean, cov = np.asarray(mean, np.float64), np.asarray(cov, np.float64)
    assert_chain_averages(x, mean, sigmas, "mean")
    assert_chain_averages(_per_draw_products(x, mean), cov.ravel(), sigmas, "cov")
