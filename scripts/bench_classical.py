"""Classical samplers: accuracy and sequential cost of the kernels blackjax lacks.

Figure groups (one function ``group(quick, plots) -> dict`` each, listed in
``FIGURE_GROUPS``; ``main`` merges their dicts):

* :func:`midpoint_figures` -- ``rmm_var_h05``, ``ula_var_h05`` (overdamped RMM and
  ULA at h = 0.5) and ``rmm_underdamped_var_h05`` on f = |x|^2 / 8 (Var 4),
  time-averaged over many chains started at the target; plot
  ``benchmarks/rmm_variance.png`` (Var against h).
* :func:`speculative_figures` -- ``speculative_calls_ratio``: sequential target
  calls of plain ULA over those of speculative ULA (frozen-gradient drafts,
  best window) on a 32-d Gaussian at h = 0.05, one tenth of ULA's stability
  limit 2 / lambda_max; ``speculative_calls_ratio_L<L>`` per window;
  plot ``benchmarks/speculative_calls.png``.
* :func:`annealed_figures` -- ``almc_w2_sep{2,4,8}`` and ``lmc_w2_sep{2,4,8}``:
  W2 to the truth for a 2-component mixture in d = 8 (means +-sep/2 along the
  diagonal, weights 0.3/0.7, unit variances) after the same number of gradient
  evaluations. ALMC runs on the Gaussian-tilt path (eta = 1, lambda = lambda0
  (1 - theta)^4, lambda0 = 4 sep_max^2, which keeps the mode weights exact along
  the path) from its base N(0, I / lambda0); LMC runs with the same step from
  N(0, I). The W2 is the exact 1-D distance along the mode axis (the marginal
  that carries the multimodality; the other 7 coordinates are N(0, I) and
  unimodal under the target) to 1e5 exact samples: a full 8-d empirical W2
  would be dominated by its finite-sample floor (~2 at 256 samples). Plot
  ``benchmarks/almc_vs_lmc_w2.png``. The three separations run as one product
  target, so one compiled run covers them all.
* :func:`smc_and_discrete_figures` -- ``smc_logz_abs_err_ising_L{8,16}`` (against
  Kaufman), ``smc_logz_abs_err_many_well32`` (against quadrature), each with its
  ``..._target_evals``, and ``glauber_flips_per_s_L64`` (heat-bath spin-flip attempts per
  second, checkerboard sweeps; ``glauber_random_scan_flips_per_s_L64`` with random scan);
  plot ``benchmarks/smc_schedules.png``.

Timing is involved only in the ``*_flips_per_s_*`` figures; the others are accuracies or call counts.
``--quick`` runs every group at CI size (one step size, one draft window, SMC on the 8x8 Ising model only).
Usage: python scripts/bench_classical.py [--quick] [--groups NAME ...]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import benchmark_io
from jaxsamp.core import ensemble, run, thin
from jaxsamp.diagnostics.discrepancies import wasserstein2_1d
from jaxsamp.experiments.plots import pyplot, save_figure
from jaxsamp.mcmc.annealed_langevin import annealed_langevin, power_schedule
from jaxsamp.mcmc.randomized_midpoint import (
    overdamped_randomized_midpoint,
    underdamped_randomized_midpoint,
)
from jaxsamp.mcmc.speculative_langevin import speculative_langevin
from jaxsamp.mcmc.ula import ula
from jaxsamp.targets import GaussianMixture

PLOTS = Path(__file__).resolve().parent.parent / "benchmarks"  # where a full run saves its plots


def _second_moment(state, info):
    return jnp.mean(state.position**2)


def _stationary_var(kernel, key, num_chains: int, dim: int, num_steps: int, every: int = 5) -> float:
    """Var of f = |x|^2 / 8 estimated by ``num_chains`` chains in ``dim`` coordinates started at N(0, 4 I)."""
    chains = ensemble(thin(kernel, every))
    x0 = 2.0 * jax.random.normal(jax.random.fold_in(key, 0), (num_chains, dim))
    _, trace = run(chains.step, chains.init(x0, jax.random.fold_in(key, 1)), jax.random.fold_in(key, 2),
                   num_steps // every, trace=_second_moment, progress=False)
    return float(np.mean(np.asarray(trace)[len(trace) // 5 :]))


def midpoint_figures(quick: bool, plots: Path) -> dict:
    """Overdamped / underdamped RMM and ULA variances on f = |x|^2 / 8 (exact Var 4)."""
    def log_pi(x):
        return -jnp.sum(x**2) / 8.0

    chains, dim, steps = (32, 16, 500) if quick else (1024, 16, 6000)
    step_sizes = [0.5] if quick else [0.1, 0.25, 0.5]
    builders = {
        "ula": lambda h: ula(log_pi, h),
        "rmm": lambda h: overdamped_randomized_midpoint(log_pi, h),
        "rmm_underdamped": lambda h: underdamped_randomized_midpoint(log_pi, h),
    }
    curves = {name: [] for name in builders}
    for j, h in enumerate(step_sizes):
        for i, (name, build) in enumerate(builders.items()):
            curves[name].append(_stationary_var(build(h), jax.random.key(100 * j + i), chains, dim, int(steps * 0.5 / h)))
    fig, ax = pyplot().subplots(figsize=(5, 3.5))
    for name, values in curves.items():
        ax.plot(step_sizes, values, "o-", label=name)
    ax.axhline(4.0, color="k", lw=0.8, ls="--", label="exact")
    ax.set(xlabel="step size h", ylabel="Var(x)", title="f = x^2/8: stationary variance")
    ax.legend()
    save_figure(fig, plots / "rmm_variance.png", dpi=120)
    last = step_sizes.index(0.5)
    return {
        "rmm_var_h05": curves["rmm"][last],
        "ula_var_h05": curves["ula"][last],
        "rmm_underdamped_var_h05": curves["rmm_underdamped"][last],
    }


def speculative_figures(quick: bool, plots: Path) -> dict:
    """Sequential target calls: plain ULA over speculative ULA on a 32-d Gaussian."""
    dim, h = 32, 0.05
    scales = jnp.linspace(0.5, 1.0, dim)  # lambda_max = 4: ULA is stable for h < 0.5

    def log_pi(x):
        return -0.5 * jnp.sum((x / scales) ** 2)

    chains, ula_steps = (16, 64) if quick else (512, 256)
    windows = [8] if quick else [2, 4, 8, 12, 16, 24]
    x0 = scales * jax.random.normal(jax.random.key(7), (chains, dim))
    ratios = {}
    for window in windows:
        kernel = ensemble(speculative_langevin(log_pi, h, window=window, num_steps=ula_steps))
        _, infos = run(kernel.step, kernel.init(x0), jax.random.key(window), 4, trace=lambda s, i: i, progress=False)
        ratios[window] = ula_steps / float(np.mean(np.asarray(infos.num_sequential_calls)))
    fig, ax = pyplot().subplots(figsize=(5, 3.5))
    ax.plot(list(ratios), list(ratios.values()), "o-")
    ax.axhline(1.8, color="k", lw=0.8, ls="--", label="goal 1.8")
    ax.set(xlabel="draft window L", ylabel="ULA calls / speculative calls", title=f"speculative ULA, d={dim}, h={h}")
    ax.legend()
    save_figure(fig, plots / "speculative_calls.png", dpi=120)
    out = {"speculative_calls_ratio": max(ratios.values())}
    out.update({f"speculative_calls_ratio_L{w}": r for w, r in ratios.items()})
    return out


def annealed_figures(quick: bool, plots: Path) -> dict:
    """W2 of ALMC and LMC to a 2-mode mixture in d = 8 at equal gradient budgets."""
    dim, seps, weights = 8, (2.0, 4.0, 8.0), np.array([0.3, 0.7])
    axis = np.ones(dim) / np.sqrt(dim)
    mixtures = [GaussianMixture(np.stack([-0.5 * s * axis, 0.5 * s * axis]), 1.0, weights) for s in seps]

    def log_pi(xs):  # the product of the three mixtures: xs has shape (3, d)
        return sum(m.log_prob(x) for m, x in zip(mixtures, xs))

    chains, budget = (128, 200) if quick else (2000, 4000)
    total_time, lambda0 = 20.0, 4.0 * max(seps) ** 2
    schedule = power_schedule(budget, total_time, lambda0, eta_power=0.0, lambda_power=4.0)
    z = jax.random.normal(jax.random.key(11), (chains, len(seps), dim))
    runs = {
        "almc": (annealed_langevin(log_pi, schedule), z / np.sqrt(lambda0)),
        "lmc": (ula(log_pi, total_time / budget), z),
    }
    out = {}
    for name, (kernel, x0) in runs.items():
        chains_kernel = ensemble(kernel)
        state, _ = run(chains_kernel.step, chains_kernel.init(x0), jax.random.key(12), budget, progress=False)
        along_axis = np.asarray(state.position) @ axis
        for i, (s, m) in enumerate(zip(seps, mixtures)):
            exact = np.asarray(m.sample(jax.random.key(13 + i), 100_000)) @ axis
            out[f"{name}_w2_sep{int(s)}"] = wasserstein2_1d(along_axis[:, i], exact)
    fig, ax = pyplot().subplots(figsize=(5, 3.5))
    for name in runs:
        ax.plot(seps, [out[f"{name}_w2_sep{int(s)}"] for s in seps], "o-", label=name.upper())
    ax.set(xlabel="mode separation", ylabel="W2 along the mode axis", yscale="log",
           title=f"2-mode mixture, d={dim}, {budget} gradients")
    ax.legend()
    save_figure(fig, plots / "almc_vs_lmc_w2.png", dpi=120)
    return out


def smc_and_discrete_figures(quick: bool, plots: Path) -> dict:
    """SMC log Z errors with their target-evaluation counts, and Glauber spin-flip attempts per second.

    * ``smc_logz_abs_err_ising_L{8,16}``: SMC with adaptive tempering (conditional ESS
      target) along the LEAPS path from the uniform distribution to the critical Ising torus
      (beta = 0.4407), checkerboard heat-bath moves, against Kaufman's exact log Z.
    * ``smc_logz_abs_err_many_well32``: the same SMC along the geometric path from
      N(0, 2^2 I) to many-well d = 32, MALA moves, against the quadrature log Z.
    * ``*_target_evals``: target evaluations of each run (log-density or flip_log_ratios
      calls, summed over particles; see :mod:`jaxsamp.smc.annealing`).
    * ``glauber_flips_per_s_L64``: heat-bath (Glauber) single-site update attempts per
      second on 64x64 chains with checkerboard sweeps (half the lattice per
      flip_log_ratios call), jitted, timed after a warm-up call;
      ``glauber_random_scan_flips_per_s_L64``: the same with random-scan site choice (one
      flip_log_ratios call per attempt).

    Plot ``benchmarks/smc_schedules.png``: the adaptive temperature schedules.
    """
    import blackjax

    from jaxsamp.core import repeat
    from jaxsamp.mcmc.discrete import checkerboard, heat_bath
    from jaxsamp.smc import anneal
    from jaxsamp.targets import get
    from jaxsamp.targets.annealing import geometric_path
    from jaxsamp.targets.lattice import Ising, LatticePath

    particles, cess, mcmc_steps, max_levels = (128, 0.7, 2, 300) if quick else (4096, 0.95, 10, 2000)
    out, schedules = {}, {}
    for L in (8,) if quick else (8, 16):  # quick: one lattice (the same code for both)
        target = Ising(L, 0.4407)
        path = LatticePath(target)
        res = anneal(jax.random.key(L), path, lambda t, p=path: checkerboard(lambda x: p.flip_log_ratios(x, t)),
                     particles, target_cess=cess, max_levels=max_levels, num_mcmc_steps=mcmc_steps)
        out[f"smc_logz_abs_err_ising_L{L}"] = abs(float(res.samples.log_Z) - target.exact_log_Z())
        out[f"smc_logz_abs_err_ising_L{L}_target_evals"] = res.num_target_evals
        schedules[f"Ising L={L}"] = np.asarray(res.trace.t)[: res.num_levels]
    many_well = get("many_well", dim=32)
    path = geometric_path(many_well, base_scale=2.0)
    res = anneal(jax.random.key(32), path, lambda t: blackjax.mala(lambda x: path.log_prob(x, t), 0.02),
                 particles, target_cess=cess, max_levels=max_levels, num_mcmc_steps=mcmc_steps)
    out["smc_logz_abs_err_many_well32"] = abs(float(res.samples.log_Z) - many_well.log_Z)
    out["smc_logz_abs_err_many_well32_target_evals"] = res.num_target_evals
    schedules["many-well d=32"] = np.asarray(res.trace.t)[: res.num_levels]

    ising64 = Ising(64, 0.4407)
    chains, sweeps = (8, 10) if quick else (256, 50)
    x0 = jax.random.rademacher(jax.random.key(0), (chains, 64, 64), dtype=jnp.float32)
    for name, kernel, attempts in [
        ("glauber_flips_per_s_L64", checkerboard(ising64.flip_log_ratios), sweeps * 64 * 64),
        ("glauber_random_scan_flips_per_s_L64", heat_bath(ising64.flip_log_ratios, num_updates=64), sweeps * 64),
    ]:
        timed = repeat(ensemble(kernel), sweeps)
        step, state = jax.jit(timed.step), timed.init(x0)
        jax.block_until_ready(step(jax.random.key(1), state))  # warm-up: compile
        start = time.perf_counter()
        jax.block_until_ready(step(jax.random.key(2), state))
        out[name] = chains * attempts / (time.perf_counter() - start)

    fig, ax = pyplot().subplots(figsize=(5, 3.5))
    for label, ts in schedules.items():
        ax.plot(np.arange(1, len(ts) + 1), ts, ".-", label=f"{label} ({len(ts)} levels)")
    ax.set(xlabel="level", ylabel="temperature t", title=f"SMC adaptive tempering, CESS {cess}, {particles} particles")
    ax.legend()
    save_figure(fig, plots / "smc_schedules.png", dpi=120)
    return out


FIGURE_GROUPS = [midpoint_figures, speculative_figures, annealed_figures, smc_and_discrete_figures]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="CI-sized run (numbers not meaningful)")
    parser.add_argument("--plots", type=Path, default=None,
                        help=f"folder for the PNGs (default: {PLOTS}; a temporary folder with --quick)")
    parser.add_argument("--groups", nargs="+", choices=[g.__name__ for g in FIGURE_GROUPS],
                        default=[g.__name__ for g in FIGURE_GROUPS],
                        help="figure groups to run; the results file keeps the other groups' earlier figures")
    args = parser.parse_args(argv)
    plots = args.plots or (Path(tempfile.mkdtemp(prefix="bench_classical_")) if args.quick else PLOTS)
    plots.mkdir(parents=True, exist_ok=True)
    results = {}
    for group in FIGURE_GROUPS:
        if group.__name__ in args.groups:
            start = time.perf_counter()
            results.update(group(args.quick, plots))
            print(f"{group.__name__}: {time.perf_counter() - start:.0f} s", flush=True)
    merge = len(args.groups) < len(FIGURE_GROUPS)
    path = benchmark_io.write_results("bench_classical", results, quick=args.quick, merge=merge)
    for k, v in results.items():
        print(f"{k:32s} {v:.4g}")
    print(f"wrote {path}; plots in {plots}")


if __name__ == "__main__":
    main()
