"""Boltzmann-curve samplers (linear, learned, gradient-flow interpolations) against tempered SMC at equal evaluations.

Protocol (fixed in this docstring before the first full run; every interpolation of a target gets the same budget):

* **Targets**: ``gmm2d``, the two-mode 2-D mixture with random means and weights 1:3 of
  ``configs/curves_*_gmm2d.yaml``; ``lattice_double_well`` (8 sites, transfer-integral log Z);
  ``many_well`` (d = 32, log Z = 164.6957). Settings per target are the shipped configs'
  (``configs/curves_{interp}_gmm2d.yaml``, ``configs/curves_lattice_double_well.yaml``,
  ``configs/curves_many_well.yaml``), with ``sampler.params.interpolation`` set to each of ``linear``,
  ``learned``, ``gradient_flow``, and the config's collocation batch (``run.num_chains``).
* **Budgets** as update counts, so that the quality figures do not depend on machine load: the issue's
  CPU caps (2 minutes per run on gmm2d, 8 on the others) divided by the seconds per update of the
  slowest interpolation of that target, timed with compilation left out (``--calibrate`` prints them) on the
  2-core development machine, recorded as each config's ``run.num_steps`` (gmm2d timed while other jobs
  were running, so its count is conservative; the lattice and many-well counts calibrated alone on the
  machine of the full run, before it started), so ``jaxsamp run configs/<config>.yaml`` trains as long as
  a benchmark run. ``train_minutes`` is recorded as measured (compilation included).
* **Training** is ``jaxsamp.fit("curves", target, key=seed, ...)`` with the config's settings. ``fit`` splits the
  seed's key its own way: the runs recorded before it trained the curves (initialisation ``fold_in(key, 0)``,
  updates ``fold_in(key, 1)``) drew another random stream under the same protocol.
* **Evaluation** (:meth:`jaxsamp.learned.curves.training.Curves.evaluate`): 2000 samples by the config's RK4
  ODE (64 steps). Figures, for each interpolation and target: ``{interp}_{target}_ess``;
  ``_logz_abs_err`` (the change-of-variables estimate: the headline), ``_logz_jarzynski_abs_err`` (the
  Jarzynski-type estimate ``log Z_0 + int C + log mean exp(-int R)``), ``_logz_learned_abs_err``
  (``log Z_0 + int C``, no sampling); ``_mmd`` (Gaussian kernel, median bandwidth) to 2000 exact samples;
  ``_max_velocity`` (the maximum of ``|v_t(x_t)|`` over samples and t); ``_train_minutes``;
  ``_target_evals`` (training plus sampling); ``_nonfinite_samples`` (left out of every figure) and
  ``_diverged_points`` (collocation points of diverged trajectories left out of the loss, summed over
  training; added with that rule after seed 0's first run, whose gradient-flow many-well run ended in
  non-finite networks when a non-finite point made 20 batches in a row skip their update).
* **Tempered SMC side by side at equal target evaluations**: ``jaxsamp.smc.anneal`` along the geometric
  path from the same base ``N(0, I)``, 2000 particles, 5 MALA steps per level (step ``SMC_STEP``),
  resampling at ESS < 0.5, a linear schedule with as many levels as the mean ``_target_evals`` of the
  three interpolations of that target and seed allow (one evaluation = the log density with its gradient
  at one state, for both methods): ``smc_{target}_logz_abs_err``, ``smc_{target}_target_evals``.
* **Importance sampling from the base** ``N(0, I)`` with the curves' 2000 samples (what a curve with
  ``v = 0`` gives; added after seed 0's first run, to tell a curve that collapsed from one that never
  moved): ``base_is_{target}_logz_abs_err``, ``base_is_{target}_ess``.
* **Plots** (``benchmarks/results/``): ``bench_curves_velocity_{target}_seed{k}.png`` (mean and max
  ``|v_t|`` along t for the three interpolations), ``bench_curves_gmm2d_seed{k}.png`` (samples over the
  contours, next to exact samples) and ``bench_curves_exact_velocity.png`` (the exact 1-D speeds of the
  linear and the gradient-flow curve to a two-mode mixture with weights 1:3, at separations 2, 3 and 4).
* **Seeds 0, 1, 2**; each figure is recorded per seed (``..._seed{k}``) as its run ends, and
  ``{figure}`` / ``{figure}_sd`` are the mean and sd over the seeds recorded so far.

Goals (issue 17): gradient-flow and learned beat linear on every target in log Z error and ESS, with a
bounded velocity where linear's explodes; one interpolation reaches ESS >= 0.5 on the lattice double
well with a log Z error below SMC's.

``--quick`` (run by tests/scripts/test_bench_curves.py): gmm2d, seed 0, the learned interpolation only (20 updates
of 32 collocation points, 8 ODE steps, 128 samples), SMC with 64 particles, the exact speeds at separation 8 only.

Usage: python scripts/bench_curves.py [--quick] [--calibrate] [--targets gmm2d lattice_double_well many_well] [--seeds 0 1 2]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import benchmark_io
import blackjax
import jax
import numpy as np

import jaxsamp
import jaxsamp.targets  # noqa: F401  (registers the targets)
from jaxsamp.core import WeightedSamples
from jaxsamp.core.registry import TARGETS
from jaxsamp.experiments.config import load_config
from jaxsamp.learned.curves.interpolations import make_interpolation
from jaxsamp.learned.curves.ode import exact_speeds_1d, mixture_curves_1d
from jaxsamp.learned.curves.training import Curves, CurvesSettings

CONFIGS = Path(__file__).resolve().parent.parent / "configs"
INTERPOLATIONS = ("linear", "learned", "gradient_flow")
CONFIG_OF = {
    "gmm2d": "curves_{interp}_gmm2d.yaml",
    "lattice_double_well": "curves_lattice_double_well.yaml",
    "many_well": "curves_many_well.yaml",
}
# The update budgets are the configs' run.num_steps (docstring): 14 000 (gmm2d), 17 894 (lattice), 9067 (many-well).
# From the CPU caps: gmm2d's gradient flow, slowest, took 0.0082 s per update under load (14 600 in 2 minutes);
# lattice_double_well and many_well: `--calibrate` alone on the 2-core machine of the full run (the other jobs
# paused), 2026-12-02, commit a9efe35: the gradient flow is the slowest on both, 0.0268 s and 0.0529 s per update
# (linear 0.0113 / 0.0285, learned 0.0115 / 0.0301), so 17 894 and 9067 updates fill the 8-minute caps.
CAPS_MINUTES = {"gmm2d": 2.0, "lattice_double_well": 8.0, "many_well": 8.0}
SMC_STEP = {"gmm2d": 0.1, "lattice_double_well": 0.05, "many_well": 0.02}
QUICK = {  # one interpolation (the one with every network); the unit tests cover the other two
    "interpolations": ("learned",),
    "updates": 20,
    "num_chains": 32,
    "hidden": (16,),
    "ode_steps": 8,
    "num_eval": 128,
}


def problem(target_name: str, interp: str, quick: bool) -> tuple:
    """The target, the curve's settings and its collocation batch of the shipped config, the interpolation ``interp``."""
    cfg = load_config(CONFIGS / CONFIG_OF[target_name].format(interp=interp))
    target = TARGETS.get(cfg.target.name, **cfg.target.params)
    params = {**cfg.sampler.params, "interpolation": interp}
    batch = cfg.run.num_chains
    if quick:
        params.update(hidden=QUICK["hidden"], ode_steps=QUICK["ode_steps"], trajectory_steps=2)
        batch = QUICK["num_chains"]
    return target, CurvesSettings(**params), batch


