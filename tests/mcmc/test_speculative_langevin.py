"""Speculative ULA has exactly the ULA chain's law (5-sigma z-tests at fixed seeds)."""

import jax
import jax.numpy as jnp
import numpy as np
from _moment_checks import assert_iid_moments
from scipy.stats import norm

from jaxsamp.core import ensemble, run, shard
from jaxsamp.mcmc.speculative_langevin import reflection_coupling_verify, speculative_langevin
from jaxsamp.mcmc.ula import ula
from jaxsamp.targets import Gaussian


def test_reflection_coupling_outputs_q_and_accepts_at_one_minus_tv():
    # p = N(m_p, s^2 I), q = N(m_q, s^2 I) in 2-d, 20000 draws: the output is N(m_q, s^2 I) and the
    # acceptance rate is 2 Phi(-|Delta|/2) = 1 - TV(p, q). Budget: 5 sigma.
    n, s = 20000, 0.7
    m_p, m_q = jnp.array([0.3, -0.2]), jnp.array([-0.4, 0.5])
    delta = (m_p - m_q) / s
    key_z, key_u = jax.random.split(jax.random.key(0))
    z = jax.random.normal(key_z, (n, 2))
    uniforms = jax.random.uniform(key_u, (n,))
    accepted, reflected = jax.jit(jax.vmap(reflection_coupling_verify, in_axes=(0, 0, None)))(uniforms, z, delta)
    out = jnp.where(accepted[:, None], m_p + s * z, m_q + s * reflected)
    assert_iid_moments(out, m_q, s**2 * np.eye(2))
    p_acc = 2 * norm.cdf(-np.linalg.norm(np.asarray(delta)) / 2)
    assert abs(float(accepted.mean()) - p_acc) < 5 * np.sqrt(p_acc * (1 - p_acc) / n)


def test_linear_drift_marginal_matches_exact_gaussian_recursion():
    # Gaussian target (linear drift): after 3 kernel steps of 8 ULA steps (window 5, so windows are
    # cut by the step budget), 4000 independent chains follow the exact ULA recursion. 5 sigma.
    cov = np.array([[1.0, 0.5], [0.5, 0.8]])
    mean = np.array([0.5, -1.0])
    prec, h = np.linalg.inv(cov), 0.15
    kernel = shard(ensemble(speculative_langevin(Gaussian(mean, cov).log_prob, h, window=5, num_steps=8)))
    x0 = jnp.tile(jnp.array([2.0, 2.0]), (4000, 1))
    state, infos = run(kernel.step, kernel.init(x0), jax.random.key(1), 3, trace=lambda s, i: i, progress=False)
    a = np.eye(2) - h * prec
    m, c = np.array([2.0, 2.0]), np.zeros((2, 2))
    for _ in range(24):
        m, c = mean + a @ (m - mean), a @ c @ a.T + 2 * h * np.eye(2)
    assert_iid_moments(state.position, m, c)
    rate = np.asarray(infos.acceptance_rate)
    assert 0.0 < rate.mean() < 1.0  # the drafts are sometimes rejected, so the coupling is exercised


def test_constant_gradient_accepts_every_draft_and_matches_ula_law():
    # log pi(x) = c.x has a constant gradient: the frozen draft is exact (Delta = 0), every draft is
    # accepted and a window of 4 costs one sequential call. The law after 12 steps is
    # N(x0 + 12 h c, 24 h I) exactly. Budget: 5 sigma.
    c_vec, h = jnp.array([1.0, -2.0, 0.5]), 0.1
    kernel = ensemble(speculative_langevin(lambda x: jnp.dot(c_vec, x), h, window=4, num_steps=12))
    state, infos = run(kernel.step, kernel.init(jnp.zeros((4000, 3))), jax.random.key(2), 1, trace=lambda s, i: i, progress=False)
    np.testing.assert_array_equal(np.asarray(infos.acceptance_rate), 1.0)
    np.testing.assert_array_equal(np.asarray(infos.num_windows), 3)
    np.testing.assert_array_equal(np.asarray(infos.num_sequential_calls), 3)
    assert_iid_moments(state.position, 12 * h * np.asarray(c_vec), 24 * h * np.eye(3))


def _quartic(x):
    return -0.25 * jnp.sum(x**4) - 0.5 * jnp.sum(x**2) + 0.8 * x[0] * x[1]


def test_nonlinear_target_same_law_as_plain_ula_with_fewer_sequential_calls():
    # Non-Gaussian target: speculative ULA (window 6) and plain ULA, 4000 chains each from the same
    # point, 24 steps. Two-sample 5-sigma test of the means and second moments.
    h, n, steps = 0.1, 4000, 24
    spec = ensemble(speculative_langevin(_quartic, h, window=6, num_steps=steps))
    plain = ensemble(ula(_quartic, h))
    x0 = jnp.tile(jnp.array([1.5, -0.5]), (n, 1))
    s_spec, infos = run(spec.step, spec.init(x0), jax.random.key(3), 1, trace=lambda s, i: i, progress=False)
    s_ula, _ = run(plain.step, plain.init(x0), jax.random.key(4), steps, progress=False)
    a, b = np.asarray(s_spec.position, np.float64), np.asarray(s_ula.position, np.float64)
    feats = lambda x: np.concatenate([x, x**2, x[:, :1] * x[:, 1:]], axis=1)  # noqa: E731
    fa, fb = feats(a), feats(b)
    se = np.sqrt(fa.var(0, ddof=1) / n + fb.var(0, ddof=1) / n)
    assert np.all(np.abs(fa.mean(0) - fb.mean(0)) < 5 * se)
    # plain ULA needs one sequential call per step; the speculative chain needs fewer
    assert np.asarray(infos.num_sequential_calls).mean() < steps / 1.5
