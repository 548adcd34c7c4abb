"""The ``scld`` experiment kind: SCLD or CMCD trained by :func:`jaxsamp.fit`, scored by an SMC run.

Config ``sampler`` block: ``name: scld`` with ``params`` validated into
:class:`~jaxsamp.learned.diffusion.scld.ScldSettings`, or ``name: cmcd`` with
:class:`~jaxsamp.learned.diffusion.scld.CmcdSettings`. ``run.num_chains`` is the number of
particles per training step and ``run.num_steps`` the number of training steps (outer iterations:
one rollout through every segment and one update each); ``run.num_eval_samples`` particles are run
through the trained sampler's SMC (:meth:`~jaxsamp.learned.diffusion.scld.Scld.evaluate`).

Writes ``samples.npz`` (the final particles and their log-weights since the last resampling),
``samples.png`` (2-D targets: samples over the density next to exact samples) or
``marginals.png``, and ``training.png`` (loss, ELBO and ESS per step).
"""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np

from jaxsamp.core.progress import phase
from jaxsamp.core.registry import EXPERIMENTS, ExperimentKind
from jaxsamp.diagnostics import health
from jaxsamp.experiments import plots
from jaxsamp.experiments.fitting import check_method, fit_method, smc_metrics, training_metrics


def check(cfg, target):
    """The sampler name and settings against the target, before any work: the method's settings."""
    return check_method(cfg, target, "scld", ("scld", "cmcd"))


def run_scld(cfg, target, settings, run_dir: Path) -> dict:
    """Train for ``run.num_steps`` steps; evaluate an SMC run of ``run.num_eval_samples`` particles."""
    k_fit, k_eval = jax.random.split(jax.random.key(cfg.seed))
    fitted = fit_method(cfg, target, settings, run_dir, k_fit)
    history = fitted.history
    metrics = training_metrics(cfg, fitted)
    n = cfg.run.num_eval_samples
    with phase(f"evaluating an SMC run of {n} particles", cfg.run.progress):
        evaluation = fitted.evaluate(k_eval, n)
        samples = fitted.sample(k_eval, n)  # the evaluated run's particles (same key)
    metrics.update(evaluation)
    metrics.update(smc_metrics(cfg, fitted))
    nonfinite = int(evaluation["nonfinite_samples"])
    metrics["warnings"] = fitted.warnings + health.sample_warnings(nonfinite, n)
    x = np.asarray(samples.x)
    np.savez(run_dir / "samples.npz", samples=x, log_w=np.asarray(samples.log_w))
    reference = np.asarray(target.sample(jax.random.fold_in(k_eval, 1), len(x))) if target.has_exact_samples else None
    finite = np.all(np.isfinite(x), axis=1)
    plots.samples_against_target(run_dir, target, x[finite], reference, f"{cfg.name} ({cfg.sampler.name})")
    plots.trace_plot(
        run_dir / "training.png",
        {"loss": history["loss"], "ELBO": history["elbo"], "ESS": history["ess"]},
        f"{cfg.name}: loss, ELBO and final ESS of the training rollouts",
    )
    return metrics


EXPERIMENTS.register("scld", "train SCLD or CMCD (controlled Langevin diffusions on a geometric path, as SMC); "
                     "log Z, ESS per segment, target evaluations")(ExperimentKind(check, run_scld))
