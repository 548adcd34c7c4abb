"""The bernoulli_denoising experiment kind: tiny runs through the runner and the CLI, shipped configs, bad settings."""

import json
from pathlib import Path

import numpy as np
import pytest

from jaxsamp.cli import main as cli_main
from jaxsamp.core.errors import ConfigError
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
  params: {alpha: 1.0, max_measurements: 2, network: conv, channels: 8, conv_layers: 2, padding: circular,
           learning_rate: 3.0e-3, num_train_samples: 256, glauber_sweeps: 20,
           move: two_stage, num_measurements: 2, steps_per_measurement: 4, readout: sign}
run: {num_chains: 64, num_steps: 30, progress: false, num_eval_samples: 256}
"""

DIGITS = """
name: bern_digits_tiny
seed: 0
kind: bernoulli_denoising
target: {name: binary_digits, params: {test_size: 200}}
sampler:
  name: bernoulli_denoising
  params: {alpha: 1.0, hidden: [32], move: one_stage, correction: trapezoid, steps_per_measurement: 5, readout: bernoulli}
run: {num_chains: 64, num_steps: 30, progress: false, num_eval_samples: 100}
"""


def write(tmp_path, text, name="cfg.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_ising_run_writes_metrics_samples_and_plots(tmp_path):
    """Glauber data, circular conv, 2-measurement sampling; TV by enumeration (2^16 states) and <|m|> vs exact."""
    cfg = load_config(write(tmp_path, ISING), [f"run.out_dir={tmp_path / 'runs'}"])
    run_dir, metrics = run_experiment(cfg, verbose=False)
    for key in ("tv", "tv_floor", "abs_m", "abs_m_exact", "abs_m_err", "train_abs_m_err", "final_loss"):
        assert key in metrics, key
    assert 0 < metrics["tv_floor"] < metrics["tv"] <= 1
    assert metrics["abs_m_exact"] == pytest.approx(0.8438823925, abs=1e-6)  # transfer matrix, L = 4 at beta_c
    assert metrics["denoiser_evals_per_sample"] == 1 + 2 * 4 + 1
    assert metrics["warnings"] == []
    saved = np.load(run_dir / "samples.npz")
    assert saved["x"].shape == (256, 4, 4) and set(np.unique(saved["x"])) <= {-1, 1}
    for name in ("samples.png", "training.png", "metrics.json"):
        assert (run_dir / name).is_file()
    assert json.loads((run_dir / "metrics.json").read_text())["train_steps"] == 30


def test_digits_run_through_the_cli_reports_mmd_and_its_floor(tmp_path, capsys):
    path = write(tmp_path, DIGITS)
    assert cli_main(["run", str(path), f"run.out_dir={tmp_path / 'runs'}"]) == 0
    metrics = json.loads(next((tmp_path / "runs").rglob("metrics.json")).read_text())
    assert metrics["mmd_test"] > 0 and metrics["mmd_train_vs_test"] > 0
    assert metrics["num_train"] == 1597 and "tv" not in metrics
    assert 0 < metrics["acceptance_rate"] <= 1


@pytest.mark.parametrize(
    "change, message",
    [
        ("sampler.params.move=three_stage", "move"),
        ("sampler.params.correction=exact", "correction"),
        ("sampler.params.num_measurements=3", "exceeds max_measurements"),
        ("sampler.params.network=conv", "network conv needs 2-D states"),
        ("sampler.params.depth=3", "depth"),
        ("sampler.name=leaps", "takes sampler name bernoulli_denoising"),
        ("target.name=gaussian", "spin"),
    ],
)
def test_bad_settings_are_one_line_config_errors_before_any_work(tmp_path, change, message):
    text = ISING.replace("name: ising, params: {L: 4, beta: 0.4407}", "name: bernoulli_mixture, params: {dim: 6}")
    text = text.replace("network: conv, ", "")
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
    assert settings.sampler().num_steps == 99 and settings.alpha == 1.0
