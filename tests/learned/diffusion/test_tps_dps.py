"""TPS-DPS: path likelihoods by hand, the loss at constant log-weights, the bias, the dynamics, training, resume, experiment.

Oracles: the Euler-Gaussian path log-likelihood and the relaxed indicator of a
3-step path worked out by hand; the exact law of one Euler-Maruyama increment;
finite differences in float64; the 0 % hit rate of the untrained bias.
"""

import json
import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _resume_checks import assert_resumes_bit_identical
from flax import nnx

import jaxsamp.targets
from jaxsamp.core.errors import ConfigError
from jaxsamp.experiments.config import load_config
from jaxsamp.experiments.runner import run_experiment
from jaxsamp.learned.diffusion.tps_dps import (
    TpsDps,
    TpsDpsParams,
    TpsDpsSettings,
    log_relaxed_indicator,
    path_log_likelihood,
    path_metrics,
    simulate,
)

HERE = Path(__file__).parent
CONFIGS = HERE.parents[2] / "configs"
KB = 8.6173303e-5

# A 3-step path in 2-D, the drifts at its first three points, and what they give by hand.
PATH = jnp.array([[0.0, 0.0], [0.1, -0.2], [0.3, 0.1], [0.2, 0.2]])
DRIFTS = jnp.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.5]])
# dt = 0.1: residuals x_{s+1} - x_s - dt drift_s = (0, -0.2), (0.2, 0.2), (0, 0.05); sum of squares 0.1225.
# std = 0.5: mean_{s,d} log N(r; 0, 0.25) = -0.1225 / (6 * 0.5) + log 2 - log(2 pi) / 2.
LOGLIK_STD_HALF = -0.2666246859780607
# std = sqrt(2 kB 1200 K 0.1) = 0.1438109617518776 (the double well's target temperature):
LOGLIK_1200K = 0.5267219497524791
# Relaxed indicator to x_B = (sqrt(5)/2, 0) with sigma = 3: max_s -|x_s - x_B|^2 / 2 / (2 * 9), at s = 2.
LOG_RI = -0.018866100187501754


def zero_bias(params: TpsDpsParams) -> TpsDpsParams:
    """``params`` with the last layer's weights at 0: ``U_theta`` constant, no bias force."""
    def zero_last_kernel(path, leaf):
        return jnp.zeros_like(leaf) if "['layers'][2]['kernel']" in jax.tree_util.keystr(path) else leaf

    return TpsDpsParams(jax.tree_util.tree_map_with_path(zero_last_kernel, params.potential), params.log_z)


def small_sampler(**changes) -> TpsDps:
    settings = TpsDpsSettings(**{"time_step": 0.1, "num_time_steps": 3, "buffer_size": 64, "batch_size": 8, **changes})
    return TpsDps(jaxsamp.targets.get("double_well_2d"), settings, batch_size=8)


@pytest.fixture(scope="module")
def params() -> TpsDpsParams:
    """An untrained bias network (the same for every ``small_sampler``)."""
    return small_sampler().init(jax.random.key(0)).params


def test_path_log_likelihood_is_the_mean_euler_gaussian_density():
    np.testing.assert_allclose(path_log_likelihood(PATH, DRIFTS, 0.1, 0.5), LOGLIK_STD_HALF, rtol=1e-6)
    batch = jnp.stack([PATH, PATH[:, ::-1]])  # batch axes are kept
    assert path_log_likelihood(batch, jnp.stack([DRIFTS, DRIFTS]), 0.1, 0.5).shape == (2,)
    end = jnp.array([math.sqrt(5) / 2, 0.0])
    np.testing.assert_allclose(log_relaxed_indicator(PATH, end, 3.0), LOG_RI, rtol=1e-6)


def test_sampler_scores_paths_at_the_target_temperature(params):
    sampler = small_sampler(start_temperature=2400.0)
    assert sampler.likelihood_std == pytest.approx(math.sqrt(2 * KB * 1200 * 0.1))  # not the behaviour's 2400 K
    np.testing.assert_allclose(sampler.log_target(PATH, DRIFTS), LOGLIK_1200K + LOG_RI, rtol=1e-6)
    np.testing.assert_allclose(sampler.log_path_density(zero_bias(params), PATH, DRIFTS), LOGLIK_1200K, rtol=1e-6)
    biased = DRIFTS + sampler.bias(params)(PATH[:-1])
    np.testing.assert_allclose(
        sampler.log_path_density(params, PATH, DRIFTS), path_log_likelihood(PATH, biased, 0.1, sampler.likelihood_std), rtol=1e-6
    )
    assert abs(float(sampler.log_path_density(params, PATH, DRIFTS)) - LOGLIK_1200K) > 1e-3  # the bias enters


