"""Ising / Potts lattice targets, their exact references and the LEAPS lattice path.

The reference for every exact quantity is an independent computation: brute-force
enumeration with an explicit bond list (not the ``jnp.roll`` code under test),
a second exact method (Kaufman vs transfer matrix), Onsager's infinite-lattice
free energy, or the q = 2 Potts / Ising identity.
"""

import functools
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.special import logsumexp

from jaxsamp.core.errors import ConfigError
from jaxsamp.targets import get
from jaxsamp.targets import lattice_exact as exact
from jaxsamp.targets.lattice import Ising, LatticePath, Potts

BETA_C = 0.5 * math.log(1 + math.sqrt(2))


# -- independent brute force ------------------------------------------------------
@functools.lru_cache(maxsize=None)
def bond_list(shape):
    """Flat site indices of the (right, down) periodic bonds, written out by hand."""
    lx, ly = shape
    site = lambda i, j: (i % lx) * ly + (j % ly)  # noqa: E731
    pairs = [(site(i, j), site(i, j + 1)) for i in range(lx) for j in range(ly)]
    pairs += [(site(i, j), site(i + 1, j)) for i in range(lx) for j in range(ly)]
    return np.array(pairs).T


def brute_ising_energy(states, J, h):
    a, b = bond_list(states.shape[-2:])
    s = np.asarray(states, np.float64).reshape(len(states), -1)
    return -J * np.sum(s[:, a] * s[:, b], axis=1) - h * np.sum(s, axis=1)


def brute_potts_energy(states, J):
    a, b = bond_list(states.shape[-2:])
    x = np.asarray(states).reshape(len(states), -1)
    return -J * np.sum(x[:, a] == x[:, b], axis=1)


@functools.lru_cache(maxsize=None)
def product_states(shape, values):
    return np.array(list(itertools.product(values, repeat=shape[0] * shape[1]))).reshape(-1, *shape)


def all_single_site_moves_ising(x):
    """``flip_i x`` for every site i (row-major), shape ``(N, Lx, Ly)``."""
    flips = np.where(np.eye(x.size, dtype=bool), -1, 1).reshape(x.size, *x.shape)
    return flips * x[None]


def all_single_site_moves_potts(x, q):
    """``x`` with site i set to c, for every (i, c) in row-major order, shape ``(N q, Lx, Ly)``."""
    moved = np.repeat(x.reshape(1, -1), x.size * q, axis=0)
    moved[np.arange(x.size * q), np.repeat(np.arange(x.size), q)] = np.tile(np.arange(q), x.size)
    return moved.reshape(-1, *x.shape)


def brute_ising_log_Z(shape, beta, J=1.0, h=0.0):
    return logsumexp(-beta * brute_ising_energy(product_states(shape, (-1, 1)), J, h))


# -- Kaufman ------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(3, 3), (4, 4), (3, 4), (4, 3), (2, 3), (2, 2)])
@pytest.mark.parametrize("beta", [0.05, 0.3, BETA_C, 0.7, 1.5])
def test_kaufman_matches_enumeration(shape, beta):
    # below (beta < beta_c) and above T_c, so both signs of gamma_0 are covered
    expected = brute_ising_log_Z(shape, beta)
    assert abs(exact.kaufman_log_Z(shape, beta) - expected) < 1e-9
    assert abs(exact.kaufman_log_Z(shape[::-1], beta) - expected) < 1e-9
    assert abs(Ising(list(shape), beta).exact_log_Z() - expected) < 1e-9


@pytest.mark.parametrize("L", [6, 8])
@pytest.mark.parametrize("beta", [0.2, 0.4407, 0.7])
def test_kaufman_matches_transfer_matrix(L, beta):
    assert abs(exact.kaufman_log_Z((L, L), beta) - exact.ising_transfer_log_Z((L, L), beta)) < 1e-9


def test_kaufman_rectangular_matches_transfer_matrix_and_J_scaling():
    for shape in [(5, 7), (7, 5), (3, 8)]:
        assert abs(exact.kaufman_log_Z(shape, 0.5) - exact.ising_transfer_log_Z(shape, 0.5)) < 1e-9
    # only K = beta J enters
    assert abs(exact.kaufman_log_Z((6, 6), 0.25, J=2.0) - exact.kaufman_log_Z((6, 6), 0.5)) < 1e-12


