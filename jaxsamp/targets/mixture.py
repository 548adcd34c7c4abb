"""Gaussian mixtures: a general isotropic mixture and the Beyond-ELBOs 40-mode GMM."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core.errors import InputError
from jaxsamp.core.registry import TARGETS
from jaxsamp.core.target import Target
from jaxsamp.core.validation import (
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    check_array,
)


class Mixture(Target):
    """A mixture target: ``log p = logsumexp_k component_log_probs(x)_k``.

    Subclasses implement :meth:`component_log_probs` (``log w_k + log p_k(x)``, shape (K,)).
    """

    def component_log_probs(self, x):  # pragma: no cover - abstract
        raise TypeError(f"{type(self).__name__} must implement component_log_probs")

    def _log_prob(self, x):
        return jax.scipy.special.logsumexp(self.component_log_probs(x))

    def assign_modes(self, xs):
        """Most likely component of each sample in ``xs`` (n, d) -> (n,) ints (for mode coverage)."""
        return jnp.argmax(jax.vmap(self.component_log_probs)(xs), axis=-1)


class GaussianMixture(Mixture):
    """Normalised mixture ``sum_k w_k N(mu_k, s_k^2 I)``; ``log Z = 0``, exact samples.

    Parameters
    ----------
    means : array (K, d)
    scales : array (K,)
    weights : array (K,), optional (uniform by default)
    """

    def __init__(self, means, scales, weights=None, name: str = "gaussian_mixture"):
        means = check_array("means", means, ndim=2).astype(np.float64)
        k, d = means.shape
        if k == 0 or d == 0:
            raise InputError(f"means must be (K, d) with K, d >= 1, got shape {means.shape}")
        scales = check_array("scales", scales).astype(np.float64)
        if scales.ndim > 1 or scales.size not in (1, k) or np.any(scales <= 0):
            raise InputError(f"scales must be one positive number or {k} of them, got {scales.tolist()}")
        scales = np.broadcast_to(scales, (k,)).copy()
        weights = np.ones(k) / k if weights is None else check_array("weights", weights).astype(np.float64)
        if weights.shape != (k,) or np.any(weights <= 0):
            raise InputError(f"weights must be {k} positive numbers, got {weights.tolist()}")
        self.name, self.event_shape, self.log_Z = name, (d,), 0.0
        self.means_np, self.scales_np, self.weights_np = means, scales, weights / weights.sum()

    def component_log_probs(self, x):
        """``log w_k + log N(x; mu_k, s_k^2 I)`` for every component, shape (K,)."""
        mu = jnp.asarray(self.means_np, x.dtype)
        s = jnp.asarray(self.scales_np, x.dtype)
        d = x.shape[-1]
        sq = jnp.sum((x - mu) ** 2, axis=-1)
        return (
            jnp.log(jnp.asarray(self.weights_np, x.dtype))
            - 0.5 * sq / s**2
            - d * jnp.log(s)
            - 0.5 * d * jnp.log(2 * jnp.pi)
        )

    def sample(self, key, n):
        kc, kz = jax.random.split(key)
        comp = jax.random.choice(kc, len(self.weights_np), (n,), p=jnp.asarray(self.weights_np))
        z = jax.random.normal(kz, (n, self.event_shape[0]))
        return jnp.asarray(self.means_np)[comp] + jnp.asarray(self.scales_np)[comp, None] * z


@TARGETS.register("gaussian_mixture")
def gaussian_mixture(means: list, scales: PositiveFloat | list = 1.0, weights: list | None = None) -> GaussianMixture:
    """A Gaussian mixture with the given means, scales and weights; log Z = 0, exact samples."""
    return GaussianMixture(means, scales, weights)


@TARGETS.register("gmm")
def gmm(dim: PositiveInt = 2, num_modes: PositiveInt = 40, box: PositiveFloat = 40.0, seed: NonNegativeInt = 0) -> GaussianMixture:
    """Beyond-ELBOs GMM40: equal-weight unit-variance modes, means U[-box, box]^d; log Z = 0, exact samples.

    Means are drawn from ``jax.random.uniform(jax.random.key(seed), (K, d), minval=-box,
    maxval=box)`` (Blessing et al. 2024, ``targets/gmm40.py``: PRNG seed 0).
    """
    means = np.asarray(
        jax.random.uniform(jax.random.key(seed), (num_modes, dim), minval=-box, maxval=box), dtype=np.float64
    )
    return GaussianMixture(means, 1.0, None, name="gmm")
