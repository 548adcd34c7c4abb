"""Binary targets on ``{-1, 1}^d``: product Bernoullis, mixtures of products, and binarised 8x8 digits.

States are ``+-1`` spins (``x = 2 b - 1`` for bits ``b``), float32 by default,
so that the Bernoulli-noise denoisers of
:mod:`jaxsamp.learned.binary.bernoulli_denoising` see their clean bits and noisy
measurements in the same coding.

The product and mixture targets carry what that method needs to be checked
exactly: besides ``log_prob``, ``log_Z = 0`` and exact samples, the **log
partition function of the exponential tilt**

    A(h) = log sum_x p(x) exp(h . x),      h in R^d,

in closed form. With ``b = atanh(mu)`` the natural parameters of a product
with means ``mu = E[x]`` (``(1 + mu_i x_i) / 2 = exp(b_i x_i) / (2 cosh b_i)``),

    product:   A(h) = sum_i log cosh(h_i + b_i) - log cosh(b_i),
    mixture:   A(h) = logsumexp_k [ log pi_k + sum_i log cosh(h_i + b_ki) - log cosh(b_ki) ].

Every noise-smoothed density and posterior mean of the Bernoulli-noise method
is a function of ``A`` (:mod:`jaxsamp.learned.binary.bernoulli_denoising`), and
:func:`enumerated_log_partition` gives ``A`` for any target with ``d <= 20`` by
enumerating all ``2^d`` states.

:class:`BinaryDigits` is scikit-learn's bundled 8x8 digits (1797 images, 16
grey levels; Alpaydin & Kaynak 1998, UCI "Optical Recognition of Handwritten
Digits"), binarised at a fixed threshold, with a fixed train/test split. It is
a data set: it has no density, only ``train()``, ``test()`` and ``reference()``.
"""

from __future__ import annotations

import math
from typing import Annotated

import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core.errors import InputError
from jaxsamp.core.registry import TARGETS
from jaxsamp.core.target import SPIN, Target
from jaxsamp.core.validation import Interval, NonNegativeInt, PositiveFloat, PositiveInt, check_array

#: Largest dimension :func:`spin_states` enumerates (2^20 states).
MAX_ENUMERATION_DIM = 20


def log_cosh(t: jax.Array) -> jax.Array:
    """``log cosh t`` without overflow: ``|t| + log1p(exp(-2 |t|)) - log 2``."""
    a = jnp.abs(t)
    return a + jnp.log1p(jnp.exp(-2.0 * a)) - math.log(2.0)


def spin_states(d: int, dtype=jnp.float32) -> jax.Array:
    """All ``2^d`` states of ``{-1, 1}^d``, shape ``(2^d, d)``, in the order of :func:`state_index`.

    State ``k`` has ``x_i = +1`` where bit ``d - 1 - i`` of ``k`` is set (lexicographic, ``-1 < +1``).
    """
    if not 1 <= d <= MAX_ENUMERATION_DIM:
        raise InputError(f"enumeration needs 1 <= d <= {MAX_ENUMERATION_DIM}, got d = {d}")
    k = np.arange(2**d, dtype=np.int64)[:, None]
    bits = (k >> np.arange(d - 1, -1, -1)) & 1
    return jnp.asarray(2 * bits - 1, dtype)


def state_index(x: jax.Array) -> jax.Array:
    """Index in :func:`spin_states` of states ``x`` (..., d) of +-1 values; shape (...,), int32."""
    d = x.shape[-1]
    if d > MAX_ENUMERATION_DIM:
        raise InputError(f"state indices need d <= {MAX_ENUMERATION_DIM}, got d = {d}")
    weights = jnp.asarray(2 ** np.arange(d - 1, -1, -1), jnp.int32)
    return jnp.sum((x > 0).astype(jnp.int32) * weights, axis=-1)


def enumerated_log_partition(log_probs: jax.Array) -> callable:
    """``A(h) = log sum_x p(x) exp(h . x)`` by enumeration, from the log-probabilities of all ``2^d`` states.

    Parameters
    ----------
    log_probs : array (2^d,)
        ``log p`` of every state of :func:`spin_states` (normalised or not: it is normalised here).

    Returns
    -------
    callable
        ``A(h)`` for ONE ``h`` of shape (d,); differentiable (``grad A(h) = E[x | h]``).
    """
    log_probs = jnp.asarray(log_probs)
    chex.assert_rank(log_probs, 1)
    d = round(math.log2(log_probs.shape[0]))
    if 2**d != log_probs.shape[0]:
        raise InputError(f"log_probs must hold 2^d entries, got {log_probs.shape[0]}")
    states = spin_states(d, log_probs.dtype)
    log_probs = log_probs - jax.scipy.special.logsumexp(log_probs)

    def log_partition(h):
        chex.assert_shape(h, (d,))
        return jax.scipy.special.logsumexp(log_probs + states @ h)

    return log_partition


