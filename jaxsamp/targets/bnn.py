"""Bayesian neural-network regression on the UCI data sets of the MILE paper.

``targets.get("bnn_regression", dataset="airfoil", hidden=[16, 16])`` is the
full-batch log posterior of a fully connected ReLU network with a Gaussian
likelihood whose mean and log-scale the network predicts, and an ``N(0, s^2)``
prior on every weight and bias, over ONE flat parameter vector (the setting of
Sommer et al. 2025, "Microcanonical Langevin Ensembles: Advancing the Sampling
of Bayesian Neural Networks", ICLR, and of its code's
``experiments/replicate_uci``).

Data: the six UCI regression sets ship in ``jaxsamp/targets/data`` (see its
README for provenance and licences). Rows are shuffled with
``numpy.random.default_rng(split_seed)`` and split 70/10/20 into train,
validation and test (the paper's fractions; the first ``floor(0.7 n)`` shuffled
rows train, the next ``floor(0.8 n) - floor(0.7 n)`` validate). Features AND the
target are standardised with the training split's mean and standard deviation
(the reference loader standardises every column of a regression set, with
full-data statistics); predictive metrics are therefore in standardised units,
``target_scale`` converts them back.

Flat parameter layout: layer by layer, the weight matrix ``W_l`` of shape
``(fan_in, fan_out)`` in row-major order, then its bias ``b_l`` of shape
``(fan_out,)``; the last layer has 2 outputs, the mean ``mu`` and the log-scale
``s`` with ``sigma = clip(exp(s), 1e-6, 1e6)`` (the reference's clip).
"""

from __future__ import annotations

import importlib.resources
import itertools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core.errors import InputError
from jaxsamp.core.registry import TARGETS
from jaxsamp.core.target import Target
from jaxsamp.core.validation import NonNegativeInt, PositiveFloat, check_array

#: The UCI regression sets shipped with the package (``<name>.data``, last column the target).
UCI_DATASETS = ("airfoil", "bikesharing", "concrete", "energy", "protein", "yacht")
#: Train / validation / test fractions of the paper.
SPLIT_FRACTIONS = (0.7, 0.1, 0.2)
#: The reference's clip of the predicted scale.
SCALE_MIN, SCALE_MAX = 1e-6, 1e6
MIN_ROWS = 10


def load_uci(dataset: str, folder=None) -> np.ndarray:
    """Read UCI regression set ``dataset`` as a float64 array ``(rows, features + 1)``, target last.

    Parameters
    ----------
    dataset : str
        One of :data:`UCI_DATASETS` (or any ``<dataset>.data`` file in ``folder``).
    folder : path, optional
        Where to look (default: the package's ``jaxsamp/targets/data``).

    Raises
    ------
    InputError
        An unknown data set or a missing file; a file that is not a whitespace
        separated numeric table with a constant number of columns (at least 2),
        with a NaN/inf entry, or with fewer than 10 rows.
    """
    if not isinstance(dataset, str) or not dataset or "/" in dataset or dataset.startswith("."):
        raise InputError(f"dataset must be a data set name, got {dataset!r}; shipped: {', '.join(UCI_DATASETS)}")
    if folder is None:
        if dataset not in UCI_DATASETS:
            raise InputError(f"unknown dataset {dataset!r}; shipped: {', '.join(UCI_DATASETS)}")
        path = importlib.resources.files("jaxsamp.targets") / "data" / f"{dataset}.data"
    else:
        from pathlib import Path

        path = Path(folder) / f"{dataset}.data"
    if not path.is_file():
        raise InputError(f"data file for {dataset!r} not found: {path}", "reinstall jaxsamp or restore the file")
    rows = []
    with path.open() as f:
        for number, line in enumerate(f, start=1):
            fields = line.split()
            if not fields:
                continue
            try:
                rows.append([float(v) for v in fields])
            except ValueError:
                raise InputError(f"{path}: line {number} is not numeric: {line.strip()[:60]!r}") from None
            if len(rows[-1]) != len(rows[0]):
                raise InputError(f"{path}: line {number} has {len(rows[-1])} columns, the first row {len(rows[0])}")
    if len(rows) < MIN_ROWS or len(rows[0]) < 2:
        raise InputError(
            f"{path}: a regression table needs at least {MIN_ROWS} rows and 2 columns (features, target); "
            f"got {len(rows)} row(s)" + (f" of {len(rows[0])} column(s)" if rows else "")
        )
    data = np.asarray(rows, dtype=np.float64)
    if not np.all(np.isfinite(data)):
        first = tuple(int(i) for i in np.argwhere(~np.isfinite(data))[0])
        raise InputError(f"{path}: NaN/inf entry at row {first[0] + 1}, column {first[1] + 1}")
    return data