def train_and_evaluate(target_name: str, interp: str, seed: int, quick: bool):
    """One training run at the target's update budget (:func:`jaxsamp.fit`); the figures and the samples."""
    target, settings, batch = problem(target_name, interp, quick)
    budget = load_config(CONFIGS / CONFIG_OF[target_name].format(interp=interp)).run.num_steps
    updates, n_eval = (QUICK["updates"], QUICK["num_eval"]) if quick else (budget, 2000)
    key = jax.random.key(seed)
    fitted = jaxsamp.fit("curves", target, key=seed, settings=settings, batch_size=batch, num_steps=updates,
                         progress=False)
    # the whole ODE run (samples and speeds along t), by the method's numerics
    curve = Curves(target, fitted.settings, batch)
    figures, out = curve.evaluate_with_transport(jax.random.fold_in(key, 2), fitted.state, n_eval)
    nan = float("nan")
    row = {
        "ess": figures.get("ess", 0.0),
        "logz_abs_err": figures.get("log_Z_abs_err", nan),
        "logz_jarzynski_abs_err": figures.get("log_Z_abs_err_jarzynski", nan),
        "logz_learned_abs_err": figures.get("log_Z_learned_abs_err", nan),
        "mmd": figures.get("mmd", nan),
        "max_velocity": figures["max_velocity"],
        "train_minutes": fitted.seconds / 60,
        "target_evals": int(fitted.state.target_evals) + figures["sample_target_evals"],
        "nonfinite_samples": figures["nonfinite_samples"],
        "diverged_points": int(np.sum(fitted.history["diverged_points"])),
    }
    speeds = (
        np.asarray(out.times),
        np.asarray(out.speed_mean),
        np.asarray(out.speed_max),
    )
    return row, np.asarray(out.samples.x), speeds