def onsager_log_Z_per_site(beta, n=400):
    """Onsager (1944): -beta f = ln 2 + 1/(8 pi^2) ∫∫ ln[cosh^2 2K - sinh 2K (cos a + cos b)] da db."""
    k = beta
    theta = (np.arange(n) + 0.5) * 2 * np.pi / n  # midpoint rule: spectrally accurate off criticality
    a, b = np.meshgrid(theta, theta)
    integrand = np.log(np.cosh(2 * k) ** 2 - np.sinh(2 * k) * (np.cos(a) + np.cos(b)))
    return math.log(2) + 0.5 * integrand.mean()


@pytest.mark.parametrize("beta, degeneracy", [(0.3, 1), (0.6, 2)])
def test_kaufman_large_lattice_matches_onsager(beta, degeneracy):
    # away from beta_c the finite-size correction is exp(-L/xi) ~ 0 at L = 128, except
    # the two-fold degenerate ordered ground state that adds log 2 below T_c
    L = 128
    per_site = (exact.kaufman_log_Z((L, L), beta) - math.log(degeneracy)) / L**2
    assert abs(per_site - onsager_log_Z_per_site(beta)) < 1e-10


def test_kaufman_rejects_non_ferromagnetic_coupling():
    with pytest.raises(ValueError, match="beta J > 0"):
        exact.kaufman_log_Z((4, 4), 0.0)


# -- transfer matrices and distributions -------------------------------------------
@pytest.mark.parametrize("shape, beta, J, h", [((3, 3), 0.4, 1.0, 0.3), ((3, 4), 0.7, 1.0, -0.2),
                                               ((2, 3), 0.5, -1.0, 0.1), ((4, 4), 0.3, 0.5, 0.05)])
def test_ising_transfer_matrix_with_field_matches_enumeration(shape, beta, J, h):
    states = product_states(shape, (-1, 1))
    log_w = -beta * brute_ising_energy(states, J, h)
    target = Ising(list(shape), beta, J, h)
    assert abs(target.exact_log_Z() - logsumexp(log_w)) < 1e-9
    # P(m): exact transfer matrix with up-spin counting vs enumeration
    n_up = np.sum(states > 0, axis=(1, 2))
    p_expected = np.bincount(n_up, weights=np.exp(log_w - logsumexp(log_w)), minlength=states[0].size + 1)
    m, p = target.exact_magnetization_distribution()
    np.testing.assert_allclose(m, (2 * np.arange(states[0].size + 1) - states[0].size) / states[0].size)
    np.testing.assert_allclose(p, p_expected, rtol=1e-10, atol=1e-15)


def test_ising_magnetization_distribution_is_symmetric_at_zero_field():
    m, p = Ising(6, BETA_C).exact_magnetization_distribution()
    np.testing.assert_allclose(p, p[::-1], rtol=1e-12)
    assert abs(p.sum() - 1) < 1e-12 and np.all(p >= 0)


def test_enumerate_states_ising():
    target = Ising([3, 4], 0.6, J=0.8, h=0.2)
    states, probs = target.enumerate_states()
    assert states.shape == (2**12, 3, 4) and states.dtype == np.float32
    assert set(np.unique(states)) == {-1.0, 1.0} and len(np.unique(states.reshape(len(states), -1), axis=0)) == 2**12
    expected = np.exp(-target.beta * brute_ising_energy(states, 0.8, 0.2) - target.exact_log_Z())
    np.testing.assert_allclose(probs, expected, rtol=1e-10)
    # the JAX log_prob agrees with the exact probabilities up to log Z (float32)
    lp = np.asarray(jax.jit(jax.vmap(target.log_prob))(jnp.asarray(states[:50])))
    np.testing.assert_allclose(lp - target.exact_log_Z(), np.log(probs[:50]), atol=1e-4)