class RegressionSplit(NamedTuple):
    """A standardised train / validation / test split (float32 arrays; ``y`` of shape ``(n,)``).

    ``target_mean`` and ``target_scale`` undo the target's standardisation:
    ``y_raw = target_mean + target_scale * y``.
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_valid: np.ndarray
    y_valid: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    target_mean: float
    target_scale: float


def split_and_standardise(data: np.ndarray, seed: int = 0, fractions=SPLIT_FRACTIONS) -> RegressionSplit:
    """Shuffle rows with ``default_rng(seed)``, split by ``fractions``, standardise with training statistics.

    A column that is constant on the training split is centred but not scaled
    (divided by 1).

    Parameters
    ----------
    data : array (n, p + 1)
        Features then the target.
    seed : int
    fractions : (train, valid, test)
        Must sum to 1; every split gets at least one row.
    """
    data = check_array("data", data, ndim=2)
    n = data.shape[0]
    if data.shape[1] < 2:
        raise InputError(f"data needs at least 2 columns (features, target), got shape {data.shape}")
    if len(fractions) != 3 or min(fractions) <= 0 or not math.isclose(sum(fractions), 1.0):
        raise InputError(f"fractions must be three positive numbers summing to 1, got {fractions}")
    rows = np.random.default_rng(seed).permutation(n)
    n_train, n_valid_end = int(n * fractions[0]), int(n * (fractions[0] + fractions[1]))
    if n_train < 1 or n_valid_end - n_train < 1 or n - n_valid_end < 1:
        raise InputError(f"{n} rows are too few to split {fractions}")
    shuffled = data[rows]
    train = shuffled[:n_train]
    mean, std = train.mean(axis=0), train.std(axis=0)
    std = np.where(std > 0, std, 1.0)
    scaled = ((shuffled - mean) / std).astype(np.float32)
    parts = (scaled[:n_train], scaled[n_train:n_valid_end], scaled[n_valid_end:])
    return RegressionSplit(*(a for part in parts for a in (part[:, :-1], part[:, -1])), float(mean[-1]), float(std[-1]))


def layer_sizes(num_features: int, hidden) -> tuple[int, ...]:
    """``(num_features, *hidden, 2)``: the widths of the network's layers."""
    return (int(num_features), *(int(h) for h in hidden), 2)


def num_parameters(sizes) -> int:
    """Weights and biases of a fully connected network with layer widths ``sizes``."""
    return sum(a * b + b for a, b in itertools.pairwise(sizes))


def unflatten(theta: jax.Array, sizes) -> list[tuple[jax.Array, jax.Array]]:
    """The ``(W_l, b_l)`` of every layer from the flat vector ``theta`` (see the module docstring)."""
    layers, start = [], 0
    for fan_in, fan_out in itertools.pairwise(sizes):
        w = theta[start : start + fan_in * fan_out].reshape(fan_in, fan_out)
        start += fan_in * fan_out
        layers.append((w, theta[start : start + fan_out]))
        start += fan_out
    return layers


def forward(theta: jax.Array, x: jax.Array, sizes) -> tuple[jax.Array, jax.Array]:
    """Predicted mean and scale ``(mu, sigma)``, each of shape ``(n,)``, at inputs ``x`` of shape ``(n, p)``."""
    h = x
    layers = unflatten(theta, sizes)
    for w, b in layers[:-1]:
        h = jax.nn.relu(h @ w + b)
    w, b = layers[-1]
    out = h @ w + b
    return out[:, 0], jnp.clip(jnp.exp(out[:, 1]), SCALE_MIN, SCALE_MAX)