def enumerated_probabilities(target) -> np.ndarray:
    """``p(x)`` of every state of a +-1 target with ``d = prod(event_shape) <= 20``, in :func:`spin_states` order.

    Computed from ``target.log_prob`` (any event shape; normalised here, float64): the exact law for
    TV distances (:func:`jaxsamp.diagnostics.binary_discrepancies.total_variation`).
    """
    d = math.prod(target.event_shape)
    states = spin_states(d).reshape(-1, *target.event_shape)
    log_p = np.asarray(jax.jit(jax.vmap(target.with_checks(False).log_prob))(states), np.float64)
    p = np.exp(log_p - log_p.max())
    return p / p.sum()


def _check_means(means, where: str) -> np.ndarray:
    arr = check_array(f"{where} means", means, dtype=None)
    if arr.ndim == 0 or arr.size == 0:
        raise InputError(f"{where} means must be a non-empty array of E[x_i] in (-1, 1), got {means!r}")
    if np.any(np.abs(arr) >= 1):
        raise InputError(
            f"{where} means must lie strictly inside (-1, 1) (E[x_i] of +-1 bits), got values up to {np.abs(arr).max()}"
        )
    return arr.astype(np.float32)


class ProductBernoulli(Target):
    """Independent +-1 bits with means ``mu_i = E[x_i]``: ``p(x) = prod_i (1 + mu_i x_i) / 2``.

    Parameters
    ----------
    means : array (d,), entries in (-1, 1)
    """

    domain = SPIN
    log_Z = 0.0

    def __init__(self, means):
        self.means = jnp.asarray(_check_means(means, "product_bernoulli"))
        if self.means.ndim != 1:
            raise InputError(f"product_bernoulli means must be a vector, got shape {self.means.shape}")
        self.event_shape = (int(self.means.shape[0]),)
        self.name = f"product_bernoulli_d{self.event_shape[0]}"

    @property
    def natural(self) -> jax.Array:
        """``b = atanh(mu)``: ``p(x) ∝ exp(b . x)``."""
        return jnp.arctanh(self.means)

    def _log_prob(self, x):
        return jnp.sum(jnp.log1p(self.means * x) - math.log(2.0))

    def log_partition(self, h: jax.Array) -> jax.Array:
        """``A(h) = sum_i log cosh(h_i + b_i) - log cosh(b_i)`` for ONE ``h`` (d,)."""
        chex.assert_shape(h, self.event_shape)
        b = self.natural
        return jnp.sum(log_cosh(h + b) - log_cosh(b))

    def sample(self, key, n: int) -> jax.Array:
        u = jax.random.uniform(key, (n, *self.event_shape))
        return jnp.where(u < (1.0 + self.means) / 2.0, 1.0, -1.0).astype(jnp.float32)


class BernoulliMixture(Target):
    """A mixture of product Bernoullis: ``p(x) = sum_k pi_k prod_i (1 + mu_ki x_i) / 2``.

    Parameters
    ----------
    weights : array (K,), positive (normalised here)
    means : array (K, d), entries in (-1, 1)
    """

    domain = SPIN
    log_Z = 0.0

    def __init__(self, weights, means):
        means = _check_means(means, "bernoulli_mixture")
        weights = check_array("bernoulli_mixture weights", weights, ndim=1)
        if means.ndim != 2 or means.shape[0] != weights.shape[0]:
            raise InputError(
                f"bernoulli_mixture means must have shape (K, d) with K = {weights.shape[0]} weights, got {means.shape}"
            )
        if np.any(weights <= 0):
            raise InputError("bernoulli_mixture weights must be positive")
        self.weights = jnp.asarray(weights / weights.sum(), jnp.float32)
        self.means = jnp.asarray(means)
        self.event_shape = (int(means.shape[1]),)
        self.name = f"bernoulli_mixture_d{self.event_shape[0]}_k{weights.shape[0]}"

    @property
    def natural(self) -> jax.Array:
        """``b_k = atanh(mu_k)`` per component, (K, d)."""
        return jnp.arctanh(self.means)

    def _log_prob(self, x):
        per_component = jnp.sum(jnp.log1p(self.means * x) - math.log(2.0), axis=-1)
        return jax.scipy.special.logsumexp(jnp.log(self.weights) + per_component)

    def log_partition(self, h: jax.Array) -> jax.Array:
        """``A(h) = logsumexp_k [log pi_k + sum_i log cosh(h_i + b_ki) - log cosh(b_ki)]`` for ONE ``h`` (d,)."""
        chex.assert_shape(h, self.event_shape)
        b = self.natural
        per_component = jnp.sum(log_cosh(h + b) - log_cosh(b), axis=-1)
        return jax.scipy.special.logsumexp(jnp.log(self.weights) + per_component)

    def sample(self, key, n: int) -> jax.Array:
        k_comp, k_bits = jax.random.split(key)
        comp = jax.random.categorical(k_comp, jnp.log(self.weights), shape=(n,))
        u = jax.random.uniform(k_bits, (n, *self.event_shape))
        return jnp.where(u < (1.0 + self.means[comp]) / 2.0, 1.0, -1.0).astype(jnp.float32)