@pytest.mark.parametrize("shape, q, beta", [((2, 3), 3, 1.0), ((3, 3), 3, 1.0051), ((2, 4), 4, 0.7), ((3, 2), 2, 0.4)])
def test_potts_transfer_matrix_and_enumeration_match_brute_force(shape, q, beta):
    states = product_states(shape, tuple(range(q)))
    log_w = -beta * brute_potts_energy(states, 1.0)
    target = Potts(list(shape), beta, q=q)
    assert abs(target.exact_log_Z() - logsumexp(log_w)) < 1e-9
    got_states, probs = target.enumerate_states()
    assert got_states.dtype == np.int32 and got_states.shape == states.shape
    np.testing.assert_array_equal(got_states, states)  # same lexicographic order
    np.testing.assert_allclose(probs, np.exp(log_w - logsumexp(log_w)), rtol=1e-10)


def test_potts_q2_is_ising_at_half_coupling():
    # 1[x_i = x_j] = (1 + s_i s_j) / 2, so log Z_Potts(beta, J) = beta J N_bonds / 2 + log Z_Ising(beta, J / 2)
    for L, beta in [(6, 0.5), (6, 1.2), ([4, 7], 0.9)]:
        potts, ising = Potts(L, beta, q=2, J=1.0), Ising(L, beta, J=0.5)
        n_bonds = 2 * potts.num_sites
        assert abs(potts.exact_log_Z() - (beta * n_bonds / 2 + ising.exact_log_Z())) < 1e-9
    # and |M| of q = 2 Potts is |m| of Ising
    values, p = Potts([3, 4], 0.9, q=2).exact_magnetization_distribution()
    m, p_ising = Ising([3, 4], 0.9, J=0.5).exact_magnetization_distribution()
    folded = {}
    for mi, pi in zip(np.round(np.abs(m), 12), p_ising):
        folded[mi] = folded.get(mi, 0.0) + pi
    np.testing.assert_allclose(values, sorted(folded))
    np.testing.assert_allclose(p, [folded[v] for v in sorted(folded)], rtol=1e-10)


def test_potts_magnetization_distribution_q3():
    target = Potts([2, 3], 1.0, q=3)
    values, p = target.exact_magnetization_distribution()
    states = product_states((2, 3), (0, 1, 2))
    w = np.exp(-1.0 * brute_potts_energy(states, 1.0))
    mean_abs_m = np.sum(w * np.abs(np.exp(2j * np.pi * states / 3).mean(axis=(1, 2)))) / w.sum()
    assert abs(np.sum(values * p) - mean_abs_m) < 1e-12 and abs(p.sum() - 1) < 1e-12
    assert values[0] == 0 and values[-1] == pytest.approx(1.0)


def test_exact_references_refuse_large_lattices_clearly():
    big = Ising(16, 0.4, h=0.1)  # 2^16 row states
    with pytest.raises(ValueError, match="transfer matrix"):
        big.exact_log_Z()
    assert big.log_Z is None
    with pytest.raises(ValueError, match="P\\(m\\)"):
        Ising(12, 0.4).exact_magnetization_distribution()
    with pytest.raises(ValueError, match="enumeration"):
        Ising(5, 0.4).enumerate_states()
    assert Potts(15, 1.001).log_Z is None
    # Kaufman has no size limit: log_Z is filled for the LEAPS benchmark size
    assert Ising(15, 0.4407).log_Z == pytest.approx(exact.kaufman_log_Z((15, 15), 0.4407), abs=1e-12)
    assert Ising(4, 0.0, h=1.0).exact_log_Z() == pytest.approx(16 * math.log(2))


# -- energies and single-site moves -------------------------------------------------
def test_leaps_sanity_value():
    # U_1(all up) = -beta 2 L^2 = -198.315 at L = 15, beta = 0.4407 (DISCS / LEAPS)
    target = get("ising", L=15, beta=0.4407)
    assert float(target.log_prob(jnp.ones((15, 15)))) == pytest.approx(198.315, rel=1e-6)
    assert float(LatticePath(target).log_prob(jnp.ones((15, 15)), 1.0)) == pytest.approx(198.315, rel=1e-6)


# A few shapes only (each new shape compiles every op again); (2, 3) has double bonds.
SHAPES = [(2, 3), (3, 4), (4, 4)]


