"""The ``curves`` experiment kind: train the Boltzmann-curve sampler ``curves``, sample it by ODE, plot its curve.

Config ``sampler`` block: ``name: curves`` and ``params`` validated into
:class:`~jaxsamp.learned.curves.training.CurvesSettings` (the
interpolation ``linear``, ``learned`` or ``gradient_flow``, collocation, divergence,
networks, the sampling ODE and its Langevin corrections). ``run.num_chains`` is
the number of collocation points per training step, ``run.num_steps`` the number
of Adam updates (:func:`jaxsamp.fit`, checkpoints in ``run_dir/checkpoints``, its health
warnings), and ``run.num_eval_samples`` the ODE samples of the evaluation
(:meth:`~jaxsamp.learned.curves.training.Curves.evaluate_with_transport`: ESS, both log Z estimates
and the learned one, MMD to exact samples, velocity norms, target evaluations).

Outputs: ``samples.npz`` (samples, both log-weights, the speeds along t),
``samples.png`` (samples over the target's contours for 2-D targets, next to
exact samples; marginals otherwise), ``curve.png`` (snapshots of ``rho_t ∝
exp(-f_t)`` at t = 0, 1/4, 1/2, 3/4, 1 with the flow's samples at those times;
for d > 2, ``f_t`` along the diagonal ``x = u (1, ..., 1) / sqrt(d)``),
``velocity.png`` (mean and maximum of ``|v_t(x_t)|`` along t) and
``training.png`` (loss, mean ``|R|`` and the learned log Z per step).
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.diagnostics import health
from jaxsamp.core.registry import EXPERIMENTS, ExperimentKind, build_learned_sampler
from jaxsamp.experiments.fitting import fit_method, smc_metrics
from jaxsamp.experiments import plots
from jaxsamp.learned.curves import ode
from jaxsamp.learned.curves.training import Curves, CurvesSettings
from jaxsamp.core.progress import phase

SNAPSHOT_TIMES = (0.0, 0.25, 0.5, 0.75, 1.0)
SNAPSHOT_POINTS = 400


def check(cfg, target) -> Curves:
    """The settings against the target (real-valued, flat state), before any work: the method's numerics."""
    numerics = lambda settings: Curves(target, settings, batch_size=cfg.run.num_chains)  # noqa: E731
    return build_learned_sampler(cfg, "curves", {"curves": (numerics, CurvesSettings)})


def curve_snapshots(
    path: Path, curve: Curves, params, key, extent, title: str
) -> Path:
    """``rho_t ∝ exp(-f_t)`` at :data:`SNAPSHOT_TIMES` with the flow's samples at those times (2-D), else ``f_t`` on the diagonal."""
    plt = plots.pyplot()
    fields, interp = curve.fields(params), curve.interpolation
    x0 = interp.base_scale * jax.random.normal(key, (SNAPSHOT_POINTS, curve.dim))
    steps = curve.settings.ode_steps
    move = jax.jit(
        jax.vmap(
            lambda x, t: ode.integrate(fields.velocity, x, t, steps), in_axes=(0, None)
        )
    )
    f_at = jax.jit(jax.vmap(lambda x, t: interp.f(fields.g, x, t), in_axes=(0, None)))
    fig, axes = plt.subplots(
        1, len(SNAPSHOT_TIMES), figsize=(3.2 * len(SNAPSHOT_TIMES), 3.4), squeeze=False
    )
    if curve.dim == 2:
        X, Y = np.meshgrid(
            np.linspace(extent[0], extent[1], 120),
            np.linspace(extent[2], extent[3], 120),
        )
        grid = jnp.asarray(np.stack([X.ravel(), Y.ravel()], -1), jnp.float32)
    else:
        u = np.linspace(-extent, extent, 400)
        line = jnp.asarray(
            u[:, None] * np.ones(curve.dim) / np.sqrt(curve.dim), jnp.float32
        )
    for ax, t in zip(axes[0], SNAPSHOT_TIMES):
        t_arr = jnp.asarray(t, jnp.float32)
        if curve.dim == 2:
            f = np.asarray(f_at(grid, t_arr)).reshape(X.shape)
            ax.contourf(X, Y, np.exp(-(f - np.nanmin(f))), levels=20, cmap="Blues")
            pts = np.asarray(move(x0, t_arr)) if t > 0 else np.asarray(x0)
            ax.scatter(pts[:, 0], pts[:, 1], s=2, c="C3", alpha=0.5)
            ax.set_xlim(extent[:2])
            ax.set_ylim(extent[2:])
            ax.set_aspect("equal")
        else:
            f = np.asarray(f_at(line, t_arr))
            ax.plot(u, f - np.nanmin(f))
            ax.set_xlabel("u along (1, ..., 1) / sqrt(d)")
        ax.set_title(f"t = {t:g}", fontsize=9)
    fig.suptitle(
        f"{title}: the curve rho_t ∝ exp(-f_t)"
        + (" and the flow's samples" if curve.dim == 2 else ", f_t - min f_t")
    )
    plots.save_figure(fig, path, dpi=100)
    return path


