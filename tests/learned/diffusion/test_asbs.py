"""ASBS: reduction to Adjoint Sampling, the harmonic prior, the corrector's closed-form optimum, a Gaussian run, resume,
and its two stages judged apart by the training health.

Corrector oracle. From the prior ``N(0, s0^2 I)`` the uncontrolled VE base gives
``X_1 = X_0 + N(0, nu_1 I)``, so ``E[X_0 | X_1] = s0^2 X_1 / (s0^2 + nu_1)`` and the
least-squares optimum of corrector matching, ``E[-(X_1 - X_0) / nu_1 | X_1]``, is
``-X_1 / (s0^2 + nu_1)``: the score of the base's terminal law, as it must be for
the uncontrolled process (phi_hat_1 is then that law).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _resume_checks import assert_resumes_bit_identical

from jaxsamp.core import run
from jaxsamp.core.errors import InputError
from jaxsamp.learned.diffusion.adjoint import AdjointSampling, AdjointSettings, simulate
from jaxsamp.learned.diffusion.asbs import Asbs, AsbsSettings, build, corrector_target, stages
from jaxsamp.learned.diffusion.sde import StateSpace
from jaxsamp.targets.gaussian import Gaussian

import jaxsamp.targets

TARGET = Gaussian(np.array([1.0, -0.5]), np.diag([0.25, 0.64]))
SMALL = dict(network="mlp", hidden=16, num_layers=2, sigma_min=1e-2, sigma_max=3.0, nfe=20, steps_per_epoch=5,
             learning_rate=2e-3, buffer_epochs=3)


def test_point_prior_is_adjoint_sampling():
    """Equal seeds: ASBS from a point mass at the origin reproduces Adjoint Sampling's losses and parameters."""
    adjoint = AdjointSampling(TARGET, AdjointSettings(**SMALL), batch_size=32)
    asbs = Asbs(TARGET, AsbsSettings(**SMALL, prior="point", adjoint_epochs=2, corrector_epochs=1), batch_size=32)
    assert asbs.stage_length == 2  # no corrector stage: the corrector is the base's terminal score
    out = []
    for sampler in (adjoint, asbs):
        state, trace = run(sampler.step, sampler.init(jax.random.key(0)), jax.random.key(1), 4, trace=lambda s, m: m,
                           chunk=4, progress=False)
        out.append((np.asarray(trace["loss"]), jax.tree.leaves(state.params), jax.tree.leaves(state.ema_params)))
    (loss_as, params_as, ema_as), (loss_asbs, params_asbs, ema_asbs) = out
    assert np.all(np.diff(loss_as) != 0)  # the losses move, so equality is informative
    np.testing.assert_allclose(loss_asbs, loss_as, rtol=1e-6)
    for a, b in zip(params_as + ema_as, params_asbs + ema_asbs):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-7)


def test_harmonic_prior_is_centred_with_the_reference_covariance():
    """Starts of DW-4 (4 particles in 2-D) under the harmonic prior, scale 2, against the reference's construction.

    The reference samples ``x = A z`` with ``A A^T = |R^-1|``, ``R = (3/2 I - 1/2 11^T) (x) I``,
    scales by ``scale`` and removes the centre of mass: covariance ``scale^2 P |R^-1| P``.
    Budget: 5 standard errors of each covariance entry, sqrt(2 / n) v0 at most, n = 40000.
    """
    sampler = Asbs(jaxsamp.targets.get("dw4"), AsbsSettings(network="egnn", hidden=8, num_layers=1, prior="harmonic",
                                                            prior_scale=2.0, nfe=4), batch_size=8)
    n, particles = 40_000, 4
    x0 = np.asarray(simulate(lambda t, x: jnp.zeros_like(x), sampler.chain, sampler.space, jax.random.key(0), n).x0,
                    np.float64)
    np.testing.assert_allclose(x0.reshape(n, particles, 2).mean(1), 0.0, atol=1e-5)
    precision = np.kron(1.5 * np.eye(particles) - 0.5 * np.ones((particles, particles)), np.eye(2))
    u, s, vt = np.linalg.svd(np.linalg.inv(precision))
    centre = np.kron(np.eye(particles) - np.ones((particles, particles)) / particles, np.eye(2))
    want = 4.0 * centre @ (u * s) @ u.T @ centre
    got = np.cov(x0.T)
    assert np.abs(got - want).max() < 5 * np.sqrt(2 / n) * want.max(), np.abs(got - want).max()
    np.testing.assert_allclose(np.trace(want) / 6, 2 / 3 * 4.0, rtol=1e-9)  # (2/3) scale^2 on the 6 free coordinates