@given(
    shape=st.sampled_from(SHAPES),
    seed=st.integers(0, 2**31 - 1),
    beta=st.floats(0.0, 2.0),
    J=st.floats(-2.0, 2.0),
    h=st.floats(-1.0, 1.0),
)
def test_ising_flip_log_ratios_match_brute_force(shape, seed, beta, J, h):
    x = np.random.default_rng(seed).choice([-1.0, 1.0], size=shape)
    target = Ising(list(shape), beta, J, h)
    expected = -beta * (brute_ising_energy(all_single_site_moves_ising(x), J, h) - brute_ising_energy(x[None], J, h))
    got = np.asarray(target.flip_log_ratios(jnp.asarray(x, jnp.float32)))
    assert got.shape == shape
    # float32: |log ratio| <= 2 beta (4 |J| + |h|) <= 36, so 1e-5 absolute is ~ 30 ulp
    np.testing.assert_allclose(got.ravel(), expected, atol=1e-5)
    assert float(target.energy(jnp.asarray(x))) == pytest.approx(brute_ising_energy(x[None], J, h)[0], abs=1e-4)


@given(
    shape=st.sampled_from(SHAPES),
    q=st.sampled_from([2, 3, 5]),
    seed=st.integers(0, 2**31 - 1),
    beta=st.floats(0.0, 2.0),
    J=st.floats(-2.0, 2.0),
)
def test_potts_flip_log_ratios_match_brute_force(shape, q, seed, beta, J):
    x = np.random.default_rng(seed).integers(0, q, size=shape)
    target = Potts(list(shape), beta, q=q, J=J)
    moved = all_single_site_moves_potts(x, q)
    expected = -beta * (brute_potts_energy(moved, J) - brute_potts_energy(x[None], J)).reshape(*shape, q)
    got = np.asarray(target.flip_log_ratios(jnp.asarray(x, jnp.int32)))
    assert got.shape == (*shape, q)
    np.testing.assert_allclose(got, expected, atol=1e-5)
    assert np.all(np.take_along_axis(got, x[..., None], axis=-1) == 0)


@given(
    shape=st.sampled_from(SHAPES),
    q=st.sampled_from([None, 2, 3]),
    seed=st.integers(0, 2**31 - 1),
    beta=st.floats(0.0, 2.0),
    h=st.floats(-1.0, 1.0),
)
def test_site_log_ratios_are_flip_log_ratios_entries_bit_for_bit(shape, q, seed, beta, h):
    """The O(1) one-site ratios equal the whole-lattice ones exactly, sides of 2 (double bonds) included."""
    rng = np.random.default_rng(seed)
    if q is None:
        target, x = Ising(list(shape), beta, -0.7, h), jnp.asarray(rng.choice([-1, 1], size=shape), jnp.int8)
    else:
        target, x = Potts(list(shape), beta, q=q, J=1.3), jnp.asarray(rng.integers(0, q, size=shape), jnp.int8)
    whole = np.asarray(target.flip_log_ratios(x)).reshape(x.size, -1)
    sites = jnp.arange(x.size)
    local = np.asarray(jax.jit(jax.vmap(target.site_log_ratios, in_axes=(None, 0)))(x, sites)).reshape(x.size, -1)
    np.testing.assert_array_equal(local, whole)
    path = LatticePath(target)
    np.testing.assert_array_equal(
        np.asarray(path.site_log_ratios(x, 0.3, 1)).reshape(-1), np.asarray(path.flip_log_ratios(x, 0.3)).reshape(x.size, -1)[1]
    )


def contract_residual(target, x, moves):
    """``flip_log_ratios(x)`` minus the brute ``log_prob(move) - log_prob(x)``, in one compiled call."""
    return jax.jit(
        lambda x, moves: target.flip_log_ratios(x).ravel() - (jax.vmap(target.log_prob)(moves) - target.log_prob(x))
    )(x, moves)


def test_flip_log_ratios_are_log_prob_differences_in_float64():
    with jax.enable_x64(True):
        ising = Ising([3, 5], 0.37, J=1.3, h=-0.4)
        x = np.random.default_rng(0).choice([-1.0, 1.0], size=(3, 5))
        residual = contract_residual(ising, jnp.asarray(x), jnp.asarray(all_single_site_moves_ising(x)))
        assert residual.dtype == jnp.float64 and np.max(np.abs(residual)) < 1e-13
        potts = Potts([4, 3], 1.1, q=4, J=0.6)
        y = np.random.default_rng(1).integers(0, 4, size=(4, 3))
        residual = contract_residual(potts, jnp.asarray(y), jnp.asarray(all_single_site_moves_potts(y, 4)))
        assert residual.dtype == jnp.float64 and np.max(np.abs(residual)) < 1e-13


