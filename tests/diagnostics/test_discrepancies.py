"""MMD, Sinkhorn and exact / 1-D W2 against exact answers."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsamp.diagnostics import discrepancies
from jaxsamp.diagnostics.discrepancies import energy_w2, wasserstein2, wasserstein2_1d

mmd = jax.jit(discrepancies.mmd, static_argnames="unbiased")
median_bandwidth = jax.jit(discrepancies.median_bandwidth)
sinkhorn_divergence = jax.jit(discrepancies.sinkhorn_divergence)
entropic_ot_cost = jax.jit(discrepancies.entropic_ot_cost)


def _normal(seed, n, d, mean=0.0, scale=1.0):
    return np.asarray(jax.random.normal(jax.random.key(seed), (n, d))) * scale + mean


def test_mmd_is_zero_for_identical_sets_and_matches_the_direct_formula():
    x, y = _normal(0, 300, 3), _normal(1, 300, 3, mean=0.5)
    assert float(mmd(x, x)) == 0.0
    z = np.concatenate([x, y]).astype(np.float64)
    sq = ((z[:, None] - z[None]) ** 2).sum(-1)
    h2 = np.median(sq[np.triu_indices(len(z), 1)])
    assert float(median_bandwidth(x, y)) ** 2 == pytest.approx(h2, rel=1e-4)
    k = np.exp(-sq / (2 * h2))
    kxx, kyy, kxy = k[:300, :300], k[300:, 300:], k[:300, 300:]
    v = kxx.mean() + kyy.mean() - 2 * kxy.mean()
    u = (kxx.sum() - 300) / (300 * 299) + (kyy.sum() - 300) / (300 * 299) - 2 * kxy.mean()
    assert float(mmd(x, y)) == pytest.approx(np.sqrt(v), rel=1e-3)
    assert float(mmd(x, y, unbiased=True)) == pytest.approx(np.sqrt(u), rel=1e-3)


def test_exact_w2_is_zero_for_identical_sets_and_is_the_gaussian_closed_form():
    # N(0, I) vs N((3, 0), diag(4, 1)): W2^2 = |dm|^2 + sum (sqrt(a) - sqrt(b))^2 = 9 + 1.
    # Error budget: |W2(P^, Q^) - W2(P, Q)| <= W2(P^, P) + W2(Q^, Q), each bounded by the noise
    # floor W2 between two independent samples of the same law.
    n = 1500
    x = _normal(2, n, 2)
    y = _normal(3, n, 2, mean=np.array([3.0, 0.0]), scale=np.array([2.0, 1.0]))
    assert wasserstein2(x, x) == pytest.approx(0.0, abs=1e-3)
    floor = wasserstein2(x, _normal(4, n, 2)) + wasserstein2(y, _normal(5, n, 2, mean=np.array([3.0, 0.0]), scale=np.array([2.0, 1.0])))
    assert abs(wasserstein2(x, y) - np.sqrt(10.0)) <= floor
    assert floor < 0.5  # the budget is informative


def test_one_dimensional_w2():
    a, b = _normal(6, 4000, 1)[:, 0], _normal(7, 4000, 1, mean=1.0, scale=2.0)[:, 0]
    # equal sizes: the monotone coupling
    assert wasserstein2_1d(a, b) == pytest.approx(np.sqrt(np.mean((np.sort(a) - np.sort(b)) ** 2)), rel=1e-6)
    # N(0, 1) vs N(1, 4): W2^2 = 1 + (2 - 1)^2, within the same noise-floor budget as above
    floor = wasserstein2_1d(a, _normal(8, 4000, 1)[:, 0]) + wasserstein2_1d(b, _normal(9, 4000, 1, 1.0, 2.0)[:, 0])
    assert abs(wasserstein2_1d(a, b) - np.sqrt(2.0)) <= floor
    assert wasserstein2_1d(a, a[::-1]) == 0.0
    # energy W2 is the 1-D W2 of the energies
    x, y = _normal(10, 300, 2), _normal(11, 200, 2, mean=0.3)
    energy = lambda v: jnp.sum(v**2)  # noqa: E731
    assert energy_w2(energy, x, y) == pytest.approx(wasserstein2_1d((x**2).sum(1), (y**2).sum(1)), rel=1e-5)


def test_sinkhorn_of_a_translate_is_the_squared_shift():
    # with squared-Euclidean cost, OT_eps(mu, mu + t) = OT_eps(mu, mu) + |t|^2 exactly (the cross term
    # integrates to a constant under the marginals), so S_eps(mu, mu + t) = |t|^2
    x = _normal(12, 200, 2)
    t = np.array([0.6, -0.8])
    assert float(sinkhorn_divergence(x, x + t, epsilon=0.1)) == pytest.approx(1.0, rel=1e-2)
    assert float(sinkhorn_divergence(x, x, epsilon=0.1)) == pytest.approx(0.0, abs=1e-4)
    gap = float(entropic_ot_cost(x, x + t, epsilon=0.1)) - float(entropic_ot_cost(x, x, epsilon=0.1))
    assert gap == pytest.approx(1.0, rel=1e-2)


def test_sinkhorn_at_epsilon_none_is_at_otts_default_a_twentieth_of_the_costs_standard_deviation():
    """``epsilon=None`` (what the Beyond-ELBOs and SCLD evaluation code end up using) is 0.05 times the standard
    deviation of the x-y squared distances, shared by the three terms; far from 1e-3 on spread-out points."""
    x, y = _normal(13, 60, 3) * 5.0, _normal(14, 50, 3, mean=1.0) * 5.0
    costs = ((np.asarray(x)[:, None] - np.asarray(y)[None]) ** 2).sum(-1)
    default = float(sinkhorn_divergence(x, y, epsilon=None))
    assert default == pytest.approx(float(sinkhorn_divergence(x, y, epsilon=0.05 * costs.std())), rel=1e-3)
    assert abs(default - float(sinkhorn_divergence(x, y, epsilon=1e-3))) > 0.01 * abs(default)
