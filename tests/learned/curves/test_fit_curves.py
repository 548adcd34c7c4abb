"""Boltzmann curves through jaxsamp.fit ("curves"): a 2-D two-component mixture with exact log Z = 0, seconds each.

The change-of-variables weights are exact up to the ODE's error whatever the training reached, so the
log Z estimate is held to its Monte Carlo budget; the method's own cheap invariant is that the
change-of-variables and the Jarzynski-type weights agree path by path (they differ only by the RK4 error,
jaxsamp/learned/curves/ode.py).
"""

import jax
import numpy as np
import pytest

import jaxsamp
from jaxsamp.core.errors import InputError
from jaxsamp.core.registry import LEARNED
from jaxsamp.learned.curves.training import RATE_INIT_SAMPLES, BoltzmannCurveSettings
from jaxsamp.targets.mixture import GaussianMixture

TARGET = GaussianMixture([[1.5, 0.5], [-1.5, -0.5]], 0.6, [0.3, 0.7])  # normalised: log Z = 0
SMALL = dict(hidden=(16, 16), rate_hidden=(8,), num_frequencies=2, box=4.0, ode_steps=16, learning_rate=3e-3)
BATCH, STEPS, N = 64, 200, 2000


def test_fit_gives_log_z_within_its_budget_and_weights_equal_to_the_jarzynski_form():
    """Budget: 5 delta-method sd of log Z-hat, sqrt((1/ESS - 1) / n), plus 0.02 for the ODE error; the ESS must
    be resolved (> 0.2; measured 0.43, log Z-hat 0.032). The two log Z estimates agree to 1e-3 (measured 5e-6)."""
    fitted = jaxsamp.fit("curves", TARGET, num_steps=STEPS, key=0, batch_size=BATCH, progress=False, **SMALL)
    assert fitted.sampler.settings.interpolation == "learned"  # the default
    assert fitted.warnings == [] and {"loss", "residual_abs", "log_z_learned", "target_evals"} <= set(fitted.history)
    assert int(fitted.history["target_evals"][-1]) == RATE_INIT_SAMPLES + STEPS * BATCH
    samples = fitted.sample(1, N)
    assert samples.x.shape == (N, 2)
    ess, log_z = float(samples.ess), float(samples.log_Z)
    assert 0.2 < ess <= 1.0 and np.isfinite(log_z)
    assert abs(log_z - TARGET.log_Z) < 5 * np.sqrt((1 / ess - 1) / N) + 0.02
    figures = fitted.evaluate(2, N)  # the same sample count: the compiled ODE is reused
    assert abs(figures["log_Z"] - figures["log_Z_jarzynski"]) < 1e-3
    assert figures["log_Z_abs_err"] == pytest.approx(abs(figures["log_Z"]))
    assert figures["sample_target_evals"] == N * (4 * SMALL["ode_steps"] + 1) and figures["nonfinite_samples"] == 0
    assert np.isfinite(figures["mmd"]) and np.isfinite(figures["log_Z_learned"])
    # the whole ODE run of the same draws (the compiled ODE is reused): per path, log w (change of variables)
    # + log Z_0 = -int R + log Z_0 + int C up to the RK4 error (measured max 1e-5; log w has sd 1.3)
    out = fitted.sampler.transport(fitted.state, jax.random.key(1), N)
    np.testing.assert_array_equal(np.asarray(out.samples.log_w), np.asarray(samples.log_w))
    cov = np.asarray(out.samples.log_w) + float(out.samples.log_Z0)
    jar = np.asarray(out.jarzynski.log_w) + float(out.jarzynski.log_Z0)
    np.testing.assert_allclose(cov, jar, atol=2e-3)
    assert np.asarray(out.speed_max).shape == (SMALL["ode_steps"] + 1,)


def test_loss_is_judged_for_progress_only_with_box_collocation():
    judge = LEARNED.entry("curves").meta["judge_progress"]
    assert judge(BoltzmannCurveSettings(collocation="box")) is True
    assert judge(BoltzmannCurveSettings(collocation="trajectory")) is False


def test_a_target_that_is_not_real_and_flat_is_a_clear_error():
    with pytest.raises(InputError, match="method 'curves': Boltzmann curves need a real-valued target with a flat"):
        jaxsamp.fit("curves", jaxsamp.targets.get("ising", L=3, beta=0.3), num_steps=2, progress=False)
