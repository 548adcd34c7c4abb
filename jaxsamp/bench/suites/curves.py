"""Suite ``curves``: Boltzmann-curve samplers (linear, learned and gradient-flow interpolations) against tempered SMC
at equal target evaluations and importance sampling from their base, with the exact speeds of the 1-D curves."""

from __future__ import annotations

import numpy as np

from jaxsamp.bench.cells import build_target, runner
from jaxsamp.bench.protocol import Budget, Cell, Comparison, Goal, Protocol

INTERPOLATIONS = ("linear", "learned", "gradient_flow")
#: per target: registry parameters, the curves' settings (those of its config), training updates (the config's
#: ``run.num_steps``), SMC's MALA step
TARGETS = {
    "gmm2d": ({"name": "gaussian_mixture", "means": [[1.1, -1.84], [-3.67, -3.87]], "scales": 0.5,
               "weights": [0.25, 0.75]},
              {"hidden": [64, 64, 64], "collocation": "box", "box": 6.0, "divergence": "exact"}, 14_000, 0.1),
    "lattice_double_well": ({"name": "lattice_double_well", "num_sites": 8},
                            {"hidden": [64, 64, 64], "collocation": "trajectory", "trajectory_steps": 16,
                             "divergence": "exact"}, 17_894, 0.05),
    "many_well": ({"name": "many_well", "dim": 32},
                  {"hidden": [128, 128, 128], "collocation": "trajectory", "trajectory_steps": 16,
                   "divergence": "hutchinson", "num_probes": 4}, 9067, 0.02),
}
#: the settings every target shares
COMMON_SETTINGS = {"base_scale": 1.0, "learning_rate": 1e-3, "rate_learning_rate": 1e-2, "ode_steps": 64}
#: the two-mode 1-D mixtures whose exact curve speeds are computed: half the separation of the modes
HALF_SEPARATIONS = (2.0, 3.0, 4.0)


def curve_cell(interpolation: str, target: str) -> Cell:
    """One interpolation on one target at the settings of the target's config."""
    spec, settings, updates, _ = TARGETS[target]
    return Cell(f"curves-{interpolation}/{target}", "fit", spec,
                {"method": "curves", "settings": {**COMMON_SETTINGS, **settings, "interpolation": interpolation},
                 "batch_size": 256, "history_totals": {"diverged_collocation_points": "diverged_points"}},
                Budget(updates=updates),
                quick={"settings": {"hidden": [16], "ode_steps": 8, "trajectory_steps": 2}, "batch_size": 32,
                       "budget_updates": 20})


def smc_cell(target: str) -> Cell:
    """Tempered SMC from the curves' base at the mean training evaluations of the three interpolations."""
    spec, *_, step = TARGETS[target]
    return Cell(f"smc/{target}", "tempered_smc", spec,
                {"base_scale": 1.0, "step_size": step, "num_particles": 2000, "num_mcmc_steps": 5,
                 "ess_threshold": 0.5},
                Budget(match_target_evals=tuple(f"curves-{i}/{target}" for i in INTERPOLATIONS)),
                quick={"num_particles": 64, "num_mcmc_steps": 2})


def exact_speeds_cell(half_separation: float) -> Cell:
    """The exact speeds of the linear and gradient-flow curves from ``N(0, 1)`` to a 1-D two-mode mixture."""
    a = half_separation
    return Cell(f"exact_speeds/mixture_1d_separation{2 * a:g}", "exact_curve_speeds",
                {"name": "gaussian_mixture", "means": [[-a], [a]], "scales": 0.5, "weights": [0.25, 0.75]},
                {"base_scale": 1.0, "grid_margin": 6.0, "grid_points": 6001, "num_times": 49})


CELLS = (
    *(cell for t in TARGETS for cell in (*(curve_cell(i, t) for i in INTERPOLATIONS), smc_cell(t))),
    *(Cell(f"base_is/{t}", "base_importance_sampling", TARGETS[t][0], {"base_scale": 1.0}) for t in TARGETS),
    *(exact_speeds_cell(a) for a in HALF_SEPARATIONS),
)

