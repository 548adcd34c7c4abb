"""The ``tps_dps`` experiment kind: train TPS-DPS on a 2-D transition-path target, then sample paths.

Config ``sampler`` block: ``name: tps_dps`` and ``params`` validated into
:class:`~jaxsamp.learned.diffusion.tps_dps.TpsDpsSettings`. ``run.num_chains`` is the
number of paths per rollout and ``run.num_steps`` the number of rounds (one
rollout plus ``updates_per_rollout`` Adam steps each), trained by :func:`jaxsamp.fit`
with checkpoints in ``run_dir/checkpoints`` (its health warnings included).

Evaluation as in the reference's synthetic example (Seong et al. 2025, ICLR;
paths.md A5): ``run.num_eval_samples`` paths at the target temperature,
truncated at their closest approach to the end state; RMSD of the final point,
THP (% within ``hit_radius``), ETS (mean and std over hit paths of the highest
potential along the path), the ESS and log Z of the paths' weights, and the target
(energy) evaluations spent in training
(:meth:`~jaxsamp.learned.diffusion.tps_dps.TpsDps.evaluation_figures`).
Outputs: ``paths.npz`` (the evaluation paths and their potentials),
``paths.png`` (64 truncated paths over the potential's contours, start, end and
saddles marked) and ``training.png`` (loss, THP, ETS and behaviour temperature
per rollout).
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core.registry import EXPERIMENTS, ExperimentKind, build_learned_sampler
from jaxsamp.experiments.fitting import fit_method
from jaxsamp.experiments import plots
from jaxsamp.learned.diffusion.tps_dps import TpsDps, TpsDpsSettings, truncated_paths
from jaxsamp.core.progress import phase

PLOTTED_PATHS = 64


def plot_extent(spec) -> tuple[float, float, float, float]:
    """``(x_min, x_max, y_min, y_max)``: the box around the spec's minima and saddles, padded."""
    points = np.asarray([*spec.minima, *spec.saddles])
    lo, hi = points.min(axis=0), points.max(axis=0)
    pad = 0.25 * float(np.max(hi - lo)) + 0.1
    return lo[0] - pad, hi[0] + pad, lo[1] - pad, hi[1] + pad


def paths_plot(path: Path, target, paths: list[np.ndarray], title: str) -> Path:
    """Paths over the contours of ``V`` with the start and end (circles) and the saddles (stars)."""
    plt = plots.pyplot()
    spec = target.spec
    extent = plot_extent(spec)
    X, Y = np.meshgrid(np.linspace(extent[0], extent[1], 300), np.linspace(extent[2], extent[3], 300))
    grid = jnp.asarray(np.stack([X.ravel(), Y.ravel()], axis=-1), jnp.float32)
    V = np.asarray(jax.jit(jax.vmap(target.potential))(grid)).reshape(X.shape)
    v_min = min(float(target.potential(jnp.asarray(m, jnp.float32))) for m in spec.minima)
    v_saddle = max(float(target.potential(jnp.asarray(s, jnp.float32))) for s in spec.saddles)
    fig, ax = plt.subplots(figsize=(6, 6))
    ax.contourf(X, Y, np.minimum(V, v_saddle + 2.0 * (v_saddle - v_min)), levels=40, cmap="viridis")
    colours = plt.get_cmap("gist_rainbow")(np.linspace(0.0, 1.0, max(len(paths), 1)))
    for points, colour in zip(paths, colours):
        ax.plot(points[:, 0], points[:, 1], ".", ms=1.5, color=colour, alpha=0.8)
    ax.scatter(*np.asarray([spec.start, spec.end]).T, s=250, c="w", edgecolors="k", zorder=5, label="start, end")
    ax.scatter(*np.asarray(spec.saddles).T, s=400, c="w", marker="*", edgecolors="k", zorder=5, label="saddles")
    ax.set_xlim(extent[:2])
    ax.set_ylim(extent[2:])
    ax.set_aspect("equal")
    ax.set_title(title)
    ax.legend(loc="lower right", fontsize=8)
    plots.save_figure(fig, path)
    return path


def check(cfg, target) -> TpsDps:
    """The TPS-DPS settings against the target (a 2-D transition-path target), before any work: the method's numerics."""
    numerics = lambda settings: TpsDps(target, settings, batch_size=cfg.run.num_chains)  # noqa: E731
    return build_learned_sampler(cfg, "tps_dps", {"tps_dps": (numerics, TpsDpsSettings)})


def run_tps_dps(cfg, target, sampler: TpsDps, run_dir: Path) -> dict:
    """Train TPS-DPS for ``run.num_steps`` rounds with :func:`jaxsamp.fit`; evaluate ``run.num_eval_samples`` paths."""
    k_fit, k_eval = jax.random.split(jax.random.key(cfg.seed))
    fitted = fit_method(cfg, target, sampler.settings, run_dir, k_fit, method="tps_dps")
    trace = fitted.history
    with phase(f"evaluating {cfg.run.num_eval_samples} paths", cfg.run.progress):
        samples = fitted.sample(k_eval, cfg.run.num_eval_samples)
        evaluation = sampler.evaluation_figures(samples, fitted.state)
    positions, potentials = np.asarray(samples.x.positions), np.asarray(samples.x.potentials)

    # the training's health is fit's (the loss is not judged for progress; an annealing cut short); the paths' here
    warnings = list(fitted.warnings)
    diverged = int(np.sum(~np.all(np.isfinite(positions), axis=(1, 2))))
    if diverged:
        warnings.append(f"{diverged} of {len(positions)} evaluation paths diverged (non-finite positions): lower sampler.params.time_step")
    if evaluation["hits"] == 0:
        warnings.append("no evaluation path reached the end state (THP 0): train longer")

    metrics = {
        "rollouts": cfg.run.num_steps,
        "train_seconds_incl_compile": fitted.seconds,
        "final_loss": float(trace["loss"][-1]),
        "log_Z_learned": float(fitted.state.params.log_z),
        **evaluation,
        "thp_per_rollout": [float(v) for v in trace["thp"]],
        "ets_per_rollout": [float(v) for v in trace["ets"]],
        "warnings": warnings,
    }
    np.savez(run_dir / "paths.npz", positions=positions, potentials=potentials, **{f"trace_{k}": v for k, v in trace.items()})
    shown = truncated_paths(positions[:PLOTTED_PATHS], sampler.end)
    title = f"{cfg.name}: THP {evaluation['thp']:.1f}%, ETS {evaluation['ets']:.3g}"
    paths_plot(run_dir / "paths.png", target, shown, title)
    plots.trace_plot(
        run_dir / "training.png",
        {"log10 loss": np.log10(trace["loss"]), "THP (%)": trace["thp"], "ETS": trace["ets"], "T_b": trace["temperature"]},
        f"{cfg.name} (per rollout)",
    )
    return metrics


EXPERIMENTS.register("tps_dps", "train TPS-DPS transition paths with jaxsamp.fit; RMSD, THP, ETS and target evaluations")(
    ExperimentKind(check, run_tps_dps)
)
