"""DW-4, LJ-13, LJ-55: energies against independent code, reference sets, E(n) x S_n invariance."""

import importlib.resources
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from jaxsamp.core.target import ReferenceUnavailableError
from jaxsamp.targets.particles import dw4, lj13, lj55, remove_com


@pytest.fixture(scope="module")
def targets():
    return {"dw4": dw4(), "lj13": lj13(), "lj55": lj55()}


@pytest.fixture(scope="module")
def energies(targets):
    """jitted batched energies, one compilation per target and dtype."""
    return {name: jax.jit(jax.vmap(t.energy)) for name, t in targets.items()}


def _dw_energy_loops(x):
    """DW-4 written pair by pair (bgflow MultiDoubleWellPotential, a=0.9, b=-4, c=0, d0=4)."""
    p = x.reshape(4, 2)
    e = 0.0
    for i, j in itertools.combinations(range(4), 2):
        d = np.sqrt(np.sum((p[i] - p[j]) ** 2) + 1e-8)
        e += 0.9 * (d - 4) ** 4 - 4 * (d - 4) ** 2
    return e


def _lj_energy_loops(x, n):
    """LJ over ordered pairs i != j plus 0.5 |x_i - mean|^2 (iDEM lennard_jones_energy)."""
    p = x.reshape(n, 3)
    e = 0.0
    for i, j in itertools.permutations(range(n), 2):
        r = np.linalg.norm(p[i] - p[j])
        e += r**-12 - 2 * r**-6
    return e + 0.5 * np.sum((p - p.mean(0)) ** 2)


def _lj55_configuration(seed=0):
    """A jittered cubic lattice (spacing 1.1): 55 particles with no overlaps."""
    grid = 1.1 * np.stack(np.meshgrid(*[np.arange(4)] * 3, indexing="ij"), -1).reshape(-1, 3)[:55]
    return (grid + 0.05 * np.random.default_rng(seed).normal(size=grid.shape)).reshape(-1)


def test_metadata(targets):
    for name, n, dim in (("dw4", 4, 2), ("lj13", 13, 3), ("lj55", 55, 3)):
        t = targets[name]
        assert (t.n_particles, t.spatial_dim, t.event_shape) == (n, dim, (n * dim,))
        assert t.log_Z is None and not t.has_exact_samples
    assert targets["dw4"].describe()["reference_set"] and targets["lj55"].describe()["reference_set"] is None


def test_energies_match_independent_loops(targets, energies):
    ref_dw = targets["dw4"].reference()[:50].astype(np.float64)
    ref_lj = targets["lj13"].reference()[:20].astype(np.float64)
    conf55 = _lj55_configuration()[None]
    with jax.enable_x64(True):
        np.testing.assert_allclose(energies["dw4"](jnp.asarray(ref_dw)), [_dw_energy_loops(x) for x in ref_dw], rtol=1e-12)
        np.testing.assert_allclose(energies["lj13"](jnp.asarray(ref_lj)), [_lj_energy_loops(x, 13) for x in ref_lj], rtol=1e-12)
        np.testing.assert_allclose(energies["lj55"](jnp.asarray(conf55)), [_lj_energy_loops(conf55[0], 55)], rtol=1e-12)
    np.testing.assert_allclose(
        -jax.vmap(targets["dw4"].log_prob)(jnp.asarray(ref_dw, jnp.float32)), energies["dw4"](jnp.asarray(ref_dw, jnp.float32)), rtol=1e-6
    )


@pytest.mark.parametrize(
    "name, split, low, high",
    [
        # observed min / max: DW-4 test [-25.749, -11.838], val [-25.749, -12.040];
        # LJ-13 test [-66.18, -10.21], val [-69.82, -8.91]
        ("dw4", "test", -26.0, -11.0),
        ("dw4", "val", -26.0, -11.0),
        ("lj13", "test", -67.0, -10.0),
        ("lj13", "val", -70.0, -8.5),
    ],
)
def test_reference_sets_load_centred_with_energies_in_range(targets, energies, name, split, low, high):
    t = targets[name]
    ref = t.reference(split)
    assert ref.shape == (10000, t.n_particles * t.spatial_dim) and ref.dtype == np.float32
    com = ref.reshape(len(ref), t.n_particles, t.spatial_dim).mean(1)
    assert np.abs(com).max() < 1e-5
    e = np.asarray(energies[name](jnp.asarray(ref)))
    assert low < e.min() and e.max() < high
    assert e.min() < low + 2.0  # the range is tight: the minimum is within 2 of the bound


def test_dw4_file_is_not_centred_but_reference_is(targets):
    path = importlib.resources.files("jaxsamp.targets") / "data" / "test_split_DW4.npy"
    with path.open("rb") as f:
        raw = np.load(f)
    assert np.abs(raw.reshape(-1, 4, 2).mean(1)).max() > 1.0
    np.testing.assert_allclose(targets["dw4"].reference("test"), remove_com(raw, 4, 2), atol=1e-6)


def test_lj55_has_no_reference_set(targets):
    with pytest.raises(ReferenceUnavailableError, match="LJ-55"):
        targets["lj55"].reference()
    with pytest.raises(ValueError, match="split"):
        targets["dw4"].reference("train")


def test_remove_com():
    x = np.random.default_rng(0).normal(size=(5, 39)) + 3.0
    y = remove_com(x, 13, 3)
    assert y.shape == x.shape
    np.testing.assert_allclose(y.reshape(5, 13, 3).mean(1), 0.0, atol=1e-12)
    np.testing.assert_allclose(remove_com(y, 13, 3), y)
    np.testing.assert_allclose(remove_com(jnp.asarray(x[0]), 13, 3), y[0], rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="n_particles \\* spatial_dim"):
        remove_com(x, 4, 2)


def _random_orthogonal(rng, dim, reflect):
    q, r = np.linalg.qr(rng.normal(size=(dim, dim)))
    q = q * np.sign(np.diag(r))
    if (np.linalg.det(q) < 0) != reflect:
        q[:, 0] = -q[:, 0]
    return q


@given(
    name=st.sampled_from(["dw4", "lj13"]),
    index=st.integers(0, 9999),
    seed=st.integers(0, 2**32 - 1),
    reflect=st.booleans(),
    shift=st.floats(-10.0, 10.0),
)
def test_energy_is_invariant_under_euclidean_maps_and_permutations(targets, energies, name, index, seed, reflect, shift):
    t = targets[name]
    n, dim = t.n_particles, t.spatial_dim
    rng = np.random.default_rng(seed)
    x = t.reference()[index].astype(np.float64).reshape(n, dim)
    q = _random_orthogonal(rng, dim, reflect)
    moved = (x @ q.T + shift * rng.normal(size=dim))[rng.permutation(n)]
    with jax.enable_x64(True):
        e = np.asarray(energies[name](jnp.asarray(np.stack([x.reshape(-1), moved.reshape(-1)]))))
    np.testing.assert_allclose(e[1], e[0], rtol=1e-9, atol=1e-9)
