"""Boltzmann curves through jaxsamp.fit ("curves"): a 2-D two-component mixture with exact log Z = 0, seconds each.

The change-of-variables weights are exact up to the ODE's error whatever the training reached, so the
log Z estimate is held to its Monte Carlo budget; the method's own cheap invariant is that the
change-of-variables and the Jarzynski-type weights agree path by path (they differ only by the RK4 error,
jaxsamp/learned/curves/ode.py).
"""

import jax
import numpy as np
import optax
import pytest

import jaxsamp
from jaxsamp.core.errors import InputError
from jaxsamp.learned.curves.training import RATE_INIT_SAMPLES, Curves, CurvesSettings, build
from jaxsamp.targets.mixture import GaussianMixture

TARGET = GaussianMixture([[1.5, 0.5], [-1.5, -0.5]], 0.6, [0.3, 0.7])  # normalised: log Z = 0
SMALL = dict(hidden=(16, 16), rate_hidden=(8,), num_frequencies=2, box=4.0, ode_steps=16, learning_rate=3e-3)
BATCH, STEPS, N = 64, 200, 2000


def test_fit_gives_log_z_within_its_budget_and_weights_equal_to_the_jarzynski_form():
    """Budget: 5 delta-method sd of log Z-hat, sqrt((1/ESS - 1) / n), plus 0.02 for the ODE error; the ESS must
    be resolved (> 0.2; measured 0.43, log Z-hat 0.032). The two log Z estimates agree to 1e-3 (measured 5e-6)."""
    fitted = jaxsamp.fit("curves", TARGET, num_steps=STEPS, key=0, batch_size=BATCH, progress=False, **SMALL)
    assert fitted.settings.interpolation == "learned"  # the default
    assert fitted.warnings == [] and {"loss", "residual_abs", "log_Z_learned", "target_evals"} <= set(fitted.history)
    assert int(fitted.history["target_evals"][-1]) == RATE_INIT_SAMPLES + STEPS * BATCH
    samples = fitted.sample(1, N)
    assert samples.x.shape == (N, 2)
    ess, log_z = float(samples.ess), float(samples.log_Z)
    assert 0.2 < ess <= 1.0 and np.isfinite(log_z)
    assert abs(log_z - TARGET.log_Z) < 5 * np.sqrt((1 / ess - 1) / N) + 0.02
    figures = fitted.evaluate(2, N)  # the same sample count: the compiled ODE is reused
    assert abs(figures["log_Z_hat"] - figures["log_Z_hat_jarzynski"]) < 1e-3
    assert figures["log_Z_abs_err"] == pytest.approx(abs(figures["log_Z_hat"]))
    assert figures["sample_target_evals"] == N * (4 * SMALL["ode_steps"] + 1) and figures["nonfinite_samples"] == 0
    assert np.isfinite(figures["mmd"]) and np.isfinite(figures["log_Z_learned"])
    with pytest.raises(InputError, match="curves: evaluate takes no option sinkhorn") as refused:
        fitted.evaluate(2, N, sinkhorn=False)
    assert refused.value.hint == "its options: reference"
    # the whole ODE run of the same draws, by the method's numerics: per path, log w (change of variables)
    # + log Z_0 = -int R + log Z_0 + int C up to the RK4 error (measured max 1e-5; log w has sd 1.3)
    out = Curves(TARGET, fitted.settings, BATCH).transport(jax.random.key(1), fitted.state, N)
    np.testing.assert_array_equal(np.asarray(out.samples.log_w), np.asarray(samples.log_w))
    cov = np.asarray(out.samples.log_w) + float(out.samples.log_Z0)
    jar = np.asarray(out.jarzynski.log_w) + float(out.jarzynski.log_Z0)
    np.testing.assert_allclose(cov, jar, atol=2e-3)
    assert np.asarray(out.speed_max).shape == (SMALL["ode_steps"] + 1,)


def test_loss_is_judged_for_progress_only_with_box_collocation():
    def judged(collocation):
        return build(TARGET, CurvesSettings(collocation=collocation, **SMALL)).health.judge_progress

    assert judged("box") is True and judged("trajectory") is False


def test_skipped_updates_and_diverged_points_are_the_methods_own_warnings():
    """The curves' checks on a history (``TrainingHealth.checks``): a running total of skipped updates, and
    diverged collocation points summed over the steps; a clean history has none."""
    checks = build(TARGET, CurvesSettings(**SMALL)).health.checks
    clean = {"skipped_updates": np.zeros(4, np.int32), "diverged_points": np.zeros(4, np.int32)}
    assert checks(clean) == []
    bad = {"skipped_updates": np.array([0, 1, 2, 2]), "diverged_points": np.array([0, 3, 0, 1])}
    assert checks(bad) == ["2 updates were skipped for a non-finite gradient",
                           "4 collocation trajectories diverged and were left out of the loss"]


def test_an_optimizer_of_ones_own_replaces_adam_and_keeps_the_finite_guard():
    """Exact check: SGD at rate 0 on ``(g, v)`` leaves them as they were while ``C`` moves with its own Adam."""
    sampler = build(TARGET, CurvesSettings(**SMALL), batch_size=8, optimizer=optax.sgd(0.0))
    state = jax.jit(sampler.init)(jax.random.key(0))
    new, metrics = jax.jit(sampler.step)(jax.random.key(1), state)
    for a, b in zip(jax.tree.leaves(state.params.f), jax.tree.leaves(new.params.f)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert not all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(state.params.rate),
                                                        jax.tree.leaves(new.params.rate)))
    assert int(metrics["skipped_updates"]) == 0  # optax.apply_if_finite still wraps it


def test_a_target_that_is_not_real_and_flat_is_a_clear_error():
    with pytest.raises(InputError, match="method 'curves': Boltzmann curves need a real-valued target with a flat"):
        jaxsamp.fit("curves", jaxsamp.targets.get("ising", L=3, beta=0.3), num_steps=2, progress=False)