def test_corrector_optimum_is_the_closed_form_score():
    """Least squares of the corrector target on uncontrolled pairs from N(0, s0^2): slope -1 / (s0^2 + nu_1).

    Budget: 5 standard errors of the least-squares slope (n = 20000 pairs x 2 coordinates).
    """
    s0, n = 0.8, 20_000
    sampler = Asbs(TARGET, AsbsSettings(**{**SMALL, "nfe": 50}, prior="gaussian", prior_scale=s0), batch_size=8)
    roll = simulate(lambda t, x: jnp.zeros_like(x), sampler.chain, sampler.space, jax.random.key(2), n)
    x1 = np.asarray(roll.x1, np.float64).ravel()
    y = np.asarray(corrector_target(roll.x0, roll.x1, sampler.schedule, sampler.space), np.float64).ravel()
    slope = x1 @ y / (x1 @ x1)
    se = np.sqrt(np.mean((y - slope * x1) ** 2) / (x1 @ x1))
    want = -1.0 / (s0**2 + sampler.schedule.nu1)
    assert abs(slope - want) < 5 * se, (slope, want, se)


def test_short_gaussian_prior_run_matches_a_gaussian_target():
    """MLP drift and corrector on N(m, diag(0.5^2, 0.8^2)) from N(0, I): mean within 0.1, variances within 20 %, log Z within 0.1.

    3 stages of 15 adjoint and 5 corrector epochs. The budgets cover training and
    discretisation bias of a CPU-sized run; the sampling error of 4000 samples is 5x
    smaller (5 sd of the mean: 0.06 / 0.04). The corrector must have trained: its
    loss falls by more than 10 % (measured 0.0158 -> 0.0122; the regression target is
    noisy, ``Var(X_0 | X_1) / nu_1^2`` per coordinate, so the loss keeps a floor).
    """
    settings = AsbsSettings(**{**SMALL, "nfe": 40, "steps_per_epoch": 50, "buffer_epochs": 8, "hidden": 32},
                            prior="gaussian", prior_scale=1.0, adjoint_epochs=15, corrector_epochs=5)
    sampler = Asbs(TARGET, settings, batch_size=256)
    state, trace = run(sampler.step, sampler.init(jax.random.key(0)), jax.random.key(1), 60, trace=lambda s, m: m,
                       chunk=20, progress=False)
    corrector = np.asarray(trace["corrector_epoch"])
    assert corrector.sum() == 15 and int(state.energy_evals) == 45 * 256
    corrector_loss = np.asarray(trace["loss"])[corrector]
    assert corrector_loss[-1] < 0.9 * corrector_loss[0]
    ws = sampler.sample(jax.random.key(2), state, 4000)
    x = np.asarray(ws.x, np.float64)
    np.testing.assert_allclose(x.mean(0), [1.0, -0.5], atol=0.1)
    np.testing.assert_allclose(x.var(0), [0.25, 0.64], rtol=0.2)
    assert abs(float(ws.log_Z) - TARGET.log_Z) < 0.1
    assert 0.05 < float(ws.ess) <= 1.0


