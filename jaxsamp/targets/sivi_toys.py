"""The three 2-D targets of the semi-implicit VI literature: banana, x-shaped and multimodal.

All three are normalised densities (``log Z = 0``) with exact samples. They were
introduced for SIVI (Yin & Zhou 2018, ICML, Sec. 5.1) and are the toy problems of
KSIVI (Cheng et al. 2024, ICLR) and AISIVI (Pielok, Bischl & Ruegamer 2025, ICML;
``aisivi/targets.py``), whose forward-KL figures ../shared/research/anchors2.md
quotes:

* **banana**: ``(x_1, x_1^2 + x_2 + 1) ~ N(0, [[1, 0.9], [0.9, 1]])`` (a volume-preserving
  bend of a correlated Gaussian, so the density needs no Jacobian);
* **x_shaped**: ``1/2 N(0, [[2, 1.8], [1.8, 2]]) + 1/2 N(0, [[2, -1.8], [-1.8, 2]])``;
* **multimodal**: ``1/2 N((-2, 0), I) + 1/2 N((2, 0), I)`` (a :class:`GaussianMixture`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core.registry import TARGETS
from jaxsamp.core.target import Target
from jaxsamp.targets.mixture import GaussianMixture

BANANA_CORRELATION = 0.9
X_SHAPE_COVARIANCES = np.array([[[2.0, 1.8], [1.8, 2.0]], [[2.0, -1.8], [-1.8, 2.0]]])


def _gaussian_log_density(y: jax.Array, covariance: np.ndarray) -> jax.Array:
    """``log N(y; 0, covariance)`` for one 2-D point (covariance a constant)."""
    precision = np.linalg.inv(covariance)
    log_norm = -np.log(2 * np.pi) - 0.5 * np.log(np.linalg.det(covariance))
    return log_norm - 0.5 * y @ precision @ y


class Banana(Target):
    """``(x_1, x_1^2 + x_2 + 1) ~ N(0, [[1, rho], [rho, 1]])``, ``rho = 0.9``; ``log Z = 0``, exact samples."""

    name = "banana"
    log_Z = 0.0
    event_shape = (2,)

    def __init__(self):
        self.covariance = np.array([[1.0, BANANA_CORRELATION], [BANANA_CORRELATION, 1.0]])

    def _log_prob(self, x):
        return _gaussian_log_density(jnp.stack([x[0], x[0] ** 2 + x[1] + 1.0]), self.covariance)

    def sample(self, key, n):
        """Exact samples ``(n, 2)``: the bend applied to correlated Gaussian draws."""
        y = jax.random.multivariate_normal(key, jnp.zeros(2), jnp.asarray(self.covariance, jnp.float32), (n,))
        return jnp.stack([y[:, 0], y[:, 1] - y[:, 0] ** 2 - 1.0], axis=1)


class XShaped(Target):
    """Even mixture of two zero-mean Gaussians with correlations ``+0.9`` and ``-0.9`` (variances 2); ``log Z = 0``."""

    name = "x_shaped"
    log_Z = 0.0
    event_shape = (2,)

    def _log_prob(self, x):
        components = jnp.stack([_gaussian_log_density(x, c) for c in X_SHAPE_COVARIANCES])
        return jax.scipy.special.logsumexp(components) - np.log(2.0)

    def sample(self, key, n):
        """Exact samples ``(n, 2)``: a fair coin picks the component."""
        pick_key, draw_key = jax.random.split(key)
        draws = jax.random.multivariate_normal(draw_key, jnp.zeros(2), jnp.asarray(X_SHAPE_COVARIANCES, jnp.float32),
                                               (n, 2))
        pick = jax.random.bernoulli(pick_key, 0.5, (n,))
        return jnp.where(pick[:, None], draws[:, 1], draws[:, 0])


@TARGETS.register("banana")
def banana() -> Banana:
    """SIVI's banana: (x1, x1^2 + x2 + 1) ~ N(0, [[1, .9], [.9, 1]]); exact log Z = 0 and exact samples."""
    return Banana()


@TARGETS.register("x_shaped")
def x_shaped() -> XShaped:
    """SIVI's x-shape: even mixture of N(0, [[2, +-1.8], [+-1.8, 2]]); exact log Z = 0 and exact samples."""
    return XShaped()


@TARGETS.register("multimodal")
def multimodal() -> GaussianMixture:
    """SIVI's two modes: even mixture of N((+-2, 0), I); exact log Z = 0 and exact samples."""
    return GaussianMixture(np.array([[-2.0, 0.0], [2.0, 0.0]]), np.array([1.0]), name="multimodal")
