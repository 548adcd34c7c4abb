"""Directional targets on the unit sphere S^{d-1} in R^d: the von Mises-Fisher distribution and its mixtures.

The von Mises-Fisher density with respect to the surface measure of ``S^{d-1}`` is

    f(x; mu, kappa) = C_d(kappa) exp(kappa mu^T x),
    C_d(kappa) = kappa^{d/2 - 1} / ((2 pi)^{d/2} I_{d/2-1}(kappa)),

(Mardia & Jupp 2000, eq. 9.3.4). ``log I_v`` comes from TensorFlow Probability's
``tfp.math.log_bessel_ive`` (JAX substrate; TFP is a dependency of distrax), the
exponentially scaled ``log I_v(kappa) - kappa``, which stays finite for the orders
``v = d/2 - 1`` up to 511 and ``kappa`` up to 1e5 that the tests cover. At
``kappa = 0`` the normaliser is the uniform one, ``Gamma(d/2) / (2 pi^{d/2})``.

Exact samples follow Wood (1994), "Simulation of the von Mises Fisher distribution":
the cosine ``w = mu^T x`` by rejection from a Beta proposal, then a uniform
direction orthogonal to ``mu``. Proposals are drawn in flat pools and the first
accepted kept (oversample-and-mask), which measured several times faster than a
``lax.while_loop`` per draw under ``vmap`` (that loop runs until the slowest of the
batch accepts); see :func:`sample_vmf` and the suite ``vmf``
(``jaxsamp bench run vmf``).
``E[w] = A_d(kappa) = I_{d/2}(kappa) / I_{d/2-1}(kappa)``.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core.errors import InputError
from jaxsamp.core.registry import TARGETS
from jaxsamp.core.target import Target, sphere
from jaxsamp.core.validation import NonNegativeFloat, NonNegativeInt, PositiveInt, check_array

POOL_FACTOR = 1.5  # Wood proposals per requested draw in each rejection round


def _log_bessel_ive(order, x):
    from tensorflow_probability.substrates import jax as tfp

    return tfp.math.log_bessel_ive(order, x)


def log_vmf_normalizer(dim: int, kappa):
    """``log C_d(kappa)`` (module docstring), elementwise in ``kappa >= 0``; ``dim >= 2`` is static."""
    kappa = jnp.asarray(kappa)
    order = 0.5 * dim - 1.0
    uniform = math.lgamma(0.5 * dim) - math.log(2.0) - 0.5 * dim * math.log(math.pi)
    safe = jnp.where(kappa > 0, kappa, 1.0)
    log_c = order * jnp.log(safe) - 0.5 * dim * math.log(2 * math.pi) - _log_bessel_ive(jnp.asarray(order, safe.dtype), safe) - safe
    return jnp.where(kappa > 0, log_c, jnp.asarray(uniform, log_c.dtype))


def mean_resultant_length(dim: int, kappa):
    """``A_d(kappa) = E[mu^T x] = I_{d/2}(kappa) / I_{d/2-1}(kappa)`` (0 at ``kappa = 0``)."""
    kappa = jnp.asarray(kappa)
    safe = jnp.where(kappa > 0, kappa, 1.0)
    ratio = jnp.exp(_log_bessel_ive(jnp.asarray(0.5 * dim, safe.dtype), safe)
                    - _log_bessel_ive(jnp.asarray(0.5 * dim - 1.0, safe.dtype), safe))
    return jnp.where(kappa > 0, ratio, 0.0)


def _wood_cosines(key, dim: int, kappa, n: int):
    """``n`` draws of ``w = mu^T x`` by Wood's rejection sampler, proposals drawn in pools.

    Each round draws a flat pool of ``POOL_FACTOR * n`` proposals and keeps the first
    accepted ones in order (i.i.d. proposals and acceptances, so the kept ones are
    i.i.d. draws of ``w``); a round repeats only while fewer than ``n`` were accepted.
    Wood's acceptance rate is above 0.7 over the benchmark grid, so one round almost
    always suffices. The proposal's ``z ~ Beta((d-1)/2, (d-1)/2)`` is
    ``(1 + t) / 2`` with ``t = g / sqrt(g^2 + chi^2_{d-1})``, ``g ~ N(0, 1)``: the first
    coordinate of a uniform point on ``S^{d-1}``, one normal and one gamma draw.
    """
    d1 = dim - 1.0
    b = d1 / (2.0 * kappa + jnp.sqrt(4.0 * kappa**2 + d1**2))
    x0 = (1.0 - b) / (1.0 + b)
    c = kappa * x0 + d1 * jnp.log1p(-(x0**2))
    pool = int(math.ceil(POOL_FACTOR * n))

    def round_(state):
        key, w_out, filled = state
        key, k_g, k_chi, k_u = jax.random.split(key, 4)
        g = jax.random.normal(k_g, (pool,), kappa.dtype)
        chi2 = 2.0 * jax.random.gamma(k_chi, 0.5 * d1, (pool,), kappa.dtype)
        z = 0.5 * (1.0 + g / jnp.sqrt(g**2 + chi2))
        w = (1.0 - (1.0 + b) * z) / (1.0 - (1.0 - b) * z)
        accept = kappa * w + d1 * jnp.log1p(-x0 * w) - c >= jnp.log(jax.random.uniform(k_u, (pool,), kappa.dtype))
        slot = filled + jnp.cumsum(accept) - 1
        w_out = w_out.at[jnp.where(accept & (slot < n), slot, n)].set(w, mode="drop")
        return key, w_out, jnp.minimum(filled + jnp.sum(accept), n)

    _, w, _ = jax.lax.while_loop(lambda s: s[2] < n, round_, (key, jnp.zeros((n,), kappa.dtype), jnp.int32(0)))
    return w


def sample_vmf(key, mu, kappa, n: int):
    """``n`` exact draws of ``vMF(mu, kappa)`` on ``S^{d-1}`` (Wood 1994), shape ``(n, d)``, in ``mu``'s dtype.

    The cosine ``w = mu^T x`` comes from :func:`_wood_cosines` (on ``S^2``, ``d = 3``,
    from its closed-form inverse CDF, with no rejection); the rest of ``x`` is a
    uniform direction orthogonal to ``mu``, the normalised projection of a standard
    normal vector: ``x = w mu + sqrt(1 - w^2) v / |v|``, ``v = g - (g^T mu) mu``.
    """
    mu = jnp.asarray(mu)
    dim = mu.shape[-1]
    kappa = jnp.asarray(kappa, mu.dtype)
    k_w, k_v = jax.random.split(key)
    if dim == 3:  # the cosine has a closed-form inverse CDF on S^2: w = 1 + log(u + (1 - u) e^{-2 kappa}) / kappa
        u = jax.random.uniform(k_w, (n,), mu.dtype)
        safe = jnp.where(kappa > 0, kappa, 1.0)
        w = jnp.where(kappa > 0, 1.0 + jnp.log(u + (1.0 - u) * jnp.exp(-2.0 * safe)) / safe, 2.0 * u - 1.0)
        w = jnp.clip(w, -1.0, 1.0)
    else:
        w = _wood_cosines(k_w, dim, kappa, n)
    g = jax.random.normal(k_v, (n, dim), mu.dtype)
    v = g - (g @ mu)[:, None] * mu
    scale = jnp.sqrt(jnp.clip(1.0 - w**2, 0.0)) / jnp.linalg.norm(v, axis=-1)
    return w[:, None] * mu + scale[:, None] * v


def _unit(name: str, v) -> np.ndarray:
    v = check_array(name, v, ndim=1).astype(np.float64)
    norm = np.linalg.norm(v)
    if v.shape[0] < 2 or norm == 0:
        raise InputError(f"{name} must be a non-zero vector of dimension >= 2, got {v.tolist()}")
    return v / norm


class VonMisesFisher(Target):
    """``vMF(mu, kappa)`` on ``S^{d-1}``, given unnormalised as ``exp(kappa mu^T x)``; ``log Z = -log C_d(kappa)``."""

    def __init__(self, mu, kappa: float, name: str = "vmf"):
        self.mu_np = _unit("mu", mu)
        if not (np.isfinite(kappa) and kappa >= 0):
            raise InputError(f"kappa must be finite and >= 0, got {kappa}")
        self.kappa, self.name = float(kappa), name
        d = self.mu_np.shape[0]
        self.event_shape, self.domain = (d,), sphere(d)
        with jax.enable_x64(True):
            self.log_Z = -float(log_vmf_normalizer(d, np.float64(self.kappa)))

    def _log_prob(self, x):
        return self.kappa * jnp.asarray(self.mu_np, x.dtype) @ x

    def sample(self, key, n):
        return sample_vmf(key, jnp.asarray(self.mu_np, jnp.result_type(float)), self.kappa, n)


class VmfMixture(Target):
    """``sum_k w_k vMF(mu_k, kappa_k)``, given normalised (``log Z = 0``); exact samples by component."""

    def __init__(self, mus, kappas, weights=None, name: str = "vmf_mixture"):
        mus = check_array("mus", mus, ndim=2).astype(np.float64)
        k, d = mus.shape
        if d < 2 or np.any(np.linalg.norm(mus, axis=1) == 0):
            raise InputError("mus must be non-zero vectors of dimension >= 2")
        self.mus_np = mus / np.linalg.norm(mus, axis=1, keepdims=True)
        self.kappas_np = check_array("kappas", kappas, shape=(k,)).astype(np.float64)
        if np.any(self.kappas_np < 0):
            raise InputError("every kappa must be >= 0")
        weights = np.full(k, 1.0 / k) if weights is None else check_array("weights", weights, shape=(k,)).astype(np.float64)
        if np.any(weights <= 0):
            raise InputError("mixture weights must be positive")
        self.weights_np = weights / weights.sum()
        self.name, self.event_shape, self.domain, self.log_Z = name, (d,), sphere(d), 0.0
        with jax.enable_x64(True):
            self._log_c = np.asarray(log_vmf_normalizer(d, self.kappas_np))

    def _log_prob(self, x):
        dt = x.dtype
        terms = (jnp.log(jnp.asarray(self.weights_np, dt)) + jnp.asarray(self._log_c, dt)
                 + jnp.asarray(self.kappas_np, dt) * (jnp.asarray(self.mus_np, dt) @ x))
        return jax.scipy.special.logsumexp(terms)

    def sample(self, key, n):
        dt = jnp.result_type(float)
        k_comp, k_draw = jax.random.split(key)
        comp = jax.random.choice(k_comp, len(self.weights_np), (n,), p=jnp.asarray(self.weights_np, dt))
        mus, kappas = jnp.asarray(self.mus_np, dt)[comp], jnp.asarray(self.kappas_np, dt)[comp]
        keys = jax.random.split(k_draw, n)
        return jax.vmap(lambda k, m, kap: sample_vmf(k, m, kap, 1)[0])(keys, mus, kappas)


@TARGETS.register("vmf")
def vmf(dim: PositiveInt = 3, kappa: NonNegativeFloat = 10.0, mu: list | None = None) -> VonMisesFisher:
    """von Mises-Fisher on the sphere S^{dim-1} (mean direction e_1 unless given); exact log Z and samples."""
    if dim < 2:
        raise InputError(f"the sphere needs dim >= 2, got {dim}")
    return VonMisesFisher(np.eye(dim)[0] if mu is None else mu, kappa)


@TARGETS.register("vmf_mixture")
def vmf_mixture(dim: PositiveInt = 3, num_components: PositiveInt = 4, kappa: NonNegativeFloat = 20.0,
                seed: NonNegativeInt = 0) -> VmfMixture:
    """Equal-weight mixture of vMFs with random mean directions (seeded); exact log Z and samples."""
    if dim < 2:
        raise InputError(f"the sphere needs dim >= 2, got {dim}")
    mus = np.random.default_rng(seed).normal(size=(num_components, dim))
    return VmfMixture(mus, np.full(num_components, float(kappa)))
