"""Multivariate Gaussian target with full covariance: exact log Z and samples."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core.errors import InputError
from jaxsamp.core.registry import TARGETS
from jaxsamp.core.target import Target
from jaxsamp.core.validation import FiniteFloat, PositiveFloat, PositiveInt, check_array


class Gaussian(Target):
    """``N(mean, cov)`` given unnormalised as ``exp(-(x-m)^T cov^-1 (x-m) / 2)``.

    Its normalising constant is ``log Z = (d/2) log 2 pi + (1/2) log det cov``,
    so estimators of ``log Z`` are checked against a closed form.
    """

    def __init__(self, mean, cov, name: str = "gaussian"):
        mean = check_array("mean", mean, ndim=1).astype(np.float64)
        d = mean.shape[0]
        cov = check_array("cov", cov, shape=(d, d)).astype(np.float64)
        if d == 0:
            raise InputError("a Gaussian needs dimension >= 1")
        if not np.allclose(cov, cov.T) or np.any(np.linalg.eigvalsh(cov) <= 0):
            raise InputError("cov must be symmetric positive definite")
        self.name, self.event_shape = name, (d,)
        self.mean_np, self.cov_np = mean, cov
        self._chol = np.linalg.cholesky(cov)
        self._prec = np.linalg.inv(cov)
        self.log_Z = float(0.5 * d * np.log(2 * np.pi) + np.sum(np.log(np.diag(self._chol))))

    @property
    def mean(self):
        return jnp.asarray(self.mean_np)

    @property
    def cov(self):
        return jnp.asarray(self.cov_np)

    def _log_prob(self, x):
        r = x - jnp.asarray(self.mean_np, x.dtype)
        return -0.5 * r @ (jnp.asarray(self._prec, x.dtype) @ r)

    def sample(self, key, n):
        z = jax.random.normal(key, (n, self.event_shape[0]))
        return jnp.asarray(self.mean_np, z.dtype) + z @ jnp.asarray(self._chol.T, z.dtype)


@TARGETS.register("gaussian")
def gaussian(
    dim: PositiveInt = 2, scale: PositiveFloat = 1.0, correlation: FiniteFloat = 0.0, mean: list | None = None
) -> Gaussian:
    """Gaussian with covariance ``scale^2 [(1 - rho) I + rho 11^T]``; exact log Z and samples."""
    if not -1.0 / max(dim - 1, 1) < correlation < 1.0:
        raise InputError(f"correlation must lie in (-1/(d-1), 1), got {correlation}")
    cov = scale**2 * ((1 - correlation) * np.eye(dim) + correlation * np.ones((dim, dim)))
    m = np.zeros(dim) if mean is None else check_array("mean", mean, shape=(dim,))
    return Gaussian(m, cov)
