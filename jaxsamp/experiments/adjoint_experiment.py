"""The ``adjoint`` experiment kind: Adjoint Sampling or ASBS trained by :func:`jaxsamp.fit`, then evaluated.

Config ``sampler`` block: ``name: adjoint`` with ``params`` validated into
:class:`~jaxsamp.learned.diffusion.adjoint.AdjointSettings`, or ``name: asbs`` with
:class:`~jaxsamp.learned.diffusion.asbs.AsbsSettings`. ``run.num_chains`` is the
number of trajectories simulated per epoch (one energy gradient each) and
``run.num_steps`` the number of epochs (each a rollout plus
``steps_per_epoch`` Adam steps; for ASBS, corrector epochs spend no energy
calls; their loss is judged apart, as ASBS's training health declares). Samples are drawn
from the averaged (EMA) network.

Evaluation (the iDEM protocol reused by Havens et al. 2025 and Liu et al. 2025, in the library:
:mod:`jaxsamp.diagnostics.particles`, through the sampler's ``evaluate``): ``run.num_eval_samples``
samples against as many reference samples (the test split for particle
systems, exact samples otherwise): energy W2, geometric W2 (particles) or W2
(other targets), the median energy, for particles the noise floors of both W2s,
log Z-hat and ESS from the Girsanov path weights, the energy
histogram and, for particles, the interatomic-distance histogram.
"""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np

from jaxsamp.core import WeightedSamples
from jaxsamp.core.progress import phase
from jaxsamp.core.registry import EXPERIMENTS, ExperimentKind
from jaxsamp.diagnostics import health
from jaxsamp.diagnostics.particles import SampleScorer, interatomic_distances, reference_samples
from jaxsamp.experiments import plots
from jaxsamp.experiments.fitting import check_method, fit_method


def _histogram(path: Path, generated: np.ndarray, reference: np.ndarray | None, xlabel: str, title: str, label: str) -> None:
    plt = plots.pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    pooled = generated if reference is None else np.concatenate([generated, reference])
    lo, hi = np.percentile(pooled, [0.5, 99.5])
    bins = np.linspace(lo, hi, 80)
    ax.hist(generated, bins=bins, density=True, alpha=0.6, label=label)
    if reference is not None:
        ax.hist(reference, bins=bins, density=True, histtype="step", color="k", label="reference")
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.legend()
    plots.save_figure(fig, path)


def evaluate(sampler, target, state, key, num_samples: int, run_dir: Path | None = None, title: str = "",
             label: str = "sampler") -> dict:
    """Sample ``num_samples`` states of ``sampler`` at train state ``state``; compare them with the target's references.

    ``sampler`` has ``sample(key, state, n)`` and ``evaluate(key, state, n, **options)`` (a
    :class:`~jaxsamp.core.LearnedSampler` of Adjoint Sampling or ASBS). The draws are made in
    memory-bounded batches (:meth:`~jaxsamp.diagnostics.particles.SampleScorer.draw`) and scored by
    the sampler's ``evaluate`` against ``num_samples`` reference samples
    (:func:`~jaxsamp.diagnostics.particles.reference_samples`): the diffusion samplers' path figures
    and the particle protocol (``w2``, ``energy_w2``, ``energy_median`` and, for particle systems,
    the noise floors ``w2_floor``, ``energy_w2_floor``; :mod:`jaxsamp.diagnostics.particles`).
    Returns a flat metrics dict with ``nonfinite_samples`` (draws with a NaN/inf state, weight or
    energy) and their ``warnings``; with ``run_dir`` also writes ``samples.npz`` and the histogram
    PNGs, ``label`` naming the draws there.
    """
    k_sample, k_ref, k_eval = jax.random.split(key, 3)
    scorer = SampleScorer(target, sampler.sample)
    x, log_w = scorer.draw(k_sample, state, num_samples)
    ref = reference_samples(target, k_ref, num_samples)
    metrics = sampler.evaluate(k_eval, state, num_samples, reference=ref, forward=WeightedSamples(x, log_w))
    energies, finite, _ = scorer.score(x, log_w, None)
    metrics["nonfinite_samples"] = int((~finite).sum())
    metrics["warnings"] = health.sample_warnings(int((~finite).sum()), num_samples)
    if run_dir is not None:
        ref_energies = None if ref is None else scorer.energy(ref)
        arrays = {"samples": x, "log_w": log_w, "energies": energies}
        if ref is not None:
            arrays.update(reference=ref, reference_energies=ref_energies)
        np.savez(run_dir / "samples.npz", **arrays)
        _histogram(run_dir / "energy_histogram.png", energies[finite], ref_energies, "energy", title, label)
        if scorer.particles:
            _histogram(
                run_dir / "distance_histogram.png", interatomic_distances(target, x[finite]),
                None if ref is None else interatomic_distances(target, ref), "interatomic distance", title, label,
            )
        else:
            plots.samples_against_target(run_dir, target, x[finite], ref, title)
    return metrics


def check(cfg, target):
    """The Adjoint Sampling / ASBS settings against the target (a real-valued one), before any work."""
    return check_method(cfg, target, "adjoint", ("adjoint", "asbs"))


def run_adjoint(cfg, target, settings, run_dir: Path) -> dict:
    """Train Adjoint Sampling or ASBS on ``target`` for ``run.num_steps`` epochs; evaluate its averaged network."""
    k_fit, k_eval = jax.random.split(jax.random.key(cfg.seed))
    fitted = fit_method(cfg, target, settings, run_dir, k_fit)
    history = fitted.history
    corrector = np.asarray(history.get("corrector_epoch", np.zeros(cfg.run.num_steps, bool)), bool)
    loss, energy = history["loss"], history["energy_mean"]
    metrics = {
        "epochs": cfg.run.num_steps,
        "target_evals": int(history["target_evals"][-1]),
        "train_seconds_incl_compile": fitted.seconds,
        "final_loss": float(np.mean(loss[~corrector][-10:])),
    }
    if corrector.any():
        metrics["final_corrector_loss"] = float(np.mean(loss[corrector][-10:]))
    n = cfg.run.num_eval_samples
    with phase(f"evaluating on {n} samples", cfg.run.progress):
        metrics.update(evaluate(fitted.sampler, target, fitted.state, k_eval, n, run_dir, cfg.name, cfg.sampler.name))
    metrics["warnings"] = fitted.warnings + metrics["warnings"] + health.training_warnings(
        (), ess=metrics.get("ess"), num_samples=n - metrics["nonfinite_samples"])
    series = {"log10 adjoint-matching loss": np.log10(np.where(corrector, np.nan, loss)), "rollout energy": energy}
    if corrector.any():
        series["log10 corrector loss"] = np.log10(np.where(corrector, loss, np.nan))
    plots.trace_plot(run_dir / "training.png", series, cfg.name)
    return metrics


EXPERIMENTS.register("adjoint", "train Adjoint Sampling or ASBS; W2, energy W2, log Z and ESS vs references")(
    ExperimentKind(check, run_adjoint)
)
