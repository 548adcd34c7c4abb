"""Boltzmann-curve interpolations: closed-form curves make the residual vanish; f_t's derivatives; Hutchinson.

Oracles (float64): the linear interpolation between two Gaussians is a Gaussian
curve ``N(m_t, tau_t^2 I)`` whose velocity ``m'_t + (tau'_t / tau_t)(x - m_t)`` and
``C = d/dt log Z_t`` are closed forms; the variance-preserving curve
``t X_1 + s sqrt(1 - t^2) Z`` of a Gaussian target is the gradient-flow curve, so
with its exact ``f_t`` the gradient-flow velocity (fixed by ``f_t``) and the
closed-form ``C`` must make ``R`` vanish too. Hutchinson's estimate is checked
for bias against the exact trace with its exact variance.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsamp.targets
from jaxsamp.core.errors import InputError
from jaxsamp.learned.curves.interpolations import (
    continuity_residual,
    make_interpolation,
    value_and_divergence,
)

MU, SIGMA, S = (
    np.array([1.0, -2.0, 0.5]),
    1.7,
    1.3,
)  # target N(MU, SIGMA^2 I), base N(0, S^2 I)
D = MU.size


def gaussian_target():
    return jaxsamp.targets.Gaussian(MU, SIGMA**2 * np.eye(D))


def linear_moments(t):
    """Mean and sd of the linear (geometric) curve: precision (1 - t)/S^2 + t/SIGMA^2."""
    p = (1 - t) / S**2 + t / SIGMA**2
    return t / SIGMA**2 * jnp.asarray(MU) / p, 1 / jnp.sqrt(p)


def linear_log_z(t):
    p = (1 - t) / S**2 + t / SIGMA**2
    m = t / SIGMA**2 * jnp.asarray(MU) / p
    offset = t * jnp.sum(jnp.asarray(MU) ** 2) / (2 * SIGMA**2) - p * jnp.sum(m**2) / 2
    return D / 2 * jnp.log(2 * jnp.pi / p) - offset


def linear_velocity(x, t):
    (m, tau), (dm, dtau) = jax.jvp(linear_moments, (t,), (jnp.ones_like(t),))
    return dm + dtau / tau * (x - m)


def vp_variance(t):
    return t**2 * SIGMA**2 + (1 - t**2) * S**2


def vp_g(x, t):
    """The exact variance-preserving f_t minus the interpolation's ends, divided by t(1 - t)."""
    exact = jnp.sum((x - t * jnp.asarray(MU)) ** 2) / (2 * vp_variance(t))
    ends = (1 - t) * jnp.sum(x**2) / (2 * S**2) + t * jnp.sum(
        (x - jnp.asarray(MU)) ** 2
    ) / (2 * SIGMA**2)
    return (exact - ends) / (t * (1 - t))


def residuals(interp, g, velocity, rate, xs, ts):
    """R at each (x, t), jitted (one compilation instead of op-by-op dispatch)."""

    def one(x, t):
        v, div = value_and_divergence(lambda z: velocity(z, t), x)
        return continuity_residual(interp.terms(g, x, t), v, div, rate(t))

    return jax.jit(jax.vmap(one))(xs, ts)


def test_linear_gaussian_curve_with_its_closed_form_velocity_has_zero_residual():
    with jax.enable_x64(True):
        interp = make_interpolation("linear", gaussian_target(), S)
        xs = 2.0 * jax.random.normal(jax.random.key(0), (6, D))
        ts = jnp.array([0.0, 0.1, 0.4, 0.5, 0.9, 1.0])
        r = residuals(interp, None, linear_velocity, jax.grad(linear_log_z), xs, ts)
        assert np.max(np.abs(r)) < 1e-12
        # a wrong C (off by 0.1) is seen: the test can fail
        r_off = residuals(
            interp,
            None,
            linear_velocity,
            lambda t: jax.grad(linear_log_z)(t) + 0.1,
            xs,
            ts,
        )
        np.testing.assert_allclose(r_off, 0.1, atol=1e-12)