def velocity_plot(path: Path, speeds: dict, title: str) -> Path:
    """Mean (solid) and maximum (dashed) of ``|v_t(x_t)|`` along t for each labelled run; ``speeds[label] = (t, mean, max)``."""
    plt = plots.pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for i, (label, (t, mean, top)) in enumerate(speeds.items()):
        ax.plot(t, mean, color=f"C{i}", label=f"{label} (mean)")
        ax.plot(t, top, color=f"C{i}", ls="--", label=f"{label} (max)")
    ax.set_yscale("log")
    ax.set_xlabel("t")
    ax.set_ylabel("|v_t(x_t)| over the samples")
    ax.set_title(title)
    ax.legend(fontsize=8)
    plots.save_figure(fig, path)
    return path


def run_curves(cfg, target, curve: Curves, run_dir: Path) -> dict:
    """Train for ``run.num_steps`` updates with :func:`jaxsamp.fit`; evaluate ``run.num_eval_samples`` ODE samples; plot."""
    k_fit, k_eval, k_plot = jax.random.split(jax.random.key(cfg.seed), 3)
    fitted = fit_method(cfg, target, curve.settings, run_dir, k_fit, method="curves")
    state, trace = fitted.state, fitted.history
    with phase(f"evaluating {cfg.run.num_eval_samples} ODE samples", cfg.run.progress):
        figures, out = curve.evaluate_with_transport(k_eval, state, cfg.run.num_eval_samples)
    x = np.asarray(out.samples.x)
    finite = np.all(np.isfinite(x), axis=1)

    # the training's health is fit's (the loss judged for progress with box collocation only, skipped updates,
    # diverged collocation points); the samples' here
    warnings = list(fitted.warnings)
    if figures["nonfinite_samples"]:
        warnings.append(
            f"{figures['nonfinite_samples']:.0f} of {len(x)} ODE samples or weights were not finite: "
            "raise sampler.params.ode_steps or train longer"
        )
    at_floor = health.training_warnings((), ess=figures.get("ess"),  # no loss: fit judged it
                                        num_samples=len(x) - int(figures["nonfinite_samples"]))
    warnings += at_floor
    if not at_floor and figures.get("ess", 0.0) < 0.01:  # the floor is said once, by the shared check
        warnings.append(
            f"ESS {figures.get('ess', 0.0):.3g} < 0.01: the weights rest on a handful of samples"
        )

    metrics = {
        "interpolation": curve.settings.interpolation,
        "diverged_collocation_points": int(np.sum(trace["diverged_points"])),
        "train_steps": cfg.run.num_steps,
        "train_seconds_incl_compile": fitted.seconds,
        "target_evals": int(state.target_evals),
        "final_loss": float(np.mean(trace["loss"][-10:])),
        **figures,
        **smc_metrics(cfg, fitted),
        "warnings": warnings,
    }
    np.savez(
        run_dir / "samples.npz",
        samples=x,
        log_w=np.asarray(out.samples.log_w),
        log_w_jarzynski=np.asarray(out.jarzynski.log_w),
        times=np.asarray(out.times),
        speed_mean=np.asarray(out.speed_mean),
        speed_max=np.asarray(out.speed_max),
    )
    reference = (
        np.asarray(target.sample(jax.random.fold_in(k_eval, 1), len(x)))
        if target.has_exact_samples
        else None
    )
    title = f"{cfg.name} ({curve.settings.interpolation})"
    plots.samples_against_target(run_dir, target, x[finite], reference, title)
    if curve.dim == 2:
        both = (
            x[finite] if reference is None else np.concatenate([x[finite], reference])
        )
        lo, hi = np.percentile(both, [0.5, 99.5], axis=0)
        pad = 0.2 * (hi - lo)
        extent = (lo[0] - pad[0], hi[0] + pad[0], lo[1] - pad[1], hi[1] + pad[1])
    else:
        extent = (
            1.5
            * float(
                np.percentile(np.abs(x[finite].sum(axis=1)) / np.sqrt(curve.dim), 99)
            )
            + 1.0
        )
    curve_snapshots(run_dir / "curve.png", curve, state.params, k_plot, extent, title)
    speeds = {
        curve.settings.interpolation: (
            np.asarray(out.times),
            np.asarray(out.speed_mean),
            np.asarray(out.speed_max),
        )
    }
    velocity_plot(run_dir / "velocity.png", speeds, f"{title}: velocity along the ODE")
    plots.trace_plot(
        run_dir / "training.png",
        {
            "log10 loss": np.log10(trace["loss"]),
            "mean |R|": trace["residual_abs"],
            "log Z (learned C)": trace["log_Z_learned"],
        },
        f"{cfg.name}: PINN loss per update",
    )
    return metrics


EXPERIMENTS.register(
    "curves",
    "train a Boltzmann-curve sampler (linear, learned or gradient-flow interpolation) by its PINN loss; ODE samples, ESS, two log Z estimates, velocity",
)(ExperimentKind(check, run_curves))