PROTOCOL = Protocol(
    suite="curves",
    summary="Boltzmann curves (linear, learned, gradient-flow interpolations) on a 2-D mixture, the lattice double "
            "well and many-well; tempered SMC at equal target evaluations; importance sampling from the base",
    cells=CELLS,
    seeds=(0, 1, 2),
    headline="log_Z_abs_err",
    figures=("ess", "log_Z_abs_err_jarzynski", "log_Z_learned_abs_err", "mmd", "max_velocity", "target_evals",
             "train_and_sample_target_evals", "num_levels", "diverged_collocation_points", "nonfinite_samples",
             "train_seconds", "train_seconds_incl_compile", "peak_rms_speed_linear", "peak_rms_speed_gradient_flow"),
    evaluation={"num_samples": 2000},
    quick_evaluation={"num_samples": 128},
    goals=tuple(Goal(f"curves-{i}/lattice_double_well", "ess", 0.5, better="above",
                     source="issue 17: one interpolation reaches ESS >= 0.5 on the lattice double well")
                for i in INTERPOLATIONS),
    comparisons=(
        *(Comparison(f"curves-{i}/{t}", f"smc/{t}", "log_Z_abs_err") for t in TARGETS for i in INTERPOLATIONS),
        *(Comparison(f"curves-{i}/{t}", f"curves-linear/{t}", figure) for t in TARGETS
          for i in ("learned", "gradient_flow") for figure in ("log_Z_abs_err", "ess")),
    ),
    notes="""\
Boltzmann curves (``jaxsamp.learned.curves``; Chemseddine et al. 2025, Máté & Fleuret 2023) with each of the
``linear``, ``learned`` and ``gradient_flow`` interpolations, trained by ``jaxsamp.fit("curves", ...)`` at the
settings of the shipped configs (``configs/curves_{interp}_gmm2d.yaml``, ``configs/curves_lattice_double_well.yaml``,
``configs/curves_many_well.yaml``, the interpolation set per cell; 256 collocation points per update), so that
``jaxsamp run`` of a config trains as long as a benchmark cell. Targets: ``gmm2d``, the two-mode 2-D mixture of the
configs (random means, sd 0.5, weights 1:3: the linear curve must move mass between the modes); the 8-site
``lattice_double_well`` (transfer-integral log Z); ``many_well`` (d = 32, log Z = 164.6957).

Budgets in updates, so that the quality figures do not depend on the machine's load: the CPU caps of issue 17
(2 minutes per run on gmm2d, 8 on the others) divided by the seconds per update of the slowest interpolation of
the target, compilation left out, on the 2-core development machine: 14 000 (gmm2d, gradient flow 0.0082 s per
update, timed under load, so conservative), 17 894 and 9067 (lattice and many-well, timed alone on the machine of
the full run on 2026-12-02 at a9efe35: gradient flow 0.0268 s and 0.0529 s, linear 0.0113 / 0.0285, learned
0.0115 / 0.0301). The same counts are the configs' ``run.num_steps``.

Evaluation (``Curves.evaluate``): 2000 samples by the configs' RK4 ODE (64 steps); the headline ``log_Z_abs_err``
is the change-of-variables estimate's, beside the Jarzynski-type estimate's (``log Z_0 + int C + log mean exp(-int
R)``), ``log_Z_learned_abs_err`` (``log Z_0 + int C``, no sampling), the MMD to 2000 exact samples, the largest
``|v_t(x_t)|`` and ``diverged_collocation_points`` (collocation points of diverged trajectories left out of the
loss, summed over training: added after seed 0's first run, whose gradient-flow many-well run ended in non-finite
networks when a non-finite point made 20 batches in a row skip their update).

Tempered SMC at equal evaluations (``smc/<target>``): the geometric path from the same base ``N(0, I)``, 2000
particles, 5 MALA steps per level (step 0.1 / 0.05 / 0.02), resampling at ESS < 0.5, a linear schedule as long as
the mean training ``target_evals`` of the three interpolations of that target and seed allow, a level costing
7 evaluations per particle (the incremental weight, MALA's initialisation, 5 moves). The script this suite replaces
(``scripts/bench_curves.py``) differed twice: it counted a level as 6 evaluations per particle, and it matched the
curves' training and sampling evaluations (``train_and_sample_target_evals`` of the converted seeds; the suite's
``target_evals`` of a curve cell is its training's, the sampling's is ``sample_target_evals``). Its recorded SMC
runs (the converted seeds 0-2) therefore spent 7/6 of the curves' training-and-sampling evaluations (4 774 000
against 4 099 024 on gmm2d, 119 952 000 against a mean of 102 820 987 on the lattice, 61 068 000 against 52 354 085
on many-well), in SMC's favour; cells run by the suite spend at most the curves' mean training count.

Importance sampling from the base ``N(0, I)`` (``base_is/<target>``, what a curve with ``v = 0`` gives; added after
seed 0's first run, to tell a curve that collapsed from one that never moved): as many draws as the curves are scored
on, at key ``2000 + seed`` as the script drew them.

``exact_speeds/mixture_1d_separation<2a>``: the exact speeds of the linear and the gradient-flow curve from
``N(0, 1)`` to the 1-D mixture of ``N(-a, 0.5^2)`` and ``N(a, 0.5^2)`` with weights 1:3, by
``jaxsamp.learned.curves.ode.exact_speeds_1d`` on 6001 grid points over ``[-a - 6, a + 6]`` at 49 times in
[0.02, 0.98]: ``peak_rms_speed_<interpolation>``, the largest over t of the root-mean-square speed (no randomness:
every seed gives the same numbers). The linear curve's speed explodes with the separation (it "teleports" mass
between the modes), the gradient flow's stays bounded.

Goals (issue 17): the learned and the gradient-flow curves beat the linear one on every target in log Z error and
ESS (the comparisons ``curves-<interp>/<target>`` against ``curves-linear/<target>``), with a bounded velocity where
the linear one's explodes; one interpolation reaches ESS >= 0.5 on the lattice double well (the goals) with a log Z
error below SMC's (the comparisons against ``smc/<target>``).

Plots (``benchmarks/results/``): ``curves_velocity_<target>_seed<k>.png`` (mean and max ``|v_t|`` along t of the
interpolations run in one process, on 2000 further ODE samples), ``curves_gmm2d_seed<k>.png`` (their samples over
the contours, beside exact samples) and ``curves_exact_velocity.png``. The script's plots, made from the evaluation's
own samples, are the ``bench_curves_*.png`` beside them.

Random streams: the converted seeds trained through ``fit(key=seed)`` and were scored at ``fold_in(key(seed), 2)``
as the suite does, SMC at ``key(1000 + seed)`` as the suite does, so a rerun of a curve cell draws the same numbers
(its SMC baseline does not: fewer levels).
""",
)