def smc_at_budget(target_name: str, seed: int, budget: float, quick: bool) -> dict:
    """Tempered SMC from N(0, I) with 5 MALA steps per level, as many levels as ``budget`` evaluations allow."""
    from jaxsamp.smc import anneal
    from jaxsamp.targets.annealing import geometric_path

    target, _, _ = problem(target_name, "linear", quick)
    path = geometric_path(target, base_scale=1.0)
    particles, moves = (64, 2) if quick else (2000, 5)
    levels = max(2, int(budget // (particles * (moves + 1))))
    step = SMC_STEP[target_name]
    result = anneal(
        jax.random.key(1000 + seed),
        path,
        lambda t: blackjax.mala(lambda x: path.log_prob(x, t), step),
        particles,
        schedule=np.linspace(0.0, 1.0, levels + 1),
        num_mcmc_steps=moves,
        ess_threshold=0.5,
    )
    return {
        "logz_abs_err": abs(float(result.samples.log_Z) - float(target.log_Z)),
        "target_evals": int(result.num_target_evals),
        "levels": levels,
    }


def base_importance_sampling(target_name: str, seed: int, quick: bool) -> dict:
    """Importance sampling from the curves' base ``N(0, I)`` (the ``v = 0`` curve), as many samples as they get."""
    target, settings, _ = problem(target_name, "linear", quick)
    n = QUICK["num_eval"] if quick else 2000
    base = make_interpolation("linear", target, settings.base_scale)
    x = jax.random.normal(jax.random.key(2000 + seed), (n, base.dim))
    log_w = jax.vmap(target.log_prob)(x) + 0.5 * jax.numpy.sum(x**2, axis=1)
    weighted = WeightedSamples(x, log_w, base.log_Z0)
    return {
        "logz_abs_err": abs(float(weighted.log_Z) - float(target.log_Z)),
        "ess": float(weighted.ess),
    }


def velocity_figure(path: Path, speeds: dict, title: str) -> None:
    from jaxsamp.experiments.curves_experiment import velocity_plot

    velocity_plot(path, speeds, title)
    print(f"  -> {path}", flush=True)


def samples_figure(path: Path, target, samples: dict) -> None:
    from jaxsamp.experiments.plots import pyplot, save_figure

    plt = pyplot()
    n = len(next(iter(samples.values())))
    panels = {**samples, "exact": np.asarray(target.sample(jax.random.key(0), n))}
    both = np.concatenate(list(panels.values()))
    both = both[np.all(np.isfinite(both), axis=1)]
    lo, hi = np.percentile(both, [0.5, 99.5], axis=0)
    X, Y = np.meshgrid(
        np.linspace(lo[0] - 1, hi[0] + 1, 200), np.linspace(lo[1] - 1, hi[1] + 1, 200)
    )
    Z = np.asarray(
        jax.vmap(target.log_prob)(
            np.stack([X.ravel(), Y.ravel()], -1).astype(np.float32)
        )
    ).reshape(X.shape)
    fig, axes = plt.subplots(
        1, len(panels), figsize=(3.2 * len(panels), 3.4), squeeze=False
    )
    for ax, (label, pts) in zip(axes[0], panels.items()):
        ax.contourf(X, Y, np.exp(Z - Z.max()), levels=20, cmap="Blues")
        ax.scatter(pts[:, 0], pts[:, 1], s=2, c="C3", alpha=0.4)
        ax.set_xlim(X.min(), X.max())
        ax.set_ylim(Y.min(), Y.max())
        ax.set_aspect("equal")
        ax.set_title(label, fontsize=9)
    save_figure(fig, path, dpi=100)
    print(f"  -> {path}", flush=True)


def exact_velocity_figure(path: Path, half_separations=(2.0, 3.0, 4.0)) -> dict:
    """The exact 1-D speeds (root mean square over rho_t) of the linear and gradient-flow curves; their peaks."""
    from jaxsamp.experiments.plots import pyplot, save_figure

    plt = pyplot()
    times, peaks = np.linspace(0.02, 0.98, 49), {}
    fig, ax = plt.subplots(figsize=(6, 4))
    for i, a in enumerate(half_separations):
        curves = mixture_curves_1d([-a, a], [0.5, 0.5], [0.25, 0.75], base_scale=1.0)
        grid = np.linspace(-a - 6, a + 6, 6001)
        for name, ls in (("linear", "-"), ("gradient_flow", "--")):
            rms = exact_speeds_1d(curves[name], grid, times).rms
            peaks[f"exact_{name}_separation{int(2 * a)}_peak_rms_speed"] = float(
                np.max(rms)
            )
            ax.plot(times, rms, ls=ls, color=f"C{i}", label=f"{name}, modes at ±{a:g}")
    ax.set_yscale("log")
    ax.set_xlabel("t")
    ax.set_ylabel("exact rms speed sqrt(E v_t^2)")
    ax.set_title("1-D two-mode mixture (weights 1:3, sd 0.5) from N(0, 1)")
    ax.legend(fontsize=7)
    save_figure(fig, path)
    print(f"  -> {path}", flush=True)
    return peaks


def calibrate(targets) -> None:
    """Print, per target, the seconds per update of each curve (compilation left out) and the count that fits its cap."""
    for target_name in targets:
        slowest = 0.0
        for interp in INTERPOLATIONS:
            target, settings, batch = problem(target_name, interp, False)
            fitted = jaxsamp.fit("curves", target, key=0, settings=settings, batch_size=batch, num_steps=30,
                                 progress=False)
            seconds = (fitted.seconds - fitted.compile_seconds) / 30
            slowest = max(slowest, seconds)
            print(f"{target_name} {interp}: {seconds:.4f} s per update", flush=True)
        print(
            f"{target_name}: run.num_steps = {int(CAPS_MINUTES[target_name] * 60 / slowest)}",
            flush=True,
        )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="CI-sized run (numbers not meaningful)"
    )
    parser.add_argument(
        "--targets", nargs="+", choices=list(CONFIG_OF), default=list(CONFIG_OF)
    )
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument(
        "--calibrate",
        action="store_true",
        help="time the curves and print the update counts",
    )
    args = parser.parse_args(argv)
    if args.calibrate:
        calibrate(args.targets)
        return
    targets = ["gmm2d"] if args.quick else args.targets
    seeds = args.seeds[:1] if args.quick else args.seeds
    suffix = "_quick" if args.quick else ""
    results: dict = {}

    def save():
        print(
            f"  -> {benchmark_io.write_results('bench_curves', results, quick=args.quick, merge=True)}",
            flush=True,
        )

    def record(method: str, target_name: str, seed: int, figures: dict) -> None:
        """Record one run's figures as ``{method}_{target}_{figure}`` for ``seed``, and print them."""
        for fig, value in figures.items():
            benchmark_io.record_seed(
                results,
                "bench_curves",
                f"{method}_{target_name}_{fig}",
                seed,
                value,
                args.quick,
            )
        print(f"seed {seed} {method} {target_name}: " + json.dumps(figures), flush=True)

    results.update(
        exact_velocity_figure(
            benchmark_io.RESULTS_DIR / f"bench_curves_exact_velocity{suffix}.png",
            (4.0,) if args.quick else (2.0, 3.0, 4.0),
        )
    )
    save()
    for seed in seeds:
        for target_name in targets:
            evals, samples, speeds = [], {}, {}
            for interp in QUICK["interpolations"] if args.quick else INTERPOLATIONS:
                row, samples[interp], speeds[interp] = train_and_evaluate(
                    target_name, interp, seed, args.quick
                )
                evals.append(row["target_evals"])
                record(interp, target_name, seed, row)
                save()
            velocity_figure(
                benchmark_io.RESULTS_DIR
                / f"bench_curves_velocity_{target_name}_seed{seed}{suffix}.png",
                speeds,
                f"{target_name}, seed {seed}: |v_t(x_t)| along the ODE",
            )
            if target_name == "gmm2d":
                target, _, _ = problem(target_name, "linear", args.quick)
                samples_figure(
                    benchmark_io.RESULTS_DIR
                    / f"bench_curves_gmm2d_seed{seed}{suffix}.png",
                    target,
                    samples,
                )
            baselines = {
                "smc": smc_at_budget(
                    target_name, seed, float(np.mean(evals)), args.quick
                ),
                "base_is": base_importance_sampling(target_name, seed, args.quick),
            }
            for method, figures in baselines.items():
                record(method, target_name, seed, figures)
            save()


if __name__ == "__main__":
    main()
