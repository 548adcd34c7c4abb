"""The ``leaps`` experiment kind, and the trained-sampler checks of LEAPS on a 3x3 Ising lattice.

One tiny run (LE-MLP, 150 updates, about half a minute of CPU) is shared by the
tests: it must cut the log-weight variance, and its weighted ``<|m|>``, ``P(m)``,
``G(r)`` and ``log Z`` must match exact enumeration.
"""

import json
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsamp.core.errors import ConfigError
from jaxsamp.core.protocols import WeightedSamples
from jaxsamp.experiments.config import load_config
from jaxsamp.experiments.runner import run_experiment
from jaxsamp.learned.leaps.training import LeapsSettings, weight_figures
from jaxsamp.targets.lattice import ising

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
TINY = """
name: leaps_tiny
seed: 0
kind: leaps
target: {name: ising, params: {L: 3, beta: 0.4407}}
sampler:
  name: leaps
  params:
    network: mlp
    network_params: {hidden: [32, 32]}
    free_energy_hidden: [32]
    learning_rate: 0.003
    loss_batch: 128
    rollout_steps: 20
    curriculum_steps: 60
    rollout_every: 5
    buffer_rollouts: 10
    states_per_walker: 8
    mcmc_updates: 9
    weight_point: trapezoid
    compare_weight_points: false
run: {num_chains: 64, num_steps: 150, chunk: 75, checkpoint_every: 75, progress: false, num_eval_samples: 4000}
"""

@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("leaps")
    (out / "tiny.yaml").write_text(TINY)
    proc = subprocess.run(
        [sys.executable, "-m", "jaxsamp.cli", "run", str(out / "tiny.yaml"), f"run.out_dir={out}"],
        capture_output=True, text=True, timeout=900, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run_dir,) = (out / "leaps_tiny").iterdir()
    return run_dir, json.loads((run_dir / "metrics.json").read_text())


@pytest.mark.parametrize("name", ["leaps_ising_L8", "leaps_ising_L15", "leaps_potts_L15"])
def test_shipped_configs_load(name):
    cfg = load_config(CONFIGS / f"{name}.yaml")
    assert cfg.name == name and cfg.kind == "leaps"
    LeapsSettings(**cfg.sampler.params)


def test_run_writes_metrics_samples_and_plots(tiny_run):
    run_dir, metrics = tiny_run
    # the headline (trapezoid) rule's figures are the canonical ones, named once; compare_weight_points=false
    assert 0 < metrics["ess"] <= 1 and "ess_trapezoid" not in metrics and "ess_pre" not in metrics
    # the exact weights and the paper's (post-jump, Ising) quadrature on their walkers are always recorded
    assert 0 < metrics["ess_exact"] <= 1 and 0 < metrics["ess_quadrature_paper"] <= 1
    assert "log Z (exact weights)" in metrics["verdict"] and "the paper's quadrature" in metrics["verdict"]
    assert metrics["train_steps"] == 150
    assert metrics["warnings"] == []  # a healthy run passes the learned-run health check
    saved = np.load(run_dir / "samples.npz")
    assert saved["x"].shape == (4000, 3, 3) and saved["x"].dtype == np.int8 and saved["log_w"].shape == (4000,)
    for png in ("training.png", "magnetization.png", "two_point.png", "log_weights.png"):
        assert (run_dir / png).is_file(), png
    assert any((run_dir / "checkpoints").iterdir())


def test_training_reduces_log_weight_variance(tiny_run):
    _, metrics = tiny_run
    assert metrics["log_w_var"] < 0.05 * metrics["log_w_var_untrained"], metrics
    assert metrics["ess"] > 0.9 > metrics["ess_untrained"]


