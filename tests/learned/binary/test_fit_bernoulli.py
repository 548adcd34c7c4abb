"""``jaxsamp.fit("bernoulli_denoising", ...)``: a denoiser trained on an enumerable mixture's exact samples samples it within a
stated TV; an array of data is the other target form; bad sources and sampler settings are clear errors."""

import jax
import numpy as np
import pytest

import jaxsamp
from jaxsamp.core.errors import ConfigError, InputError
from jaxsamp.diagnostics.binary_discrepancies import total_variation
from jaxsamp.learned.binary import bernoulli_samplers as bs
from jaxsamp.learned.binary.bernoulli_denoising import (
    BernoulliDenoisingSettings,
    build,
    exact_posterior_mean,
    mean_squared_error,
    noisy_batch,
    posterior_mean,
)
from jaxsamp.targets.binary import bernoulli_mixture, enumerated_probabilities

MIXTURE = bernoulli_mixture(dim=8, num_components=4, logit_scale=2.0, seed=3)
#: 4-measurement two-stage sampling, 40 denoiser evaluations per sample
SAMPLER = bs.SamplerSettings("two_stage", num_measurements=4, steps_per_measurement=9, readout="sign")


def test_fit_on_an_enumerable_mixture_samples_it_within_a_stated_tv():
    """A small MLP trained on 5000 exact samples of an 8-bit, 4-component mixture (400 steps of 256).

    Stated: the learned ``g`` is within a tenth of the untrained one's mean squared distance to the exact
    ``grad A`` on noisy data (training learns eq. 3), and the TV of 10 000 samples to the law by enumeration
    is <= 0.09 and within 0.03 of the same sampler with the exact denoiser (measured: 0.077 and 0.053; the
    floor of 10 000 exact samples is 0.036; the uniform-prior denoiser ``tanh(h)`` gives TV 0.7).
    """
    settings = BernoulliDenoisingSettings(alpha=1.0, max_measurements=4, hidden=(64, 64), learning_rate=3e-3,
                                          decay_steps=400, num_train_samples=5000, sampler=SAMPLER)
    fitted = jaxsamp.fit("bernoulli_denoising", MIXTURE, num_steps=400, key=0, settings=settings, batch_size=256,
                         progress=False)
    assert fitted.warnings == [] and set(fitted.history) == {"loss", "bit_error"}
    state = fitted.state
    assert state.data.shape == (5000, 8)
    exact = exact_posterior_mean(MIXTURE.log_partition)
    h = jax.jit(noisy_batch, static_argnums=(2, 3))(jax.random.key(4), MIXTURE.sample(jax.random.key(5), 2000), 1.0, 4)
    untrained = build(MIXTURE, settings).init(jax.random.key(1))
    before = mean_squared_error(posterior_mean(settings, untrained.params, (8,)), exact, h)
    after = mean_squared_error(posterior_mean(fitted.settings, state.params, (8,)), exact, h)
    assert after < 0.1 * before, (before, after)
    n = 10_000
    figures = fitted.evaluate(3, n)
    x_exact, _, _ = bs.sample(SAMPLER, exact, 1.0, jax.random.key(3), n, (8,))
    tv_exact = total_variation(x_exact, enumerated_probabilities(MIXTURE))
    assert figures["tv"] <= 0.09 and figures["tv"] <= tv_exact + 0.03, (figures, tv_exact)
    assert figures["denoiser_evals_per_sample"] == 40 and figures["acceptance_rate"] == 1.0


def test_an_array_of_data_is_a_target_and_the_draws_are_unweighted():
    """Unweighted draws: ``log_w = 0`` (``ess = 1``), ``log_Z`` NaN; with data and no density, ``evaluate`` is an MMD."""
    data = MIXTURE.sample(jax.random.key(0), 500)
    fitted = jaxsamp.fit("bernoulli_denoising", data, num_steps=10, key=1, hidden=(8,), batch_size=32,
                         sampler={"steps_per_measurement": 3}, progress=False)
    assert fitted.settings.sampler == bs.SamplerSettings(steps_per_measurement=3)
    samples = fitted.sample(2, 64)
    assert samples.x.shape == (64, 8) and set(np.unique(np.asarray(samples.x))) <= {-1.0, 1.0}
    assert np.all(np.asarray(samples.log_w) == 0) and float(samples.ess) == pytest.approx(1.0)
    assert np.isnan(float(samples.log_Z))
    figures = fitted.evaluate(3, 64)
    assert set(figures) == {"acceptance_rate", "denoiser_evals_per_sample", "mmd"} and figures["mmd"] > 0
    assert "bernoulli_denoising on data" in fitted.summary()


def test_bad_sources_and_sampler_settings_are_clear_errors():
    with pytest.raises(InputError, match=r"method 'bernoulli_denoising': data must hold \+-1 spins"):
        jaxsamp.fit("bernoulli_denoising", np.zeros((10, 4)), num_steps=2)
    with pytest.raises(InputError, match="learns \\+-1 states; target 'gaussian' has domain 'real'"):
        jaxsamp.fit("bernoulli_denoising", jaxsamp.targets.get("gaussian", dim=2), num_steps=2)
    with pytest.raises(InputError, match="neither exact samples nor data"):
        jaxsamp.fit("bernoulli_denoising", jaxsamp.targets.get("ising", L=3, beta=0.4), num_steps=2)
    with pytest.raises(ConfigError, match="correction exact needs the target's tractable q_alpha"):
        jaxsamp.fit("bernoulli_denoising", MIXTURE, num_steps=2, sampler=bs.SamplerSettings(correction="exact"))
    with pytest.raises(ConfigError, match="num_measurements = 2 exceeds max_measurements = 1"):
        jaxsamp.fit("bernoulli_denoising", MIXTURE, num_steps=2, sampler={"num_measurements": 2})


def test_an_optimizer_replaces_the_clipped_adam():
    """``optimizer=`` replaces the denoiser's optimiser: SGD at rate 0 leaves the network as built."""
    import optax

    data = MIXTURE.sample(jax.random.key(0), 100)
    fitted = jaxsamp.fit("bernoulli_denoising", data, num_steps=3, hidden=(8,), batch_size=16,
                         optimizer=optax.sgd(0.0), progress=False)
    untouched = jax.jit(fitted.sampler.init)(jax.random.split(jax.random.key(0))[0])
    for a, b in zip(jax.tree.leaves(fitted.state.params), jax.tree.leaves(untouched.params)):
        np.testing.assert_array_equal(a, b)
