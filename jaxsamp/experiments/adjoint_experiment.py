"""The ``adjoint`` experiment kind: Adjoint Sampling or ASBS trained by :func:`jaxsamp.fit`, then evaluated.

Config ``sampler`` block: ``name: adjoint`` with ``params`` validated into
:class:`~jaxsamp.learned.diffusion.adjoint.AdjointSettings`, or ``name: asbs`` with
:class:`~jaxsamp.learned.diffusion.asbs.AsbsSettings`. ``run.num_chains`` is the
number of trajectories simulated per epoch (one energy gradient each) and
``run.num_steps`` the number of epochs (each a rollout plus
``steps_per_epoch`` Adam steps; for ASBS, corrector epochs spend no energy
calls; their loss is judged apart, as ASBS's training health declares). Samples are drawn
from the averaged (EMA) network.

Evaluation (the iDEM protocol reused by Havens et al. 2025): ``run.num_eval_samples``
samples against as many reference samples (the test split for particle
systems, exact samples otherwise): energy W2, geometric W2 (particles) or W2
(other targets), log Z-hat and ESS from the Girsanov path weights, the energy
histogram and, for particles, the interatomic-distance histogram.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core import WeightedSamples
from jaxsamp.core.progress import phase
from jaxsamp.core.registry import EXPERIMENTS, ExperimentKind
from jaxsamp.core.target import ReferenceUnavailableError
from jaxsamp.diagnostics import discrepancies, health
from jaxsamp.diagnostics.geometric_wasserstein import geometric_w2
from jaxsamp.experiments import plots
from jaxsamp.experiments.fitting import check_method, fit_method
from jaxsamp.learned.diffusion.sde import state_space

EVAL_BATCH = 1000


class SampleScorer:
    """Draws of one sampler and their figures against a reference, compiled once for all of a run's draws.

    ``sample(key, x, n) -> WeightedSamples`` (``n`` static; ``x`` a train state, or network parameters) and
    the batched energy ``-log_prob`` of ``target`` are jitted here, once: a fresh ``jax.jit`` per draw would
    compile both again at every call, which a learning curve of many points pays for each point.
    """

    def __init__(self, target, sample: Callable):
        self.space = state_space(target)
        self._sample = jax.jit(sample, static_argnums=2)
        self._energy = jax.jit(jax.vmap(lambda z: -target.log_prob(z)))

    def draw(self, key, x, n: int) -> tuple[np.ndarray, np.ndarray]:
        """``n`` samples at ``x`` (a train state or parameters) with path log-weights, ``EVAL_BATCH`` at a time."""
        xs, log_ws = [], []
        for i, start in enumerate(range(0, n, EVAL_BATCH)):
            ws = self._sample(jax.random.fold_in(key, i), x, min(EVAL_BATCH, n - start))
            xs.append(np.asarray(ws.x))
            log_ws.append(np.asarray(ws.log_w))
        return np.concatenate(xs), np.concatenate(log_ws)

    def energy(self, x: np.ndarray) -> np.ndarray:
        """Energies ``-log_prob`` of the rows of ``x``."""
        return np.asarray(self._energy(jnp.asarray(x)))

    def score(self, x: np.ndarray, log_w: np.ndarray, ref: np.ndarray | None, ref_energies: np.ndarray | None
              ) -> tuple[np.ndarray, np.ndarray, dict]:
        """Energies, the finite mask (state, weight and energy finite) and ``energy_w2`` and ``w2`` of the finite samples.

        ``w2`` is geometric (rotations, reflections and permutations factored out) for particle systems, plain
        otherwise; both are NaN with fewer than two finite samples, and absent without a reference.
        """
        energies = self.energy(x)
        finite = np.all(np.isfinite(x), axis=1) & np.isfinite(log_w) & np.isfinite(energies)
        if ref is None:
            return energies, finite, {}
        if finite.sum() < 2:
            return energies, finite, {"energy_w2": float("nan"), "w2": float("nan")}
        if self.space.centred:
            w2 = geometric_w2(x[finite], ref, self.space.n_particles, self.space.spatial_dim)
        else:
            w2 = discrepancies.wasserstein2(x[finite], ref)
        return energies, finite, {"energy_w2": discrepancies.wasserstein2_1d(energies[finite], ref_energies), "w2": w2}


def reference_samples(target, key, n: int) -> np.ndarray | None:
    """``n`` reference samples: a random subset of a particle system's test split, or exact samples, or ``None``."""
    if hasattr(target, "n_particles"):
        try:
            ref = np.asarray(target.reference("test"))
        except ReferenceUnavailableError:
            return None
        return ref[np.asarray(jax.random.permutation(key, len(ref)))[:n]]
    if target.has_exact_samples:
        return np.asarray(target.sample(key, n))
    return None


def interatomic_distances(target, x: np.ndarray) -> np.ndarray:
    """All distances ``|x_i - x_j|``, ``i < j``, within each flattened configuration of ``x`` (n, N*d), flattened."""
    positions = jnp.asarray(x).reshape(len(x), target.n_particles, target.spatial_dim)
    return np.asarray(jax.vmap(target.pair_distances)(positions)).ravel()


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
    :class:`~jaxsamp.core.LearnedSampler` of Adjoint Sampling or ASBS). Returns a flat metrics dict: the
    diffusion samplers' protocol (:func:`~jaxsamp.learned.diffusion.evaluation.path_figures`: ``elbo``,
    ``log_Z_hat``, ``ess``, and with a reference ``eubo``, ``log_Z_forward``, their errors against a
    known ``log Z``, and ``emc`` for mixtures; the Sinkhorn divergence except for particle systems), plus
    ``energy_w2``, ``w2`` (geometric for particles; NaN with fewer than two finite samples) and
    ``nonfinite_samples`` (draws with a NaN/inf state, weight or energy); with ``run_dir`` also writes
    ``samples.npz`` and the histogram PNGs, ``label`` naming the draws there.
    """
    k_sample, k_ref, k_eval = jax.random.split(key, 3)
    scorer = SampleScorer(target, sampler.sample)
    x, log_w = scorer.draw(k_sample, state, num_samples)
    ref = reference_samples(target, k_ref, num_samples)
    particles = scorer.space.centred
    metrics = sampler.evaluate(k_eval, state, num_samples, reference=ref, forward=WeightedSamples(x, log_w))
    ref_energies = None if ref is None else scorer.energy(ref)
    energies, finite, figures = scorer.score(x, log_w, ref, ref_energies)
    metrics.update(figures)
    metrics["nonfinite_samples"] = int((~finite).sum())
    metrics["warnings"] = health.sample_warnings(int((~finite).sum()), num_samples)
    if run_dir is not None:
        arrays = {"samples": x, "log_w": log_w, "energies": energies}
        if ref is not None:
            arrays.update(reference=ref, reference_energies=ref_energies)
        np.savez(run_dir / "samples.npz", **arrays)
        _histogram(run_dir / "energy_histogram.png", energies[finite], ref_energies, "energy", title, label)
        if particles:
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
