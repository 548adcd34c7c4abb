"""2-D transition-path systems: stationary points, saddle values, log Z by adaptive quadrature."""

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, optimize

from jaxsamp.targets.transition_paths import (
    MULLER_BROWN_MINIMA,
    MULLER_BROWN_SADDLES,
    double_well_2d,
    double_well_2d_potential,
    muller_brown,
    muller_brown_potential,
)


@pytest.fixture(scope="module")
def systems():
    return {"double_well_2d": double_well_2d(), "muller_brown": muller_brown()}


def _grad_and_hessian(target, points):
    """Gradients and Hessian eigenvalues of V at several points, float64, one compilation."""
    with jax.enable_x64(True):
        x = jnp.asarray(points, jnp.float64)
        grad = np.asarray(jax.jit(jax.vmap(jax.grad(target.potential)))(x))
        hess = np.asarray(jax.jit(jax.vmap(jax.hessian(target.potential)))(x))
    return grad, np.linalg.eigvalsh(hess)


def test_double_well_minima_and_saddles(systems):
    t = systems["double_well_2d"]
    spec = t.spec
    assert spec.start == (-math.sqrt(5) / 2, 0.0) and spec.end == (math.sqrt(5) / 2, 0.0)
    np.testing.assert_allclose(double_well_2d_potential(np.array(spec.minima)), -1 / 12, atol=1e-14)
    np.testing.assert_allclose(double_well_2d_potential(np.array(spec.saddles)), 1.0, atol=1e-14)
    grad, eig = _grad_and_hessian(t, spec.minima + spec.saddles)
    assert np.abs(grad).max() < 1e-12
    assert np.all(eig[:2] > 0)
    # degenerate saddles: V(x, +-1) = 1 + 4x^4/3, so the Hessian there is diag(0, 8)
    np.testing.assert_allclose(eig[2:], [[0.0, 8.0], [0.0, 8.0]], atol=1e-12)
    # the saddles are the mountain pass: the lowest energy profile min_y V(x, y) across
    # x in [start, end] rises from -1/12 to exactly 1 at x = 0
    xs = np.linspace(spec.start[0], spec.end[0], 23)
    profile = [
        optimize.minimize_scalar(lambda y, x=x: double_well_2d_potential(np.array([x, y])), bounds=(0, 2),
                                 method="bounded", options={"xatol": 1e-10}).fun
        for x in xs
    ]
    assert np.argmax(profile) == 11 and profile[11] == pytest.approx(1.0, abs=1e-12)
    assert profile[0] == pytest.approx(-1 / 12, abs=1e-12) and profile[-1] == pytest.approx(-1 / 12, abs=1e-12)
    # paths.md §A4: barrier about 10.5 kB T at 1200 K with kB in eV/K
    assert spec.kB == 8.6173303e-5 and spec.temperature == 1200.0
    assert (1.0 + 1 / 12) / spec.kBT == pytest.approx(10.47, abs=0.01)


def test_muller_brown_stationary_points(systems):
    t = systems["muller_brown"]
    values = [float(muller_brown_potential(np.array(p))) for p in MULLER_BROWN_MINIMA + MULLER_BROWN_SADDLES]
    # Müller & Brown (1979): minima -146.70, -108.17, -80.77; saddles -40.66, -72.25
    np.testing.assert_allclose(values, [-146.6995, -108.1667, -80.7678, -40.6648, -72.2489], atol=1e-4)
    grad, eig = _grad_and_hessian(t, MULLER_BROWN_MINIMA + MULLER_BROWN_SADDLES)
    assert np.abs(grad).max() < 1e-9
    assert np.all(eig[:3] > 0) and np.all(eig[3:, 0] < 0) and np.all(eig[3:, 1] > 0)
    for p in MULLER_BROWN_MINIMA:
        # located again from a perturbed start by an independent optimiser on the scalar formula
        found = optimize.minimize(lambda q: _scalar_muller_brown(*q), np.array(p) + 0.05, method="BFGS", options={"gtol": 1e-10}).x
        np.testing.assert_allclose(found, p, atol=1e-6)
    assert t.spec.start == MULLER_BROWN_MINIMA[0] and t.spec.end == MULLER_BROWN_MINIMA[1]
    assert t.spec.kB == 1.0 and t.spec.beta == pytest.approx(0.1)


def _scalar_double_well(x, y):
    return (4 * (1 - x * x - y * y) ** 2 + 2 * (x * x - 2) ** 2 + ((x + y) ** 2 - 1) ** 2 + ((x - y) ** 2 - 1) ** 2 - 2) / 6


def _scalar_muller_brown(x, y):
    return (
        -200 * math.exp(-((x - 1) ** 2) - 10 * y**2)
        - 100 * math.exp(-(x**2) - 10 * (y - 0.5) ** 2)
        - 170 * math.exp(-6.5 * (x + 0.5) ** 2 + 11 * (x + 0.5) * (y - 1.5) - 6.5 * (y - 1.5) ** 2)
        + 15 * math.exp(0.7 * (x + 1) ** 2 + 0.6 * (x + 1) * (y - 1) + 0.7 * (y - 1) ** 2)
    )


@pytest.mark.parametrize(
    "name, potential, box",
    [("double_well_2d", _scalar_double_well, (-3, 3, -3, 3)), ("muller_brown", _scalar_muller_brown, (-4, 3, -2.5, 4))],
)
def test_log_Z_against_adaptive_quadrature(systems, name, potential, box):
    """Independent scalar formulas integrated by scipy's dblquad."""
    t = systems[name]
    shift = -min(potential(*p) for p in t.spec.minima) / t.spec.kBT

    def density(y, x):
        return math.exp(-potential(x, y) / t.spec.kBT - shift)

    z = integrate.dblquad(density, box[0], box[1], box[2], box[3], epsabs=0, epsrel=1e-10)[0]
    assert abs(math.log(z) + shift - t.log_Z) < 1e-8


def test_jax_and_numpy_potentials_agree_and_force_is_minus_gradient(systems):
    pts = np.random.default_rng(0).uniform(-1.5, 1.5, size=(10, 2))
    for t, potential in ((systems["double_well_2d"], double_well_2d_potential), (systems["muller_brown"], muller_brown_potential)):
        with jax.enable_x64(True):
            v = np.asarray(jax.jit(jax.vmap(t.potential))(jnp.asarray(pts)))
            lp = np.asarray(jax.jit(jax.vmap(t.log_prob))(jnp.asarray(pts)))
            force = np.asarray(jax.jit(jax.vmap(t.force))(jnp.asarray(pts)))
        np.testing.assert_allclose(v, potential(pts), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(lp, -potential(pts) / t.spec.kBT, rtol=1e-12, atol=1e-12)
        h = 1e-6
        fd = np.stack([(potential(pts - h * e) - potential(pts + h * e)) / (2 * h) for e in np.eye(2)], -1)
        np.testing.assert_allclose(force, fd, rtol=1e-5, atol=1e-5)


def test_spec_is_frozen_and_bad_temperatures_are_rejected(systems):
    with pytest.raises(dataclasses.FrozenInstanceError):
        systems["muller_brown"].spec.temperature = 1.0
    with pytest.raises(ValueError, match="positive"):
        double_well_2d(temperature=0.0)
    with pytest.raises(ValueError, match="too high"):
        muller_brown(temperature=1e4)
