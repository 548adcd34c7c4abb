"""The lattice double well: transfer-integral log Z against closed forms and brute force; exact samples.

Oracles: with ``quartic = 0`` the chain is Gaussian (log Z from the determinant
of its precision matrix, ring and open chain); for 3 sites a brute-force
quadrature on a 121^3 grid; the transfer integral on 512 and 1024 points;
the sampler against the transfer-integral moments (5 sigma).
"""

import math

import jax
import numpy as np
import pytest

import jaxsamp.targets
from jaxsamp.core.errors import ConfigError, InputError
from jaxsamp.targets import LatticeDoubleWell


def gaussian_chain_log_z(n, dt, mass, periodic):
    """``V = x^2 / 2``: E = x^T M x / 2 with M = dt I + (mass / dt) (graph Laplacian of the ring or chain)."""
    m = dt * np.eye(n)
    for i in range(n if periodic else n - 1):
        j = (i + 1) % n
        m[[i, j], [i, j]] += mass / dt
        m[i, j] -= mass / dt
        m[j, i] -= mass / dt
    return 0.5 * n * math.log(2 * math.pi) - 0.5 * np.linalg.slogdet(m)[1]


@pytest.mark.parametrize("periodic", [True, False])
def test_gaussian_chain_log_z_is_the_determinant(periodic):
    target = LatticeDoubleWell(8, quartic=0.0, quadratic=-1.0, periodic=periodic)
    assert target.log_Z == pytest.approx(
        gaussian_chain_log_z(8, 0.5, 3.0, periodic), abs=1e-10
    )


@pytest.mark.parametrize("periodic", [True, False])
def test_three_sites_by_brute_force_quadrature(periodic):
    target = LatticeDoubleWell(3, periodic=periodic)
    g = np.linspace(-5.0, 5.0, 121)
    x = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    potential = target.dt * np.sum(0.25 * x**4 - 1.5 * x**2, axis=1)
    pairs = [(0, 1), (1, 2)] + ([(2, 0)] if periodic else [])
    energy = potential + target.bond * sum((x[:, i] - x[:, j]) ** 2 for i, j in pairs)
    brute = math.log(np.sum(np.exp(-energy)) * (g[1] - g[0]) ** 3)
    assert target.log_Z == pytest.approx(brute, abs=1e-6)
    np.testing.assert_allclose(
        np.asarray(jax.vmap(target.energy)(x[:50].astype(np.float32))),
        energy[:50],
        rtol=1e-5,
    )


def test_default_target_is_converged_and_registered():
    target = jaxsamp.targets.get("lattice_double_well")
    assert target.event_shape == (8,) and target.wells == pytest.approx(math.sqrt(3.0))
    assert LatticeDoubleWell(num_grid=1024).log_Z == pytest.approx(
        target.log_Z, abs=1e-9
    )
    assert target.log_Z == pytest.approx(
        7.2324959, abs=1e-6
    )  # the value of this commit, guarded against drift


def test_samples_match_the_transfer_integral_moments():
    """n = 20 000 draws; each mean within 5 sd (sample sd / sqrt n) of its exact value; the two modes balance."""
    target = jaxsamp.targets.get("lattice_double_well")
    exact = target.exact_moments()
    x = np.asarray(target.sample(jax.random.key(0), 20_000), np.float64)
    for name, values in (
        ("x2", x**2),
        ("x1x2", x * np.roll(x, -1, axis=1)),
        ("x4", x**4),
    ):
        site = values[:, 3]
        assert abs(np.mean(site) - exact[name]) < 5 * np.std(site) / math.sqrt(
            len(site)
        ), name
    right = np.mean(x, axis=1) > 0
    assert abs(np.mean(right) - 0.5) < 5 * 0.5 / math.sqrt(len(right))


def test_open_chain_samples_follow_brute_force_correlations():
    target = LatticeDoubleWell(3, periodic=False)
    g = np.linspace(-5.0, 5.0, 121)
    x = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    w = np.exp(-np.asarray(jax.vmap(target.energy)(x.astype(np.float32)), np.float64))
    w /= w.sum()
    draws = np.asarray(target.sample(jax.random.key(1), 20_000), np.float64)
    for i, j in ((0, 0), (0, 2), (1, 1)):
        values = draws[:, i] * draws[:, j]
        assert abs(np.mean(values) - np.sum(w * x[:, i] * x[:, j])) < 5 * np.std(
            values
        ) / math.sqrt(len(values))


def test_bad_parameters_are_clear_errors():
    with pytest.raises(InputError, match="not integrable"):
        LatticeDoubleWell(8, quartic=0.0, quadratic=1.0)
    with pytest.raises(InputError, match="num_sites >= 3"):
        LatticeDoubleWell(2, periodic=True)
    with pytest.raises(ConfigError, match="mass"):
        jaxsamp.targets.get("lattice_double_well", mass=-1.0)