def test_weighted_observables_match_exact_enumeration(tiny_run):
    run_dir, metrics = tiny_run
    target = ising(3, 0.4407)
    m, p = target.exact_magnetization_distribution()
    exact = float(np.sum(np.abs(m) * p))
    assert metrics["abs_order_reference"] == pytest.approx(exact, rel=1e-5)
    saved = np.load(run_dir / "samples.npz")
    w = np.asarray(jax.nn.softmax(jnp.asarray(saved["log_w"])), np.float64)
    obs = np.abs(saved["x"].reshape(len(w), -1).mean(1))
    se = float(np.sqrt(np.sum(w**2 * (obs - np.sum(w * obs)) ** 2)))  # delta method, self-normalised weights
    # 5 sigma, plus 0.01 for the O(h) Euler bias of 100 steps
    assert abs(metrics["abs_order"] - exact) < 5 * se + 0.01, (metrics["abs_order"], exact, se)
    assert metrics["order_hist_tv"] < 0.05 and metrics["two_point_max_abs_err"] < 0.03
    # trapezoid weights: log Z within 0.05 of the exact value (bias O(h^2) + 4000-walker noise)
    assert metrics["log_Z_abs_err"] < 0.05
    # F_phi learned the free energy: its own log Z_1 estimate is close
    assert metrics["log_Z_learned_abs_err"] < 0.5


@pytest.mark.parametrize(
    "override,message",
    [
        ("sampler.params.network=transformer", "network must be one of"),
        ("sampler.params.network=mlp", "not parameters of network 'mlp'"),
        ("sampler.params.bogus=1", "unknown parameter 'bogus'"),
        ("sampler.name=glauber", "sampler.name: leaps"),
        ("target.name=gaussian", "lattice target"),
    ],
)
def test_bad_settings_fail_before_running(tmp_path, override, message):
    cfg = load_config(CONFIGS / "leaps_ising_L8.yaml", [override, f"run.out_dir={tmp_path}"])
    if override.startswith("target.name"):
        cfg.target.params = {"dim": 2}
    with pytest.raises(ConfigError, match=message):
        run_experiment(cfg, verbose=False)
    assert not any(tmp_path.rglob("*.png"))


@pytest.mark.parametrize("threshold", [None, 0.5])
def test_weight_figures_name_the_ess_after_resampling_for_what_it_covers(threshold):
    """Without resampling the ESS is ``ess*``; with it, ``ess_since_last_resample*`` and no ``ess*`` at all."""
    equal, skewed = WeightedSamples(None, jnp.zeros(4)), WeightedSamples(None, jnp.log(jnp.array([1.0, 1.0, 2.0, 4.0])))
    got = weight_figures({"exact": equal, "pre": skewed}, "exact", threshold, log_Z_exact=0.5)
    ess = "ess" if threshold is None else "ess_since_last_resample"
    assert got[ess] == pytest.approx(1.0)
    assert got[f"{ess}_pre"] == pytest.approx(64 / 22 / 4)  # (sum w)^2 / sum w^2 / n
    assert threshold is None or not any(k == "ess" or k.startswith("ess_") and "resample" not in k for k in got)
    assert got["log_Z_abs_err_pre"] == pytest.approx(abs(np.log(2.0) - 0.5)) and got["log_Z_hat"] == pytest.approx(0.0)


def test_each_figure_has_one_name_and_the_exact_log_z_is_never_overwritten():
    """``log_Z_exact`` is the target's value; the headline rule's estimate is ``log_Z_hat`` (and not again
    ``log_Z_hat_<rule>``), every other rule's ``log_Z_hat_<rule>``."""
    equal, skewed = WeightedSamples(None, jnp.zeros(4)), WeightedSamples(None, jnp.log(jnp.array([1.0, 1.0, 2.0, 4.0])))
    got = weight_figures({"exact": equal, "pre": skewed}, "exact", None, log_Z_exact=0.5)
    assert got["log_Z_exact"] == 0.5 and got["log_Z_hat"] == pytest.approx(0.0)
    assert got["log_Z_hat_pre"] == pytest.approx(float(jnp.log(2.0)))
    assert not any(key.endswith("_exact") and key != "log_Z_exact" for key in got)
    headline_pre = weight_figures({"exact": equal, "pre": skewed}, "pre", None, log_Z_exact=0.5)
    assert headline_pre["log_Z_hat"] == pytest.approx(float(jnp.log(2.0))) and headline_pre["ess_exact"] == 1.0