def batched(target):
    """log_prob and flip_log_ratios of a batch, jitted and vmapped."""
    return jax.jit(lambda xs: (jax.vmap(target.log_prob)(xs), jax.vmap(target.flip_log_ratios)(xs)))


def test_vmap_jit_and_dtypes_agree():
    rng = np.random.default_rng(3)
    ising = Ising(6, 0.44, h=0.1)
    xs = rng.choice([-1.0, 1.0], size=(5, 6, 6))
    exact_lp = -0.44 * brute_ising_energy(xs, 1.0, 0.1)
    lp32, flips32 = batched(ising)(jnp.asarray(xs, jnp.float32))
    assert lp32.dtype == flips32.dtype == jnp.float32
    np.testing.assert_allclose(lp32, exact_lp, rtol=1e-6)
    lp8, flips8 = batched(ising)(jnp.asarray(xs, jnp.int8))  # any numeric spin dtype
    assert lp8.dtype == jnp.float32
    np.testing.assert_allclose(lp8, lp32)
    np.testing.assert_allclose(flips8, flips32)
    # unjitted, one state: the same numbers
    np.testing.assert_allclose(ising.flip_log_ratios(jnp.asarray(xs[2], jnp.float32)), flips32[2], rtol=1e-6)
    with jax.enable_x64(True):
        lp64, flips64 = batched(ising)(jnp.asarray(xs))
        assert lp64.dtype == flips64.dtype == jnp.float64
        np.testing.assert_allclose(lp64, exact_lp, rtol=1e-14)
        np.testing.assert_allclose(flips64, flips32, rtol=1e-6)

    potts = Potts(5, 1.0, q=3)
    ys = rng.integers(0, 3, size=(4, 5, 5))
    exact_potts = -brute_potts_energy(ys, 1.0)
    lp32, flips32 = batched(potts)(jnp.asarray(ys, jnp.int32))
    assert lp32.dtype == flips32.dtype == jnp.float32
    np.testing.assert_allclose(lp32, exact_potts, rtol=1e-6)
    np.testing.assert_allclose(batched(potts)(jnp.asarray(ys, jnp.int8))[0], lp32)
    np.testing.assert_allclose(potts.flip_log_ratios(jnp.asarray(ys[1], jnp.int32)), flips32[1])
    with jax.enable_x64(True):
        lp64, flips64 = batched(potts)(jnp.asarray(ys))
        assert lp64.dtype == flips64.dtype == jnp.float64
        np.testing.assert_allclose(lp64, exact_potts, rtol=1e-14)
        np.testing.assert_allclose(flips64, flips32, rtol=1e-6)


