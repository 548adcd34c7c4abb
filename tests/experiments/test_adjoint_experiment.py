"""The ``adjoint`` experiment kind through the runner: metrics, plots, samples, bad settings."""

import json
from pathlib import Path

import numpy as np
import pytest

from jaxsamp.experiments.config import load_config
from jaxsamp.core.errors import ConfigError
from jaxsamp.experiments.runner import prepare, resume_experiment, run_experiment

CONFIGS = Path(__file__).resolve().parents[2] / "configs"

TINY = """
name: adjoint_tiny
seed: 0
kind: adjoint
target: {name: gaussian, params: {dim: 2, scale: 0.7}}
sampler: {name: adjoint, params: {network: mlp, hidden: 16, num_layers: 1, sigma_max: 2.0, nfe: 10, steps_per_epoch: 5, learning_rate: 1.0e-3}}
run: {num_chains: 32, num_steps: 4, chunk: 2, checkpoint_every: 2, progress: false, num_eval_samples: 200}
"""


def test_tiny_run_writes_metrics_plots_and_resumes(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY)
    cfg = load_config(path, [f"run.out_dir={tmp_path / 'runs'}"])
    run_dir, metrics = run_experiment(cfg, verbose=False)
    for key in ("energy_w2", "w2", "log_Z_hat", "elbo", "ess", "log_Z_exact", "target_evals", "sinkhorn"):
        assert key in metrics, key
    assert metrics["target_evals"] == 4 * 32 and metrics["warnings"] == []
    assert json.loads((run_dir / "metrics.json").read_text())["epochs"] == 4
    for name in ("samples.npz", "samples.png", "energy_histogram.png", "training.png"):
        assert (run_dir / name).is_file(), name
    _, again = resume_experiment(run_dir, verbose=False)  # finished run: restores the last checkpoint
    assert again["target_evals"] == metrics["target_evals"] and again["w2"] == metrics["w2"]


def test_bad_settings_are_one_line_config_errors(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(TINY.replace("network: mlp", "network: mlp, momentum: 0.9"))
    with pytest.raises(ConfigError, match="momentum"):
        run_experiment(load_config(path, [f"run.out_dir={tmp_path}"]), verbose=False)
    path.write_text(TINY.replace("network: mlp", "network: egnn"))
    with pytest.raises(ConfigError, match="particle target"):
        run_experiment(load_config(path, [f"run.out_dir={tmp_path}"]), verbose=False)
    path.write_text(TINY.replace("sigma_max: 2.0", "sigma_max: 1.0e-3"))
    with pytest.raises(ConfigError, match="sigma_min < sigma_max"):
        run_experiment(load_config(path, [f"run.out_dir={tmp_path}"]), verbose=False)


SHIPPED = sorted(p.name for pattern in ("adjoint_*.yaml", "asbs_*.yaml") for p in CONFIGS.glob(pattern))
SHRINK = [  # the method and schedule of each config, at a size that compiles and runs in seconds
    "sampler.params.hidden=8", "sampler.params.num_layers=1", "sampler.params.nfe=4",
    "sampler.params.steps_per_epoch=2", "sampler.params.train_batch_size=8", "sampler.params.buffer_epochs=8",
    "run.num_chains=8", "run.num_steps=2", "run.chunk=1", "run.checkpoint_every=1", "run.progress=false",
    "run.num_eval_samples=16",
]


def test_every_system_is_shipped():
    targets = {load_config(CONFIGS / name).target.name for name in SHIPPED if name.startswith("adjoint_")}
    assert {"dw4", "lj13", "lj55", "gmm", "many_well"} <= targets
    asbs = {load_config(CONFIGS / name).target.name for name in SHIPPED if name.startswith("asbs_")}
    assert {"dw4", "lj13", "lj55"} <= asbs


PAPER_SIZED = [name for name in SHIPPED if "_cpu" not in name]  # the CPU configs and their variants are smaller


@pytest.mark.parametrize("name", PAPER_SIZED)
def test_paper_sized_buffers_hold_the_reference_samples(name):
    """The reference's FIFO buffers keep the last 10 000 samples (its ``duplicates`` is no copy count)."""
    cfg = load_config(CONFIGS / name)
    held = cfg.sampler.params["buffer_epochs"] * cfg.run.num_chains
    assert abs(held - 10_000) < cfg.run.num_chains, held
    cpu = CONFIGS / name.replace(".yaml", "_cpu.yaml")
    if cpu.exists():  # the CPU variant keeps the same staleness in rollouts
        assert load_config(cpu).sampler.params["buffer_epochs"] == cfg.sampler.params["buffer_epochs"]


# One run per distinct code path (a flat target with an MLP; EGNN particles; ASBS, whose shipped configs all
# use the harmonic prior); the other shipped configs are checked without training (they differ in sizes).
RUN = ["adjoint_gmm.yaml", "adjoint_lj13.yaml", "asbs_lj13.yaml"]


@pytest.mark.parametrize("name", sorted(set(SHIPPED) - set(RUN)))
def test_shipped_config_is_valid(name):
    """The config's settings are its YAML's, every one, and its drift network is the one its target needs.

    ``prepare`` builds the sampler on the target (refusing an EGNN on a flat target); a config that trains a
    plain MLP on a particle system builds too, but breaks the systems' E(3) invariance, which the papers' EGNN
    keeps (Havens et al. 2025, Sec. 5; Liu et al. 2025, Sec. 5): refused here.
    """
    from jaxsamp.learned.diffusion.adjoint import AdjointSettings
    from jaxsamp.learned.diffusion.asbs import AsbsSettings

    cfg = load_config(CONFIGS / name)
    target, _, settings = prepare(cfg)
    assert type(settings) is (AsbsSettings if name.startswith("asbs_") else AdjointSettings)
    for key, value in cfg.sampler.params.items():
        assert getattr(settings, key) == (tuple(value) if isinstance(value, list) else value), key
    assert (settings.network == "egnn") == (getattr(target, "n_particles", None) is not None), settings.network


@pytest.mark.parametrize("name", RUN)
def test_shipped_config_trains_and_samples_through_the_driver(name, tmp_path):
    """ASBS configs run one adjoint-matching and one corrector epoch (which spends no energy calls)."""
    asbs = name.startswith("asbs_")
    stages = ["sampler.params.adjoint_epochs=1", "sampler.params.corrector_epochs=1"] if asbs else []
    cfg = load_config(CONFIGS / name, [*SHRINK, *stages, f"run.out_dir={tmp_path}"])
    run_dir, metrics = run_experiment(cfg, verbose=False)
    assert metrics["target_evals"] == (1 if asbs else 2) * 8
    assert ("final_corrector_loss" in metrics) == asbs
    assert (run_dir / "energy_histogram.png").is_file()
    assert all(np.isfinite(metrics[k]) for k in ("log_Z_hat", "ess", "energy_w2") if metrics.get(k) is not None)
    assert ("sinkhorn" in metrics) == (cfg.target.name == "gmm")  # not for the particle systems

