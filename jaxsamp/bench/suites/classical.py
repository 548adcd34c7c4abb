"""Suite ``classical``: the kernels blackjax lacks and annealing, against exact answers: randomized midpoint against
ULA, speculative Langevin's sequential calls, annealed Langevin (ALMC) against LMC, adaptive SMC on Ising and
many-well, and Glauber throughput."""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.bench import cells
from jaxsamp.bench.protocol import Cell, Comparison, Goal, Protocol
from jaxsamp.core.errors import ConfigError

STEP_SIZES = (0.1, 0.25, 0.5)
MIDPOINT_METHODS = ("ula", "rmm", "rmm_underdamped")
WINDOWS = (2, 4, 8, 12, 16, 24)
SEPARATIONS = (2, 4, 8)
SEED_STRIDE = 1000  # seed s draws at the script's key + 1000 s: seed 0 is the script's run


def _key(params, seed: int, offset: int = 0):
    return jax.random.key(params["key"] + offset + SEED_STRIDE * seed)


def _midpoint_cells():
    for j, h in enumerate(STEP_SIZES):
        for i, method in enumerate(MIDPOINT_METHODS):
            yield Cell(f"{method}-h{h}/gaussian_var4_d16", "stationary_variance", {"name": "f = |x|^2 / 8", "dim": 16},
                       {"method": method, "step_size": h, "num_chains": 1024, "num_steps": int(6000 * 0.5 / h),
                        "key": 100 * j + i}, quick={"num_chains": 32, "num_steps": int(500 * 0.5 / h)})


CELLS = (
    *_midpoint_cells(),
    *(Cell(f"speculative_ula-L{w}/gaussian_d32", "speculative_calls", {"name": "N(0, diag(linspace(0.5, 1, 32))^2)"},
           {"window": w, "step_size": 0.05, "num_chains": 512, "ula_steps": 256, "key": w},
           quick={"num_chains": 16, "ula_steps": 64}) for w in WINDOWS),
    *(Cell(f"{m}/two_modes_d8", "annealed_w2", {"name": "2-mode mixture, weights 0.3/0.7, d = 8"},
           {"method": m, "separations": list(SEPARATIONS), "num_chains": 2000, "gradients": 4000, "total_time": 20.0,
            "key": 11}, quick={"num_chains": 128, "gradients": 200}) for m in ("almc", "lmc")),
    *(Cell(f"smc-heat_bath/ising_L{L}", "adaptive_smc", {"name": "ising", "L": L, "beta": 0.4407},
           {"num_particles": 4096, "target_cess": 0.95, "num_mcmc_steps": 10, "max_levels": 2000, "key": L},
           quick={"num_particles": 128, "target_cess": 0.7, "num_mcmc_steps": 2, "max_levels": 300}) for L in (8, 16)),
    Cell("smc-mala/many_well_d32", "adaptive_smc", {"name": "many_well", "dim": 32},
         {"num_particles": 4096, "target_cess": 0.95, "num_mcmc_steps": 10, "max_levels": 2000, "key": 32,
          "base_scale": 2.0, "step_size": 0.02},
         quick={"num_particles": 128, "target_cess": 0.7, "num_mcmc_steps": 2, "max_levels": 300}),
    *(Cell(f"glauber-{scan}/ising_L64", "glauber_throughput", {"name": "ising", "L": 64, "beta": 0.4407},
           {"scan": scan, "num_chains": 256, "sweeps": 50, "key": 0}, quick={"num_chains": 8, "sweeps": 10})
      for scan in ("checkerboard", "random_scan")),
)

