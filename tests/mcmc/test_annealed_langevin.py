"""ALMC: reduces to LMC at lambda = 0; exact Gaussian level recursion (5-sigma z-tests at fixed seeds)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _moment_checks import assert_iid_moments

from jaxsamp.core import ensemble, run, shard
from jaxsamp.mcmc.annealed_langevin import (
    annealed_langevin,
    exponential_integrator_coefficients,
    make_schedule,
    power_schedule,
)
from jaxsamp.mcmc.ula import ula


def _log_pi(x):
    return -0.5 * jnp.sum(x**2) / 4.0 + 0.1 * jnp.sin(x[0])


def test_coefficients_are_continuous_at_lambda_zero():
    h = 0.3
    for lam in (0.0, 1e-9, 1e-4, 0.5, 3.0):
        decay, phi1, phi2 = (float(v) for v in exponential_integrator_coefficients(jnp.float32(lam), jnp.float32(h)))
        if lam == 0.0:
            want = (1.0, h, 2 * h)
        else:
            want = (np.exp(-lam * h), -np.expm1(-lam * h) / lam, -np.expm1(-2 * lam * h) / lam)
        np.testing.assert_allclose((decay, phi1, phi2), want, rtol=1e-5)


def test_lambda_zero_is_plain_lmc_step_for_step():
    # eta = 1, lambda = 0 on every level: ALMC is ULA with the same step and the same noise.
    h, steps = 0.05, 30
    schedule = make_schedule(lambda th: np.ones_like(th), lambda th: np.zeros_like(th), np.linspace(0, h * steps, steps + 1))
    almc, lmc = ensemble(annealed_langevin(_log_pi, schedule)), ensemble(ula(_log_pi, h))
    x0 = jax.random.normal(jax.random.key(0), (16, 2))
    key = jax.random.key(1)
    s_a, infos = run(almc.step, almc.init(x0), key, steps, trace=lambda s, i: i, progress=False)
    s_l, _ = run(lmc.step, lmc.init(x0), key, steps, progress=False)
    np.testing.assert_allclose(np.asarray(s_a.position), np.asarray(s_l.position), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(infos.num_target_evals), 1)


def test_gaussian_annealing_follows_the_exact_level_recursion():
    # V = |x|^2 / (2 s2): every level is linear, x' = (e^{-lam h} - phi1 eta / s2) x + sqrt(phi2) xi,
    # so the law after the exact base draw N(0, 1/lambda0) and the M levels is N(0, v_M I) with
    # v <- a^2 v + phi2. 4000 chains started far away at x = 50 (the base draw forgets it). 5 sigma.
    s2, m = 4.0, 40
    schedule = power_schedule(num_levels=m, total_time=4.0, lambda0=2.0, eta_power=1.0, lambda_power=2.0)
    assert schedule.exact_base
    kernel = shard(ensemble(annealed_langevin(lambda x: -0.5 * jnp.sum(x**2) / s2, schedule)))
    state, infos = run(kernel.step, kernel.init(jnp.full((4000, 3), 50.0)), jax.random.key(2), m + 1, trace=lambda s, i: i, progress=False)
    v = 1.0 / schedule.lam0
    for eta, lam, h in zip(schedule.eta, schedule.lam, schedule.step_size):
        decay, phi1, phi2 = np.exp(-lam * h), -np.expm1(-lam * h) / lam if lam > 0 else h, -np.expm1(-2 * lam * h) / lam if lam > 0 else 2 * h
        v = (decay - phi1 * eta / s2) ** 2 * v + phi2
    assert_iid_moments(state.position, np.zeros(3), v * np.eye(3))
    theta = np.asarray(infos.theta)[:, 0]
    np.testing.assert_allclose(theta, np.concatenate([[0.0], np.arange(1, m + 1) / m]), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(infos.num_target_evals)[:, 0], [0] + [1] * m)


def test_schedule_must_end_at_the_target():
    with pytest.raises(ValueError, match="lambda\\(1\\) = 0"):
        make_schedule(lambda th: th, lambda th: 1.0 - 0.5 * th, np.linspace(0, 1, 5))