@runner("base_importance_sampling")
def base_importance_sampling_cell(cell: Cell, seed: int, *, target_evals, evaluation: dict, budget_scale: int = 1,
                                  checkpoint=None) -> tuple[dict, dict]:
    """Importance sampling from ``N(0, base_scale^2 I)`` with the evaluation's number of draws, key ``2000 + seed``.

    The Boltzmann curve with ``v = 0``: its weights ``log p~(x) - log N(x; 0, s^2 I)``; figures
    (:func:`jaxsamp.diagnostics.weights.figures`) ``log_Z_hat``, ``ess``, ``elbo`` and, with the target's log Z,
    ``log_Z_abs_err``.
    """
    import jax

    from jaxsamp.core import WeightedSamples
    from jaxsamp.diagnostics.weights import figures

    target = build_target(cell.target)
    scale, n = cell.params["base_scale"], evaluation["num_samples"]
    (dim,) = target.event_shape
    x = scale * jax.random.normal(jax.random.key(2000 + seed), (n, dim))
    log_w = jax.vmap(target.log_prob)(x) + 0.5 * jax.numpy.sum((x / scale) ** 2, axis=1)
    log_z0 = 0.5 * dim * np.log(2 * np.pi * scale**2)
    found = figures(WeightedSamples(x, log_w, log_z0), log_Z_exact=target.log_Z)
    return {**found, "target_evals": float(n)}, {}


@runner("exact_curve_speeds")
def exact_curve_speeds_cell(cell: Cell, seed: int, *, target_evals, evaluation: dict, budget_scale: int = 1,
                            checkpoint=None) -> tuple[dict, dict]:
    """The exact root-mean-square speeds of the linear and gradient-flow curves to a 1-D mixture (the cell's target).

    :func:`jaxsamp.learned.curves.ode.exact_speeds_1d` on ``grid_points`` points over the modes' range widened by
    ``grid_margin``, at ``num_times`` times in [0.02, 0.98]; figures ``peak_rms_speed_<interpolation>`` (their
    largest value over t), artifacts the speeds along t. Deterministic: the seed is not used.
    """
    from jaxsamp.learned.curves.ode import exact_speeds_1d, mixture_curves_1d

    p, spec = cell.params, cell.target
    means = np.ravel(spec["means"])
    scales = np.broadcast_to(np.asarray(spec["scales"], np.float64), means.shape)
    curves = mixture_curves_1d(means, scales, spec["weights"], base_scale=p["base_scale"])
    grid = np.linspace(means.min() - p["grid_margin"], means.max() + p["grid_margin"], p["grid_points"])
    times = np.linspace(0.02, 0.98, p["num_times"])
    rms = {name: exact_speeds_1d(curves[name], grid, times).rms for name in ("linear", "gradient_flow")}
    return ({f"peak_rms_speed_{name}": float(np.max(speed)) for name, speed in rms.items()},
            {"times": times, "rms": rms})


#: what the plots of one process have collected: ``{plot file: {label: data}}``
_PLOTTED: dict = {}


