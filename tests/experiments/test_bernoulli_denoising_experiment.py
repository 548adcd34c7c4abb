"""The bernoulli_denoising experiment kind: tiny runs through the runner and the CLI, shipped configs, bad settings."""

import json
from pathlib import Path

import numpy as np
import pytest

import jaxsamp.targets
from jaxsamp.cli import main as cli_main
from jaxsamp.core.errors import ConfigError
from jaxsamp.experiments.bernoulli_denoising_experiment import (
    enumerated_law,
    sample_metrics,
    settings_from_params,
)
from jaxsamp.experiments.config import load_config
from jaxsamp.experiments.runner import prepare, run_experiment

CONFIGS = Path(__file__).resolve().parents[2] / "configs"

ISING = """
name: bern_ising_tiny
seed: 0
kind: bernoulli_denoising
target: {name: ising, params: {L: 4, beta: 0.4407}}
sampler:
  name: bernoulli_denoising
  params: {alpha: 1.0, max_measurements: 2, hidden: [16], learning_rate: 3.0e-3, num_train_samples: 256,
           glauber_sweeps: 10, move: two_stage, num_measurements: 2, steps_per_measurement: 3, readout: sign}
run: {num_chains: 64, num_steps: 20, progress: false, num_eval_samples: 256}
"""


def write(tmp_path, text, name="cfg.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_ising_run_through_the_cli_writes_metrics_samples_and_plots(tmp_path):
    """Glauber data, 2-measurement sampling; TV by enumeration (2^16 states) and <|m|> vs exact (the conv denoiser
    is exercised by the unit tests and the quick size of the binary suite)."""
    path = write(tmp_path, ISING)
    assert cli_main(["run", str(path), f"run.out_dir={tmp_path / 'runs'}"]) == 0
    run_dir = next((tmp_path / "runs").rglob("metrics.json")).parent
    metrics = json.loads((run_dir / "metrics.json").read_text())
    for key in ("tv", "tv_floor", "abs_m", "abs_m_exact", "abs_m_err", "m_tv", "train_abs_m_err", "final_loss"):
        assert key in metrics, key
    assert 0 < metrics["tv_floor"] < metrics["tv"] <= 1
    assert metrics["abs_m_exact"] == pytest.approx(0.8438823925, abs=1e-6)  # transfer matrix, L = 4 at beta_c
    assert metrics["denoiser_evals_per_sample"] == 1 + 2 * 3 + 1 and metrics["train_steps"] == 20
    assert metrics["warnings"] == []
    saved = np.load(run_dir / "samples.npz")
    assert saved["x"].shape == (256, 4, 4) and set(np.unique(saved["x"])) <= {-1, 1}
    for name in ("samples.png", "training.png"):
        assert (run_dir / name).is_file()


def test_data_set_metrics_are_mmd_to_held_out_images():
    """``sample_metrics`` of a data set: the Hamming-kernel MMD to the test split (0 for the test split itself)."""
    digits = jaxsamp.targets.get("binary_digits", test_size=100)
    settings = settings_from_params({})
    own = sample_metrics(digits, digits.test(), settings, digits.train(), digits.test())
    other = sample_metrics(digits, digits.train()[:100], settings, digits.train(), digits.test())
    assert set(own) == {"mmd_test"} and own["mmd_test"] < 1e-3 < other["mmd_test"]
    assert enumerated_law(digits) is None


@pytest.mark.parametrize(
    "change, message",
    [
        ("sampler.params.move=three_stage", "move"),
        ("sampler.params.correction=exact", "correction"),
        ("sampler.params.num_measurements=3", "exceeds max_measurements"),
        ("sampler.params.network=conv", "network conv needs 2-D states"),  # the mixture's states are 1-D
        ("sampler.params.depth=3", "depth"),
        ("sampler.params.batch_size=3", "the batch size is run.num_chains"),
        ("sampler.params.channels=0", "channels"),
        ("sampler.params.steps_per_measurement=0", "steps_per_measurement"),
        ("sampler.name=leaps", "takes sampler name bernoulli_denoising"),
        ("target.name=gaussian", "spin"),
    ],
)
def test_bad_settings_are_one_line_config_errors_before_any_work(tmp_path, change, message):
    text = ISING.replace("name: ising, params: {L: 4, beta: 0.4407}", "name: bernoulli_mixture, params: {dim: 6}")
    overrides = [f"run.out_dir={tmp_path / 'runs'}", change] + (
        ["target.params={dim: 2}"] if "gaussian" in change else []
    )
    with pytest.raises(ConfigError, match=message) as err:
        run_experiment(load_config(write(tmp_path, text), overrides), verbose=False)
    assert "\n" not in str(err.value)
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    "name",
    ["bernoulli_denoising_mixture_d16.yaml", "bernoulli_denoising_digits.yaml", "bernoulli_denoising_ising_L8.yaml"],
)
def test_shipped_configs_load_and_check(name):
    cfg = load_config(CONFIGS / name)
    _, _, settings = prepare(cfg)
    assert settings.denoiser.sampler.num_steps == 99 and settings.denoiser.alpha == 1.0
