"""The ``adjoint`` experiment kind: train Adjoint Sampling or ASBS through the driver, then evaluate it.

Config ``sampler`` block: ``name: adjoint`` with ``params`` validated into
:class:`~jaxsamp.learned.diffusion.adjoint.AdjointSettings`, or ``name: asbs`` with
:class:`~jaxsamp.learned.diffusion.asbs.AsbsSettings`. ``run.num_chains`` is the
number of trajectories simulated per epoch (one energy gradient each) and
``run.num_steps`` the number of epochs (each a rollout plus
``steps_per_epoch`` Adam steps; for ASBS, corrector epochs spend no energy
calls). Samples are drawn from the averaged (EMA) network.

Evaluation (the iDEM protocol reused by Havens et al. 2025): ``run.num_eval_samples``
samples against as many reference samples (the test split for particle
systems, exact samples otherwise): energy W2, geometric W2 (particles) or W2
(other targets), log Z-hat and ESS from the Girsanov path weights, the energy
histogram and, for particles, the interatomic-distance histogram.
"""

from __future__ import annotations

import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.diagnostics import health
from jaxsamp.core import WeightedSamples, run
from jaxsamp.core.registry import EXPERIMENTS, ExperimentKind, build_learned_sampler
from jaxsamp.core.target import ReferenceUnavailableError
from jaxsamp.diagnostics import discrepancies, health
from jaxsamp.diagnostics.geometric_wasserstein import geometric_w2
from jaxsamp.experiments import plots
from jaxsamp.learned.diffusion.adjoint import AdjointSampling, AdjointSettings
from jaxsamp.learned.diffusion.asbs import Asbs, AsbsSettings
from jaxsamp.learned.diffusion.evaluation import evaluate_path_sampler
from jaxsamp.core.progress import phase

EVAL_BATCH = 1000


class SampleScorer:
    """Draws of one sampler and their figures against a reference, compiled once for all of a run's draws.

    ``sampler.sample_with`` (``num_samples`` static) and the batched energy ``-log_prob`` are jitted here, once:
    a fresh ``jax.jit`` per draw would compile both again at every call, which a learning curve of many
    points pays for each point.
    """

    def __init__(self, sampler: AdjointSampling):
        self.space = sampler.space
        self._sample = jax.jit(sampler.sample_with, static_argnums=2)
        self._energy = jax.jit(jax.vmap(lambda z: -sampler.target.log_prob(z)))

    def draw(self, params, key, n: int) -> tuple[np.ndarray, np.ndarray]:
        """``n`` samples with path log-weights, simulated in batches of at most ``EVAL_BATCH``."""
        xs, log_ws = [], []
        for i, start in enumerate(range(0, n, EVAL_BATCH)):
            ws = self._sample(params, jax.random.fold_in(key, i), min(EVAL_BATCH, n - start))
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


def evaluate(sampler: AdjointSampling, params, key, num_samples: int, run_dir: Path | None = None, title: str = "") -> dict:
    """Sample ``num_samples`` states and compare them with the target's reference set.

    Returns a flat metrics dict: the diffusion samplers' protocol
    (:func:`~jaxsamp.learned.diffusion.evaluation.evaluate_path_sampler`: ``elbo``,
    ``log_Z_reverse``, ``ess``, and with a reference ``eubo``, ``log_Z_forward``,
    their errors against a known ``log Z``, and ``emc`` for mixtures), plus
    ``energy_w2``, ``w2`` (geometric for particles; NaN with fewer than two finite samples) and ``nonfinite_samples``;
    with ``run_dir`` also writes ``samples.npz`` and the histogram PNGs.
    """
    target = sampler.target
    k_sample, k_ref, k_eval = jax.random.split(key, 3)
    scorer = SampleScorer(sampler)
    x, log_w = scorer.draw(params, k_sample, num_samples)
    ref = reference_samples(target, k_ref, num_samples)
    particles = sampler.space.centred
    metrics = evaluate_path_sampler(
        sampler, params, k_eval, num_samples, reference=ref, forward=WeightedSamples(x, log_w), sinkhorn=not particles
    )
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
        _histogram(run_dir / "energy_histogram.png", energies[finite], ref_energies, "energy", title, sampler.method)
        if particles:
            _histogram(
                run_dir / "distance_histogram.png", interatomic_distances(target, x[finite]),
                None if ref is None else interatomic_distances(target, ref), "interatomic distance", title, sampler.method,
            )
        else:
            plots.samples_against_target(run_dir, target, x[finite], ref, title)
    return metrics