def test_loss_and_gradient_vanish_when_the_log_weight_is_constant(params):
    sampler = small_sampler()
    paths = sampler.sample_paths(jax.random.key(1), params, 8, temperature=2400.0)
    log_target = sampler.log_path_density(params, paths.positions, paths.forces) + 0.7  # log w = 0.7 for every path
    batch = (paths.positions, paths.forces, log_target)

    def loss_and_grads(control_variate, log_z):
        s = small_sampler(control_variate=control_variate)
        return jax.value_and_grad(s.loss)(TpsDpsParams(params.potential, jnp.float32(log_z)), *batch)

    for control_variate, log_z in (("learned", 0.7), ("batch_mean", 0.0)):
        loss, grads = loss_and_grads(control_variate, log_z)
        assert float(loss) < 1e-10, control_variate
        assert max(float(jnp.max(jnp.abs(g))) for g in jax.tree.leaves(grads)) < 1e-5, control_variate
    loss, grads = loss_and_grads("zero", 0.0)
    assert float(loss) == pytest.approx(0.49, rel=1e-4)
    assert max(float(jnp.max(jnp.abs(g))) for g in jax.tree.leaves(grads.potential)) > 1e-3
    loss, _ = loss_and_grads("learned", 0.0)  # a learned log Z away from the constant is penalised too
    assert float(loss) == pytest.approx(0.49, rel=1e-4)


def test_bias_is_minus_the_gradient_of_the_network_potential(params):
    with jax.enable_x64(True):  # float32 weights, float64 arithmetic
        sampler = small_sampler()
        network = nnx.merge(sampler.graphdef, params.potential)
        x = jax.random.uniform(jax.random.key(4), (50, 2), jnp.float64, -1.5, 1.5)
        h = 1e-6
        fd = jnp.stack([(network(x + h * e) - network(x - h * e)) / (2 * h) for e in jnp.eye(2)], axis=-1)
        bias = sampler.bias(params)(x)
        assert float(jnp.max(jnp.abs(bias))) > 0.1  # a non-trivial bias
        np.testing.assert_allclose(bias, -fd, atol=1e-7)  # float64 central differences: O(h^2) + round-off 1e-10 / h


