"""Diagnostics of importance weights: ESS, log Z, log-weight variance, ELBO and EUBO.

Every function takes a :class:`~jaxsamp.core.WeightedSamples` ``(x, log_w, log_Z0)``
with ``log w_i = log p~(x_i) - log q(x_i)`` (or an annealed / learned sampler's path
log-weight) and works in log space, so float32 log-weights of magnitude ``1e3`` do
not overflow. ``WeightedSamples.log_Z`` and ``WeightedSamples.ess`` are the estimators
themselves; this module adds the rest, and :func:`figures`, the canonical figures that every
learned family's ``evaluate`` starts from (one name per concept, the ESS normalised). Definitions follow
the Beyond-ELBOs evaluation (Blessing et al. 2024, ``stochastic_oc_methods.py``):
ELBO = mean log-weight, reverse ESS = ``(sum w)^2 / (n sum w^2)``, EUBO = mean
log-weight on samples of the target.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

import math

import numpy as np

from jaxsamp.core.errors import InputError
from jaxsamp.core.protocols import WeightedSamples


def _log_w(samples: WeightedSamples) -> jax.Array:
    chex.assert_rank(samples.log_w, 1)
    return samples.log_w


def importance_ess(samples: WeightedSamples, normalized: bool = False) -> jax.Array:
    """Kish effective sample size ``(sum_i w_i)^2 / sum_i w_i^2``.

    Computed as ``exp(2 LSE(log w) - LSE(2 log w))`` (``WeightedSamples.ess`` times n).

    Parameters
    ----------
    samples : WeightedSamples
    normalized : bool
        Divide by ``n`` (the fraction in ``(0, 1]`` reported by LEAPS and Beyond-ELBOs).

    Returns
    -------
    scalar
        ``n`` for equal weights, ``1`` when one weight dominates.
    """
    n = _log_w(samples).shape[0]
    return samples.ess if normalized else samples.ess * n


def log_weight_variance(samples: WeightedSamples) -> jax.Array:
    """Sample variance ``(1/n) sum_i (log w_i - mean log w)^2`` of the log-weights.

    Zero exactly when the proposal is proportional to the target; for small
    spread, ``KL(q||p) ~ var / 2`` (the log-variance loss of Richter et al. 2020).
    """
    return jnp.var(_log_w(samples))


def _mean_log_weight(samples: WeightedSamples) -> jax.Array:
    return samples.log_Z0 + jnp.mean(_log_w(samples))


def elbo(samples: WeightedSamples) -> jax.Array:
    """Evidence lower bound ``log Z0 + E_q[log w] = log Z - KL(q || p) <= log Z``.

    Parameters
    ----------
    samples : WeightedSamples
        Samples ``x_i ~ q`` from the sampler with their log-weights.
    """
    return _mean_log_weight(samples)


def eubo(target_samples: WeightedSamples) -> jax.Array:
    """Evidence upper bound ``log Z0 + E_p[log w] = log Z + KL(p || q) >= log Z``.

    Parameters
    ----------
    target_samples : WeightedSamples
        Samples ``x_i ~ p`` of the target (exact samples or a reference set) with
        ``log w_i = log p~(x_i) - log q(x_i)`` evaluated there (for a path sampler,
        the forward log-weight of paths simulated backwards from ``x_i``).
    """
    return _mean_log_weight(target_samples)


def _log_mean_exp(a: np.ndarray) -> float:
    """``log mean exp(a)`` in float64; NaN for an empty array."""
    if not a.size:
        return float("nan")
    m = np.max(a)
    return float(m + np.log(np.sum(np.exp(a - m))) - math.log(a.size))


def figures(samples: WeightedSamples, *, log_Z_exact: float | None = None,
            target_log_w=None, num_sets: int = 1) -> dict[str, float]:
    """The canonical figures of a weighted sample: every family's ``evaluate`` starts from these.

    One name per concept across jaxsamp (the metric glossary, ``docs/metrics.md``, lists them):

    * ``log_Z_hat``: ``log Z0 + log (1/n) sum_i w_i``, the importance-sampling estimate of
      ``log Z`` from the sampler's own draws (unbiased in ``Z``);
    * ``ess``: the normalised effective sample size ``(sum w)^2 / (n sum w^2)`` in ``(0, 1]``;
    * ``elbo``: ``log Z0 + mean log w``, a lower bound on ``log Z``;
    * ``nonfinite_samples``: draws whose log-weight is NaN/inf, left out of every figure;
    * with ``target_log_w`` (the log-weights ``log p~(x) - log q(x)`` at draws of the target, or a
      path sampler's at paths simulated backward from them): ``eubo`` (their mean, an upper bound)
      and ``log_Z_forward`` (``-log mean exp(-log w)``, unbiased in ``1/Z``);
    * with ``log_Z_exact``: it, and ``log_Z_abs_err`` = ``|log_Z_hat - log_Z_exact|`` beside
      ``elbo_abs_err``, ``eubo_abs_err`` and ``log_Z_forward_abs_err``;
    * with ``num_sets > 1``: ``log_Z_hat`` on that many disjoint, equal sets of the draws (in order;
      a remainder is left out), as ``log_Z_hat_sets_mean`` / ``_sets_sd`` and, with ``log_Z_exact``,
      ``log_Z_abs_err_sets_mean`` / ``_sets_sd``.

    Computed in float64 on the host (NumPy), after sampling.

    Parameters
    ----------
    samples : WeightedSamples
        The sampler's draws and their log-weights, shape ``(n,)``; rows whose state is
        not finite should be given a NaN log-weight by the caller.
    log_Z_exact : float, optional
        The target's exact log normalising constant.
    target_log_w : array (m,), optional
        Log-weights at draws of the target.
    num_sets : int
        Disjoint sets of the draws to score ``log_Z_hat`` on apart.

    Returns
    -------
    dict of str to float
    """
    log_w = np.asarray(samples.log_w, np.float64)
    chex.assert_rank(log_w, 1)
    if isinstance(num_sets, bool) or not isinstance(num_sets, int) or not 1 <= num_sets <= log_w.size:
        raise InputError(f"num_sets must be an int in [1, num_samples={log_w.size}], got {num_sets!r}")
    log_Z0 = float(samples.log_Z0)
    finite = np.isfinite(log_w)
    kept = log_w[finite]
    out = {"nonfinite_samples": float(log_w.size - kept.size)}
    if kept.size:
        out["log_Z_hat"] = log_Z0 + _log_mean_exp(kept)
        out["ess"] = float(WeightedSamples(None, jnp.asarray(kept)).ess)
        out["elbo"] = log_Z0 + float(np.mean(kept))
    if target_log_w is not None:
        backward = np.asarray(target_log_w, np.float64)
        backward = backward[np.isfinite(backward)]
        if backward.size:
            out["eubo"] = log_Z0 + float(np.mean(backward))
            out["log_Z_forward"] = log_Z0 - _log_mean_exp(-backward)
    size = log_w.size // num_sets
    set_log_z = np.asarray([log_Z0 + _log_mean_exp(log_w[i * size:(i + 1) * size][finite[i * size:(i + 1) * size]])
                            for i in range(num_sets)])
    if num_sets > 1:
        out["log_Z_hat_sets_mean"] = float(np.mean(set_log_z))
        out["log_Z_hat_sets_sd"] = float(np.std(set_log_z, ddof=1))
    if log_Z_exact is not None:
        exact = float(log_Z_exact)
        out["log_Z_exact"] = exact
        for name, err in (("log_Z_hat", "log_Z_abs_err"), ("elbo", "elbo_abs_err"), ("eubo", "eubo_abs_err"),
                          ("log_Z_forward", "log_Z_forward_abs_err")):
            if name in out:
                out[err] = abs(out[name] - exact)
        if num_sets > 1:
            errors = np.abs(set_log_z - exact)
            out["log_Z_abs_err_sets_mean"] = float(np.mean(errors))
            out["log_Z_abs_err_sets_sd"] = float(np.std(errors, ddof=1))
    return out
