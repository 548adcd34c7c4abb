"""Adjoint Sampling: schedule, bridge, centre of mass, Girsanov weights, closed-form control, training, resume, build.

Gaussian oracle. For ``E(x) = |x|^2 / (2 s^2)`` and the VE base with a Dirac start,
``X_1 | X_t = x ~ N(x, nu_1 - nu_t)`` under the base, so the optimal control
``u* = grad log h``, ``h(t, x) = E_base[exp(-E(X_1)) / N(X_1; 0, nu_1) | X_t = x]``, is

    u*(t, x) = -c(t) x,   c(t) = (nu_1 - s^2) / (nu_1 (kappa_t s^2 + nu_1 (1 - kappa_t))),

``kappa_t = nu_t / nu_1``. The same function is ``E[-a_1 | X_t = x]`` under the
reciprocal process (``X_1 ~ N(0, s^2)``, ``X_t`` from the base bridge), the
minimiser of the adjoint matching loss: ``-a_1 = -lam X_1`` with
``lam = 1/s^2 - 1/nu_1`` and the posterior mean of ``X_1`` is ``s^2 x / (kappa s^2 + nu_1 (1 - kappa))``.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _resume_checks import assert_resumes_bit_identical

from jaxsamp.core import run
from jaxsamp.core.errors import InputError
from jaxsamp.core.target import Target
from jaxsamp.learned.diffusion.adjoint import (
    AdjointSampling,
    AdjointSettings,
    GeometricNoiseSchedule,
    StateSpace,
    adjoint_chain,
    adjoint_matching_loss,
    bridge_sample,
    clip_per_particle,
    path_log_weights,
    simulate,
    terminal_adjoint,
    build,
)
from jaxsamp.learned.diffusion.asbs import AsbsSettings
from jaxsamp.targets.gaussian import Gaussian

import jaxsamp.targets

SCHEDULE = GeometricNoiseSchedule(1e-2, 2.0)
PLAIN = StateSpace(1, 2, False)
PARTICLES = StateSpace(4, 2, True)


def optimal_gain(t, s2, schedule=SCHEDULE):
    """``c(t)`` of the closed-form optimal control ``u* = -c(t) x`` (module docstring)."""
    nu1 = schedule.nu1
    kappa = schedule.nu(t) / nu1
    return (nu1 - s2) / (nu1 * (kappa * s2 + nu1 * (1 - kappa)))


class CentredGaussianParticles(Target):
    """``exp(-|x|^2 / (2 s^2))`` on the zero-COM subspace of 4 particles in 2-D; Z = (2 pi s^2)^(3)."""

    name, event_shape, n_particles, spatial_dim = "centred_gaussian", (8,), 4, 2

    def __init__(self, s2):
        self.s2 = s2
        self.log_Z = 0.5 * 6 * np.log(2 * np.pi * s2)

    def _log_prob(self, x):
        return -0.5 * jnp.sum(x**2) / self.s2


def test_schedule_variance_is_the_integral_of_g_squared():
    t = np.linspace(0.0, 1.0, 200_001)
    g2 = np.asarray(SCHEDULE.g(jnp.asarray(t, jnp.float32)), np.float64) ** 2
    integral = np.concatenate([[0.0], np.cumsum(0.5 * (g2[1:] + g2[:-1]) * np.diff(t))])
    for i in (20_000, 100_000, 200_000):
        np.testing.assert_allclose(float(SCHEDULE.nu(t[i])), integral[i], rtol=1e-4)
    np.testing.assert_allclose(float(SCHEDULE.nu(1.0)), SCHEDULE.nu1, rtol=1e-6)
    assert float(SCHEDULE.g(0.0)) > float(SCHEDULE.g(1.0))  # large noise first


@pytest.mark.parametrize("space", [StateSpace(1, 3, False), PARTICLES], ids=["vector", "particles"])
def test_bridge_mean_and_variance_match_the_closed_form(space):
    """Mean kappa x1 and per-coordinate variance nu1 kappa (1 - kappa) (times 1 - 1/n on the COM-free subspace).

    Budget: 5 standard errors of the sample mean and sample variance (n = 40000).
    """
    n = 40_000
    x1 = space.project(jnp.arange(1.0, space.dim + 1.0) / space.dim)
    for t in (0.1, 0.5, 0.9):
        xt = np.asarray(bridge_sample(jax.random.key(int(10 * t)), jnp.tile(x1, (n, 1)), jnp.full((n,), t), SCHEDULE, space), np.float64)
        kappa = float(SCHEDULE.nu(t)) / SCHEDULE.nu1
        var = SCHEDULE.nu1 * kappa * (1 - kappa) * ((1 - 1 / space.n_particles) if space.centred else 1.0)
        assert np.all(np.abs(xt.mean(0) - kappa * np.asarray(x1)) < 5 * np.sqrt(var / n))
        assert np.all(np.abs(xt.var(0) / var - 1) < 5 * np.sqrt(2 / n))
        if space.centred:
            np.testing.assert_allclose(xt.reshape(n, 4, 2).mean(1), 0.0, atol=1e-5)


def test_exact_variance_steps_end_at_nu1_where_left_point_steps_overshoot():
    """The uncontrolled sampler's terminal variance is nu_1 (to float rounding), sampled and in closed form.

    Left-point Euler-Maruyama overshoots by 7.5 % at 100 steps of the geometric
    schedule from 1e-3 to 1.5. Budget for the sampled variance: 5 standard errors,
    sqrt(2 / n) relative, n = 20000 x 2 coordinates.
    """
    schedule = GeometricNoiseSchedule(1e-3, 1.5)
    exact, left = adjoint_chain(schedule, 101), adjoint_chain(schedule, 101, exact_variance=False)
    np.testing.assert_allclose(float(exact.reference_variances()[-1]), schedule.nu1, rtol=1e-6)
    assert float(left.reference_variances()[-1]) / schedule.nu1 - 1 > 0.07
    n = 20_000
    x1 = np.asarray(simulate(lambda t, x: jnp.zeros_like(x), exact, PLAIN, jax.random.key(3), n).x1, np.float64)
    assert abs(x1.var() / schedule.nu1 - 1) < 5 * np.sqrt(2 / (2 * n)), x1.var()


def test_exact_variance_increments_are_each_step_s_integral_of_g_squared():
    """Every step's variance is its own integral of g^2 (float64 quadrature), to 1e-5 relative, at 100 and 1000 steps.

    Differences of float32 ``nu`` values lose the last steps (``nu`` near 2.25, a
    step adding about 1e-8), giving zero or quantised increments and non-finite
    path weights; the telescoped sum hides it, so each step is checked.
    """
    schedule = GeometricNoiseSchedule(1e-3, 1.5)
    for nfe in (101, 1001):
        times = np.asarray(jnp.linspace(0.0, 1.0, nfe), np.float64)  # the chain's own float32 grid
        fine = np.linspace(times[:-1], times[1:], 65, axis=1)
        g2 = (schedule.sigma_min * np.exp((1.0 - fine) * schedule.log_ratio)) ** 2 * 2.0 * schedule.log_ratio
        integral = np.trapezoid(g2, fine, axis=1)
        chain = adjoint_chain(schedule, nfe)
        np.testing.assert_allclose(np.asarray(chain.c, np.float64) ** 2, integral, rtol=1e-5)
        np.testing.assert_allclose(np.asarray(chain.b, np.float64), integral, rtol=1e-5)


def test_every_simulated_state_has_zero_centre_of_mass():
    """A drift with a non-zero mean (a constant push) is projected away at every step."""
    roll = simulate(lambda t, x: jnp.ones_like(x) + x, adjoint_chain(SCHEDULE, 30), PARTICLES, jax.random.key(0), 64, keep_path=True)
    assert roll.path.shape == (30, 64, 8)
    np.testing.assert_allclose(np.asarray(roll.path).reshape(30, 64, 4, 2).mean(2), 0.0, atol=1e-5)
    assert np.abs(np.asarray(roll.x1)).max() > 0.5  # the states do move


def test_terminal_adjoint_clips_each_particle_then_centres():
    x1 = PARTICLES.project(jnp.arange(8.0)[None])
    grad = jnp.array([[300.0, 400.0, 3.0, 4.0, 0.0, 0.0, 0.0, 0.0]])  # particle 0 has norm 500
    a1 = np.asarray(terminal_adjoint(x1, PARTICLES.project(clip_per_particle(grad, PARTICLES, 100.0)), SCHEDULE))
    clipped = np.array([60.0, 80.0, 3.0, 4.0, 0.0, 0.0, 0.0, 0.0]).reshape(4, 2)
    expected = (clipped - clipped.mean(0)).ravel() - np.asarray(x1[0]) / SCHEDULE.nu1
    np.testing.assert_allclose(a1[0], expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(a1.reshape(4, 2).mean(0), 0.0, atol=1e-5)


def test_adjoint_matching_loss_is_minimised_by_the_closed_form_control():
    """Correct the closed-form gain by a constant theta_k on each of K time bins; the loss minimiser is theta = 0.

    The loss is quadratic in theta, so one Newton step from 0 gives its exact
    minimiser on the drawn samples. The residual e = -a1 - u* has zero mean given
    (t, X_t) and variance lam^2 sigma_post^2(t) per coordinate, so theta_k has standard
    deviation sqrt(lam^2 E[sigma_post^2 |X_t|^2] / (N_k E[|X_t|^2]^2)) over the bin
    (computed below by quadrature). Budget: 5 such standard deviations; bins where it
    exceeds 10% of the gain (the first, where X_t ~ 0) are checked but not informative.
    """
    s2, n, k_bins = 0.25, 2**16, 8
    nu1 = SCHEDULE.nu1
    lam = 1 / s2 - 1 / nu1
    k1, k2 = jax.random.split(jax.random.key(0))
    x1 = jnp.sqrt(s2) * jax.random.normal(k1, (n, 2))
    a1 = terminal_adjoint(x1, x1 / s2, SCHEDULE)

    def loss(theta):
        def drift(t, x):
            k = jnp.minimum((t * k_bins).astype(jnp.int32), k_bins - 1)
            return -(optimal_gain(t, s2) + theta[k])[:, None] * x

        return adjoint_matching_loss(drift, k2, x1, a1, SCHEDULE, PLAIN)

    # Bins do not interact, so the Hessian is diagonal: grad(1) - grad(0) is its diagonal.
    grad = jax.jit(jax.grad(loss))
    g0, g1 = (np.asarray(grad(jnp.full(k_bins, v)), np.float64) for v in (0.0, 1.0))
    theta = -g0 / (g1 - g0)

    sd, gains = [], []
    for k in range(k_bins):
        t = np.linspace(k / k_bins, (k + 1) / k_bins, 1001)
        kappa = np.asarray(SCHEDULE.nu(jnp.asarray(t)), np.float64) / nu1
        v = 2 * (kappa**2 * s2 + nu1 * kappa * (1 - kappa))  # E|X_t|^2
        post = s2 * nu1 * (1 - kappa) / (nu1 * (1 - kappa) + kappa * s2)  # Var(X_1 | X_t) per coordinate
        sd.append(np.sqrt(lam**2 * np.mean(post * v) / (n / k_bins * np.mean(v) ** 2)))
        gains.append(float(optimal_gain((k + 0.5) / k_bins, s2)))
    sd, gains = np.array(sd), np.array(gains)
    assert np.all(np.abs(theta) < 5 * sd), (theta, sd)
    informative = 5 * sd < 0.1 * gains
    assert informative.sum() >= k_bins - 1, (sd, gains)


@pytest.mark.parametrize("exact_variance", [True, False], ids=["exact_variance", "euler_maruyama"])
@pytest.mark.parametrize("space", ["vector", "particles"])
def test_girsanov_weights_are_unbiased_for_z_with_any_drift(space, exact_variance):
    """E_u[w] = Z exactly for the discretised sampler, whatever the drift, the integrator and the number of steps.

    A deliberately poor drift (half the optimal gain plus an offset), 19 steps.
    Budget: 5 standard errors of the mean of w / Z over n = 50000 paths.
    """
    s2, n = 0.25, 50_000
    if space == "vector":
        target, sp = Gaussian(np.zeros(2), s2 * np.eye(2)), PLAIN
    else:
        target, sp = CentredGaussianParticles(s2), PARTICLES
    drift = lambda t, x: -0.5 * optimal_gain(t, s2)[:, None] * x + 0.3  # noqa: E731
    chain = adjoint_chain(SCHEDULE, 20, exact_variance)
    roll = simulate(drift, chain, sp, jax.random.key(1), n)
    log_w = np.asarray(path_log_weights(target.log_prob, roll, chain, sp), np.float64)
    ratio = np.exp(log_w - target.log_Z)
    assert abs(ratio.mean() - 1) < 5 * ratio.std() / np.sqrt(n), (ratio.mean(), ratio.std())
    assert ratio.std() > 0.05  # the drift is far enough from optimal for the check to bite


def test_adam_eps_is_the_setting_s():
    """A first Adam step on a gradient of 1e-9 moves each parameter by lr g / (|g| + eps): 0.91 lr at the official
    eps 1e-10, 0.091 lr at optax's default 1e-8."""
    target = Gaussian(np.zeros(2), np.eye(2))
    for eps, share in ((1e-10, 1 / 1.1), (1e-8, 1 / 11)):
        sampler = AdjointSampling(target, AdjointSettings(network="mlp", hidden=4, num_layers=1, nfe=4, learning_rate=1e-3,
                                                          adam_eps=eps), batch_size=4)
        params = sampler.init(jax.random.key(0)).params
        grads = jax.tree.map(lambda p: jnp.full_like(p, 1e-9), params)
        updates, _ = sampler.optimizer.update(grads, sampler.optimizer.init(params), params)
        for u in jax.tree.leaves(updates):
            np.testing.assert_allclose(u, -1e-3 * share, rtol=1e-3)


