import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsamp.core import GeometricPath, ReferenceUnavailableError
from jaxsamp.targets import get


def test_wrong_event_shape_is_a_chex_error_at_trace_time():
    target = get("gaussian", dim=3)
    with pytest.raises(AssertionError, match="event shape|shape"):
        jax.jit(target.log_prob)(jnp.zeros((4, 3)))
    with pytest.raises(AssertionError):
        jax.jit(target.log_prob)(jnp.zeros(2))


def test_wrong_dtype_is_an_error():
    with pytest.raises(AssertionError):
        get("gaussian", dim=2).log_prob(jnp.zeros(2, dtype=jnp.int32))


def test_missing_reference_is_a_clear_error():
    from jaxsamp.core import Target

    class Bare(Target):
        name = "bare"
        event_shape = (1,)

        def _log_prob(self, x):
            return -jnp.sum(x**2)

    with pytest.raises(ReferenceUnavailableError, match="bare"):
        Bare().sample(jax.random.key(0), 3)
    assert not Bare().has_exact_samples


def test_geometric_path_endpoints_and_derivative():
    base = get("gaussian", dim=2, scale=3.0)
    target = get("gaussian_mixture", means=[[-1.0, 0.0], [2.0, 1.0]], scales=0.5)
    path = GeometricPath(base, target)
    x = jnp.array([0.3, -0.2])
    assert float(path.log_prob(x, 0.0)) == pytest.approx(float(base.log_prob(x)))
    assert float(path.log_prob(x, 1.0)) == pytest.approx(float(target.log_prob(x)))
    closed = float(path.dlog_prob_dt(x, 0.4))
    from jaxsamp.core.target import AnnealingPath

    generic = float(AnnealingPath.dlog_prob_dt(path, x, 0.4))
    assert closed == pytest.approx(generic, rel=1e-5)
    assert path.log_Z0 == pytest.approx(base.log_Z)


def test_path_member_is_a_target():
    base = get("gaussian", dim=2)
    path = GeometricPath(base, get("gaussian", dim=2, scale=2.0))
    member = path.at(0.5)
    x = jnp.ones(2)
    assert float(member.log_prob(x)) == pytest.approx(float(path.log_prob(x, 0.5)))


def test_gaussian_log_z_matches_quadrature():
    target = get("gaussian", dim=2, scale=1.5, correlation=0.3)
    g = np.linspace(-12, 12, 801)
    X, Y = np.meshgrid(g, g)
    pts = jnp.asarray(np.stack([X.ravel(), Y.ravel()], -1), jnp.float32)
    vals = np.exp(np.asarray(jax.vmap(target.log_prob)(pts), np.float64))
    integral = vals.sum() * (g[1] - g[0]) ** 2
    assert np.log(integral) == pytest.approx(target.log_Z, abs=1e-4)


@pytest.mark.parametrize("name, params", [("gaussian", {"dim": 2}), ("funnel", {}),
                                          ("bernoulli_mixture", {"dim": 4, "num_components": 2})])
def test_every_target_sample_checks_key_and_n(name, params):
    """The base class adds the checks to each subclass's own sample: a seed works, bad n or key is an InputError."""
    from jaxsamp.core.errors import InputError

    target = get(name, **params)
    np.testing.assert_array_equal(target.sample(7, 3), target.sample(jax.random.key(7), 3))
    assert target.sample(np.int64(7), 0).shape == (0, *target.event_shape)
    for key, n, match in [(0, 1.5, "n must be int"), (0, -1, "n must be >= 0"), (1.5, 2, "key must be a PRNG key"),
                          (jax.random.split(jax.random.key(0)), 2, "ONE PRNG key")]:
        with pytest.raises(InputError, match=match):
            target.sample(key, n)
