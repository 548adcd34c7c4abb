"""Geometric W2: the iDEM protocol computed pair by pair with scipy, invariances, nuclear norm."""

import jax
import numpy as np
import ot
import pytest
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist

from jaxsamp.diagnostics.geometric_wasserstein import aligned_distance, geometric_w2, nuclear_norm, pair_distances

N = 12  # configurations per set: one compiled shape per (particles, dim)


def _idem_distances(x, y):
    """iDEM's dist_point_clouds, one pair at a time (Hungarian on cdist, then Kabsch without det fix)."""
    out = np.zeros((len(x), len(y)))
    for i, a in enumerate(x):
        for j, b in enumerate(y):
            b = b[linear_sum_assignment(cdist(a, b))[1]]
            u, _, vt = np.linalg.svd((a - a.mean(0)).T @ (b - b.mean(0)))
            out[i, j] = np.linalg.norm(a - b @ (vt.T @ u.T))
    return out


def _configs(rng, k, s):
    x = rng.normal(size=(N, k, s)) * 1.5
    return (x - x.mean(1, keepdims=True)).astype(np.float32)


def _orthogonal(rng, s, reflect):
    q, _ = np.linalg.qr(rng.normal(size=(s, s)))
    q = q * np.sign(np.linalg.det(q))
    if reflect:
        q[:, 0] *= -1
    return q.astype(np.float32)


@pytest.mark.parametrize("k,s", [(4, 2), (13, 3)])
def test_matches_the_idem_protocol_and_its_exact_invariances(k, s):
    rng = np.random.default_rng(k)
    x, y = _configs(rng, k, s), _configs(rng, k, s)
    ref = _idem_distances(x, y)
    got = np.asarray(pair_distances(x.reshape(N, -1), y.reshape(N, -1), k, s))
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
    w2 = geometric_w2(x.reshape(N, -1), y.reshape(N, -1), k, s)
    assert w2 == pytest.approx(np.sqrt(ot.emd2(np.full(N, 1 / N), np.full(N, 1 / N), ref**2)), rel=1e-4)

    def same(x2, y2, expected=got):
        np.testing.assert_allclose(np.asarray(pair_distances(x2, y2, k, s)), expected, rtol=1e-4, atol=1e-4)

    # particles of every configuration of either set permuted: cdist rows / columns permute
    same(np.stack([c[rng.permutation(k)] for c in x]), np.stack([c[rng.permutation(k)] for c in y]))
    # configurations reordered and translated
    order = rng.permutation(N)
    same(x, y[order] + rng.normal(size=(N, 1, s)).astype(np.float32), got[:, order])
    # one rotation or reflection of both sets leaves cdist, hence the matching, unchanged
    for reflect in (False, True):
        q = _orthogonal(rng, s, reflect)
        same(x @ q, y @ q)
    assert geometric_w2(x[order], y, k, s) == pytest.approx(w2, rel=1e-5)


@pytest.mark.parametrize("k,s", [(4, 2), (13, 3)])
def test_matched_cost_is_invariant_under_orthogonal_maps_of_either_configuration(k, s):
    rng = np.random.default_rng(1)
    a, b = _configs(rng, k, s), _configs(rng, k, s)
    dist = jax.jit(aligned_distance)
    base = np.asarray(dist(a, b))
    for reflect in (False, True):
        q = _orthogonal(rng, s, reflect)
        np.testing.assert_allclose(np.asarray(dist(a @ q + 3.0, b)), base, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(np.asarray(dist(a, b @ q - 1.0)), base, rtol=1e-4, atol=1e-4)
        # float32: the cost is the square root of a difference of O(|a|^2) terms, so an exact 0
        # comes out as ~sqrt(eps |a|^2) ~ 1e-2
        np.testing.assert_allclose(np.asarray(dist(a, a @ q)), 0.0, atol=2e-2)
    # identical sets: every diagonal pair matches exactly, so W2 is 0 up to that round-off
    assert geometric_w2(a, a, k, s) == pytest.approx(0.0, abs=2e-2)


def test_nuclear_norm_matches_svd():
    rng = np.random.default_rng(2)
    for s in (2, 3, 4):
        h = rng.normal(size=(500, s, s)).astype(np.float32)
        exact = np.linalg.svd(h.astype(np.float64), compute_uv=False).sum(-1)
        np.testing.assert_allclose(np.asarray(jax.jit(nuclear_norm)(h)), exact, rtol=2e-5, atol=2e-5)
    assert float(jax.jit(nuclear_norm)(np.zeros((3, 3), np.float32))) == 0.0