# -- LEAPS lattice path -------------------------------------------------------------
@pytest.mark.parametrize("make", [lambda: Ising([3, 4], 0.5, h=0.2), lambda: Potts([2, 3], 1.0, q=3)])
def test_lattice_path(make):
    target = make()
    path = LatticePath(target)
    k = 2 if isinstance(target, Ising) else 3
    assert path.log_Z0 == pytest.approx(target.num_sites * math.log(k))
    assert path.base.log_Z == path.log_Z0 and path.target is target
    x = path.sample_base(jax.random.key(0), 4000)
    assert x.shape == (4000, *target.event_shape)
    if k == 2:
        assert x.dtype == jnp.float32 and set(np.unique(x)) == {-1.0, 1.0}
        # uniform spins: mean 0 with sd 1/sqrt(4000 * 12); 5 sigma
        assert abs(float(x.mean())) < 5 / math.sqrt(x.size)
    else:
        assert x.dtype == jnp.int32 and set(np.unique(x)) == {0, 1, 2}
        # each category has frequency 1/3 with sd sqrt(2/9 / 24000); 5 sigma
        freq = np.bincount(np.asarray(x).ravel(), minlength=3) / x.size
        assert np.all(np.abs(freq - 1 / 3) < 5 * math.sqrt(2 / 9 / x.size))

    eps = 1e-2

    @jax.jit
    def quantities(xs, ts):
        y, t = xs[0], ts[0]
        return dict(
            at0=path.log_prob(y, 0.0),
            at1=path.log_prob(y, 1.0) - target.log_prob(y),
            # central finite difference: the path is linear in t, so exact up to rounding
            fd=(path.log_prob(y, t + eps) - path.log_prob(y, t - eps)) / (2 * eps) - path.dlog_prob_dt(y, t),
            flips=path.flip_log_ratios(y, t) - t * target.flip_log_ratios(y),
            batch=jax.vmap(path.log_prob)(xs, ts) - ts * jax.vmap(target.log_prob)(xs),
        )

    out = quantities(x[:8], jnp.linspace(0.37, 1.0, 8))
    assert float(out["at0"]) == 0.0
    for name in ("at1", "fd", "flips", "batch"):
        assert np.max(np.abs(out[name])) < 1e-4, name
    # exact log Z_t: endpoints, and d/dt log Z_t = E_{pi_t}[log p] (the quantity LEAPS' F_phi learns)
    assert path.exact_log_Z(0.0) == pytest.approx(path.log_Z0, abs=1e-12)
    assert path.exact_log_Z(1.0) == pytest.approx(target.exact_log_Z(), abs=1e-12)
    _, probs = target.enumerate_states()
    log_p = np.log(probs) + target.exact_log_Z()  # the unnormalised target log_prob of every state
    pi_t = np.exp(0.37 * log_p - logsumexp(0.37 * log_p))
    h = 1e-5
    dlogz = (path.exact_log_Z(0.37 + h) - path.exact_log_Z(0.37 - h)) / (2 * h)
    assert dlogz == pytest.approx(np.sum(pi_t * log_p), abs=1e-6)


def test_lattice_path_needs_a_lattice_target():
    with pytest.raises(TypeError, match="Ising or Potts"):
        LatticePath(get("gaussian", dim=2))


# -- errors -------------------------------------------------------------------------
def test_wrong_shapes_and_dtypes_are_chex_errors():
    ising, potts = Ising(4, 0.4), Potts([2, 3], 1.0)
    for fn in (ising.log_prob, ising.energy, ising.flip_log_ratios):
        with pytest.raises(AssertionError, match="shape"):
            jax.jit(fn)(jnp.ones((3, 4)))
        with pytest.raises(AssertionError, match="vmap"):
            fn(jnp.ones((2, 4, 4)))
    for fn in (potts.log_prob, potts.energy, potts.flip_log_ratios):
        with pytest.raises(AssertionError, match="shape"):
            fn(jnp.zeros((3, 2), jnp.int32))
        with pytest.raises(AssertionError, match="integer"):
            fn(jnp.zeros((2, 3), jnp.float32))


@pytest.mark.parametrize(
    "build, match",
    [
        (lambda: Ising(1, 0.4), "L must be"),
        (lambda: Ising([3], 0.4), "L must be"),
        (lambda: Ising([3, 1], 0.4), "L must be"),
        (lambda: Ising([2, 3, 4], 0.4), "L must be"),
        (lambda: Ising(4, -0.1), "beta"),
        (lambda: Ising(4, float("nan")), "beta"),
        (lambda: Ising(4, 0.4, h=float("inf")), "h must"),
        (lambda: Potts(4, 1.0, q=1), "q must"),
        (lambda: Potts(4, 1.0, q=2.5), "q must"),
        (lambda: Potts(4, -1.0), "beta"),
    ],
)
def test_invalid_parameters_are_value_errors(build, match):
    with pytest.raises(ValueError, match=match):
        build()


def test_registry():
    ising = get("ising", L=[3, 4], beta=0.4, h=0.1)
    assert ising.event_shape == (3, 4) and ising.domain.kind == "spin" and ising.L == (3, 4)
    potts = get("potts", L=5, beta=1.0, q=4)
    assert potts.event_shape == (5, 5) and potts.domain.num_categories == 4 and potts.L == 5
    assert get("ising", L=8, beta=1).beta == 1.0
    with pytest.raises(ConfigError, match="beta"):
        get("ising", L=4)
    with pytest.raises(ConfigError, match="L must be int"):
        get("potts", L="4", beta=1.0)
    assert ising.describe()["log_Z"] == pytest.approx(ising.exact_log_Z())
