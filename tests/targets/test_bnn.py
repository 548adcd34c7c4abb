"""BNN regression targets: the log posterior against numpy by hand, the shipped data and split, bad data files.

Oracle: a 3-4-3-2 ReLU network on 6 points, its weights laid out by hand and its
Gaussian log-likelihood (predicted mean and clipped log-scale) plus the N(0, s^2)
log prior written in numpy float64.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsamp.targets
from jaxsamp.core.errors import ConfigError, InputError
from jaxsamp.targets.bnn import UCI_DATASETS, BnnRegression, RegressionSplit, load_uci, split_and_standardise


def _tiny_split():
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(6, 3)).astype(np.float32), rng.normal(size=6).astype(np.float32)
    return RegressionSplit(x, y, x[:2], y[:2], x[:2], y[:2], 0.0, 1.0)


def _numpy_log_posterior(layers, x, y, prior_scale):
    """Forward pass, Gaussian log-likelihood and Gaussian log prior, float64, by hand."""
    h = x.astype(np.float64)
    for w, b in layers[:-1]:
        h = np.maximum(h @ w + b, 0.0)
    w, b = layers[-1]
    out = h @ w + b
    mu, sigma = out[:, 0], np.clip(np.exp(out[:, 1]), 1e-6, 1e6)
    log_lik = np.sum(-0.5 * ((y - mu) / sigma) ** 2 - np.log(sigma) - 0.5 * math.log(2 * math.pi))
    theta = np.concatenate([np.concatenate([w.ravel(), b]) for w, b in layers])
    log_prior = np.sum(-0.5 * (theta / prior_scale) ** 2 - math.log(prior_scale) - 0.5 * math.log(2 * math.pi))
    return log_lik + log_prior


@pytest.mark.parametrize("last_bias", [0.3, -20.0])  # -20: sigma = e^-20 is clipped to 1e-6
def test_log_posterior_equals_numpy_by_hand(last_bias):
    split = _tiny_split()
    target = BnnRegression(split, hidden=[4, 3], prior_scale=1.7)
    rng = np.random.default_rng(0)
    layers = [(rng.normal(size=(a, b)), rng.normal(size=b)) for a, b in ((3, 4), (4, 3), (3, 2))]
    layers[-1][1][1] = last_bias
    theta = np.concatenate([np.concatenate([w.ravel(), b]) for w, b in layers])  # the documented layout
    assert target.event_shape == (theta.size,) == (3 * 4 + 4 + 4 * 3 + 3 + 3 * 2 + 2,)
    want = _numpy_log_posterior(layers, split.x_train, split.y_train.astype(np.float64), 1.7)
    with jax.enable_x64(True):
        got = float(target.log_prob(jnp.asarray(theta)))
    assert got == pytest.approx(want, rel=1e-12)
    got32 = float(jax.jit(target.log_prob)(jnp.asarray(theta, jnp.float32)))
    assert got32 == pytest.approx(want, rel=1e-5)


def test_shipped_airfoil_split_and_standardisation():
    target = jaxsamp.targets.get("bnn_regression", dataset="airfoil", hidden=[16, 16])
    assert target.event_shape == (5 * 16 + 16 + 16 * 16 + 16 + 16 * 2 + 2,) and target.log_Z is None
    s = target.split
    assert (len(s.x_train), len(s.x_valid), len(s.x_test)) == (1052, 150, 301)  # floor(0.7 n), floor(0.8 n) - ..., rest
    np.testing.assert_allclose(s.x_train.mean(0), 0.0, atol=1e-5)
    np.testing.assert_allclose(s.x_train.std(0), 1.0, atol=1e-5)
    assert abs(float(s.y_train.mean())) < 1e-5 and float(s.y_train.std()) == pytest.approx(1.0, abs=1e-5)
    raw = load_uci("airfoil")
    assert raw.shape == (1503, 6)
    y_back = np.sort(np.concatenate([s.y_train, s.y_valid, s.y_test]) * s.target_scale + s.target_mean)
    np.testing.assert_allclose(y_back, np.sort(raw[:, -1]), rtol=1e-5)  # a permutation of the data, nothing lost
    other = split_and_standardise(raw, seed=1)
    assert not np.array_equal(other.y_test, s.y_test)
    np.testing.assert_array_equal(split_and_standardise(raw, seed=0).y_test, s.y_test)


def test_every_shipped_data_set_loads():
    shapes = {name: load_uci(name).shape for name in UCI_DATASETS}
    assert shapes == {
        "airfoil": (1503, 6),
        "bikesharing": (17379, 13),
        "concrete": (1030, 9),
        "energy": (768, 9),
        "protein": (45730, 10),
        "yacht": (308, 7),
    }


@pytest.mark.parametrize(
    "text, message",
    [
        ("1 2 3\n" * 11 + "1 x 3\n", "line 12 is not numeric"),
        ("1 2 3\n" * 11 + "1 2\n", "line 12 has 2 columns"),
        ("1 2 3\n" * 11 + "1 nan 3\n", "NaN/inf entry at row 12, column 2"),
        ("1 2 3\n" * 4, "at least 10 rows"),
        ("1\n" * 12, "2 columns"),
    ],
)
def test_malformed_data_files_are_clear_errors(tmp_path, text, message):
    (tmp_path / "bad.data").write_text(text)
    with pytest.raises(InputError, match=message):
        load_uci("bad", folder=tmp_path)


def test_missing_data_and_bad_parameters_are_clear_errors(tmp_path):
    with pytest.raises(InputError, match="not found"):
        load_uci("airfoil", folder=tmp_path)
    with pytest.raises(ConfigError, match="unknown dataset 'boston'"):
        jaxsamp.targets.get("bnn_regression", dataset="boston")
    with pytest.raises(ConfigError, match="hidden must be a list of positive integer widths"):
        jaxsamp.targets.get("bnn_regression", dataset="yacht", hidden=[16, 0])
    with pytest.raises(ConfigError, match="prior_scale"):
        jaxsamp.targets.get("bnn_regression", dataset="yacht", prior_scale=-1.0)
    with pytest.raises(InputError, match="rows are too few to split"):
        split_and_standardise(np.ones((2, 3)))