PROTOCOL = Protocol(
    suite="classical",
    summary="randomized midpoint vs ULA, speculative Langevin, ALMC vs LMC, adaptive SMC on Ising and many-well "
            "against exact log Z, Glauber throughput",
    cells=CELLS,
    seeds=(0, 1, 2),
    headline="log_Z_abs_err",
    figures=("stationary_var", "sequential_calls_ratio", *(f"mode_axis_w2_sep{s}" for s in SEPARATIONS), "log_Z_hat",
             "target_evals", "num_levels", "flips_per_s"),
    evaluation={},
    quick_evaluation={},
    goals=(Goal("speculative_ula-L8/gaussian_d32", "sequential_calls_ratio", 1.8, "above",
                source="bench_classical's goal: speculative ULA needs at least 1.8x fewer sequential target calls "
                       "than ULA at h = 0.05 on the 32-d Gaussian (research/methods.md)"),),
    comparisons=(
        *(Comparison(f"rmm-h{h}/gaussian_var4_d16", f"ula-h{h}/gaussian_var4_d16", "stationary_var") for h in STEP_SIZES),
        *(Comparison("almc/two_modes_d8", "lmc/two_modes_d8", f"mode_axis_w2_sep{s}") for s in SEPARATIONS),
    ),
    notes="""\
Accuracy and sequential cost of the kernels blackjax lacks, against exact answers; every cell one run per seed.

Randomized midpoint (``{ula,rmm,rmm_underdamped}-h{h}/gaussian_var4_d16``): the stationary variance
(``stationary_var``) of f = |x|^2 / 8 (exact Var 4) by overdamped and underdamped (gamma = 2) RMM and ULA at
h = 0.1, 0.25, 0.5: 1024 chains x 16 coordinates started at N(0, 4 I), 6000 steps at h = 0.5 (3000 h / 0.5 ...
scaled to the same time), every fifth step kept, time-averaged after a fifth burn-in. ULA's exact value is
4 / (1 - h / 8) (4.267 at h = 0.5); RMM's follows from its covariance recursion (4.0015 overdamped, 4.001
underdamped at h = 0.5); research/methods.md section 3 gives 4.27, 4.03 and 3.94.

Speculative ULA (``speculative_ula-L{w}/gaussian_d32``): frozen-gradient drafts of ``w`` steps verified by a
reflection coupling, on a 32-d Gaussian with scales linspace(0.5, 1, 32) at h = 0.05, a tenth of ULA's stability
limit 2 / lambda_max; 512 chains x 256 ULA steps; ``sequential_calls_ratio`` = ULA's sequential target calls / the
speculative chain's. The goal (at least 1.8) is on the window 8, the best of the script's run.

ALMC against LMC (``almc/two_modes_d8``, ``lmc/two_modes_d8``) at equal gradient budgets (4000 gradients, 2000
chains): a 2-component mixture in d = 8 (means +-sep/2 along the diagonal, weights 0.3/0.7, unit variances) at
separations 2, 4, 8, run as one product target. ALMC follows the Gaussian-tilt path (eta = 1, lambda = lambda0
(1 - theta)^4, lambda0 = 4 sep_max^2, which keeps the mode weights exact along the path) from N(0, I / lambda0);
LMC runs with the same step (total time 20) from N(0, I). ``mode_axis_w2_sep{s}``: the exact 1-D W2 along the
mode axis (the marginal that carries the multimodality) to 1e5 exact samples; a full 8-d empirical W2 would be
dominated by its finite-sample floor (about 2 at 256 samples).

Adaptive SMC (``smc-heat_bath/ising_L{8,16}``: the LEAPS path from the uniform distribution to the critical
Ising torus, beta = 0.4407, checkerboard heat-bath moves, against Kaufman's exact log Z; ``smc-mala/many_well_d32``:
the geometric path from N(0, 2^2 I) to many-well d = 32, MALA moves of step 0.02, against the quadrature log Z):
4096 particles, conditional-ESS target 0.95, 10 moves per level, at most 2000 levels; ``target_evals`` counts
log-density or flip_log_ratios calls summed over particles; the temperature schedule is kept in the record's
``curves``.

Glauber (``glauber-{checkerboard,random_scan}/ising_L64``): heat-bath single-site update attempts per second
(``flips_per_s``) on 256 chains of a 64 x 64 critical Ising torus, 50 sweeps, jitted, timed after a warm-up call;
checkerboard sweeps update half the lattice per flip_log_ratios call, random scan one site per call. A timing: run
these cells on an idle machine (each seed's record names its machine).

Plots (``after_seed``, redrawn from the results file into the results folder): ``rmm_variance.png``,
``speculative_calls.png``, ``almc_vs_lmc_w2.png``, ``smc_schedules.png`` (``_quick`` at the quick size).

What the suite changes against ``scripts/bench_classical.py``: seed 0 draws at the script's keys (the script ran
each figure once at fixed keys), seed s at those keys plus 1000 s; the speculative best window is a cell (the
goal's window 8) rather than a maximum over windows; the quick size runs each cell at CI size. Legacy seeds: the
script's run (2026-12-01, two commands, machine quiet; one machine record) is seed 0 of each cell; it recorded the
midpoint variances at h = 0.5 only (the other step sizes were in its plot), so the h = 0.1 and 0.25 cells and
seeds 1 and 2 of every cell need a run.
""",
)


# --------------------------------------------------------------------------
# runners
# --------------------------------------------------------------------------