def test_short_training_run_matches_a_gaussian_target():
    """MLP drift on N(m, diag(0.5^2, 0.8^2)): mean within 0.1, variances within 20%, log Z within 0.1.

    The budgets cover training and time-discretisation bias of a 40-epoch CPU run;
    the sampling error of 4000 samples is 5x smaller (5 sd of the mean: 0.06 / 0.04).
    """
    target = Gaussian(np.array([1.0, -0.5]), np.diag([0.25, 0.64]))
    settings = AdjointSettings(
        network="mlp", hidden=32, num_layers=2, sigma_min=1e-2, sigma_max=3.0, nfe=40,
        steps_per_epoch=50, learning_rate=2e-3, buffer_epochs=8,
    )
    sampler = AdjointSampling(target, settings, batch_size=256)
    state, trace = run(sampler.step, sampler.init(jax.random.key(0)), jax.random.key(1), 40, trace=lambda s, m: m, chunk=40, progress=False)
    assert int(state.energy_evals) == 40 * 256
    assert float(trace["loss"][-1]) < 0.1 * float(trace["loss"][0])
    ws = sampler.sample(jax.random.key(2), state, 4000)
    x = np.asarray(ws.x, np.float64)
    np.testing.assert_allclose(x.mean(0), [1.0, -0.5], atol=0.1)
    np.testing.assert_allclose(x.var(0), [0.25, 0.64], rtol=0.2)
    assert abs(float(ws.log_Z) - target.log_Z) < 0.1
    assert 0.05 < float(ws.ess) <= 1.0


