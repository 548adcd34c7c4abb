"""The von Mises-Fisher distribution: Wood's sampler against closed-form moments and CDF, the log normaliser against mpmath."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import jaxsamp.targets
from jaxsamp.core.errors import InputError
from jaxsamp.targets.sphere import VmfMixture, _wood_cosines, log_vmf_normalizer, mean_resultant_length, sample_vmf

mpmath = pytest.importorskip("mpmath")


@pytest.mark.parametrize("dim", [3, 10, 64, 256])
@pytest.mark.parametrize("kappa", [0.5, 5.0, 100.0])
def test_mean_cosine_is_the_bessel_ratio(dim, kappa):
    """E[mu^T x] = A_d(kappa) = I_{d/2} / I_{d/2-1}. Budget: 5 standard errors of the mean, n = 10000."""
    n = 10_000
    mu = np.random.default_rng(dim).normal(size=dim)
    mu /= np.linalg.norm(mu)
    x = np.asarray(sample_vmf(jax.random.key(dim + int(kappa)), jnp.asarray(mu, jnp.float32), kappa, n), np.float64)
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-5)
    w = x @ mu
    want = float(mpmath.besseli(dim / 2, kappa) / mpmath.besseli(dim / 2 - 1, kappa))
    assert abs(w.mean() - want) < 5 * w.std() / np.sqrt(n), (w.mean(), want)
    np.testing.assert_allclose(float(mean_resultant_length(dim, kappa)), want, rtol=1e-4)  # float32


def test_mean_direction_and_uniform_limit():
    """E[x] = A_d(kappa) mu in every coordinate; kappa = 0 is uniform: E[x] = 0 and E[x x^T] = I / d (5 standard errors)."""
    n, dim, kappa = 40_000, 6, 2.0
    mu = np.ones(dim) / np.sqrt(dim)
    x = np.asarray(sample_vmf(jax.random.key(0), jnp.asarray(mu, jnp.float32), kappa, n), np.float64)
    se = x.std(0) / np.sqrt(n)
    assert np.all(np.abs(x.mean(0) - float(mean_resultant_length(dim, kappa)) * mu) < 5 * se)
    u = np.asarray(sample_vmf(jax.random.key(1), jnp.asarray(mu, jnp.float32), 0.0, n), np.float64)
    assert np.all(np.abs(u.mean(0)) < 5 * u.std(0) / np.sqrt(n))
    second = u[:, :, None] * u[:, None, :]
    assert np.all(np.abs(second.mean(0) - np.eye(dim) / dim) < 5 * second.std(0) / np.sqrt(n) + 1e-12)


@pytest.mark.parametrize("kappa", [0.3, 4.0, 50.0])
def test_cosine_on_s2_follows_the_exact_cdf(kappa):
    """d = 3: F(w) = (e^{kappa w} - e^{-kappa}) / (e^{kappa} - e^{-kappa}), for the sampler (closed-form
    inverse CDF on S^2) and for Wood's pooled rejection sampler run at d = 3, in one pool of 5000 and as 5000
    single draws (whose pools of two often need further rounds). KS tests on 5000 draws; budget p > 1e-3."""
    mu = np.array([0.0, 0.0, 1.0])
    w = np.asarray(sample_vmf(jax.random.key(int(kappa * 10)), jnp.asarray(mu), kappa, 5000))[:, 2].astype(np.float64)
    wood = np.asarray(_wood_cosines(jax.random.key(7), 3, jnp.float32(kappa), 5000), np.float64)
    keys = jax.random.split(jax.random.key(8), 5000)
    single = np.asarray(jax.vmap(lambda k: _wood_cosines(k, 3, jnp.float32(kappa), 1)[0])(keys), np.float64)

    def cdf(v):
        return np.exp(kappa * (v - 1)) * np.expm1(-kappa * (v + 1)) / np.expm1(-2 * kappa)

    assert stats.kstest(w, cdf).pvalue > 1e-3
    assert stats.kstest(wood, cdf).pvalue > 1e-3
    assert stats.kstest(single, cdf).pvalue > 1e-3


def _mp_log_normalizer(dim, kappa):
    if kappa == 0:
        return float(mpmath.loggamma(dim / 2) - mpmath.log(2) - dim / 2 * mpmath.log(mpmath.pi))
    v, k = mpmath.mpf(dim) / 2 - 1, mpmath.mpf(kappa)
    return float(v * mpmath.log(k) - dim / 2 * mpmath.log(2 * mpmath.pi) - mpmath.log(mpmath.besseli(v, k)))


def test_log_normalizer_matches_mpmath_across_the_grid():
    """float64, d = 2 ... 1024, kappa = 0 ... 1e5: relative error <= 1e-6 (absolute where |log C| < 1)."""
    mpmath.mp.dps = 40
    dims, kappas = [2, 3, 4, 10, 64, 256, 1024], [0.0, 1e-8, 1e-3, 0.1, 1.0, 10.0, 100.0, 1e3, 1e4, 1e5]
    with jax.enable_x64(True):
        got = {d: np.asarray(log_vmf_normalizer(d, np.asarray(kappas, np.float64))) for d in dims}
    for d in dims:
        for kappa, value in zip(kappas, got[d]):
            want = _mp_log_normalizer(d, kappa)
            assert abs(value - want) <= 1e-6 * max(1.0, abs(want)), (d, kappa, value, want)


def test_mixture_is_normalised_and_samples_its_components():
    """d = 3: the density integrates to 1 (quadrature over the sphere); samples put the right mass near each mode."""
    target = VmfMixture([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], [20.0, 5.0], weights=[0.3, 0.7])
    theta, phi = np.linspace(0, np.pi, 801), np.linspace(0, 2 * np.pi, 1601)
    T, P = np.meshgrid(theta, phi, indexing="ij")
    pts = np.stack([np.sin(T) * np.cos(P), np.sin(T) * np.sin(P), np.cos(T)], -1).reshape(-1, 3)
    with jax.enable_x64(True):
        dens = np.exp(np.asarray(jax.vmap(target.log_prob)(jnp.asarray(pts)))).reshape(T.shape)
    integral = np.trapezoid(np.trapezoid(dens * np.sin(T), phi, axis=1), theta)
    np.testing.assert_allclose(integral, 1.0, rtol=1e-4)
    x = np.asarray(target.sample(jax.random.key(0), 20_000))
    near_first = np.mean(x[:, 0] > 0.7)  # the kappa=20 mode holds ~all its mass within cos > 0.7
    assert abs(near_first - 0.3) < 5 * np.sqrt(0.3 * 0.7 / 20_000) + 0.01


def test_registered_targets_and_errors():
    t = jaxsamp.targets.get("vmf", dim=4, kappa=2.0)
    assert t.domain.kind == "sphere" and t.domain.ambient_dim == 4 and t.event_shape == (4,)
    with jax.enable_x64(True):
        assert abs(t.log_Z + float(log_vmf_normalizer(4, 2.0))) < 1e-12
    with pytest.raises(InputError, match="dim >= 2"):
        jaxsamp.targets.get("vmf", dim=1)
    with pytest.raises(InputError, match="non-zero"):
        jaxsamp.targets.sphere.VonMisesFisher([0.0, 0.0], 1.0)
