"""Posterior-predictive metrics of a sampled regression model: LPPD, RMSE, interval coverage, and their running curves.

For draws ``theta_s`` (``s = 1..S``) of a model with a Gaussian predictive
``p(y | x, theta) = N(y; mu_theta(x), sigma_theta(x)^2)`` and test points
``(x_i, y_i)``, ``i = 1..n``:

* LPPD, the log pointwise predictive density (Gelman, Hwang & Vehtari 2014,
  "Understanding predictive information criteria for Bayesian models",
  Statistics and Computing 24, eq. 3, here averaged over points as the MILE paper
  reports it): ``(1/n) sum_i log((1/S) sum_s p(y_i | x_i, theta_s))``;
* RMSE of the posterior-predictive mean ``(1/S) sum_s mu_s(x_i)``;
* coverage of the central 90 % predictive interval: the predictive CDF is the
  mixture ``F_i(y) = (1/S) sum_s Phi((y - mu_s(x_i)) / sigma_s(x_i))``, and ``y_i``
  lies in its central interval of mass ``q`` exactly when
  ``(1 - q)/2 <= F_i(y_i) <= (1 + q)/2`` (``F_i`` is continuous and increasing),
  so no quantile has to be searched for.

Draws come in the driver's layout ``(T, K, d)`` (draw, chain, parameter) and
are consumed one draw index at a time (``lax.scan``), so memory stays
``O(K n)`` and the LPPD after the first ``t`` draws of every chain, the curve
of the MILE paper's LPPD-against-time figure, comes for free.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp
from jax.scipy.stats import norm

from jaxsamp.core.errors import InputError
from jaxsamp.core.validation import check_array


def lppd(log_densities) -> jax.Array:
    """LPPD of pointwise log predictive densities ``(S, n)``: ``mean_i [logsumexp_s - log S]``."""
    log_densities = jnp.asarray(log_densities)
    if log_densities.ndim != 2 or log_densities.shape[0] < 1:
        raise InputError(f"log_densities must be (draws, points), got shape {log_densities.shape}")
    return jnp.mean(logsumexp(log_densities, axis=0) - math.log(log_densities.shape[0]))


def _metrics_scan(predict, draws, x, y, interval):
    num_draws, num_chains = draws.shape[:2]
    lo, hi = (1.0 - interval) / 2.0, (1.0 + interval) / 2.0

    def one_draw_index(carry, thetas):
        lse, mean_sum, cdf_sum = carry
        mu, sigma = jax.vmap(predict, in_axes=(0, None))(thetas, x)  # (K, n) each
        log_dens = norm.logpdf(y, mu, sigma)
        lse = jnp.logaddexp(lse, logsumexp(log_dens, axis=0))
        mean_sum, cdf_sum = mean_sum + jnp.sum(mu, axis=0), cdf_sum + jnp.sum(norm.cdf(y, mu, sigma), axis=0)
        return (lse, mean_sum, cdf_sum), (lse, jnp.mean(log_dens, axis=1))

    n = y.shape[0]
    start = (jnp.full(n, -jnp.inf, y.dtype), jnp.zeros(n, y.dtype), jnp.zeros(n, y.dtype))
    (_lse, mean_sum, cdf_sum), (running_lse, test_log_lik) = jax.lax.scan(one_draw_index, start, draws)
    counts = num_chains * jnp.arange(1, num_draws + 1, dtype=y.dtype)
    curve = jnp.mean(running_lse, axis=1) - jnp.log(counts)
    total = num_draws * num_chains
    rmse = jnp.sqrt(jnp.mean((mean_sum / total - y) ** 2))
    cdf = cdf_sum / total
    coverage = jnp.mean((cdf >= lo) & (cdf <= hi))
    return {"lppd": curve[-1], "rmse": rmse, "coverage": coverage, "lppd_curve": curve, "test_log_lik": test_log_lik}


_jitted_metrics = jax.jit(_metrics_scan, static_argnums=(0, 4))


def predictive_metrics(predict: Callable, draws, x, y, interval: float = 0.9) -> dict:
    """LPPD, RMSE and central-interval coverage of the draws' Gaussian predictive on ``(x, y)``, with running curves.

    Parameters
    ----------
    predict : callable
        ``predict(theta, x) -> (mu, sigma)``, each ``(n,)``, for ONE parameter
        vector (``BnnRegression.predict``). Hashable (it is a static argument of
        the jitted evaluation).
    draws : array (T, K, d)
        ``T`` draws of each of ``K`` chains (the driver's trace layout); a deep
        ensemble is ``members[None]``.
    x : array (n, p)
    y : array (n,)
    interval : float
        Central probability of the predictive interval (0.9).

    Returns
    -------
    dict
        ``lppd``, ``rmse``, ``coverage`` (floats, over all ``T K`` draws);
        ``lppd_curve`` (array ``(T,)``: the LPPD of the first ``t`` draws of every
        chain, ``t = 1..T``) and ``test_log_lik`` (array ``(T, K)``: each draw's
        mean test log density, a scalar summary for R-hat / ESS).
    """
    draws = jnp.asarray(draws)
    if draws.ndim != 3 or 0 in draws.shape:
        raise InputError(f"draws must be (draws, chains, parameters), got shape {draws.shape}")
    y = jnp.asarray(check_array("y", y, ndim=1), draws.dtype)
    x = jnp.asarray(check_array("x", x, ndim=2), draws.dtype)
    if x.shape[0] != y.shape[0]:
        raise InputError(f"x has {x.shape[0]} rows but y has {y.shape[0]} entries")
    if not 0.0 < interval < 1.0:
        raise InputError(f"interval must lie in (0, 1), got {interval}")
    out = _jitted_metrics(predict, draws, x, y, float(interval))
    return {k: (float(v) if jnp.ndim(v) == 0 else np.asarray(v)) for k, v in out.items()}