def test_stopped_training_run_resumes_bit_identically(tmp_path):
    """A checkpointed training run, stopped half way, resumes bit for bit.

    A tiny MLP drift on a 2-D Gaussian and a 64-sample buffer, so the FIFO wraps
    around several times and the whole train state (network, its average, Adam,
    buffer, counters) has to round-trip through the checkpoint.
    """
    settings = AdjointSettings(network="mlp", hidden=8, num_layers=1, sigma_max=1.5, nfe=8, buffer_epochs=4,
                               steps_per_epoch=3, learning_rate=1e-3)
    sampler = AdjointSampling(jaxsamp.targets.get("gaussian", dim=2), settings, batch_size=16)
    assert_resumes_bit_identical(sampler.step, sampler.init(jax.random.key(0)), 24, 4, tmp_path, min_arrays=10)


def test_build_takes_an_optimizer_and_its_own_settings_only():
    """``optimizer=`` replaces the drift's Adam (SGD at rate 0: one epoch leaves the network as built, while the buffer
    fills); ASBS's settings are refused, since their own fields would be ignored."""
    import optax

    target = jaxsamp.targets.get("gaussian", dim=2)
    settings = AdjointSettings(network="mlp", hidden=4, num_layers=1, nfe=4, steps_per_epoch=2)
    sampler = build(target, settings, batch_size=8, optimizer=optax.sgd(0.0))
    state = sampler.init(jax.random.key(0))
    new, metrics = jax.jit(sampler.step)(jax.random.key(1), state)
    for a, b in zip(jax.tree.leaves(state.params), jax.tree.leaves(new.params)):
        np.testing.assert_array_equal(a, b)
    assert int(new.buffer.size) == 8 and int(metrics["target_evals"]) == 8
    assert not sampler.health.judge_progress  # adjoint matching's regression targets move with the drift
    with pytest.raises(InputError, match="settings must be an AdjointSettings, got AsbsSettings"):
        build(target, AsbsSettings(network="mlp"))


