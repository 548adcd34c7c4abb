"""The ``diffusion`` experiment kind: train PIS or DDS through the driver, then score it by the Beyond-ELBOs protocol.

Config ``sampler`` block: ``name: pis`` or ``name: dds`` and ``params`` validated
into :class:`~jaxsamp.learned.diffusion.pis_dds.DiffusionSettings` (the loss:
``kl``, ``log_variance`` or ``trajectory_balance``). ``run.num_chains`` is the
number of paths per training step and ``run.num_steps`` the number of training
steps; ``run.num_eval_samples`` paths (and as many exact target samples)
are used by :func:`~jaxsamp.learned.diffusion.evaluation.evaluate_path_sampler`.

Writes ``samples.npz`` (states and log-weights), ``samples.png`` (2-D targets:
samples over the density next to exact samples) or ``marginals.png``, and
``training.png`` (loss, ELBO and ESS per step).
"""

from __future__ import annotations

import time
from pathlib import Path

import jax
import numpy as np

from jaxsamp.core import run
from jaxsamp.core.registry import EXPERIMENTS, ExperimentKind, build_learned_sampler
from jaxsamp.diagnostics import health
from jaxsamp.experiments import plots
from jaxsamp.learned.diffusion.pis_dds import METHODS, DiffusionSampler, DiffusionSettings
from jaxsamp.core.progress import phase


def check(cfg, target) -> DiffusionSampler:
    """The sampler name and settings against the target, before any work."""
    samplers = {m: (lambda settings, m=m: DiffusionSampler(m, target, settings, cfg.run.num_chains), DiffusionSettings)
                for m in METHODS}
    return build_learned_sampler(cfg, "diffusion", samplers)


def _trace(state, metrics):
    return {k: metrics[k] for k in ("loss", "elbo", "ess")}


def run_diffusion(cfg, target, sampler: DiffusionSampler, run_dir: Path) -> dict:
    """Train ``sampler`` for ``run.num_steps`` steps; evaluate it on ``run.num_eval_samples`` paths."""
    k_init, k_train, k_eval = jax.random.split(jax.random.key(cfg.seed), 3)
    start = time.perf_counter()
    trainer = cfg.trainer(sampler)
    state, trace = run(trainer.step, jax.jit(trainer.init)(k_init), k_train, cfg.run.num_steps, trace=_trace,
                       **cfg.driver_options(run_dir))
    train_seconds = time.perf_counter() - start
    metrics = {
        "train_steps": cfg.run.num_steps,
        "train_seconds_incl_compile": train_seconds,
        "energy_evals": int(state.energy_evals),
        "final_loss": float(np.mean(np.asarray(trace["loss"])[-10:])),
        "learned_log_z": float(state.log_z),
    }
    with phase(f"evaluating on {cfg.run.num_eval_samples} paths", cfg.run.progress):
        k_sample, k_eval = jax.random.split(k_eval)
        samples = jax.jit(sampler.sample, static_argnums=2)(state, k_sample, cfg.run.num_eval_samples)
        evaluation = sampler.evaluate(state, k_eval, cfg.run.num_eval_samples, forward=samples)
    metrics.update(evaluation)
    # the path losses (KL, log-variance, trajectory balance) are fixed objectives of the drift: judged for progress
    metrics["warnings"] = health.sample_warnings(evaluation["nonfinite_paths"], cfg.run.num_eval_samples) + health.training_warnings(
        trace["loss"], judge_progress=True, ess=evaluation.get("ess"),
        num_samples=cfg.run.num_eval_samples - evaluation["nonfinite_paths"],
    )
    x = np.asarray(samples.x)
    np.savez(run_dir / "samples.npz", samples=x, log_w=np.asarray(samples.log_w))
    reference = np.asarray(target.sample(jax.random.fold_in(k_eval, 1), len(x))) if target.has_exact_samples else None
    finite = np.all(np.isfinite(x), axis=1)
    plots.samples_against_target(run_dir, target, x[finite], reference, f"{cfg.name} ({sampler.settings.loss})")
    plots.trace_plot(
        run_dir / "training.png",
        {"loss": np.asarray(trace["loss"]), "ELBO": np.asarray(trace["elbo"]), "ESS": np.asarray(trace["ess"])},
        f"{cfg.name}: loss, ELBO and ESS of the training batches",
    )
    return metrics


EXPERIMENTS.register("diffusion", "train PIS or DDS (KL, log-variance, trajectory balance); ELBO, EUBO, log Z, ESS, Sinkhorn, EMC")(
    ExperimentKind(check, run_diffusion)
)
