"""The ``diffusion`` experiment kind: PIS or DDS trained by :func:`jaxsamp.fit`, scored by the Beyond-ELBOs protocol.

Config ``sampler`` block: ``name: pis`` with ``params`` validated into
:class:`~jaxsamp.learned.diffusion.pis_dds.PisSettings`, or ``name: dds`` with
:class:`~jaxsamp.learned.diffusion.pis_dds.DdsSettings` (the loss: ``kl``,
``log_variance`` or ``trajectory_balance``). ``run.num_chains`` is the number of paths
per training step and ``run.num_steps`` the number of training steps;
``run.num_eval_samples`` paths (and as many exact target samples) are scored by
:func:`~jaxsamp.learned.diffusion.evaluation.path_figures`.

Writes ``samples.npz`` (states and log-weights), ``samples.png`` (2-D targets:
samples over the density next to exact samples) or ``marginals.png``, and
``training.png`` (loss, ELBO and ESS per step).
"""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np

from jaxsamp.core.progress import phase
from jaxsamp.core.registry import EXPERIMENTS, ExperimentKind
from jaxsamp.diagnostics import health
from jaxsamp.experiments import plots
from jaxsamp.experiments.fitting import check_method, fit_method, training_metrics


def check(cfg, target):
    """The sampler name and settings against the target, before any work: the method's settings."""
    return check_method(cfg, target, "diffusion", ("pis", "dds"))


def run_diffusion(cfg, target, settings, run_dir: Path) -> dict:
    """Train for ``run.num_steps`` steps; evaluate on ``run.num_eval_samples`` paths."""
    k_fit, k_eval = jax.random.split(jax.random.key(cfg.seed))
    fitted = fit_method(cfg, target, settings, run_dir, k_fit)
    history = fitted.history
    metrics = training_metrics(cfg, fitted)
    metrics["log_Z_learned"] = float(fitted.state.log_z)
    n = cfg.run.num_eval_samples
    with phase(f"evaluating on {n} paths", cfg.run.progress):
        k_sample, k_eval = jax.random.split(k_eval)
        samples = fitted.sample(k_sample, n)
        evaluation = fitted.evaluate(k_eval, n, forward=samples)
    metrics.update(evaluation)
    nonfinite = int(evaluation["nonfinite_samples"])
    metrics["warnings"] = (fitted.warnings + health.sample_warnings(nonfinite, n)
                           + health.training_warnings((), ess=evaluation.get("ess"), num_samples=n - nonfinite))
    x = np.asarray(samples.x)
    np.savez(run_dir / "samples.npz", samples=x, log_w=np.asarray(samples.log_w))
    reference = np.asarray(target.sample(jax.random.fold_in(k_eval, 1), len(x))) if target.has_exact_samples else None
    finite = np.all(np.isfinite(x), axis=1)
    plots.samples_against_target(run_dir, target, x[finite], reference, f"{cfg.name} ({settings.loss})")
    plots.trace_plot(
        run_dir / "training.png",
        {"loss": history["loss"], "ELBO": history["elbo"], "ESS": history["ess"]},
        f"{cfg.name}: loss, ELBO and ESS of the training batches",
    )
    return metrics


EXPERIMENTS.register("diffusion", "train PIS or DDS (KL, log-variance, trajectory balance); ELBO, EUBO, log Z, ESS, Sinkhorn, EMC")(
    ExperimentKind(check, run_diffusion)
)