def test_evaluate_scores_a_particle_system_by_the_papers_protocol_once_compiled(caplog):
    """On DW-4: geometric and energy W2 and the median energy against the test split, with their noise floors; the
    raw network's figures on request (at initialisation the average is the network, so they are equal); a second
    evaluation compiles nothing; an option it does not take is refused by name."""
    dw4 = jaxsamp.targets.get("dw4")
    settings = AdjointSettings(hidden=4, num_layers=1, nfe=4, steps_per_epoch=1)
    sampler = build(dw4, settings, batch_size=8)
    state = sampler.init(jax.random.key(0))
    figures = sampler.evaluate(jax.random.key(1), state, 16, raw_network=True)
    for name in ("w2", "energy_w2", "energy_median", "w2_floor", "energy_w2_floor", "eubo"):
        assert np.isfinite(figures[name]), name
    assert "sinkhorn" not in figures  # not E(n)-invariant
    assert {figures[f"raw_{k}"] for k in ("w2", "energy_w2", "energy_median")} == {
        figures[k] for k in ("w2", "energy_w2", "energy_median")}
    with jax.log_compiles(), caplog.at_level("WARNING"):
        again = sampler.evaluate(jax.random.key(2), state, 16)
    assert not [r for r in caplog.records if "Compiling" in r.getMessage()]
    assert again["w2_floor"] == figures["w2_floor"] and "raw_w2" not in again
    with pytest.raises(InputError, match="evaluate takes no option ema"):
        sampler.evaluate(jax.random.key(2), state, 16, ema=False)
