"""The learned-run health check of every learned experiment kind: a NaN loss in its trace becomes a warning.

Each kind's training goes through ``jaxsamp.run`` (the kinds on :func:`jaxsamp.fit` through fit's); here the
driver's trace gets one NaN planted in the loss the kind checks (its last step), and the run's
``metrics["warnings"]`` must name it. So each kind is covered by a test that fails
when its metrics -> warnings plumbing is missing. One diverged run end to end (VI
with an absurd learning rate) checks ``metrics.json``, stderr and ``--strict``.
"""

import importlib
import json
from pathlib import Path

import numpy as np
import pytest

from jaxsamp.diagnostics import health
from jaxsamp.experiments.config import load_config
from jaxsamp.experiments.runner import run_experiment

FIT = importlib.import_module("jaxsamp.learned.fit")  # the kinds that train through jaxsamp.fit: its driver

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
RUN = "run: {num_chains: %d, num_steps: %d, chunk: 1, progress: false, num_eval_samples: %d}"
FIT = importlib.import_module("jaxsamp.learned.fit")  # the module (``jaxsamp.learned.fit`` is also the function)

TINY = {
    "diffusion": (FIT, "loss", """
kind: diffusion
target: {name: funnel, params: {dim: 4}}
sampler: {name: pis, params: {num_time_steps: 4, hidden: 8, num_layers: 1}}
""" + RUN % (8, 2, 32)),
    "scld": (FIT, "loss", """
kind: scld
target: {name: funnel, params: {dim: 4}}
sampler: {name: scld, params: {num_time_steps: 4, num_segments: 2, mcmc: mala, hidden: 8, num_layers: 1}}
""" + RUN % (8, 2, 32)),
    "vi_elbo": (FIT, "loss", """
kind: vi
target: {name: gaussian, params: {dim: 3}}
sampler: {name: elbo, params: {learning_rate: 1.0e-2}}
""" + RUN % (8, 3, 64)),
    "vi_aisivi": (FIT, "loss", """
kind: vi
target: {name: gaussian, params: {dim: 3}}
sampler: {name: aisivi, params: {latent_dim: 2, hidden_width: 8, num_inner: 8, tau_layers: 2,
                                 tau_hidden_width: 8, pretrain_steps: 1, marginal_draws: 64}}
""" + RUN % (16, 3, 64)),
    "adjoint": (FIT, "loss", """
kind: adjoint
target: {name: gaussian, params: {dim: 2, scale: 0.7}}
sampler: {name: adjoint, params: {network: mlp, hidden: 16, num_layers: 1, sigma_max: 2.0, nfe: 10, steps_per_epoch: 2}}
""" + RUN % (16, 2, 64)),
    "leaps": (FIT, "loss", """
kind: leaps
target: {name: ising, params: {L: 3, beta: 0.4407}}
sampler:
  name: leaps
  params: {network: mlp, network_params: {hidden: [8]}, free_energy_hidden: [8], loss_batch: 16, rollout_steps: 4,
           curriculum_steps: 4, rollout_every: 2, buffer_rollouts: 2, states_per_walker: 2, mcmc_updates: 1,
           compare_weight_points: false, eval_batch: 64}
""" + RUN % (8, 4, 64)),
    "gflownet": (FIT, "loss", """
kind: gflownet
target: {name: hypergrid, params: {dim: 2, side: 4}}
sampler: {name: gflownet, params: {hidden: [16], eval_every: 2, history_size: 32}}
""" + RUN % (4, 3, 2)),
    "tps_dps": (FIT, "loss", """
kind: tps_dps
target: {name: double_well_2d}
sampler:
  name: tps_dps
  params: {time_step: 0.02, num_time_steps: 50, buffer_size: 32, batch_size: 8, updates_per_rollout: 2,
           annealing_rollouts: 2}
""" + RUN % (8, 2, 16)),
    "bernoulli_denoising": (FIT, "loss", """
kind: bernoulli_denoising
target: {name: ising, params: {L: 3, beta: 0.4407}}
sampler:
  name: bernoulli_denoising
  params: {alpha: 1.0, max_measurements: 2, hidden: [8], num_train_samples: 32, glauber_sweeps: 2, move: two_stage,
           num_measurements: 2, steps_per_measurement: 1, readout: sign}
""" + RUN % (16, 3, 32)),
    "curves": (FIT, "loss", """
kind: curves
target: {name: gaussian, params: {dim: 2}}
sampler: {name: curves, params: {interpolation: linear, hidden: [8], ode_steps: 4}}
""" + RUN % (16, 3, 64)),
}


def plant_nan(monkeypatch, module, key: str) -> None:
    """Make ``module``'s driver return a trace whose ``key`` is NaN at the last step (other runs untouched)."""
    real = module.run

    def run(*args, **kwargs):
        state, trace = real(*args, **kwargs)
        if isinstance(trace, dict) and key in trace:
            values = np.array(trace[key], np.float32)
            values[-1] = np.nan
            trace = {**trace, key: values}
        return state, trace

    monkeypatch.setattr(module, "run", run)


@pytest.mark.parametrize("kind", sorted(TINY))
def test_a_nan_loss_in_any_learned_kind_is_a_warning(kind, monkeypatch, tmp_path):
    module, key, text = TINY[kind]
    path = tmp_path / f"{kind}.yaml"
    path.write_text(f"name: {kind}_tiny\nseed: 0\n{text}")
    plant_nan(monkeypatch, module, key)
    _, metrics = run_experiment(load_config(path, [f"run.out_dir={tmp_path / 'runs'}"]), verbose=False)
    assert any("the training loss was NaN/inf at 1 of" in w for w in metrics["warnings"]), metrics["warnings"]


def test_the_helper_selects_steps_and_names_the_stage():
    loss = np.r_[np.full(5, np.nan), np.ones(20)]  # NaN while no update is made: not counted
    assert health.training_warnings(loss, judge_progress=True, steps=np.arange(25) >= 5) == []
    (w,) = health.training_warnings(loss, judge_progress=True, label="tlm")
    assert w.startswith("tlm: the training loss was NaN/inf at 5 of 25 steps")
    rising = np.linspace(1.0, 2.0, 300)  # a moving target may rise: judged only where asked
    assert health.training_warnings(rising, judge_progress=False) == []
    assert "did not improve" in health.training_warnings(rising, judge_progress=True)[0]
    (w,) = health.training_warnings(np.ones(10), judge_progress=False, ess=1 / 64, num_samples=64)
    assert w.startswith("the ESS is")


def test_a_diverged_vi_run_warns_and_fails_under_strict(capsys, tmp_path):
    """The ELBO on a Gaussian with Adam at learning rate 1e4: the family's scale overflows and the loss goes NaN/inf."""
    from jaxsamp.cli import EXIT_ERROR, main

    path = tmp_path / "vi_diverged.yaml"
    path.write_text("name: vi_diverged\nseed: 0\n" + TINY["vi_elbo"][2].replace("1.0e-2", "1.0e4")
                    .replace("num_steps: 3", "num_steps: 20"))
    args = ["run", str(path), f"run.out_dir={tmp_path}"]
    assert main(args) == 0
    (run_dir,) = (tmp_path / "vi_diverged").iterdir()
    warnings = json.loads((run_dir / "metrics.json").read_text())["warnings"]
    assert any(w.startswith(("the training loss was NaN/inf at", "the training loss exploded")) for w in warnings), warnings
    assert "jaxsamp: warning: the training loss" in capsys.readouterr().err
    assert main(["run", "--strict", *args[1:]]) == EXIT_ERROR
    assert "RunHealthError" in capsys.readouterr().err
