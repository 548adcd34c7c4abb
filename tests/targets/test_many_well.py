"""Many-well: log Z by independent quadrature, the CDF table, exact samples."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, stats

from jaxsamp.targets import many_well as mw

KS_P_MIN = 1e-3  # an exact sampler gives a KS p-value below 1e-3 with probability 1e-3


def _unnormalised(x):
    return np.exp(-(x**4 - 6 * x**2 - 0.5 * x))


def _z1_quad():
    return integrate.quad(_unnormalised, -np.inf, np.inf, epsabs=0, epsrel=1e-13)[0]


def _exact_cdf(x):
    z = _z1_quad()
    return np.array([integrate.quad(_unnormalised, -np.inf, v, epsabs=0, epsrel=1e-12)[0] / z for v in x])


@pytest.fixture(scope="module")
def target():
    return mw.many_well(dim=32)


def test_log_Z_against_adaptive_quadrature_and_the_published_value(target):
    z1 = _z1_quad()
    assert abs(target.log_Z1 - math.log(z1)) < 1e-11
    assert abs(target.log_Z - 16 * (math.log(z1) + 0.5 * math.log(2 * math.pi))) < 1e-9
    # Beyond-ELBOs / FAB constant Z1 = 11784.50927 (paths.md §D3): log Z = 164.6957
    assert abs(math.exp(target.log_Z1) - 11784.50927) < 1e-4
    assert abs(target.log_Z - 164.6957) < 1e-4
    assert mw.ManyWell(dim=4).log_Z == pytest.approx(target.log_Z / 16 * 2, rel=1e-14)


def test_log_prob_is_the_sum_of_pair_energies(target):
    x = np.random.default_rng(0).normal(size=(20, 32)) * 1.5
    with jax.enable_x64(True):
        lp = np.asarray(jax.jit(jax.vmap(target.log_prob))(jnp.asarray(x)))
    x1, x2 = x[:, 0::2], x[:, 1::2]
    ref = -(x1**4 - 6 * x1**2 - 0.5 * x1 + 0.5 * x2**2).sum(1)
    np.testing.assert_allclose(lp, ref, rtol=1e-12)


def test_interpolated_cdf_is_within_5e_9_of_the_exact_cdf(target):
    # interior points of grid intervals, where the linear interpolation is furthest off
    pts = np.linspace(-3.0, 3.2, 41) + 0.37 * (mw._GRID[1] - mw._GRID[0])
    table = np.interp(pts, mw._GRID, target._cdf)
    assert np.max(np.abs(table - _exact_cdf(pts))) < 5e-9
    nodes = mw._GRID[4000::12000]
    assert np.max(np.abs(np.interp(nodes, mw._GRID, target._cdf) - _exact_cdf(nodes))) < 1e-12
    # the barrier split, against quadrature
    right = integrate.quad(_unnormalised, target.barrier, np.inf, epsrel=1e-12)[0] / _z1_quad()
    assert abs(target.right_well_probability - right) < 1e-8


def test_exact_samples(target):
    n = 2000
    x = np.asarray(jax.jit(target.sample, static_argnums=1)(jax.random.key(0), n), np.float64)
    wells, gauss = x[:, 0::2].ravel(), x[:, 1::2].ravel()  # 32000 draws each
    grid = np.linspace(-3.5, 3.5, 1401)
    cdf_on_grid = _exact_cdf(grid)  # linear interpolation of it is within 1e-5 of the exact CDF
    assert stats.kstest(wells, lambda v: np.interp(v, grid, cdf_on_grid)).pvalue > KS_P_MIN
    assert stats.kstest(gauss, stats.norm.cdf).pvalue > KS_P_MIN
    # fraction in the deeper well: binomial z-test, 5 sigma
    frac = target.in_right_well(x).mean()
    p = target.right_well_probability
    assert abs(frac - p) < 5 * math.sqrt(p * (1 - p) / wells.size)


def test_float64_samples(target):
    with jax.enable_x64(True):
        x = jax.jit(target.sample, static_argnums=1)(jax.random.key(1), 500)
        assert x.dtype == jnp.float64
    frac = target.in_right_well(np.asarray(x)).mean()
    p = target.right_well_probability
    assert abs(frac - p) < 5 * math.sqrt(p * (1 - p) / (500 * 16))


def test_odd_dimension_is_rejected():
    with pytest.raises(ValueError, match="even dim"):
        mw.ManyWell(dim=31)


def test_the_deeper_wells_gap_is_the_log_z_error_of_a_collapsed_sampler(target):
    """``16 log(1 / p)`` with ``p`` the right well's mass by adaptive quadrature from the barrier (the energy's local
    maximum, the root of E'(x) = 4x^3 - 12x - 0.5 nearest 0, found here independently): 2.708, the published
    PIS / VarGrad many-well error. (Importance sampling from the target restricted to the all-right mode has
    weights Z p^16 on every draw, hence log Z-hat = log Z - gap.)"""
    roots = np.roots([4.0, 0.0, -12.0, -0.5]).real
    barrier = float(roots[np.argmin(np.abs(roots))])
    p_right = integrate.quad(_unnormalised, barrier, np.inf, epsabs=0, epsrel=1e-12)[0] / _z1_quad()
    assert target.deeper_wells_log_Z_gap == pytest.approx(-16 * math.log(p_right), rel=1e-6)
    assert round(target.deeper_wells_log_Z_gap, 3) == 2.708
