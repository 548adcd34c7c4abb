"""The curves' numerics (``Curves``): initial C(0) against the closed form, evaluation counts, resume, settings.

(Training to an exact answer is checked through jaxsamp.fit on a two-mode mixture,
tests/learned/curves/test_fit_curves.py, and through the experiment runner on a
Gaussian target, tests/experiments/test_curves_experiment.py.)
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _resume_checks import assert_resumes_bit_identical

import jaxsamp.targets
from jaxsamp.core import run
from jaxsamp.core.errors import InputError
from jaxsamp.learned.curves.training import (
    RATE_INIT_SAMPLES,
    Curves,
    CurvesSettings,
)

SMALL = {"hidden": (8,), "rate_hidden": (4,), "num_frequencies": 1}


def test_fresh_curve_starts_with_the_exact_initial_rate_and_zero_fields():
    """C(0) = d/dt log Z_t at 0 = -E_{rho_0}[f_1 - f_0]; for N(0, I) -> N(mu, sigma^2 I) it is
    d/2 (1 - 1/sigma^2) - |mu|^2 / (2 sigma^2). Budget: 5 sd of the 1024-sample mean."""
    mu, sigma = np.array([1.0, -2.0]), 0.8
    target = jaxsamp.targets.Gaussian(mu, sigma**2 * np.eye(2))
    curve = Curves(
        target, CurvesSettings(interpolation="learned", **SMALL), batch_size=4
    )
    state = jax.jit(curve.init)(jax.random.key(0))
    fields = curve.fields(state.params)
    exact = 0.5 * 2 * (1 - 1 / sigma**2) - np.sum(mu**2) / (2 * sigma**2)
    x = jax.random.normal(jax.random.key(9), (100_000, 2))
    spread = np.std(
        np.asarray(0.5 * jnp.sum((x - mu) ** 2, 1) / sigma**2 - 0.5 * jnp.sum(x**2, 1))
    )
    assert abs(float(fields.rate(jnp.zeros(()))) - exact) < 5 * spread / math.sqrt(
        RATE_INIT_SAMPLES
    )
    z = jnp.array([0.3, 0.4])
    assert float(fields.g(z, 0.5)) == 0.0 and np.all(
        np.asarray(fields.velocity(z, 0.5)) == 0.0
    )


def test_target_evaluations_are_counted():
    """Per collocation point: one evaluation, plus 4 per RK4 step of a gradient-flow trajectory (its velocity)."""
    target = jaxsamp.targets.get("gaussian", dim=2)

    def curve(interpolation, collocation):
        settings = CurvesSettings(
            interpolation=interpolation,
            collocation=collocation,
            trajectory_steps=3,
            **SMALL,
        )
        return Curves(target, settings, batch_size=8)

    assert (
        curve("linear", "box").evals_per_step
        == curve("learned", "trajectory").evals_per_step
        == 8
    )
    gradient_flow = curve("gradient_flow", "trajectory")
    assert gradient_flow.evals_per_step == 8 * (1 + 4 * 3)
    state, trace = run(
        gradient_flow.step,
        jax.jit(gradient_flow.init)(jax.random.key(0)),
        jax.random.key(1),
        2,
        trace=lambda s, m: m,
        progress=False,
    )
    assert int(state.target_evals) == RATE_INIT_SAMPLES + 2 * 8 * 13
    assert np.all(np.isfinite(np.asarray(trace["loss"]))) and int(state.step) == 2
    assert jax.tree.leaves(state.params.f) and not jax.tree.leaves(
        state.params.velocity
    )  # v is fixed by g


def test_stopped_training_run_resumes_bit_identically(tmp_path):
    """A checkpointed Boltzmann-curve training run, stopped half way, resumes bit for bit.

    The learned interpolation (both networks and ``C``) with trajectory collocation
    (the trajectories follow the velocity being trained) and Hutchinson divergence:
    every random draw of a step (start points, end times, probes) and both Adam
    states must round-trip through the checkpoint.
    """
    settings = CurvesSettings(
        interpolation="learned",
        hidden=(8,),
        rate_hidden=(4,),
        num_frequencies=1,
        collocation="trajectory",
        trajectory_steps=2,
        divergence="hutchinson",
        num_probes=2,
    )
    target = jaxsamp.targets.get(
        "gaussian_mixture", means=[[1.0, -1.0], [-2.0, 0.5]], weights=[0.3, 0.7]
    )
    sampler = Curves(target, settings, batch_size=16)
    state = jax.jit(sampler.init)(jax.random.key(0))
    assert_resumes_bit_identical(sampler.step, state, 12, 3, tmp_path, min_arrays=10)


def test_bad_settings_are_clear_errors():
    with pytest.raises(InputError, match="must divide ode_steps"):
        CurvesSettings(ode_steps=10, langevin_steps=1, langevin_every=3)
    with pytest.raises(InputError, match="hidden must be a non-empty list"):
        CurvesSettings(hidden=())
    with pytest.raises(InputError, match="collocation must be one of"):
        CurvesSettings(collocation="grid")
    with pytest.raises(InputError, match="batch_size"):
        Curves(
            jaxsamp.targets.get("gaussian", dim=2),
            CurvesSettings(),
            batch_size=0,
        )
    with pytest.raises(InputError, match="flat state"):
        Curves(
            jaxsamp.targets.get("ising", L=3, beta=0.3),
            CurvesSettings(),
            batch_size=4,
        )


def test_diverged_collocation_points_are_left_out_of_the_loss_and_its_gradient():
    """A non-finite point (a diverged trajectory) changes neither the loss nor its gradient: both equal those
    of the finite points alone, and stay finite."""
    target = jaxsamp.targets.get("gaussian", dim=2)
    curve = Curves(
        target, CurvesSettings(interpolation="learned", **SMALL), batch_size=4
    )
    params = jax.jit(curve.init)(jax.random.key(0)).params
    x = jax.random.normal(jax.random.key(1), (4, 2))
    t = jnp.array([0.1, 0.4, 0.6, 0.9])
    grad_loss = jax.value_and_grad(curve.loss, has_aux=True)
    (clean, (_, finite)), clean_grad = grad_loss(params, x[:3], t[:3], None)
    (loss, (residuals, finite)), grad = grad_loss(
        params, x.at[3, 1].set(jnp.nan), t, None
    )
    assert list(np.asarray(finite)) == [True, True, True, False]
    assert float(residuals[3]) == 0.0
    np.testing.assert_allclose(float(loss), float(clean), rtol=1e-6)
    for a, b in zip(jax.tree.leaves(grad), jax.tree.leaves(clean_grad)):
        assert np.all(np.isfinite(np.asarray(a)))
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-7)
