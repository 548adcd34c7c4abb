"""The ``smc`` experiment kind: the shipped configs load, a small run reports log Z and its cost."""

import json
from pathlib import Path

import numpy as np
import pytest

from jaxsamp.experiments.config import load_config
from jaxsamp.core.errors import ConfigError
from jaxsamp.experiments.runner import run_experiment

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


@pytest.mark.parametrize("name", ["smc_ising_L8", "smc_gaussian", "glauber_ising_L16"])
def test_shipped_configs_load(name):
    cfg = load_config(CONFIGS / f"{name}.yaml")
    assert cfg.name == name


def test_small_ais_run_on_ising(tmp_path):
    cfg = load_config(
        CONFIGS / "smc_ising_L8.yaml",
        [
            "sampler.name=ais", "target.params.L=4", "sampler.params.target_cess=null",
            "sampler.params.num_mcmc_steps=2", "run.num_chains=256", "run.num_steps=10",
            "run.progress=false", "run.checkpoint_every=5", f"run.out_dir={tmp_path}",
        ],
    )
    run_dir, metrics = run_experiment(cfg, verbose=False)
    assert metrics["num_levels"] == 10 and metrics["num_resamplings"] == 0
    # 10 levels x 256 particles x (1 reweighting + 2 checkerboard sweeps of 2 calls)
    assert metrics["target_evals"] == 10 * 256 * 5
    # AIS with 256 particles on the 4x4 torus: log Z-hat within 0.1 of Kaufman (several sigma here)
    assert metrics["log_Z_abs_err"] < 0.1
    saved = np.load(run_dir / "samples.npz")
    assert saved["x"].shape == (256, 4, 4) and saved["log_w"].shape == (256,)
    assert (run_dir / "annealing.png").is_file()
    assert json.loads((run_dir / "metrics.json").read_text())["log_Z_hat"] == pytest.approx(metrics["log_Z_hat"])


@pytest.mark.parametrize(
    "change,message",
    [
        (lambda c: setattr(c.sampler, "name", "hmc"), "sampler name 'smc' or 'ais'"),
        (lambda c: c.sampler.params.update(bogus=1), "unknown parameter 'bogus'"),
        (lambda c: c.sampler.params.update(resampling="fancy"), "resampling must be one of"),
        (lambda c: c.sampler.params.update(inner_params={"rule": "gibbs"}), "rule must be one of"),
    ],
)
def test_bad_settings_fail_before_running(tmp_path, change, message):
    cfg = load_config(CONFIGS / "smc_ising_L8.yaml", [f"run.out_dir={tmp_path}"])
    cfg.sampler.params = dict(cfg.sampler.params)
    change(cfg)
    with pytest.raises((ConfigError, ValueError), match=message):
        run_experiment(cfg, verbose=False)