def after_seed(cell: str, seed: int, figures: dict, artifacts: dict, *, results_dir, quick: bool) -> None:
    """Draw the speeds along t of the curves of one target and seed (and gmm2d's samples), or the exact 1-D speeds.

    A plot holds every cell of its group run so far in this process (the three interpolations of a target and seed,
    the separations of the exact speeds), redrawn as each lands.
    """
    import jax

    from jaxsamp.experiments.curves_experiment import velocity_plot

    name, _, scale = cell.partition(" ")
    method, target = name.split("/")
    suffix = (f"_{scale}" if scale else "") + ("_quick" if quick else "")
    if method == "exact_speeds":
        path = results_dir / f"curves_exact_velocity{suffix}.png"
        _PLOTTED.setdefault(path, {})[target.rsplit("separation", 1)[1]] = (artifacts["times"], artifacts["rms"])
        _exact_speeds_plot(path, _PLOTTED[path])
        return
    if "fitted" not in artifacts or not method.startswith("curves-"):
        return
    from jaxsamp.learned.curves.training import Curves

    fitted, interpolation = artifacts["fitted"], method.split("-", 1)[1]
    spec = PROTOCOL.cell(name).sized(quick)
    curves = Curves(build_target(spec.target), fitted.settings, spec.params["batch_size"])
    out = curves.transport(jax.random.fold_in(jax.random.key(seed), 3), fitted.state, 128 if quick else 2000)
    path = results_dir / f"curves_velocity_{target}_seed{seed}{suffix}.png"
    _PLOTTED.setdefault(path, {})[interpolation] = tuple(np.asarray(a) for a in (out.times, out.speed_mean,
                                                                                  out.speed_max))
    velocity_plot(path, _PLOTTED[path], f"{target}, seed {seed}: |v_t(x_t)| along the ODE")
    if target == "gmm2d":
        path = results_dir / f"curves_gmm2d_seed{seed}{suffix}.png"
        _PLOTTED.setdefault(path, {})[interpolation] = np.asarray(out.samples.x)
        _samples_plot(path, curves.target, _PLOTTED[path], seed)


def _exact_speeds_plot(path, speeds: dict) -> None:
    """The exact rms speeds along t, per separation of the modes: linear (solid) and gradient flow (dashed)."""
    from jaxsamp.experiments.plots import pyplot, save_figure

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for i, (separation, (times, rms)) in enumerate(sorted(speeds.items(), key=lambda item: float(item[0]))):
        for name, style in (("linear", "-"), ("gradient_flow", "--")):
            ax.plot(times, rms[name], ls=style, color=f"C{i}", label=f"{name}, modes {separation} apart")
    ax.set(yscale="log", xlabel="t", ylabel="exact rms speed sqrt(E v_t^2)",
           title="1-D two-mode mixture (weights 1:3, sd 0.5) from N(0, 1)")
    ax.legend(fontsize=7)
    save_figure(fig, path)


def _samples_plot(path, target, samples: dict, seed: int) -> None:
    """The samples of each curve over the target's density contours, beside as many exact samples."""
    import jax

    from jaxsamp.experiments.plots import pyplot, save_figure

    plt = pyplot()
    n = len(next(iter(samples.values())))
    panels = {**samples, "exact": np.asarray(target.sample(jax.random.key(seed), n))}
    both = np.concatenate(list(panels.values()))
    both = both[np.all(np.isfinite(both), axis=1)]
    lo, hi = np.percentile(both, [0.5, 99.5], axis=0)
    X, Y = np.meshgrid(np.linspace(lo[0] - 1, hi[0] + 1, 200), np.linspace(lo[1] - 1, hi[1] + 1, 200))
    Z = np.asarray(jax.vmap(target.log_prob)(np.stack([X.ravel(), Y.ravel()], -1).astype(np.float32))).reshape(X.shape)
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 3.4), squeeze=False)
    for ax, (label, pts) in zip(axes[0], panels.items()):
        ax.contourf(X, Y, np.exp(Z - Z.max()), levels=20, cmap="Blues")
        ax.scatter(pts[:, 0], pts[:, 1], s=2, c="C3", alpha=0.4)
        ax.set(xlim=(X.min(), X.max()), ylim=(Y.min(), Y.max()), aspect="equal")
        ax.set_title(label, fontsize=9)
    save_figure(fig, path, dpi=100)


LEGACY_FILE = "bench_curves.json"


def legacy_key(name: str):
    """``(cell, figure, budget scale)`` of a per-seed key of ``bench_curves.json`` (its ``_seed<k>`` cut off).

    A curve's old ``target_evals`` counted its training and its evaluation samples: it becomes
    ``train_and_sample_target_evals`` (the suite's ``target_evals`` of a curve is its training's).
    """
    for target in TARGETS:
        for interpolation in INTERPOLATIONS:
            prefix = f"{interpolation}_{target}_"
            if name.startswith(prefix):
                figure = name[len(prefix):]
                figure = "train_and_sample_target_evals" if figure == "target_evals" else figure
                return f"curves-{interpolation}/{target}", figure, 1
        for method in ("smc", "base_is"):
            if name.startswith(f"{method}_{target}_"):
                return f"{method}/{target}", name[len(f"{method}_{target}_"):], 1
    return None