def test_variance_preserving_curve_makes_the_gradient_flow_residual_vanish():
    """The derivation of v_t = x - s^2 grad f_1 - (1 - t) s^2 grad g (research/paths.md §B, redone in the module)."""
    with jax.enable_x64(True):
        interp = make_interpolation("gradient_flow", gaussian_target(), S)
        xs = 2.0 * jax.random.normal(jax.random.key(1), (5, D))
        ts = jnp.array([0.05, 0.3, 0.5, 0.7, 0.95])
        rate = jax.grad(lambda t: D / 2 * jnp.log(2 * jnp.pi * vp_variance(t)))
        velocity = lambda x, t: interp.velocity(vp_g, x, t)
        assert np.max(np.abs(residuals(interp, vp_g, velocity, rate, xs, ts))) < 1e-11
        # and v_t is (x - s^2 grad f_t) / t, the OU flow in the time t = exp(-tau / s^2)
        both = jax.jit(
            jax.vmap(
                lambda x, t: (
                    velocity(x, t),
                    (x - S**2 * interp.terms(vp_g, x, t).grad_f) / t,
                )
            )
        )
        np.testing.assert_allclose(*both(xs, ts), rtol=1e-10, atol=1e-10)
        # the linear curve's velocity is not the gradient flow's: the residual is then far from 0
        lin = make_interpolation("linear", gaussian_target(), S)
        wrong = residuals(lin, None, velocity, rate, xs, ts)
        assert np.max(np.abs(wrong)) > 0.1


@pytest.mark.parametrize("name", ["linear", "learned", "gradient_flow"])
def test_terms_are_the_derivatives_of_f_and_the_ends_are_the_base_and_the_target(name):
    with jax.enable_x64(True):
        target = jaxsamp.targets.get(
            "gaussian_mixture", means=[[1.0, 0.0], [-2.0, 1.0]], weights=[0.3, 0.7]
        )
        interp = make_interpolation(name, target, 1.5)
        g = (
            (lambda x, t: jnp.sin(x[0] * t) + x[1] ** 2 * jnp.cos(t))
            if interp.learns_f
            else None
        )
        x, ts = jnp.array([0.3, -0.7]), jnp.array([0.0, 0.37, 1.0])

        @jax.jit
        def both(t):
            by_autodiff = (
                interp.f(g, x, t),
                jax.grad(lambda s: interp.f(g, x, s))(t),
                jax.grad(lambda z: interp.f(g, z, t))(x),
            )
            return interp.terms(g, x, t), by_autodiff

        terms, by_autodiff = jax.vmap(both)(ts)
        for got, want in zip(terms, by_autodiff):
            np.testing.assert_allclose(got, want, rtol=1e-10)
        np.testing.assert_allclose(
            interp.f(g, x, 0.0), 0.5 * jnp.sum(x**2) / 1.5**2, rtol=1e-12
        )
        np.testing.assert_allclose(interp.f(g, x, 1.0), -target.log_prob(x), rtol=1e-12)
        assert interp.log_Z0 == pytest.approx(np.log(2 * np.pi * 1.5**2))


def test_exact_divergence_is_the_jacobian_trace_and_hutchinson_is_unbiased():
    """Rademacher probes: mean within 5 sigma of the trace, sigma^2 = sum_{i<j} (J_ij + J_ji)^2 / (probes n)."""

    def fn(z):
        return (
            jnp.tanh(
                jnp.array([[1.0, 2.0, -0.5, 0.3, 0.0], [0.4, -1.0, 0.2, 1.5, -0.7]]).T
                @ z[:2]
            )
            + z * z[::-1]
        )

    x = jnp.array([0.3, -1.2, 0.8, 0.5, -0.4])
    jac, (value, exact) = jax.jit(
        lambda z: (jax.jacfwd(fn)(z), value_and_divergence(fn, z))
    )(x)
    np.testing.assert_allclose(value, fn(x), rtol=1e-6)
    np.testing.assert_allclose(exact, jnp.trace(jac), rtol=1e-5)
    n, probes = 20_000, 2
    keys = jax.random.split(jax.random.key(3), n)
    estimates = jax.jit(jax.vmap(lambda k: value_and_divergence(fn, x, k, probes)[1]))(
        keys
    )
    sym = np.asarray(jac) + np.asarray(jac).T
    sigma = np.sqrt(np.sum(np.triu(sym, 1) ** 2) / (probes * n))
    assert abs(float(np.mean(estimates)) - float(exact)) < 5 * sigma
    # the estimator's spread is the stated one (a biased estimator with this spread would still fail above)
    assert np.std(estimates) == pytest.approx(sigma * np.sqrt(n), rel=0.05)


def test_bad_inputs_are_clear_errors():
    with pytest.raises(InputError, match="interpolation must be one of"):
        make_interpolation("cubic", gaussian_target())
    with pytest.raises(InputError, match="flat state"):
        make_interpolation("linear", jaxsamp.targets.get("ising", L=3, beta=0.3))
    with pytest.raises(InputError, match="needs its network"):
        make_interpolation("learned", gaussian_target()).terms(None, jnp.zeros(D), 0.5)
    with pytest.raises(InputError, match="base_scale"):
        make_interpolation("linear", gaussian_target(), 0.0)
