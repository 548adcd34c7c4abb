"""ULA: exact Gaussian recursion and stationary law (5-sigma z-tests at fixed seeds)."""

import jax
import numpy as np
from _moment_checks import assert_iid_moments

import jaxsamp.mcmc  # noqa: F401  (registers)
from jaxsamp.core import ensemble, run, shard
from jaxsamp.core.registry import SAMPLERS
from jaxsamp.mcmc.ula import ula_gaussian_stationary_cov
from jaxsamp.targets import Gaussian

COV = np.array([[1.0, 0.6, 0.0], [0.6, 2.0, -0.3], [0.0, -0.3, 0.5]])
MEAN = np.array([1.0, -0.5, 0.25])
PREC = np.linalg.inv(COV)


def exact_ula_law(m0, c0, h, steps):
    a = np.eye(3) - h * PREC
    m, c = m0, c0
    for _ in range(steps):
        m, c = MEAN + a @ (m - MEAN), a @ c @ a.T + 2 * h * np.eye(3)
    return m, c


def test_stationary_cov_solves_the_fixed_point():
    h = 0.3
    c = ula_gaussian_stationary_cov(PREC, h)
    a = np.eye(3) - h * PREC
    np.testing.assert_allclose(a @ c @ a.T + 2 * h * np.eye(3), c, rtol=1e-10)


def test_registered_ula_follows_the_exact_gaussian_recursion():
    # 4000 independent chains from N(0, I) after 20 steps of h = 0.4: the law is exactly Gaussian
    # with m <- mu + A(m - mu), C <- A C A^T + 2h I, A = I - hP, which tends to ULA's biased
    # stationary law N(mu, (P (I - hP/2))^-1), not the target. Budget: 5 sigma.
    h, steps, n = 0.4, 20, 4000
    kernel = shard(ensemble(SAMPLERS.get("ula", Gaussian(MEAN, COV), step_size=h)))
    x0 = jax.random.normal(jax.random.key(0), (n, 3))
    state, infos = run(kernel.step, kernel.init(x0), jax.random.key(1), steps, trace=lambda s, i: i, progress=False)
    m, c = exact_ula_law(np.zeros(3), np.eye(3), h, steps)
    assert_iid_moments(state.position, m, c)
    assert np.max(np.abs(c - COV)) > 0.1  # the step-size bias is real, so the test tells ULA from exact sampling
    np.testing.assert_array_equal(np.asarray(infos.num_target_evals), 1)
