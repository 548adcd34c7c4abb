"""The ``gflownet`` kind through the runner: a short TB run on 8 x 8 with two backward policies (one plot), resume, bad settings."""

from pathlib import Path

import numpy as np
import pytest

from jaxsamp.core.errors import ConfigError
from jaxsamp.experiments.config import load_config
from jaxsamp.experiments.runner import resume_experiment, run_experiment

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
# torchgfn's test reward on the 8 x 8 grid (R0 = 0.1: every object within reach), TB with two backward policies
SHORT_TB = [
    "target.params.R0=0.1",
    "target.params.R1=0.5",
    "target.params.R2=2.0",
    "run.num_steps=500",
    "sampler.params.history_size=3200",
    "sampler.params.backward_policies=[uniform,tlm]",
]


def test_short_trajectory_balance_run_on_8x8_reaches_the_stated_l1_and_resumes(tmp_path):
    """The shipped 8 x 8 config (2 x 256 trunk, 16 trajectories per iteration), 500 iterations (8000 trajectories)
    with a uniform and a TLM backward policy: L1 over the last 3200 terminal states below 0.003 and the exact
    L1 of the trained P_F's terminal distribution below 0.001, for both.

    Untrained, both are 0.0167 (the uniform distribution's); exact sampling gives L1 = 0.0014 on average with
    3200 draws (0.0021 at most in 2000 simulated histories), so the first bound is met only by a policy close
    to pi; measured at seeds 0 and 1: L1 0.0014-0.0018, exact L1 1.5e-4-7.1e-4. torchgfn's own test reaches
    8.8e-4 after 32 000 trajectories (200 000 fresh draws).
    """
    cfg = load_config(CONFIGS / "gflownet_hypergrid_8x8.yaml", [*SHORT_TB, f"run.out_dir={tmp_path}"])
    run_dir, metrics = run_experiment(cfg, verbose=False)
    assert (run_dir / "learning_curves.png").stat().st_size > 0
    curves = np.load(run_dir / "learning_curves.npz")
    for policy in ("uniform", "tlm"):
        np.testing.assert_array_equal(curves[f"{policy}_trajectories"], 1600 * np.arange(1, 6))
        np.testing.assert_allclose(curves[f"pi_hat_{policy}"].sum(), 1.0, rtol=1e-6)
        assert curves[f"{policy}_empirical_l1"][0] > 0.005 and metrics[f"{policy}_empirical_l1"] < 0.003
        assert metrics[f"{policy}_policy_l1"] < 0.001 and metrics[f"{policy}_policy_kl"] < 0.01
        assert metrics[f"{policy}_log_Z_learned_abs_err"] < 0.1 and metrics[f"{policy}_modes_found"] == 4
        assert metrics[f"{policy}_log_Z_abs_err"] < 0.1 and 0 < metrics[f"{policy}_ess"] <= 1
        assert metrics[f"{policy}_train_trajectories_per_s"] > 0 and (run_dir / f"checkpoints_{policy}").is_dir()
    assert metrics["log_Z_exact"] == pytest.approx(np.log(6.4 + 16 * 0.5 + 4 * 2.0)) and metrics["warnings"] == []
    _, again = resume_experiment(run_dir, verbose=False)  # both policies' runs are complete: resumed, not redone
    assert again["tlm_policy_l1"] == metrics["tlm_policy_l1"]
    assert again["uniform_log_Z_learned"] == metrics["uniform_log_Z_learned"]


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
