"""SCLD and CMCD: the log-variance loss at the exact control of a Gaussian path, one segment = CMCD, the stored paths'
weights, unbiased SMC log Z, settings, and a fit stopped part way and resumed.

Targets: Gaussians with a closed-form ``log Z``. Each test's error budget is in its docstring.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsamp
from jaxsamp.core.errors import InputError
from jaxsamp.learned import buffer as fifo
from jaxsamp.learned.diffusion.scld import (
    CmcdSettings,
    DiagonalGaussian,
    Rollout,
    Scld,
    ScldPath,
    ScldSettings,
    build_scld,
    log_variance_loss,
    schedule_betas,
    segment_log_weights,
)
from jaxsamp.smc.annealing import linear_schedule
from jaxsamp.smc.transitions import langevin_transition
from jaxsamp.targets.gaussian import Gaussian

MEAN, VARIANCE = np.array([1.0, -0.5]), np.array([0.25, 0.64])
TARGET = Gaussian(MEAN, np.diag(VARIANCE))
SMALL = {"num_time_steps": 8, "hidden": 8, "num_layers": 1, "learning_rate": 1e-3}


def exact_control(diffusion: float):
    """The control that transports the geometric path from ``N(0, I)`` to ``TARGET`` (Vargas et al. 2024).

    Per coordinate ``pi_s = N(mu_s, 1 / lambda_s)`` with ``lambda_s = 1 - s + s / v`` and
    ``mu_s = s m / (v lambda_s)``; the affine map ``x = mu_s + z / sqrt(lambda_s)`` moves along it with
    velocity ``mu_s' - lambda_s' / (2 lambda_s) (x - mu_s)``, and with Langevin noise of ``sigma^2 = diffusion``
    per unit ``s`` the control ``u = velocity / diffusion`` keeps every marginal at ``pi_s`` (Vargas et al. 2024).
    """
    m, v = jnp.asarray(MEAN, jnp.float32), jnp.asarray(VARIANCE, jnp.float32)
    dlam = -1.0 + 1.0 / v

    def u(x, s):
        lam = 1.0 - s + s / v
        mu = s * m / (v * lam)
        dmu = m / v * (lam - s * dlam) / lam**2
        return (dmu - dlam / (2.0 * lam) * (x - mu)) / diffusion

    return u


def gaussian_path_loss(control, num_steps: int, num_segments: int = 4, n: int = 2000, diffusion: float = 1.0,
                       seed: int = 0):
    """The log-variance loss of ``n`` paths simulated with ``control`` (``None``: zero) along the plain geometric
    path from ``N(0, I)`` to ``TARGET``, ``sigma^2 dt = diffusion / num_steps``, cut into ``num_segments``."""
    path = ScldPath(TARGET, DiagonalGaussian(jnp.zeros(2), jnp.zeros(2)))
    step_size = diffusion / num_steps
    times = jnp.asarray(linear_schedule(num_steps), jnp.float32)
    transition = langevin_transition(path, step_size, control=control)

    def level(x, i):
        x_next, _, _ = transition(jax.random.fold_in(jax.random.key(2 * seed + 1), i), x, times[i], times[i + 1])
        return x_next, x_next

    x0 = path.base.sample(jax.random.key(2 * seed), n)
    _, xs = jax.lax.scan(level, x0, jnp.arange(num_steps))
    states = jnp.concatenate([x0[None], xs])
    length = num_steps // num_segments
    segments = jnp.stack([states[k * length:(k + 1) * length + 1] for k in range(num_segments)])
    return float(log_variance_loss(segment_log_weights(path, segments, times, step_size, control)))


def test_the_loss_at_the_exact_control_is_far_below_zero_controls_and_falls_with_the_steps():
    """At the transporting control every segment's weight is constant up to the Euler-Maruyama error, whose variance
    vanishes at least like dt (T = 32 -> 128 divides it by at least 4); at zero control (unadjusted Langevin
    annealing) the weights keep an O(1) variance whatever T (Langevin dynamics of total time 1 lag behind the path).

    Measured (n = 2000 paths, seeds 0, 1, 2): exact control 0.0163, 0.0159, 0.0160 at T = 32 and 0.0028, 0.0028,
    0.0029 at T = 128 (a fall of 5.7-5.8x); zero control 0.506, 0.462, 0.458 at T = 32 and 0.48-0.50 at T = 128.
    Bounds: the exact control's loss below a twentieth of zero control's at T = 32 (measured 1/28 to 1/31), and
    at T = 128 below a quarter of its value at T = 32. A control off by a factor of 2 fails the first.
    """
    optimal = {steps: gaussian_path_loss(exact_control(1.0), steps) for steps in (32, 128)}
    zero = gaussian_path_loss(None, 32)
    assert optimal[32] < zero / 20, (optimal, zero)
    assert optimal[128] < optimal[32] / 4, optimal


def test_recomputed_segment_weights_are_the_simulated_ones():
    """The loss's weights, recomputed on the stored paths under the same parameters, equal the rollout's (float32
    round-off, 1e-4), and the segments' weights sum to the SMC estimate's increments (one segment: the IS estimate)."""
    settings = ScldSettings(**SMALL, num_segments=2, mcmc="mala", resample_threshold=1.0)
    sampler = Scld(TARGET, settings, batch_size=64)
    state = sampler.init(jax.random.key(0))
    model = jax.tree.map(lambda a: a + 0.1 * jax.random.normal(jax.random.key(5), a.shape), state.model)
    run = sampler.rollout(jax.random.key(1), model, state.schedule_logits + 0.3 * jnp.arange(8.0), 64)
    path = sampler.path(model, state.schedule_logits + 0.3 * jnp.arange(8.0))
    again = segment_log_weights(path, run.states, sampler.times, sampler.step_size, sampler.control(model, path))
    np.testing.assert_allclose(np.asarray(again), np.asarray(run.log_w), rtol=1e-4, atol=1e-4)
    assert int(run.num_resamplings) == 1  # threshold 1: the inner segment end always resamples
    lse = jax.scipy.special.logsumexp
    first = lse(run.log_w[0]) - jnp.log(64.0)
    second = lse(run.log_w[1]) - jnp.log(64.0)  # uniform weights after the resampling
    np.testing.assert_allclose(float(run.log_Z_hat), float(first + second), rtol=1e-5, atol=1e-5)


def test_the_learned_schedule_is_monotone_from_zero_to_one():
    betas = schedule_betas(jax.random.normal(jax.random.key(0), (16,)) * 3.0)
    assert float(betas[0]) == 0.0 and float(betas[-1]) == 1.0 and bool(jnp.all(jnp.diff(betas) > 0))
    np.testing.assert_allclose(np.asarray(schedule_betas(jnp.ones(8))), np.linspace(0, 1, 9), atol=1e-6)


def _fit(method, settings, num_steps=3, **kwargs):
    return jaxsamp.fit(method, TARGET, num_steps=num_steps, key=0, settings=settings, batch_size=16, progress=False,
                       **kwargs)


def _leaves(tree):
    return [np.asarray(leaf) for leaf in jax.tree.leaves(tree)]


def test_one_segment_scld_is_cmcd():
    """SCLD with one segment and no buffer, no resampling and no moves is CMCD: the same training history, train state
    and SMC draws at the same keys, bit for bit. With its default resampling and HMC it trains identically too (one
    segment has no inner end; the last end needs no resampling or move in training), and only the drawn particles
    differ (its last level resamples and moves them), not the estimate."""
    cmcd = _fit("cmcd", CmcdSettings(**SMALL))
    plain = _fit("scld", ScldSettings(**SMALL, num_segments=1, resample_threshold=0.0, mcmc="none", buffer_batches=0))
    default = _fit("scld", ScldSettings(**SMALL, num_segments=1, buffer_batches=0))
    for other in (plain, default):
        assert sorted(other.history) == sorted(cmcd.history)
        for name in cmcd.history:
            np.testing.assert_array_equal(other.history[name], cmcd.history[name], err_msg=name)
        for a, b in zip(_leaves(other.state), _leaves(cmcd.state)):
            np.testing.assert_array_equal(a, b)
    draws, draws_plain = cmcd.sample(1, 64), plain.sample(1, 64)
    np.testing.assert_array_equal(np.asarray(draws.x), np.asarray(draws_plain.x))
    np.testing.assert_array_equal(np.asarray(draws.log_w), np.asarray(draws_plain.log_w))
    np.testing.assert_allclose(float(default.sample(1, 64).log_Z), float(draws.log_Z), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mcmc, threshold", [("mala", 0.3), ("hmc", 1.0)])
def test_smc_log_z_of_a_perturbed_sampler_is_unbiased(mcmc, threshold):
    """``E[Z-hat] = Z`` for any parameters: 400 independent SMC runs of 32 particles with a randomly perturbed control,
    prior and schedule (the weights are far from constant), adaptive (0.3) or forced (1.0) resampling at 4 segment
    ends, MALA or HMC moves. Budget: the mean of ``Z-hat / Z`` lies within 4 standard errors of 1 (its sample
    standard deviation over the runs / sqrt(400)), and resampling happened in some runs. Measured: 0.992 +- 0.013
    (MALA, 63 resamplings over the runs) and 0.995 +- 0.014 (HMC, every segment end); the sd of ``Z-hat / Z`` over
    runs is 0.25-0.28. A prior density missing its normaliser (log Z off by 1.84) or estimates that drop the
    resamplings' normalisers fail it.
    """
    settings = ScldSettings(num_time_steps=16, num_segments=4, hidden=8, num_layers=1, mcmc=mcmc,
                            resample_threshold=threshold, mcmc_step_size_start=0.05, mcmc_step_size_end=0.2,
                            num_leapfrog_steps=3)
    sampler = Scld(TARGET, settings, batch_size=32)
    state = sampler.init(jax.random.key(0))
    noise = jax.random.split(jax.random.key(7), 3)
    network, mean, log_std = state.model
    network = jax.tree.map(lambda a: a + 0.2 * jax.random.normal(noise[0], a.shape), network)
    state = state._replace(model=(network, mean + 0.3, log_std - 0.2),
                           schedule_logits=jax.random.normal(noise[1], state.schedule_logits.shape))
    def run(key):
        samples, trace, _ = sampler.smc_run(key, state, 32)
        return samples.log_Z, jnp.sum(trace.resampled)

    log_z, resampled = jax.jit(jax.vmap(run))(jax.random.split(jax.random.key(3), 400))
    ratio = np.exp(np.asarray(log_z, np.float64) - TARGET.log_Z)
    standard_error = ratio.std(ddof=1) / np.sqrt(ratio.size)
    assert abs(ratio.mean() - 1.0) < 4 * standard_error, (ratio.mean(), standard_error)
    assert 0.05 < ratio.std() and int(np.sum(resampled)) > 0


def _rollout(sampler: Scld, log_w) -> Rollout:
    """A stand-in rollout whose paths name themselves: every state of segment ``k``'s path of particle ``i`` is
    ``100 k + i``."""
    num_segments, n = log_w.shape
    code = 100.0 * jnp.arange(num_segments)[:, None] + jnp.arange(n)[None, :]
    states = jnp.broadcast_to(code[:, None, :, None], (num_segments, sampler.segment_length + 1, n, sampler.dim))
    zero = jnp.int32(0)
    return Rollout(states, log_w, jnp.float32(0), jnp.float32(0), jnp.ones(num_segments), zero, zero, zero)


def test_the_buffer_trains_on_half_a_batch_of_stored_paths_drawn_by_their_weights():
    """``training_paths``: the rollout enters the buffer, then each segment trains on ``batch_size // 2`` distinct
    stored paths and ``batch_size - batch_size // 2`` distinct fresh ones (the same particles in every segment).
    Stored paths are drawn with probability proportional to ``exp(log w / temperature)``: with one path drawn (a
    batch of 3), its frequency over 4000 draws from weights ``(1, 2, 3, 4, 5, 6) / 21`` is within 4 standard errors
    of ``w_i`` at temperature 1 and of ``sqrt(w_i) / sum sqrt(w)`` at temperature 2; a path of weight ``e^-60``
    among ``e^0`` ones is never drawn, nor an empty slot."""
    sampler = Scld(TARGET, ScldSettings(**SMALL, num_segments=2, buffer_batches=2), batch_size=8)
    buffer = sampler.init(jax.random.key(0)).buffer
    log_w = jnp.zeros((2, 8)).at[0, 3].set(-60.0)
    buffer, states, index = sampler.training_paths(jax.random.key(1), buffer, _rollout(sampler, log_w))
    assert int(buffer.size) == 8 and index.shape == (2, 4) and states.shape == (2, 5, 8, 2)
    codes = np.asarray(states[:, 0, :, 0])
    for k in range(2):
        drawn, fresh = codes[k, :4] - 100 * k, codes[k, 4:] - 100 * k
        assert len(set(drawn)) == 4 and len(set(fresh)) == 4 and set(drawn) | set(fresh) <= set(range(8))
        np.testing.assert_array_equal(drawn, np.asarray(index[k]))  # slot i holds particle i of the first rollout
    assert 3 not in set(codes[0, :4]) and np.array_equal(codes[0, 4:] % 100, codes[1, 4:] % 100)

    weights = np.arange(1.0, 7.0) / 21.0
    small = Scld(TARGET, ScldSettings(**SMALL, num_segments=2, buffer_batches=4), batch_size=3)
    for temperature, expected in ((1.0, weights), (2.0, np.sqrt(weights) / np.sqrt(weights).sum())):
        small.settings = dataclasses.replace(small.settings, buffer_temperature=temperature)
        filled = small.init(jax.random.key(0)).buffer
        for half in (jnp.log(weights[:3]), jnp.log(weights[3:])):
            filled = fifo.add(filled, (filled.data[0][:3], jnp.stack([half, half], axis=1)))
        rollout = _rollout(small, jnp.full((2, 3), -jnp.inf))  # adds three slots no draw may take

        def draw(key, buffer=filled, rollout=rollout):
            return small.training_paths(key, buffer, rollout)[2][0, 0]

        drawn = np.asarray(jax.jit(jax.vmap(draw))(jax.random.split(jax.random.key(2), 4000)))
        frequency = np.bincount(drawn, minlength=12)[:6] / drawn.size
        assert np.bincount(drawn, minlength=12)[6:].sum() == 0
        np.testing.assert_array_less(np.abs(frequency - expected), 4 * np.sqrt(expected * (1 - expected) / 4000))


def test_a_training_step_writes_the_drawn_paths_recomputed_weights_back_as_their_priorities():
    """After two steps, the first rollout's stored paths keep the weight they were simulated with unless the second
    step drew them; the drawn ones (some in every segment) hold their weight recomputed under the parameters the
    second step started from, and no more than half a batch per segment was drawn."""
    settings = ScldSettings(**{**SMALL, "learning_rate": 1e-2}, num_segments=2, mcmc="mala", buffer_batches=3)
    sampler = Scld(TARGET, settings, batch_size=16)
    step = jax.jit(sampler.step)
    first, _ = step(jax.random.key(0), sampler.init(jax.random.key(0)))
    second, _ = step(jax.random.key(1), first)
    stored, before = first.buffer.data
    after = second.buffer.data[1]
    path = sampler.path(first.model, first.schedule_logits)
    recomputed = segment_log_weights(path, jnp.moveaxis(stored[:16], 0, 2), sampler.times, sampler.step_size,
                                     sampler.control(first.model, path)).T
    changed = ~np.isclose(np.asarray(after[:16]), np.asarray(before[:16]), rtol=0, atol=1e-6)
    assert np.all(changed.sum(axis=0) >= 1) and np.all(changed.sum(axis=0) <= 8), changed.sum(axis=0)
    np.testing.assert_allclose(np.asarray(after[:16])[changed], np.asarray(recomputed)[changed], rtol=1e-4,
                               atol=1e-4)


def test_settings_are_checked():
    with pytest.raises(InputError, match="num_time_steps=10 is not a multiple of num_segments=4"):
        ScldSettings(num_time_steps=10, num_segments=4)
    with pytest.raises(InputError, match="mcmc must be one of"):
        ScldSettings(mcmc="nuts")
    with pytest.raises(InputError, match="resample_threshold must be"):
        ScldSettings(resample_threshold=1.5)
    with pytest.raises(InputError, match="needs a real-valued target"):
        build_scld(jaxsamp.targets.get("ising", L=3, beta=0.3))
    assert "num_segments" not in {f.name for f in dataclasses.fields(CmcdSettings)}


def test_a_fit_stopped_part_way_and_resumed_is_the_uninterrupted_fit(tmp_path):
    """``fit`` for 4 of 8 steps with a checkpoint, then the same call for 8 steps from that folder, ends bit for bit
    where an uninterrupted 8-step fit ends: every train-state leaf (network, prior, schedule, both optimisers, the
    evaluation count) and every history entry."""
    settings = ScldSettings(**SMALL, num_segments=2, mcmc="mala")
    common = {"checkpoint_every": 2, "chunk": 2}
    _fit("scld", settings, num_steps=4, checkpoint=tmp_path / "cut", **common)
    resumed = _fit("scld", settings, num_steps=8, checkpoint=tmp_path / "cut", **common)
    whole = _fit("scld", settings, num_steps=8, checkpoint=tmp_path / "whole", **common)
    for name in whole.history:
        np.testing.assert_array_equal(resumed.history[name], whole.history[name], err_msg=name)
    for a, b in zip(_leaves(resumed.state), _leaves(whole.state)):
        np.testing.assert_array_equal(a, b)
    assert int(whole.history["target_evals"][-1]) == int(whole.state.target_evals) > 0


def test_target_evaluations_are_counted():
    """Per training step and particle, 8 Euler-Maruyama steps on the learned (not affine) path: 3 evaluations each
    (the transition's count) and 2 score inputs, twice (simulation and the loss's recomputation), plus one MALA move
    (2 evaluations) at the one inner segment end; sampling pays the steps and the moves of both segment ends once."""
    settings = ScldSettings(**SMALL, num_segments=2, mcmc="mala")
    fitted = _fit("scld", settings, num_steps=2)
    assert int(fitted.history["target_evals"][0]) == 16 * (2 * 8 * (3 + 2) + 2)
    figures = fitted.evaluate(1, 32)
    assert figures["sample_target_evals"] == 32 * (8 * (3 + 2) + 2 * 2)
    assert set(figures) >= {"log_Z_hat", "log_Z_abs_err", "ess", "segment_ess_min", "segment_ess_mean",
                            "num_resamplings", "sinkhorn"}  # the target has exact samples: the paper's sample figure
    without = fitted.evaluate(1, 32, sinkhorn=False)
    assert "sinkhorn" not in without and without["log_Z_hat"] == figures["log_Z_hat"]  # the same run, at the same key


def test_fitted_smc_runs_the_learned_steps_as_the_methods_own_sampler_does():
    """``Fitted.smc`` takes SCLD's path and transition (``smc_proposal``): without resampling, over one segment of
    every level, it is CMCD's own draw at the same key (the driver folds level ``i``'s key as ``smc_run`` does), to
    float32 round-off, with the same target evaluations (the score inputs counted per level); with SCLD's resampling
    and segments it estimates the same log Z (Monte Carlo error of 512 particles: within 0.1, measured 0.01)."""
    cmcd = _fit("cmcd", CmcdSettings(**SMALL))
    draws = cmcd.sample(1, 64)
    result = cmcd.smc(1, 64, resample_threshold=0.0, segment_length=SMALL["num_time_steps"])
    np.testing.assert_allclose(np.asarray(result.samples.x), np.asarray(draws.x), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(result.samples.log_w), np.asarray(draws.log_w), rtol=1e-4, atol=1e-4)
    assert result.num_target_evals == cmcd.evaluate(1, 64)["sample_target_evals"] == 64 * 8 * (3 + 2)
    scld = _fit("scld", ScldSettings(**SMALL, num_segments=2, mcmc="none"))
    resampled = scld.smc(2, 512, resample_threshold=1.0, resampler="multinomial", segment_length=4)
    assert np.asarray(resampled.trace.resampled).sum() == 2  # at the two segment ends
    assert abs(float(resampled.samples.log_Z) - float(scld.sample(2, 512).log_Z)) < 0.1
