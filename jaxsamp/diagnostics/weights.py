"""Diagnostics of importance weights: ESS, log Z, log-weight variance, ELBO and EUBO.

Every function takes a :class:`~jaxsamp.core.WeightedSamples` ``(x, log_w, log_Z0)``
with ``log w_i = log p~(x_i) - log q(x_i)`` (or an annealed / learned sampler's path
log-weight) and works in log space, so float32 log-weights of magnitude ``1e3`` do
not overflow. ``WeightedSamples.log_Z`` and ``WeightedSamples.ess`` are the estimators
themselves; this module adds the rest and a one-call summary. Definitions follow
the Beyond-ELBOs evaluation (Blessing et al. 2024, ``stochastic_oc_methods.py``):
ELBO = mean log-weight, reverse ESS = ``(sum w)^2 / (n sum w^2)``, EUBO = mean
log-weight on samples of the target.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

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


def summary(samples: WeightedSamples, log_Z: float | None = None) -> dict[str, float]:
    """The weight diagnostics of one run as plain floats.

    Parameters
    ----------
    samples : WeightedSamples
    log_Z : float, optional
        The exact log normalising constant; adds ``log_Z_error`` (estimate minus truth).

    Returns
    -------
    dict
        ``ess`` (Kish ESS), ``ess_fraction`` (ESS / n), ``log_Z`` (``samples.log_Z``),
        ``log_weight_variance`` and ``elbo``.
    """
    out = {
        "ess": float(importance_ess(samples)),
        "ess_fraction": float(importance_ess(samples, normalized=True)),
        "log_Z": float(samples.log_Z),
        "log_weight_variance": float(log_weight_variance(samples)),
        "elbo": float(elbo(samples)),
    }
    if log_Z is not None:
        out["log_Z_error"] = out["log_Z"] - float(log_Z)
    return out
