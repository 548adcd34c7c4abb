"""Mixture of Student-t products (Beyond-ELBOs "MoS"): log Z = 0, exact samples."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core.errors import InputError
from jaxsamp.core.registry import TARGETS
from jaxsamp.core.validation import NonNegativeInt, PositiveFloat, PositiveInt
from jaxsamp.targets.mixture import Mixture


class StudentTMixture(Mixture):
    """``p(x) = sum_k w_k prod_j t_nu((x_j - mu_kj) / s) / s``, normalised, so ``log Z = 0``.

    Each component is a product of independent univariate Student-t laws with ``nu``
    degrees of freedom, location ``mu_k`` and scale ``s``; samples are exact
    (component, then ``jax.random.t``). Definition: Blessing et al. (2024), "Beyond
    ELBOs: a large-scale evaluation of variational methods for sampling",
    ``targets/student_t_mixture.py`` (10 components, df = 2, unit scale, equal weights).

    Parameters
    ----------
    means : array (K, d)
    df : float
        Degrees of freedom ``nu > 0``.
    scale : float
    weights : array (K,), optional (uniform by default)
    """

    log_Z = 0.0

    def __init__(self, means, df: float = 2.0, scale: float = 1.0, weights=None, name: str = "student_t_mixture"):
        means = np.asarray(means, dtype=np.float64)
        if means.ndim != 2:
            raise InputError(f"means must be (K, d), got shape {means.shape}")
        k, d = means.shape
        if not (df > 0 and scale > 0):
            raise InputError(f"df and scale must be positive, got df={df}, scale={scale}")
        weights = np.ones(k) / k if weights is None else np.asarray(weights, dtype=np.float64)
        if weights.shape != (k,) or np.any(weights <= 0):
            raise InputError("weights must be K positive numbers")
        self.name, self.event_shape = name, (d,)
        self.means_np, self.df, self.scale = means, float(df), float(scale)
        self.weights_np = weights / weights.sum()

    def component_log_probs(self, x):
        """``log w_k + log p_k(x)`` for every component, shape (K,)."""
        nu = self.df
        z = (x - jnp.asarray(self.means_np, x.dtype)) / self.scale
        log_norm = math.lgamma((nu + 1) / 2) - math.lgamma(nu / 2) - 0.5 * math.log(nu * math.pi) - math.log(self.scale)
        log_t = log_norm - 0.5 * (nu + 1) * jnp.log1p(z**2 / nu)
        return jnp.log(jnp.asarray(self.weights_np, x.dtype)) + jnp.sum(log_t, axis=-1)

    def sample(self, key, n):
        """Exact samples, shape ``(n, d)``."""
        kc, kt = jax.random.split(key)
        comp = jax.random.choice(kc, len(self.weights_np), (n,), p=jnp.asarray(self.weights_np))
        t = jax.random.t(kt, self.df, (n, self.event_shape[0]))
        return jnp.asarray(self.means_np, t.dtype)[comp] + self.scale * t


@TARGETS.register("student_t_mixture")
def student_t_mixture(
    dim: PositiveInt = 2,
    num_components: PositiveInt = 10,
    df: PositiveFloat = 2.0,
    box: PositiveFloat = 10.0,
    seed: NonNegativeInt = 0,
) -> StudentTMixture:
    """Beyond-ELBOs MoS: equal-weight Student-t (df 2) products, means U[-box, box]^d; log Z = 0, exact samples.

    Means are ``jax.random.uniform(jax.random.key(seed), (K, d), minval=-box, maxval=box)``
    (Blessing et al. 2024: PRNG seed 0, K = 10, box 10).
    """
    if dim < 1 or num_components < 1:
        raise InputError(f"student_t_mixture needs dim >= 1 and num_components >= 1, got {dim}, {num_components}")
    means = np.asarray(
        jax.random.uniform(jax.random.key(seed), (num_components, dim), minval=-box, maxval=box), dtype=np.float64
    )
    return StudentTMixture(means, df)