SAMPLERS = {"adjoint": (AdjointSampling, AdjointSettings), "asbs": (Asbs, AsbsSettings)}


def check(cfg, target) -> AdjointSampling:
    """The Adjoint Sampling / ASBS settings against the target (a real-valued one), before any work."""
    samplers = {name: (lambda settings, c=c: c(target, settings, batch_size=cfg.run.num_chains), settings_class)
                for name, (c, settings_class) in SAMPLERS.items()}
    return build_learned_sampler(cfg, "adjoint", samplers)


def training_warnings(loss: np.ndarray, corrector: np.ndarray, ess: float | None, num_samples: int) -> list[str]:
    """The learned-run health check of Adjoint Sampling / ASBS: each stage's per-epoch loss and the path-weight ESS.

    The adjoint-matching loss regresses the drift on targets computed from the current model's own
    trajectories (the lean adjoint), and ASBS's corrector matching on the current drift's endpoints: both
    targets move with training, so a loss that rises is no sign of failure and progress is not judged;
    NaN/inf and explosion are, for each stage on its own epochs (their losses have different scales).
    """
    out = health.training_warnings(loss, judge_progress=False, steps=~corrector, ess=ess, num_samples=num_samples)
    if corrector.any():
        out += health.training_warnings(loss, judge_progress=False, steps=corrector, label="corrector matching")
    return out


def run_adjoint(cfg, target, sampler: AdjointSampling, run_dir: Path) -> dict:
    """Train Adjoint Sampling or ASBS on ``target`` for ``run.num_steps`` epochs; evaluate its averaged network."""
    k_init, k_train, k_eval = jax.random.split(jax.random.key(cfg.seed), 3)
    start = time.perf_counter()
    trainer = cfg.trainer(sampler)
    state, trace = run(
        trainer.step,
        trainer.init(k_init),
        k_train,
        cfg.run.num_steps,
        trace=lambda s, m: {"loss": m["loss"], "energy_mean": m["energy_mean"],
                            "corrector_epoch": m.get("corrector_epoch", jnp.bool_(False))},
        **cfg.driver_options(run_dir),
    )
    train_seconds = time.perf_counter() - start
    corrector = np.asarray(trace["corrector_epoch"], bool)
    loss, energy = np.asarray(trace["loss"]), np.asarray(trace["energy_mean"])
    metrics = {
        "epochs": cfg.run.num_steps,
        "energy_evals": int(state.energy_evals),
        "train_seconds_incl_compile": train_seconds,
        "final_loss": float(np.mean(loss[~corrector][-10:])),
    }
    if corrector.any():
        metrics["final_corrector_loss"] = float(np.mean(loss[corrector][-10:]))
    with phase(f"evaluating on {cfg.run.num_eval_samples} samples", cfg.run.progress):
        metrics.update(evaluate(sampler, sampler.sampling_params(state), k_eval, cfg.run.num_eval_samples, run_dir, cfg.name))
    metrics["warnings"] = metrics["warnings"] + training_warnings(
        loss, corrector, metrics.get("ess"), cfg.run.num_eval_samples - metrics.get("nonfinite_paths", 0)
    )
    series = {"log10 adjoint-matching loss": np.log10(np.where(corrector, np.nan, loss)), "rollout energy": energy}
    if corrector.any():
        series["log10 corrector loss"] = np.log10(np.where(corrector, loss, np.nan))
    plots.trace_plot(run_dir / "training.png", series, cfg.name)
    return metrics


EXPERIMENTS.register("adjoint", "train Adjoint Sampling or ASBS through the driver; W2, energy W2, log Z and ESS vs references")(
    ExperimentKind(check, run_adjoint)
)
