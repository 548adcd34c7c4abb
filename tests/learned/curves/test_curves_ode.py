"""Sampling by ODE along a Boltzmann curve: exact transport, exact weights, AIS limits, Langevin corrections, speeds.

Oracles: the linear curve between two Gaussians (closed-form affine velocity and
``C``), so the flow map, the change-of-variables density and the weights are
known exactly; with ``v = 0`` the weights are importance sampling (AIS without
moves), whose variance is a Gaussian integral; with MALA corrections and
``v = 0`` they are AIS with MALA moves (unbiased for Z). The exact 1-D velocity
of a Gaussian curve is the affine one, and of a mixture it shows the linear
interpolation's teleportation.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsamp.targets
from jaxsamp.core.errors import InputError
from jaxsamp.learned.curves.ode import (
    LangevinCorrection,
    exact_speeds_1d,
    integrate,
    mixture_curves_1d,
    transport,
)
from jaxsamp.learned.curves.interpolations import CurveFields, make_interpolation

MU, SIGMA, S = (
    np.array([1.0, -2.0]),
    0.8,
    1.3,
)  # target N(MU, SIGMA^2 I), base N(0, S^2 I)
D = MU.size


def precision(t):
    return (1 - t) / S**2 + t / SIGMA**2


def moments(t):
    p = precision(t)
    return t / SIGMA**2 * jnp.asarray(MU) / p, 1 / jnp.sqrt(p)


def log_z(t):
    p = precision(t)
    m = t / SIGMA**2 * jnp.asarray(MU) / p
    return D / 2 * jnp.log(2 * jnp.pi / p) - (
        t * jnp.sum(jnp.asarray(MU) ** 2) / (2 * SIGMA**2) - p * jnp.sum(m**2) / 2
    )


def velocity(x, t):
    (m, tau), (dm, dtau) = jax.jvp(moments, (t,), (jnp.ones_like(t),))
    return dm + dtau / tau * (x - m)


def setup():
    target = jaxsamp.targets.Gaussian(MU, SIGMA**2 * np.eye(D))
    return target, make_interpolation("linear", target, S)


def run(interp, fields, n, steps, langevin=None, x0=None, seed=0):
    fn = jax.jit(lambda key, x0: transport(interp, fields, key, n, steps, langevin, x0))
    return fn(jax.random.key(seed), x0)


def test_closed_form_flow_transports_exactly_and_its_density_and_weights_are_exact():
    with jax.enable_x64(True):
        target, interp = setup()
        x0 = S * jax.random.normal(jax.random.key(5), (256, D))
        out = run(interp, CurveFields(None, velocity, jax.grad(log_z)), 256, 32, x0=x0)
        (m1, tau1), (m0, tau0) = moments(1.0), moments(0.0)
        np.testing.assert_allclose(
            out.samples.x, m1 + tau1 / tau0 * (x0 - m0), atol=1e-7
        )  # RK4, h = 1/32
        # change of variables: log q_1(x_1) = log rho_0(x_0) - int div v = -f_1(x_1) - log w - log Z_0
        f1 = -jax.vmap(target.log_prob)(out.samples.x)
        log_q = -f1 - out.samples.log_w - out.samples.log_Z0
        exact = jax.scipy.stats.multivariate_normal.logpdf(
            out.samples.x, MU, SIGMA**2 * np.eye(D)
        )
        np.testing.assert_allclose(log_q, exact, atol=1e-7)
        for weights in (out.samples, out.jarzynski):
            assert float(weights.ess) == pytest.approx(1.0, abs=1e-12)
            assert float(weights.log_Z) == pytest.approx(target.log_Z, abs=1e-7)
        assert out.target_evals == 256 * (4 * 32 + 1)
        # the speed along t is the closed form's, |v_t(x_t)| at every grid time
        speeds = jax.vmap(
            lambda t, x: jnp.linalg.norm(jax.vmap(velocity, (0, None))(x, t), axis=-1)
        )
        assert out.speed_max[0] == pytest.approx(
            float(jnp.max(speeds(jnp.zeros(1), x0[None]))), rel=1e-9
        )


def test_zero_velocity_jarzynski_weight_is_importance_sampling_and_unbiased():
    """v = 0, C = 0, linear: log w = f_0(x_0) - f_1(x_0). Budget: 5 sd of the mean of n iid weights (exact sd)."""
    target, interp = setup()
    n = 20_000
    zero = CurveFields(None, lambda x, t: jnp.zeros_like(x), lambda t: jnp.zeros(()))
    out = run(interp, zero, n, 4)
    x = np.asarray(out.jarzynski.x, np.float64)
    log_w_is = 0.5 * np.sum(x**2, 1) / S**2 - 0.5 * np.sum((x - MU) ** 2, 1) / SIGMA**2
    np.testing.assert_allclose(out.jarzynski.log_w, log_w_is, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(
        out.samples.log_w, log_w_is, rtol=1e-5, atol=1e-5
    )  # x_1 = x_0: both forms agree
    # E[w^2] / E[w]^2 for q = N(0, S^2), p = N(MU, SIGMA^2): a Gaussian integral, per coordinate
    a = 2 / SIGMA**2 - 1 / S**2
    second = (S / (SIGMA**2 * np.sqrt(a))) ** D * np.exp(
        np.sum(MU**2) * (2 / (SIGMA**4 * a) - 1 / SIGMA**2)
    )
    rel_sd = math.sqrt((second - 1) / n)
    z_hat = math.exp(float(out.jarzynski.log_Z) - target.log_Z)
    assert abs(z_hat - 1) < 5 * rel_sd, (z_hat, rel_sd)


def test_langevin_corrections_keep_the_weights_exact():
    """With the exact flow every AFT increment is log Z_b - log Z_a; with v = 0 it is AIS with MALA (5 sd)."""
    with jax.enable_x64(True):
        target, interp = setup()
        moves = LangevinCorrection(num_steps=2, every=4, step_size=0.3)
        out = run(interp, CurveFields(None, velocity, jax.grad(log_z)), 128, 16, moves)
        for weights in (out.samples, out.jarzynski):
            assert float(weights.ess) == pytest.approx(1.0, abs=1e-9)
            assert float(weights.log_Z) == pytest.approx(target.log_Z, abs=1e-6)
        assert 0.3 < float(out.acceptance) < 1.0  # the moves moved
        assert out.target_evals == 128 * (4 * 16 + 1 + 4 * 3)
    n = 8000
    zero = CurveFields(None, lambda x, t: jnp.zeros_like(x), lambda t: jnp.zeros(()))
    out = run(
        interp,
        zero,
        n,
        8,
        LangevinCorrection(num_steps=1, every=1, step_size=0.5),
        seed=1,
    )
    np.testing.assert_allclose(
        out.samples.log_w, out.jarzynski.log_w, rtol=1e-4, atol=1e-4
    )
    w = np.exp(np.asarray(out.samples.log_w, np.float64) - target.log_Z + interp.log_Z0)
    assert abs(np.mean(w) - 1) < 5 * np.std(w) / math.sqrt(n)
    assert (
        float(out.samples.ess) > 0.2
    )  # plain importance sampling: 1 / E[w^2] = 0.10; with the moves 0.30 (this seed)


def test_integrate_follows_the_closed_form_flow():
    with jax.enable_x64(True):
        x0 = jnp.array([0.4, -1.1])
        x = jax.jit(lambda z: integrate(velocity, z, 0.6, 24))(x0)
        (m, tau), (m0, tau0) = moments(0.6), moments(0.0)
        np.testing.assert_allclose(x, m + tau / tau0 * (x0 - m0), atol=1e-9)


def test_exact_speeds_of_a_gaussian_curve_are_the_affine_velocity():
    """1-D linear curve N(0, S^2) -> N(1, SIGMA^2): E v^2 = m'^2 + tau'^2."""
    mu, grid, times = 1.0, np.linspace(-12, 12, 8001), np.array([0.2, 0.5, 0.8])

    def log_density(x, t):
        return -(1 - t) * 0.5 * x**2 / S**2 - t * 0.5 * (x - mu) ** 2 / SIGMA**2

    got = exact_speeds_1d(log_density, grid, times)
    with jax.enable_x64(True):

        def moments_1d(t):
            p = (1 - t) / S**2 + t / SIGMA**2
            return t * mu / SIGMA**2 / p, 1 / jnp.sqrt(p)

        for t, rms in zip(times, got.rms):
            _, (dm, dtau) = jax.jvp(moments_1d, (jnp.asarray(t),), (jnp.ones(()),))
            assert rms == pytest.approx(math.hypot(float(dm), float(dtau)), rel=1e-5)


def test_linear_interpolation_teleports_mass_and_the_gradient_flow_does_not():
    """Two modes with weights 1:3: the linear curve's peak speed explodes with the separation, the VP curve's does not."""
    times, peaks = np.linspace(0.02, 0.98, 49), {}
    for a in (2.0, 4.0):
        curves = mixture_curves_1d([-a, a], [0.5, 0.5], [0.25, 0.75], base_scale=1.0)
        grid = np.linspace(-a - 6, a + 6, 6001)
        peaks[a] = {
            name: float(np.max(exact_speeds_1d(fn, grid, times).rms))
            for name, fn in curves.items()
        }
    assert (
        peaks[4.0]["linear"] > 30 * peaks[2.0]["linear"]
    )  # grows like exp(c a^2) (here 200x)
    assert (
        peaks[4.0]["gradient_flow"] < 3 * peaks[2.0]["gradient_flow"]
    )  # grows like a (here 1.7x)
    assert peaks[4.0]["linear"] > 20 * peaks[4.0]["gradient_flow"]  # (here 390x)


def test_bad_arguments_are_clear_errors():
    _, interp = setup()
    zero = CurveFields(None, lambda x, t: jnp.zeros_like(x), lambda t: jnp.zeros(()))
    with pytest.raises(InputError, match="must divide"):
        transport(
            interp, zero, jax.random.key(0), 4, 10, LangevinCorrection(1, every=3)
        )
    with pytest.raises(InputError, match="num_steps must be a positive int"):
        transport(interp, zero, jax.random.key(0), 4, 0)
    with pytest.raises(InputError, match="x0 must have shape"):
        transport(interp, zero, jax.random.key(0), 4, 2, x0=jnp.zeros((3, D)))