def test_a_per_stage_corrector_buffer_holds_only_the_current_stage_s_rollouts():
    """Stages of 2 adjoint + 2 corrector epochs, a corrector buffer of 2 rollouts of 16: equal seeds with and without
    ``corrector_buffer_per_stage`` agree through stage 0 (its buffer starts empty either way); at stage 1's first
    corrector epoch the shared FIFO holds that rollout and one of stage 0 (32 pairs), the per-stage buffer only the
    new rollout (16, the same pairs), so the two corrector fits then differ."""
    common = dict(SMALL, prior="gaussian", prior_scale=1.0, adjoint_epochs=2, corrector_epochs=2,
                  corrector_buffer_epochs=2)
    shared, per_stage = (Asbs(TARGET, AsbsSettings(**common, corrector_buffer_per_stage=flag), batch_size=16)
                         for flag in (False, True))
    states = []
    for sampler in (shared, per_stage):
        state, trace = run(sampler.step, sampler.init(jax.random.key(0)), jax.random.key(1), 7, trace=lambda s, m: m,
                           chunk=7, progress=False)
        states.append(state)
        assert list(np.asarray(trace["corrector_epoch"])) == [False, False, True, True, False, False, True]
    a, b = states
    assert (int(a.corrector_buffer.size), int(b.corrector_buffer.size)) == (32, 16)
    jax.tree.map(lambda x, y: np.testing.assert_array_equal(x[:16], y[:16]), a.corrector_buffer.data,
                 b.corrector_buffer.data)  # the newest rollout went to slots 0-15 in both
    jax.tree.map(np.testing.assert_array_equal, a.params, b.params)  # the controllers are the same
    assert any(np.any(x != y) for x, y in zip(jax.tree.leaves(a.corrector_params), jax.tree.leaves(b.corrector_params)))
    assert a.corrector_buffer.capacity == b.corrector_buffer.capacity == 32


def test_prior_and_settings_are_checked():
    with pytest.raises(InputError, match="harmonic prior is defined for particle"):
        Asbs(TARGET, AsbsSettings(**SMALL, prior="harmonic"), batch_size=8)
    with pytest.raises(InputError, match="prior must be one of"):
        AsbsSettings(prior="uniform")
    with pytest.raises(InputError, match="corrector_epochs"):
        AsbsSettings(corrector_epochs=0)
    assert StateSpace(4, 2, True).free_dim == 6


def test_stopped_asbs_run_resumes_bit_identically(tmp_path):
    """A checkpointed ASBS run (stages of 3 adjoint + 2 corrector epochs), stopped half way, resumes bit for bit.

    A tiny MLP drift from a Gaussian prior to a 2-D Gaussian and a 64-sample buffer, so
    the FIFO wraps around several times and the whole train state (drift and corrector
    networks, the drift's average, both Adam states, both buffers, counters) has to
    round-trip through the checkpoint; the stop falls inside a stage.
    """
    settings = AsbsSettings(network="mlp", hidden=8, num_layers=1, sigma_max=1.5, nfe=8, buffer_epochs=4,
                            steps_per_epoch=3, learning_rate=1e-3, prior="gaussian", prior_scale=1.0, adjoint_epochs=3,
                            corrector_epochs=2)
    sampler = Asbs(jaxsamp.targets.get("gaussian", dim=2), settings, batch_size=16)
    assert_resumes_bit_identical(sampler.step, sampler.init(jax.random.key(0)), 24, 4, tmp_path, min_arrays=12)


def test_the_adjoint_and_corrector_stages_are_judged_apart():
    """ASBS's declared health, as ``fit`` applies it: each stage's loss is judged as a run of its own (a NaN in a
    corrector epoch is named as corrector matching's), and neither for progress (adjoint matching's loss rises
    here over 240 epochs, enough for the progress rule); without corrector epochs the run is one stage."""
    from jaxsamp.learned.fit import training_warnings

    health = build(TARGET, AsbsSettings(**SMALL, prior="gaussian"), batch_size=8).health
    corrector = np.tile([False, False, False, True], 80)
    loss = np.where(corrector, 1e-2, np.linspace(1.0, 2.0, corrector.size))
    loss[-1] = np.nan
    (w,) = training_warnings({"loss": loss, "corrector_epoch": corrector}, health)
    assert w.startswith("corrector matching: the training loss was NaN/inf at 1 of 80 steps"), w
    assert training_warnings({"loss": loss[:-1], "corrector_epoch": corrector[:-1]}, health) == []
    assert list(stages({"corrector_epoch": np.zeros(3, bool)})) == [None]