def random_mixture_parameters(
    dim: int, num_components: int, logit_scale: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Weights and means of a random mixture: ``pi = softmax(0.5 z)``, ``mu_ki = tanh(logit_scale z_ki)``, ``z ~ N(0, 1)``.

    NumPy's ``default_rng(seed)``, so the same arguments give the same mixture everywhere.
    """
    rng = np.random.default_rng(seed)
    z = rng.standard_normal(num_components)
    weights = np.exp(0.5 * (z - z.max()))
    means = np.tanh(logit_scale * rng.standard_normal((num_components, dim)))
    return weights / weights.sum(), np.clip(means, -0.999, 0.999)


# --------------------------------------------------------------------------
# binarised digits
# --------------------------------------------------------------------------


class BinaryDigits(Target):
    """scikit-learn's bundled 8x8 digits, binarised: pixel ``>= threshold`` (of 0..16) is +1, else -1.

    The 1797 images are split once by a fixed permutation (NumPy ``default_rng(split_seed)``):
    the last ``test_size`` images of the permutation are the test set, the rest the training set.
    A data set, not a density: ``log_prob`` raises; ``reference()`` is the test set.

    Parameters
    ----------
    threshold : int
        Grey level (1..16) from which a pixel is on (8, half of the range).
    test_size : int
        Held-out images (500).
    split_seed : int
        Seed of the permutation (0).
    """

    domain = SPIN

    def __init__(self, threshold: int = 8, test_size: int = 500, split_seed: int = 0):
        from sklearn.datasets import load_digits  # bundled with scikit-learn: no download

        images = load_digits().images  # (1797, 8, 8), 0..16
        if not 1 <= test_size < len(images):
            raise InputError(f"binary_digits test_size must be in [1, {len(images)}), got {test_size}")
        order = np.random.default_rng(split_seed).permutation(len(images))
        spins = np.where(images >= threshold, 1.0, -1.0).astype(np.float32)[order]
        self._train, self._test = spins[:-test_size], spins[-test_size:]
        self._labels = load_digits().target[order]
        self.event_shape = (8, 8)
        self.name = "binary_digits"

    def _log_prob(self, x):
        raise InputError("binary_digits is a data set without a density: use train(), test() or reference()")

    def train(self) -> np.ndarray:
        """The training images, (n_train, 8, 8) +-1 float32."""
        return self._train

    def test(self) -> np.ndarray:
        """The held-out images, (test_size, 8, 8) +-1 float32."""
        return self._test

    def labels(self, split: str = "train") -> np.ndarray:
        """The digit classes of a split (for plots; never used in training)."""
        n = len(self._train)
        return self._labels[:n] if split == "train" else self._labels[n:]

    def reference(self) -> np.ndarray:
        return self._test

    def describe(self) -> dict:
        return {**super().describe(), "train": len(self._train), "test": len(self._test)}


# --------------------------------------------------------------------------
# registry
# --------------------------------------------------------------------------


@TARGETS.register("product_bernoulli")
def product_bernoulli(means: list) -> ProductBernoulli:
    """Independent +-1 bits with means E[x_i] in (-1, 1); closed-form log partition, exact samples."""
    return ProductBernoulli(means)


@TARGETS.register("bernoulli_mixture")
def bernoulli_mixture(
    dim: Annotated[int, Interval(ge=1)] = 16,
    num_components: PositiveInt = 4,
    logit_scale: PositiveFloat = 1.5,
    seed: NonNegativeInt = 0,
    weights: list | None = None,
    means: list | None = None,
) -> BernoulliMixture:
    """Mixture of product Bernoullis (given, or random by seed); closed-form log partition, enumeration for d <= 20."""
    if (weights is None) != (means is None):
        raise InputError("bernoulli_mixture: give both weights and means, or neither (a random mixture by seed)")
    if weights is None:
        weights, means = random_mixture_parameters(dim, num_components, logit_scale, seed)
    return BernoulliMixture(weights, means)


@TARGETS.register("binary_digits")
def binary_digits(
    threshold: Annotated[int, Interval(ge=1, le=16)] = 8,
    test_size: PositiveInt = 500,
    split_seed: NonNegativeInt = 0,
) -> BinaryDigits:
    """scikit-learn's 8x8 digits binarised at a threshold, fixed train/test split (a data set, no density)."""
    return BinaryDigits(threshold, test_size, split_seed)
