"""Bernoulli-noise samplers: stationary laws and invariance against enumeration, the measurement schedule.

The trained denoiser's TV is checked through ``jaxsamp.fit`` in test_fit_bernoulli.py.

Every statistical check is a Pearson chi-square over all 2^d states (rare ones
pooled) at a fixed seed, rejecting below p = 1e-4 (about 3.9 sigma); the power
checks show that the same test rejects a chain that is known to be biased.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsamp.core import ensemble, run
from jaxsamp.core.errors import InputError
from jaxsamp.diagnostics.binary_discrepancies import chi_square_p_value
from jaxsamp.learned.binary import bernoulli_samplers as bs
from jaxsamp.learned.binary.bernoulli_denoising import exact_posterior_mean, noisy_log_density
from jaxsamp.targets.binary import BernoulliMixture, ProductBernoulli, spin_states

P_MIN = 1e-4
PRODUCT = ProductBernoulli([0.8, -0.5, 0.1, -0.95, 0.3, 0.6, -0.7, 0.9])
MIXTURE = BernoulliMixture(
    [0.5, 0.3, 0.2],
    [
        [0.9, 0.8, -0.7, 0.6, -0.9, 0.5, 0.8, -0.8],
        [-0.8, -0.6, 0.7, 0.2, 0.9, -0.9, -0.7, 0.6],
        [0.1, -0.9, -0.9, -0.5, 0.3, 0.95, 0.8, 0.7],
    ],
)


def law(target) -> np.ndarray:
    return np.exp(np.asarray(jax.vmap(target.log_prob)(spin_states(8)), np.float64))


def noisy_law(target, alpha) -> np.ndarray:
    return np.exp(np.asarray(jax.vmap(noisy_log_density(target.log_partition, alpha))(spin_states(8)), np.float64))


def run_chains(kernel, start, num_steps, seed=1):
    chains = ensemble(kernel)
    state, trace = run(
        chains.step,
        chains.init(start),
        jax.random.key(seed),
        num_steps,
        trace=lambda s, info: jnp.mean(info.acceptance_rate),
        progress=False,
    )
    return state, trace


def test_product_prior_stationary_law_is_the_target():
    """Exact denoiser ``tanh(atanh mu + h)``: after 40 two-stage steps from uniform noise ``y ~ q_alpha`` and ``x ~ p``.

    For a product prior the two-stage move is data-augmentation Gibbs sampling of ``p(x) p(y | x)``,
    exact without correction. 20 000 chains. The test has power: after 10 steps instead of 40 the
    chains have not converged and ``y`` is rejected (p ~ 3e-3 here; the one-stage chain: p ~ 1e-104).
    """
    alpha = 0.8
    kernel = bs.measurement_kernel(exact_posterior_mean(PRODUCT.log_partition), alpha, "two_stage")
    state, _ = run_chains(kernel, bs.uniform_noise(jax.random.key(0), 20_000, (8,)), 40)
    assert chi_square_p_value(state.position, noisy_law(PRODUCT, alpha)) > P_MIN
    x = bs.denoise(state, "bernoulli", jax.random.key(2))
    assert chi_square_p_value(x, law(PRODUCT)) > P_MIN


def test_metropolis_hastings_leaves_the_exact_smoothed_density_invariant():
    """From exact draws of ``q_alpha`` of a 3-component mixture (not a product), 10 corrected one-stage steps keep ``q_alpha``.

    Power: the uncorrected chain from the same start drifts away from ``q_alpha``,
    which the same test rejects (p < 1e-8; this seed: 1e-69 or smaller). 20 000 chains.
    """
    alpha, n = 1.0, 20_000
    start = bs.measure(jax.random.key(3), MIXTURE.sample(jax.random.key(4), n), alpha)
    q = noisy_law(MIXTURE, alpha)
    g = exact_posterior_mean(MIXTURE.log_partition)
    corrected = bs.measurement_kernel(g, alpha, "one_stage", 2.0, "exact", MIXTURE.log_partition)
    state, acceptance = run_chains(corrected, start, 10)
    assert 0.2 < float(acceptance.mean()) < 0.99  # moves happen and some are rejected
    assert chi_square_p_value(start, q) > P_MIN
    assert chi_square_p_value(state.position, q) > P_MIN
    biased, _ = run_chains(bs.measurement_kernel(g, alpha, "one_stage", 2.0, "none"), start, 10)
    assert chi_square_p_value(biased.position, q) < 1e-8


def test_two_stage_proposal_is_the_product_bernoulli_it_is_scored_with():
    """``x ~ Bernoulli(g)`` then a measurement: ``E[y'_i | y] = tanh(alpha) g_i``, the law the MH correction uses (5 sigma, 20 000 draws)."""
    alpha, n = 0.7, 20_000
    g = exact_posterior_mean(MIXTURE.log_partition)
    kernel = bs.measurement_kernel(g, alpha, "two_stage")
    state = kernel.init(jnp.array([1.0, -1, 1, 1, -1, -1, 1, -1]))
    moved = jax.jit(jax.vmap(lambda k: kernel.step(k, state)[0].position))(jax.random.split(jax.random.key(0), n))
    mean = jnp.tanh(alpha) * state.mean
    np.testing.assert_allclose(moved.mean(axis=0), mean, atol=5 * float(jnp.sqrt(1 - mean**2).max()) / np.sqrt(n))
    odds = bs.proposal_log_odds("two_stage", state.mean, state.position, alpha, 1.0)
    np.testing.assert_allclose(jnp.tanh(odds / 2), mean, rtol=1e-5)


def test_every_step_evaluates_the_denoiser_once():
    """Counted at trace time: ``init`` and every kind of step (move, corrected move, commit) trace ``g`` exactly once."""
    calls = []

    def counting(h):
        calls.append(h.shape)
        return jnp.tanh(h)

    for move, correction in [("one_stage", "none"), ("one_stage", "trapezoid"), ("two_stage", "trapezoid")]:
        kernel = bs.measurement_kernel(
            counting, 0.5, move, 1.0, correction, num_measurements=2, steps_per_measurement=1
        )
        calls.clear()
        state = kernel.init(jnp.ones(5))
        jax.make_jaxpr(kernel.step)(jax.random.key(0), state)
        assert len(calls) == 2, (move, correction, calls)


def test_multi_measurement_schedule_commits_every_k_moves():
    """``m = 3``, ``K = 2``: commits at steps 2 and 5 of 8, the offset is ``alpha`` times the committed measurements."""
    alpha, m, K = 0.7, 3, 2
    assert bs.schedule_length(m, K) == 8
    kernel = bs.measurement_kernel(jnp.tanh, alpha, "two_stage", num_measurements=m, steps_per_measurement=K)
    state = kernel.init(jnp.ones(4))
    step = jax.jit(kernel.step)
    committed, positions = [], []
    for i in range(8):
        positions.append(state.position)
        state, info = step(jax.random.key(i), state)
        committed.append(bool(info.committed))
    assert committed == [False, False, True, False, False, True, False, False]
    np.testing.assert_allclose(state.offset, alpha * (positions[2] + positions[5]), rtol=1e-6)
    assert int(state.measurement) == m - 1
    np.testing.assert_allclose(state.mean, jnp.tanh(state.offset + alpha * state.position), rtol=1e-6)


def test_multi_measurement_sampling_is_exact_for_a_product_prior():
    """Two-stage moves with the exact denoiser: ``m = 3`` measurements of 15 moves, then ``x ~ Bernoulli(g(h))`` has law ``p``.

    Each stage is exact Gibbs on ``p(x | h_0) p(y | x)`` (a product posterior), so the
    committed measurements are draws of eq. (4) and the readout is ``p(x | h)``. 20 000 chains.
    """
    settings = bs.SamplerSettings("two_stage", num_measurements=3, steps_per_measurement=15, readout="bernoulli")
    x, state, _ = bs.sample(settings, exact_posterior_mean(PRODUCT.log_partition), 0.5, jax.random.key(5), 20_000, (8,))
    assert int(state.measurement[0]) == 2
    assert chi_square_p_value(x, law(PRODUCT)) > P_MIN


def test_bad_inputs_are_clear_errors():
    with pytest.raises(InputError, match="log partition"):
        bs.measurement_kernel(jnp.tanh, 1.0, "one_stage", correction="exact")
    with pytest.raises(InputError, match="move must be"):
        bs.measurement_kernel(jnp.tanh, 1.0, "three_stage")
    with pytest.raises(InputError, match="alpha"):
        bs.measurement_kernel(jnp.tanh, 0.0)
    with pytest.raises(InputError, match="PRNG key"):
        bs.denoise(bs.measurement_kernel(jnp.tanh, 1.0).init(jnp.ones(3)), "bernoulli")
    with pytest.raises(InputError, match="readout"):
        bs.SamplerSettings(readout="mode")