@cells.runner("stationary_variance")
def stationary_variance_cell(cell: Cell, seed: int, *, target_evals, evaluation: dict, budget_scale: int = 1,
                             checkpoint=None) -> tuple[dict, dict]:
    """The stationary variance of ``f = |x|^2 / 8`` under ULA or (overdamped / underdamped) randomized midpoint:
    ``num_chains`` chains in ``dim`` coordinates from N(0, 4 I), every fifth step kept, the mean of the kept
    second moments after a fifth burn-in."""
    from jaxsamp.core import ensemble, run, thin
    from jaxsamp.mcmc.randomized_midpoint import (
        overdamped_randomized_midpoint,
        underdamped_randomized_midpoint,
    )
    from jaxsamp.mcmc.ula import ula

    p, every = cell.params, 5
    kernels = {"ula": ula, "rmm": overdamped_randomized_midpoint, "rmm_underdamped": underdamped_randomized_midpoint}
    if p["method"] not in kernels:
        raise ConfigError(f"cell {cell.name!r}: method must be one of {sorted(kernels)}, got {p['method']!r}")
    chains = ensemble(thin(kernels[p["method"]](lambda x: -jnp.sum(x**2) / 8.0, p["step_size"]), every))
    key = _key(p, seed)
    x0 = 2.0 * jax.random.normal(jax.random.fold_in(key, 0), (p["num_chains"], cell.target["dim"]))
    _, trace = run(chains.step, chains.init(x0, jax.random.fold_in(key, 1)), jax.random.fold_in(key, 2),
                   p["num_steps"] * budget_scale // every, trace=lambda state, info: jnp.mean(state.position**2),
                   progress=False)
    trace = np.asarray(trace)
    return {"stationary_var": float(np.mean(trace[len(trace) // 5:]))}, {}


@cells.runner("speculative_calls")
def speculative_calls_cell(cell: Cell, seed: int, *, target_evals, evaluation: dict, budget_scale: int = 1,
                           checkpoint=None) -> tuple[dict, dict]:
    """ULA's sequential target calls over speculative ULA's (drafts of ``window`` steps), mean over 4 rounds of
    ``num_chains`` chains of ``ula_steps`` steps, on the 32-d Gaussian with scales linspace(0.5, 1, 32)."""
    from jaxsamp.core import ensemble, run
    from jaxsamp.mcmc.speculative_langevin import speculative_langevin

    p, dim = cell.params, 32
    scales = jnp.linspace(0.5, 1.0, dim)
    kernel = ensemble(speculative_langevin(lambda x: -0.5 * jnp.sum((x / scales) ** 2), p["step_size"],
                                           window=p["window"], num_steps=p["ula_steps"]))
    x0 = scales * jax.random.normal(jax.random.key(7 + SEED_STRIDE * seed), (p["num_chains"], dim))
    _, infos = run(kernel.step, kernel.init(x0), _key(p, seed), 4, trace=lambda s, i: i, progress=False)
    return {"sequential_calls_ratio": p["ula_steps"] / float(np.mean(np.asarray(infos.num_sequential_calls)))}, {}


@cells.runner("annealed_w2")
def annealed_w2_cell(cell: Cell, seed: int, *, target_evals, evaluation: dict, budget_scale: int = 1,
                     checkpoint=None) -> tuple[dict, dict]:
    """ALMC (power schedule, ``lambda0 = 4 sep_max^2``) or LMC at ``gradients`` steps on the product of the
    2-mode mixtures at ``separations``; ``mode_axis_w2_sep{s}``: 1-D W2 along the mode axis to 1e5 exact draws."""
    from jaxsamp.core import ensemble, run
    from jaxsamp.diagnostics.discrepancies import wasserstein2_1d
    from jaxsamp.mcmc.annealed_langevin import annealed_langevin, power_schedule
    from jaxsamp.mcmc.ula import ula
    from jaxsamp.targets import GaussianMixture

    p, dim = cell.params, 8
    seps, axis = p["separations"], np.ones(dim) / np.sqrt(dim)
    mixtures = [GaussianMixture(np.stack([-0.5 * s * axis, 0.5 * s * axis]), 1.0, np.array([0.3, 0.7])) for s in seps]

    def log_pi(xs):  # xs: (separations, d)
        return sum(m.log_prob(x) for m, x in zip(mixtures, xs))

    budget, lambda0 = p["gradients"] * budget_scale, 4.0 * max(seps) ** 2
    z = jax.random.normal(_key(p, seed), (p["num_chains"], len(seps), dim))
    if p["method"] == "almc":
        kernel = annealed_langevin(log_pi, power_schedule(budget, p["total_time"], lambda0, eta_power=0.0,
                                                          lambda_power=4.0))
        x0 = z / np.sqrt(lambda0)
    else:
        kernel, x0 = ula(log_pi, p["total_time"] / budget), z
    chains = ensemble(kernel)
    state, _ = run(chains.step, chains.init(x0), _key(p, seed, 1), budget, progress=False)
    along_axis = np.asarray(state.position) @ axis
    return {f"mode_axis_w2_sep{s}": float(wasserstein2_1d(along_axis[:, i],
                                                          np.asarray(m.sample(_key(p, seed, 2 + i), 100_000)) @ axis))
            for i, (s, m) in enumerate(zip(seps, mixtures))}, {}


@cells.runner("adaptive_smc")
def adaptive_smc_cell(cell: Cell, seed: int, *, target_evals, evaluation: dict, budget_scale: int = 1,
                      checkpoint=None) -> tuple[dict, dict]:
    """SMC with adaptive tempering (conditional-ESS target) against the exact log Z: on an Ising torus along the
    LEAPS path with checkerboard heat-bath moves, otherwise along the geometric path from N(0, base_scale^2 I)
    with MALA moves; the temperatures taken are the record's ``curves``."""
    import blackjax

    from jaxsamp.mcmc.discrete import checkerboard
    from jaxsamp.smc import anneal
    from jaxsamp.targets.annealing import geometric_path
    from jaxsamp.targets.lattice import Ising, LatticePath

    p = cell.params
    if cell.target["name"] == "ising":
        target = Ising(cell.target["L"], cell.target["beta"])
        path, log_z = LatticePath(target), target.exact_log_Z()
        kernel = lambda t: checkerboard(lambda x: path.flip_log_ratios(x, t))
    else:
        target = cells.build_target(cell.target)
        path, log_z = geometric_path(target, base_scale=p["base_scale"]), float(target.log_Z)
        kernel = lambda t: blackjax.mala(lambda x: path.log_prob(x, t), p["step_size"])
    res = anneal(_key(p, seed), path, kernel, p["num_particles"] * budget_scale, target_cess=p["target_cess"],
                 max_levels=p["max_levels"], num_mcmc_steps=p["num_mcmc_steps"])
    log_z_hat = float(res.samples.log_Z)
    figures = {"log_Z_hat": log_z_hat, "log_Z_abs_err": abs(log_z_hat - log_z), "target_evals": float(res.num_target_evals),
               "num_levels": float(res.num_levels)}
    return figures, {"curves": {"temperature": np.asarray(res.trace.t)[: res.num_levels].tolist()}}


@cells.runner("glauber_throughput")
def glauber_throughput_cell(cell: Cell, seed: int, *, target_evals, evaluation: dict, budget_scale: int = 1,
                            checkpoint=None) -> tuple[dict, dict]:
    """Heat-bath spin-flip attempts per second on ``num_chains`` chains of the Ising torus: ``sweeps`` checkerboard
    sweeps (half the lattice per call) or random-scan sweeps of L updates, jitted, timed after a warm-up call."""
    from jaxsamp.core import ensemble, repeat
    from jaxsamp.mcmc.discrete import checkerboard, heat_bath
    from jaxsamp.targets.lattice import Ising

    p, L = cell.params, cell.target["L"]
    ising = Ising(L, cell.target["beta"])
    if p["scan"] == "checkerboard":
        kernel, attempts = checkerboard(ising.flip_log_ratios), p["sweeps"] * L * L
    else:
        kernel, attempts = heat_bath(ising.flip_log_ratios, num_updates=L), p["sweeps"] * L
    timed = repeat(ensemble(kernel), p["sweeps"])
    x0 = jax.random.rademacher(_key(p, seed), (p["num_chains"], L, L), dtype=jnp.float32)
    step, state = jax.jit(timed.step), timed.init(x0)
    jax.block_until_ready(step(_key(p, seed, 1), state))  # warm-up: compile
    start = time.perf_counter()
    jax.block_until_ready(step(_key(p, seed, 2), state))
    return {"flips_per_s": p["num_chains"] * attempts / (time.perf_counter() - start)}, {}


# --------------------------------------------------------------------------
# plots
# --------------------------------------------------------------------------

#: cell-name prefix -> plot file
PLOTS = {"ula-": "rmm_variance", "rmm": "rmm_variance", "speculative_ula-": "speculative_calls",
         "almc/": "almc_vs_lmc_w2", "lmc/": "almc_vs_lmc_w2", "smc-": "smc_schedules"}


def after_seed(cell: str, seed: int, figures: dict, artifacts: dict, *, results_dir, quick: bool) -> None:
    """Redraw the plot of the cell's group from the results file, at this seed."""
    from jaxsamp.bench import store
    from jaxsamp.experiments.plots import pyplot, save_figure

    name = next((plot for prefix, plot in PLOTS.items() if cell.startswith(prefix)), None)
    if name is None:
        return
    records = store.read(store.results_path(PROTOCOL.suite, quick, results_dir))["records"]

    def seed_record(c):
        return records.get(c, {}).get(str(seed))

    fig, ax = pyplot().subplots(figsize=(5, 3.5))
    if name == "rmm_variance":
        for method in MIDPOINT_METHODS:
            points = [(h, r["figures"]["stationary_var"]) for h in STEP_SIZES
                      if (r := seed_record(f"{method}-h{h}/gaussian_var4_d16"))]
            if points:
                ax.plot(*zip(*points), "o-", label=method)
        ax.axhline(4.0, color="k", lw=0.8, ls="--", label="exact")
        ax.set(xlabel="step size h", ylabel="Var(x)", title="f = x^2/8: stationary variance")
    elif name == "speculative_calls":
        points = [(w, r["figures"]["sequential_calls_ratio"]) for w in WINDOWS
                  if (r := seed_record(f"speculative_ula-L{w}/gaussian_d32"))]
        if points:
            ax.plot(*zip(*points), "o-")
        ax.axhline(1.8, color="k", lw=0.8, ls="--", label="goal 1.8")
        ax.set(xlabel="draft window L", ylabel="ULA calls / speculative calls", title="speculative ULA, d=32, h=0.05")
    elif name == "almc_vs_lmc_w2":
        for method in ("almc", "lmc"):
            if (r := seed_record(f"{method}/two_modes_d8")):
                ax.plot(SEPARATIONS, [r["figures"][f"mode_axis_w2_sep{s}"] for s in SEPARATIONS], "o-",
                        label=method.upper())
        ax.set(xlabel="mode separation", ylabel="W2 along the mode axis", yscale="log", title="2-mode mixture, d=8")
    else:
        for c in (c.name for c in PROTOCOL.cells if c.name.startswith("smc-")):
            if (r := seed_record(c)) and "curves" in r:
                ts = r["curves"]["temperature"]
                ax.plot(np.arange(1, len(ts) + 1), ts, ".-", label=f"{c} ({len(ts)} levels)")
        ax.set(xlabel="level", ylabel="temperature t", title="SMC adaptive tempering")
    ax.legend()
    save_figure(fig, results_dir / f"{name}{'_quick' if quick else ''}.png", dpi=120)


# --------------------------------------------------------------------------
# the old results file
# --------------------------------------------------------------------------

LEGACY_FILE = "bench_classical.json"
#: the script ran each figure once, at the keys of this suite's seed 0


def legacy_single(name: str):
    """``(cell, figure, 1, 0)`` of a key the script wrote without ``_seed<k>`` (a figure it ran once, with the
    seed-0 keys); None for the rest, the old file's aggregates (left out: recomputed from the seeds)."""
    placed = legacy_key(name)
    return None if placed is None else (*placed, 0)
_LEGACY_MIDPOINT = {"ula_var_h05": "ula", "rmm_var_h05": "rmm", "rmm_underdamped_var_h05": "rmm_underdamped"}
_LEGACY_SMC = {"ising_L8": "smc-heat_bath/ising_L8", "ising_L16": "smc-heat_bath/ising_L16",
               "many_well32": "smc-mala/many_well_d32"}


def legacy_key(name: str):
    """``(cell, figure, 1)`` of a key of ``bench_classical.json``; None for ``speculative_calls_ratio`` (the maximum
    over the windows, an aggregate of the window cells)."""
    if name in _LEGACY_MIDPOINT:
        return f"{_LEGACY_MIDPOINT[name]}-h0.5/gaussian_var4_d16", "stationary_var", 1
    if name.startswith("speculative_calls_ratio_L"):
        return f"speculative_ula-L{name.rsplit('L', 1)[1]}/gaussian_d32", "sequential_calls_ratio", 1
    for method in ("almc", "lmc"):
        if name.startswith(f"{method}_w2_sep"):
            return f"{method}/two_modes_d8", f"mode_axis_w2_sep{name.rsplit('sep', 1)[1]}", 1
    for old, cell in _LEGACY_SMC.items():
        if name == f"smc_logz_abs_err_{old}":
            return cell, "log_Z_abs_err", 1
        if name == f"smc_logz_abs_err_{old}_target_evals":
            return cell, "target_evals", 1
    if name in ("glauber_flips_per_s_L64", "glauber_random_scan_flips_per_s_L64"):
        scan = "random_scan" if "random_scan" in name else "checkerboard"
        return f"glauber-{scan}/ising_L64", "flips_per_s", 1
    return None
