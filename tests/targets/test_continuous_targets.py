"""Contract tests shared by every registered continuous target (R^d and the sphere): jit/vmap, float32/float64, errors."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsamp.targets
from jaxsamp.core.target import ReferenceUnavailableError
from jaxsamp.core.errors import ConfigError
from jaxsamp.core.registry import TARGETS
from jaxsamp.targets.particles import ParticleTarget

DISCRETE = ("ising", "potts", "hypergrid", "bit_sequence", "product_bernoulli", "bernoulli_mixture", "binary_digits")
CONTINUOUS = [n for n in TARGETS.names() if n not in (*DISCRETE, "gaussian_mixture")]
EXAMPLE_PARAMS = {"gaussian_mixture": {"means": [[0.0, 0.0], [3.0, 1.0]]}}


def _states(target, n=3):
    """Valid states: exact samples, reference samples, or a jittered cubic lattice of particles."""
    if target.has_exact_samples:
        return np.asarray(jax.jit(target.sample, static_argnums=1)(jax.random.key(1), n), np.float32)
    if isinstance(target, ParticleTarget):
        try:
            return target.reference()[:n]
        except ReferenceUnavailableError:
            side = int(np.ceil(target.n_particles ** (1 / 3)))
            grid = 1.1 * np.stack(np.meshgrid(*[np.arange(side)] * 3, indexing="ij"), -1).reshape(-1, 3)
            grid = grid[: target.n_particles].reshape(1, -1)
            return (grid + 0.02 * np.random.default_rng(0).normal(size=(n, grid.shape[1]))).astype(np.float32)
    return (0.3 * np.random.default_rng(0).normal(size=(n, *target.event_shape))).astype(np.float32)


@pytest.fixture(scope="module", params=CONTINUOUS + ["gaussian_mixture"])
def target_and_states(request):
    target = jaxsamp.targets.get(request.param, **EXAMPLE_PARAMS.get(request.param, {}))
    return target, _states(target)


def test_every_continuous_target_is_listed():
    for name in ("funnel", "many_well", "student_t_mixture", "bayes_logreg", "dw4", "lj13", "lj55",
                 "double_well_2d", "muller_brown", "gaussian", "gmm", "gaussian_mixture"):
        assert name in TARGETS.names()
        assert TARGETS.entry(name).summary, f"{name} has no one-line docstring"


def test_jit_vmap_matches_single_calls(target_and_states):
    target, xs = target_and_states
    batched = jax.jit(jax.vmap(target.log_prob))(xs)
    chex.assert_shape(batched, (xs.shape[0],))
    one = jax.jit(target.log_prob)
    singles = np.array([float(one(jnp.asarray(x))) for x in xs])
    np.testing.assert_allclose(batched, singles, rtol=1e-5, atol=1e-4)
    assert np.all(np.isfinite(batched))
    grads = jax.jit(jax.vmap(target.score))(xs)
    assert grads.shape == xs.shape and np.all(np.isfinite(grads))


def test_float64_agrees_with_float32(target_and_states):
    target, xs = target_and_states
    lp32 = jax.jit(jax.vmap(target.log_prob))(jnp.asarray(xs))
    assert lp32.dtype == jnp.float32
    with jax.enable_x64(True):
        lp64 = jax.jit(jax.vmap(target.log_prob))(jnp.asarray(xs, jnp.float64))
        assert lp64.dtype == jnp.float64
        lp64 = np.asarray(lp64)
    np.testing.assert_allclose(lp32, lp64, rtol=1e-4, atol=1e-3)


def test_exact_samples_have_the_requested_shape_and_dtype(target_and_states):
    target, _ = target_and_states
    if not target.has_exact_samples:
        with pytest.raises(ReferenceUnavailableError):
            target.sample(jax.random.key(0), 2)
        return
    # shapes and dtypes by abstract evaluation (no compilation); values are tested per target
    x = jax.eval_shape(lambda k: target.sample(k, 5), jax.random.key(0))
    assert x.shape == (5, *target.event_shape) and x.dtype == jnp.float32
    with jax.enable_x64(True):
        assert jax.eval_shape(lambda k: target.sample(k, 5), jax.random.key(0)).dtype == jnp.float64


def test_wrong_shape_or_dtype_is_a_clear_error(target_and_states):
    target, xs = target_and_states
    x = jnp.asarray(xs[0])
    with pytest.raises(AssertionError, match="batch with jax.vmap"):
        target.log_prob(x[None])
    with pytest.raises(AssertionError, match="batch with jax.vmap"):
        target.log_prob(jnp.zeros(target.event_shape[0] + 1))
    with pytest.raises(AssertionError):
        target.log_prob(jnp.zeros(target.event_shape, jnp.int32))


def test_describe_names_what_is_exact(target_and_states):
    target, _ = target_and_states
    info = target.describe()
    assert info["domain"] in ("real", "sphere") and info["event_shape"] == list(target.event_shape)
    assert info["exact_samples"] == target.has_exact_samples


def test_bad_parameters_are_config_errors():
    with pytest.raises(ConfigError, match="dim"):
        jaxsamp.targets.get("funnel", dim="ten")
    with pytest.raises(ConfigError, match="unknown parameter"):
        jaxsamp.targets.get("dw4", n_particles=5)
    with pytest.raises(ConfigError, match="temperature"):
        jaxsamp.targets.get("muller_brown", temperature="hot")
