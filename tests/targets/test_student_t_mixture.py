"""Student-t mixture: components against scipy, log Z = 0 by quadrature, exact samples."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, stats

from jaxsamp.targets.student_t_mixture import StudentTMixture, student_t_mixture

KS_P_MIN = 1e-3  # an exact sampler gives a KS p-value below 1e-3 with probability 1e-3


@pytest.fixture(scope="module")
def target():
    return student_t_mixture()


def test_definition_matches_beyond_elbos(target):
    means = jax.random.uniform(jax.random.PRNGKey(0), (10, 2), minval=-10.0, maxval=10.0)
    np.testing.assert_allclose(target.means_np, np.asarray(means, np.float64))
    assert target.df == 2.0 and target.log_Z == 0.0
    np.testing.assert_allclose(target.weights_np, np.full(10, 0.1))


def test_component_log_probs_match_scipy(target):
    x = np.random.default_rng(0).uniform(-15, 15, size=(30, 2))
    with jax.enable_x64(True):
        comp = np.asarray(jax.jit(jax.vmap(target.component_log_probs))(jnp.asarray(x)))
        lp = np.asarray(jax.jit(jax.vmap(target.log_prob))(jnp.asarray(x)))
    ref = np.log(0.1) + stats.t.logpdf(x[:, None, :], df=2, loc=target.means_np[None]).sum(-1)
    np.testing.assert_allclose(comp, ref, rtol=1e-12)
    np.testing.assert_allclose(lp, np.logaddexp.reduce(ref, axis=1), rtol=1e-12)


def test_log_Z_is_zero_by_quadrature():
    """d = 1: int p over R by adaptive quadrature (heavy x^-3 tails included)."""
    t = StudentTMixture([[-3.0], [0.5], [7.0]], df=2.0, scale=1.5, weights=[0.2, 0.5, 0.3])
    with jax.enable_x64(True):
        f = jax.jit(t.log_prob)
        z = integrate.quad(lambda v: np.exp(float(f(jnp.array([v])))), -np.inf, np.inf, epsabs=0, epsrel=1e-10, limit=500)[0]
    assert abs(np.log(z)) < 1e-8


def test_exact_samples_match_the_marginal_cdfs(target):
    x = np.asarray(jax.jit(target.sample, static_argnums=1)(jax.random.key(0), 5000), np.float64)
    for j in range(2):
        def cdf(v, j=j):
            return (0.1 * stats.t.cdf(v[:, None], df=2, loc=target.means_np[None, :, j])).sum(1)

        assert stats.kstest(x[:, j], cdf).pvalue > KS_P_MIN


def test_assign_modes_recovers_each_mean(target):
    np.testing.assert_array_equal(target.assign_modes(jnp.asarray(target.means_np, jnp.float32)), np.arange(10))


def test_invalid_parameters():
    with pytest.raises(ValueError, match="df and scale"):
        StudentTMixture([[0.0]], df=0.0)
    with pytest.raises(ValueError, match=r"\(K, d\)"):
        StudentTMixture([0.0, 1.0])
    with pytest.raises(ValueError, match="weights"):
        StudentTMixture([[0.0], [1.0]], weights=[1.0, -1.0])