def gaussian_log_density(y, mu, sigma):
    """``log N(y; mu, sigma^2)`` elementwise."""
    return -0.5 * ((y - mu) / sigma) ** 2 - jnp.log(sigma) - 0.5 * math.log(2 * math.pi)


class BnnRegression(Target):
    """Posterior of a ReLU network's weights given a regression data set: ``log p(theta) + sum_i log N(y_i; mu, sigma)``.

    ``log_prob(theta) = sum_i log N(y_i; mu_theta(x_i), sigma_theta(x_i)^2) + sum_j log N(theta_j; 0, s^2)``,
    normalising constants included, summed over the whole training split
    (full batch). The evidence is unknown (``log_Z`` is None).

    Parameters
    ----------
    split : RegressionSplit
    hidden : sequence of int
        Hidden widths (the paper: ``[16, 16]``).
    prior_scale : float
        ``s``, the prior standard deviation of every parameter.
    name : str
    """

    def __init__(self, split: RegressionSplit, hidden=(16, 16), prior_scale: float = 1.0, name: str = "bnn_regression"):
        hidden = tuple(hidden)
        if any(not isinstance(h, (int, np.integer)) or isinstance(h, bool) or h < 1 for h in hidden):
            raise InputError(f"hidden must be a list of positive integer widths, got {list(hidden)}")
        if not prior_scale > 0 or not math.isfinite(prior_scale):
            raise InputError(f"prior_scale must be positive and finite, got {prior_scale}")
        self.split, self.prior_scale = split, float(prior_scale)
        self.sizes = layer_sizes(split.x_train.shape[1], hidden)
        self.hidden = hidden
        self.name, self.event_shape = name, (num_parameters(self.sizes),)

    @property
    def num_train(self) -> int:
        return int(self.split.x_train.shape[0])

    def predict(self, theta: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        """``(mu, sigma)`` of shape ``(n,)`` for ONE parameter vector at inputs ``x`` ``(n, p)``."""
        return forward(theta, x, self.sizes)

    def log_likelihood(self, theta: jax.Array, x: jax.Array, y: jax.Array) -> jax.Array:
        """``sum_i log N(y_i; mu(x_i), sigma(x_i)^2)`` for one parameter vector."""
        mu, sigma = self.predict(theta, x)
        return jnp.sum(gaussian_log_density(y, mu, sigma))

    def log_prior(self, theta: jax.Array) -> jax.Array:
        s = self.prior_scale
        return -0.5 * jnp.sum(theta**2) / s**2 - theta.shape[0] * (math.log(s) + 0.5 * math.log(2 * math.pi))

    def _log_prob(self, theta):
        x = jnp.asarray(self.split.x_train, theta.dtype)
        y = jnp.asarray(self.split.y_train, theta.dtype)
        return self.log_likelihood(theta, x, y) + self.log_prior(theta)

    def init_params(self, key: jax.Array) -> jax.Array:
        """One flat parameter vector as a network is initialised for training (flax's ``Dense`` default).

        Weights LeCun-normal (truncated normal of variance ``1 / fan_in``),
        biases zero.
        """
        keys = jax.random.split(key, len(self.sizes) - 1)
        init = jax.nn.initializers.lecun_normal()
        parts = []
        for k, fan_in, fan_out in zip(keys, self.sizes[:-1], self.sizes[1:]):
            parts += [init(k, (fan_in, fan_out), jnp.float32).ravel(), jnp.zeros(fan_out, jnp.float32)]
        return jnp.concatenate(parts)

    def describe(self) -> dict:
        return {**super().describe(), "layers": list(self.sizes), "num_train": self.num_train}


@TARGETS.register("bnn_regression")
def bnn_regression(
    dataset: str = "airfoil",
    hidden: list | None = None,
    split_seed: NonNegativeInt = 0,
    prior_scale: PositiveFloat = 1.0,
) -> BnnRegression:
    """Bayesian ReLU network (mean and log-scale outputs, N(0, 1) prior) on a UCI regression set; log Z unknown."""
    hidden = [16, 16] if hidden is None else hidden
    split = split_and_standardise(load_uci(dataset), split_seed)
    return BnnRegression(split, hidden, prior_scale, name=f"bnn_regression_{dataset}")
