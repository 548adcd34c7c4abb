"""The ``gflownet`` kind through the runner: a shipped config at small size (two backward policies, one plot), resume, bad settings."""

from pathlib import Path

import numpy as np
import pytest

from jaxsamp.core.errors import ConfigError
from jaxsamp.experiments.config import load_config
from jaxsamp.experiments.runner import resume_experiment, run_experiment

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
SMALL = [
    "run.num_steps=40",
    "sampler.params.eval_every=20",
    "sampler.params.history_size=320",
    "sampler.params.hidden=[32,32]",
    "sampler.params.backward_policies=[uniform,maxent]",
]


def test_shipped_config_runs_at_small_size_and_resumes(tmp_path):
    cfg = load_config(CONFIGS / "gflownet_hypergrid_8x8.yaml", [*SMALL, f"run.out_dir={tmp_path}"])
    run_dir, metrics = run_experiment(cfg, verbose=False)
    assert (run_dir / "learning_curves.png").stat().st_size > 0
    curves = np.load(run_dir / "learning_curves.npz")
    for policy in ("uniform", "maxent"):
        np.testing.assert_array_equal(curves[f"{policy}_trajectories"], [320, 640])
        np.testing.assert_allclose(curves[f"pi_hat_{policy}"].sum(), 1.0, rtol=1e-6)
        assert 0 < metrics[f"{policy}_l1"] < 2 / 64 and metrics[f"{policy}_kl"] > 0
        assert 0 < metrics[f"{policy}_policy_l1"] < 2 / 64 and metrics[f"{policy}_policy_kl"] > 0
        assert metrics[f"{policy}_train_trajectories_per_s"] > 0 and (run_dir / f"checkpoints_{policy}").is_dir()
    assert metrics["log_Z"] == pytest.approx(np.log(64e-3 + 16 * 0.5 + 4 * 2.0)) and metrics["warnings"] == []
    _, again = resume_experiment(run_dir, verbose=False)  # both policies' runs are complete: resumed, not redone
    assert again["maxent_l1"] == metrics["maxent_l1"] and again["uniform_log_z"] == metrics["uniform_log_z"]


@pytest.mark.parametrize(
    "overrides, match",
    [
        (["sampler.params.backward_policies=[uniform,optimistic]"], "backward_policies"),
        (["sampler.params.loss=fm"], "loss"),
        (["sampler.params.learning_rat=0.1"], "unknown parameter 'learning_rat'"),
    ],
)
def test_bad_settings_are_config_errors(overrides, match, tmp_path):
    with pytest.raises(ConfigError, match=match):
        run_experiment(
            load_config(CONFIGS / "gflownet_hypergrid_8x8.yaml", [*overrides, f"run.out_dir={tmp_path}"]), verbose=False
        )
    assert not any(tmp_path.iterdir())


def test_a_target_that_is_not_a_dag_environment_is_refused(tmp_path):
    text = (CONFIGS / "gflownet_hypergrid_8x8.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        text.replace(
            "target: {name: hypergrid, params: {dim: 2, side: 8, reward: standard}}",
            "target: {name: gaussian, params: {dim: 2}}",
        )
    )
    with pytest.raises(ConfigError, match="DAG environment"):
        run_experiment(load_config(bad, [f"run.out_dir={tmp_path / 'runs'}"]), verbose=False)
    assert not (tmp_path / "runs").exists()
