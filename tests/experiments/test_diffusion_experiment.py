"""The ``diffusion`` experiment kind through the runner: every shipped PIS/DDS config, resume, bad settings."""

import json
from pathlib import Path

import numpy as np
import pytest

from jaxsamp.core.errors import ConfigError
from jaxsamp.experiments.config import load_config
from jaxsamp.experiments.runner import resume_experiment, run_experiment

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
SHIPPED = sorted(p.name for p in CONFIGS.glob("pis_*.yaml")) + sorted(p.name for p in CONFIGS.glob("dds_*.yaml"))
SHRINK = [  # each config's method and target, at a size that compiles and runs in seconds
    "sampler.params.num_time_steps=4", "sampler.params.hidden=8", "sampler.params.num_layers=1",
    "run.num_chains=8", "run.num_steps=2", "run.chunk=1", "run.checkpoint_every=1", "run.progress=false",
    "run.num_eval_samples=32",
]


def test_every_method_and_target_is_shipped():
    pairs = {(load_config(CONFIGS / n).sampler.name, load_config(CONFIGS / n).target.name) for n in SHIPPED}
    assert pairs == {(m, t) for m in ("pis", "dds") for t in ("funnel", "gmm", "many_well")}


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_config_is_valid(name):
    """Every shipped config loads and builds its sampler (the kind's check): no training."""
    from jaxsamp.experiments.runner import prepare

    from jaxsamp.learned.diffusion.pis_dds import DdsSettings, PisSettings

    target, kind, settings = prepare(load_config(CONFIGS / name))
    assert type(settings) is {"pis": PisSettings, "dds": DdsSettings}[name.split("_")[0]] and settings.num_time_steps == 128


@pytest.mark.parametrize("name", ["pis_gmm40.yaml", "dds_many_well.yaml"])
def test_config_trains_and_evaluates_through_the_driver(name, tmp_path):
    cfg = load_config(CONFIGS / name, [*SHRINK, f"run.out_dir={tmp_path}"])
    run_dir, metrics = run_experiment(cfg, verbose=False)
    for key in ("elbo", "log_Z_hat", "ess", "eubo", "log_Z_forward", "log_Z_abs_err", "sinkhorn"):
        assert np.isfinite(metrics[key]), key
    assert metrics["target_evals"] == 2 * 8 * (4 + 1)
    assert (run_dir / "training.png").is_file() and (run_dir / "samples.npz").is_file()
    assert ("emc" in metrics) == (cfg.target.name == "gmm")


def test_an_off_policy_loss_runs_and_a_finished_run_resumes(tmp_path):
    overrides = [*SHRINK, f"run.out_dir={tmp_path}", "sampler.params.loss=trajectory_balance"]
    run_dir, metrics = run_experiment(load_config(CONFIGS / "dds_funnel.yaml", overrides), verbose=False)
    assert metrics["target_evals"] == 2 * 8 * (4 + 1 + 4)  # the off-policy losses re-evaluate the scores
    again, metrics_again = resume_experiment(run_dir, verbose=False)
    assert metrics_again["elbo"] == metrics["elbo"] and metrics_again["log_Z_learned"] == metrics["log_Z_learned"] != 0
    assert json.loads((again / "metrics.json").read_text())["train_steps"] == 2


def test_bad_settings_are_one_line_config_errors(tmp_path):
    for override, fragment in (
        ("sampler.params.loss=elbo", "loss must be one of"),
        ("sampler.name=dis", "takes sampler name pis or dds"),
        ("sampler.params.max_diffusion=-1.0", "max_diffusion must be > 0"),
        ("sampler.params.init_std=1.0", "unknown parameter 'init_std'"),  # DDS's scale, not PIS's
        # the SDE's steps were ``num_steps``, the name of the training updates (run.num_steps, fit's num_steps)
        ("sampler.params.num_steps=4", r"unknown parameter 'num_steps' \(renamed 'num_time_steps'\)"),
        ("target.name=ising", "needs a real-valued target"),
    ):
        overrides = [*SHRINK, f"run.out_dir={tmp_path}", override]
        if override.startswith("target.name=ising"):
            path = tmp_path / "ising.yaml"
            path.write_text("name: x\nkind: diffusion\ntarget: {name: ising, params: {L: 3, beta: 0.3}}\nsampler: {name: pis}\n")
            cfg = load_config(path, [f"run.out_dir={tmp_path}"])
        else:
            cfg = load_config(CONFIGS / "pis_funnel.yaml", overrides)
        with pytest.raises(ConfigError, match=fragment):
            run_experiment(cfg, verbose=False)
    assert not list(tmp_path.rglob("metrics.json"))


def test_a_diverged_training_run_warns_and_fails_under_strict(capsys, tmp_path):
    from jaxsamp.cli import EXIT_ERROR, main

    args = ["run", str(CONFIGS / "pis_funnel.yaml"), *SHRINK, "run.num_steps=20", "run.checkpoint_every=null",
            "sampler.params.learning_rate=1e4", f"run.out_dir={tmp_path}"]
    assert main(args) == 0
    (run_dir,) = (tmp_path / "pis_funnel").iterdir()
    warnings = json.loads((run_dir / "metrics.json").read_text())["warnings"]
    assert any(w.startswith("the training loss was NaN/inf at") for w in warnings)
    assert "jaxsamp: warning: the training loss was NaN/inf" in capsys.readouterr().err
    assert main(["run", "--strict", *args[1:]]) == EXIT_ERROR
    assert "RunHealthError" in capsys.readouterr().err


def test_a_healthy_short_training_run_does_not_warn(tmp_path):
    overrides = [*SHRINK, "run.num_steps=30", "run.num_chains=16", "run.num_eval_samples=64", f"run.out_dir={tmp_path}"]
    _, metrics = run_experiment(load_config(CONFIGS / "pis_funnel.yaml", overrides), verbose=False)
    assert metrics["warnings"] == [] and metrics["ess"] > 0.05
