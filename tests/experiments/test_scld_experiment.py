"""The ``scld`` experiment kind through the runner: the shipped SCLD and CMCD configs, a tiny run and its resume, bad
settings."""

import json
from pathlib import Path

import numpy as np
import pytest

from jaxsamp.core.errors import ConfigError
from jaxsamp.experiments.config import load_config
from jaxsamp.experiments.runner import resume_experiment, run_experiment

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
SHIPPED = ["cmcd_funnel.yaml", "scld_funnel.yaml"]
SHRINK = [  # each config's method and target, at a size that compiles and runs in seconds
    "sampler.params.num_time_steps=4", "sampler.params.hidden=8", "sampler.params.num_layers=1",
    "run.num_chains=8", "run.num_steps=2", "run.chunk=1", "run.checkpoint_every=1", "run.progress=false",
    "run.num_eval_samples=32",
]


def test_every_method_is_shipped():
    assert sorted(p.name for p in CONFIGS.glob("*.yaml") if p.name.split("_")[0] in ("scld", "cmcd")) == SHIPPED


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_config_is_valid(name):
    """Every shipped config loads and builds its sampler (the kind's check): no training."""
    from jaxsamp.experiments.runner import prepare
    from jaxsamp.learned.diffusion.scld import CmcdSettings, ScldSettings

    _, _, settings = prepare(load_config(CONFIGS / name))
    assert type(settings) is {"scld": ScldSettings, "cmcd": CmcdSettings}[name.split("_")[0]]
    assert settings.num_time_steps == 128 and settings.max_diffusion == 1.0


@pytest.mark.parametrize("name", SHIPPED)
def test_config_trains_evaluates_and_resumes_through_the_runner(name, tmp_path):
    overrides = [*SHRINK, f"run.out_dir={tmp_path}"]
    if name.startswith("scld"):
        overrides.append("sampler.params.num_segments=2")
    run_dir, metrics = run_experiment(load_config(CONFIGS / name, overrides), verbose=False)
    for key in ("log_Z_hat", "log_Z_abs_err", "ess", "elbo", "segment_ess_min", "sample_target_evals"):
        assert np.isfinite(metrics[key]), key
    assert metrics["target_evals"] > 0 and metrics["verdict"]
    assert (run_dir / "training.png").is_file() and (run_dir / "samples.npz").is_file()
    if name.startswith("scld"):
        return  # the kind's resume is the same for both methods: checked once, on the cheaper one
    again, metrics_again = resume_experiment(run_dir, verbose=False)
    assert metrics_again["log_Z_hat"] == metrics["log_Z_hat"]
    assert json.loads((again / "metrics.json").read_text())["train_steps"] == 2


def test_bad_settings_are_one_line_config_errors(tmp_path):
    for override, fragment in (
        ("sampler.params.mcmc=nuts", "mcmc must be one of"),
        ("sampler.params.num_segments=3", "not a multiple of num_segments=3"),
        ("sampler.name=pis", "takes sampler name scld or cmcd"),
    ):
        cfg = load_config(CONFIGS / "scld_funnel.yaml", [*SHRINK, f"run.out_dir={tmp_path}", override])
        with pytest.raises(ConfigError, match=fragment):
            run_experiment(cfg, verbose=False)
    cfg = load_config(CONFIGS / "cmcd_funnel.yaml", [*SHRINK, f"run.out_dir={tmp_path}", "sampler.params.num_segments=2"])
    with pytest.raises(ConfigError, match="unknown parameter 'num_segments'"):
        run_experiment(cfg, verbose=False)
    assert not list(tmp_path.rglob("metrics.json"))