def test_zero_bias_paths_have_the_unbiased_euler_increments():
    """With ``b = 0`` the increments ``x_{s+1} - x_s - dt F(x_s)`` are iid ``N(0, 2 kB T_b dt)``.

    Error budget: 400 paths x 25 steps x 2 coordinates = 20 000 draws; the mean
    within 5 standard errors of 0, the variance within 5 standard errors of
    the exact one (relative standard error sqrt(2 / n) = 1 %).
    """
    target = jaxsamp.targets.get("double_well_2d")
    dt, temperature = 0.01, 1800.0
    std = math.sqrt(2 * KB * temperature * dt)
    start = jnp.array([0.3, 0.5])  # off the minima: the drift is not 0
    paths = simulate(target.potential, jnp.zeros_like, start, jax.random.key(5), 400, 25, dt, std)
    assert paths.positions.shape == (400, 26, 2) and paths.forces.shape == (400, 25, 2)
    np.testing.assert_array_equal(paths.positions[:, 0], jnp.broadcast_to(start, (400, 2)))
    forces = jax.vmap(jax.vmap(target.force))(paths.positions[:, :-1])
    np.testing.assert_allclose(paths.forces, forces, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(paths.potentials, jax.vmap(jax.vmap(target.potential))(paths.positions), rtol=1e-5, atol=1e-5)
    increments = np.asarray(paths.positions[:, 1:] - paths.positions[:, :-1] - dt * forces).ravel() / std
    n = increments.size
    assert abs(increments.mean()) < 5 / math.sqrt(n)
    assert abs(increments.var() - 1) < 5 * math.sqrt(2 / n)


def test_path_metrics_truncate_at_the_closest_approach():
    end = jnp.array([1.0, 0.0])
    positions = jnp.array([
        [[0.0, 0.0], [0.6, 0.0], [0.9, 0.1], [0.0, 0.0]],  # closest at s = 2 (distance sqrt(0.02)): a hit
        [[0.0, 0.0], [0.2, 0.0], [0.1, 0.0], [0.0, 0.0]],  # closest at s = 1 (distance 0.8): a miss
        [[0.0, 0.0], [0.8, 0.0], [1.0, 0.0], [1.0, 0.0]],  # closest first at s = 2 (distance 0): a hit
    ])
    potentials = jnp.array([[0.0, 2.0, 1.0, 9.0], [0.0, 5.0, 1.0, 0.0], [0.0, 1.0, 3.0, 7.0]])
    m = path_metrics(positions, potentials, end, hit_radius=0.5)
    d = np.array([math.sqrt(0.02), 0.8, 0.0])
    np.testing.assert_allclose(m["rmsd"], d.mean(), rtol=1e-6)
    np.testing.assert_allclose(m["rmsd_std"], d.std(ddof=1), rtol=1e-6)
    np.testing.assert_allclose(m["thp"], 200 / 3, rtol=1e-6)
    np.testing.assert_allclose(m["ets"], 2.5)  # max V before the cut: 2 and 3, not 9 and 7
    np.testing.assert_allclose(m["ets_std"], np.std([2.0, 3.0], ddof=1), rtol=1e-6)
    assert int(m["hits"]) == 2


def test_stopped_training_run_resumes_bit_identically(tmp_path):
    """A checkpointed TPS-DPS run, stopped half way, resumes bit for bit.

    Short paths (20 steps), 16 paths per rollout and a 40-path buffer, so the FIFO
    wraps around several times and the whole train state (network, log Z, buffer,
    counters) has to round-trip through the checkpoint; the behaviour temperature
    is still annealing at the stop.
    """
    settings = TpsDpsSettings(
        time_step=0.05, num_time_steps=20, buffer_size=40, batch_size=8, updates_per_rollout=3,
        learning_rate=1e-3, annealing_rollouts=8,
    )
    sampler = TpsDps(jaxsamp.targets.get("double_well_2d"), settings, batch_size=16)
    assert_resumes_bit_identical(sampler.step, sampler.init(jax.random.key(0)), 12, 3, tmp_path, min_arrays=10)


# ---- the experiment kind: a short training run on the double well -------------------------------

TINY = """
name: tps_dps_tiny
seed: 0
kind: tps_dps
target: {name: double_well_2d}
sampler:
  name: tps_dps
  params: {time_step: 0.02, num_time_steps: 500, learning_rate: 3.0e-3, log_z_learning_rate: 3.0e-2,
           buffer_size: 256, batch_size: 64, updates_per_rollout: 60, annealing_rollouts: 8}
run: {num_chains: 64, num_steps: 8, chunk: 1, checkpoint_every: 4, progress: false, num_eval_samples: 256}
"""


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tps_dps")
    path = folder / "tiny.yaml"
    path.write_text(TINY)
    cfg = load_config(path, [f"run.out_dir={folder / 'runs'}"])
    run_dir, metrics = run_experiment(cfg, verbose=False)
    return cfg, run_dir, metrics


def test_experiment_writes_metrics_paths_and_plots(tiny_run):
    _, run_dir, metrics = tiny_run
    for key in ("thp", "ets", "ets_std", "rmsd", "rmsd_std", "target_evals", "log_Z_learned", "thp_per_rollout"):
        assert key in metrics, key
    assert metrics["target_evals"] == 8 * (64 * 500 + 1)
    assert json.loads((run_dir / "metrics.json").read_text())["rollouts"] == 8
    for name in ("paths.png", "training.png", "paths.npz"):
        assert (run_dir / name).is_file(), name
    assert np.load(run_dir / "paths.npz")["positions"].shape == (256, 501, 2)
    assert metrics["warnings"] == []


def test_short_training_run_raises_the_hit_rate(tiny_run):
    """Untrained, (almost) no path of 256 crosses the 10.5 kB T barrier at 1200 K; trained, many do.

    Error budget: with a true hit rate of 1 % a 256-path estimate exceeds 6 % with
    probability < 1e-3 (binomial), so the untrained check holds with margin and a
    trained THP >= 20 % cannot come from an untrained-like sampler. (This seed
    reaches 100 %; learning switches on abruptly once crossing paths fill the
    buffer, so the bound leaves room for that to happen a rollout later.)
    """
    cfg, _, metrics = tiny_run
    sampler = TpsDps(
        jaxsamp.targets.get("double_well_2d"),
        TpsDpsSettings(**cfg.sampler.params),
        batch_size=cfg.run.num_chains,
    )
    untrained = sampler.init(jax.random.split(jax.random.key(cfg.seed), 3)[0])
    before = sampler.evaluate(jax.random.key(7), untrained, 256)
    assert before["thp"] <= 6.0
    assert metrics["thp"] >= 20.0
    assert metrics["rmsd"] < 0.5 < before["rmsd"]
    assert 1.0 <= metrics["ets"] < 2.0  # over hit paths: at least the saddle's V = 1
    assert set(before) == {"thp", "ets", "ets_std", "rmsd", "rmsd_std", "hits", "ess", "log_Z_hat", "elbo",
                           "nonfinite_samples", "target_evals"}
    assert before["target_evals"] == 0  # training's evaluations only


@pytest.mark.parametrize(
    "change, message",
    [
        ("sampler.params.control_variate=global", "control_variate"),
        ("sampler.params.momentum=0.9", "momentum"),
        ("sampler.params.time_step=-0.1", "time_step"),
        ("sampler.params.hidden=[32,0]", "hidden"),
        ("sampler.params.buffer_size=32", "does not fit a buffer"),
        ("target.name=gaussian", "transition-path target"),
        ("sampler.name=adjoint", "takes sampler name tps_dps"),
    ],
)
def test_bad_settings_are_one_line_config_errors_before_any_work(tmp_path, change, message):
    path = tmp_path / "bad.yaml"
    path.write_text(TINY)
    overrides = [f"run.out_dir={tmp_path / 'runs'}", change] + (["target.params={dim: 2}"] if "gaussian" in change else [])
    with pytest.raises(ConfigError, match=message) as err:
        run_experiment(load_config(path, overrides), verbose=False)
    assert "\n" not in str(err.value)
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("name", ["tps_dps_double_well.yaml", "tps_dps_muller_brown.yaml"])
def test_shipped_configs_load_and_build(name):
    from jaxsamp.experiments.runner import prepare

    cfg = load_config(CONFIGS / name)
    _, _, sampler = prepare(cfg)
    assert sampler.batch_size == cfg.run.num_chains
