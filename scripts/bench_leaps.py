"""LEAPS on the critical 8x8 Ising torus: three locally equivariant networks at equal budgets, against tempered SMC.

Protocol (fixed before the run; issue 16): for each seed (0, 1, 2) and each network (``conv``, ``mlp``,
``attention``), LEAPS trains for the same ``--train-minutes`` of wall time (the number of updates is
set from a timed warm-up of that network, the curriculum takes the first third of them), then
draws ``--walkers`` samples with 100 uniform Euler steps on evaluation keys used for nothing else,
``--repeats`` times. The headline rule, fixed before any error was seen, is the unbiased
discrete-time weights (``weight_point="exact"``): ``ess_L8_{network}``, ``logz_abs_err_L8_{network}``
(mean absolute error of the repeats against Kaufman's exact log Z); the free-energy network's own
estimate ``logz_fe_abs_err_L8_{network}``; and the quadrature rules as labelled extras
(``..._pre``, ``..._trapezoid``). No network is picked on these draws. ``train_steps_per_s_L8_{network}``
and ``train_target_evals_L8_{network}`` record the training. Every figure is recorded per seed
(``_seed{k}``) and as mean / sd over the seeds recorded so far (the JSON merges across runs).
Every ``--curve-every`` updates the ESS of 500 walkers is recorded (off the training clock) as
``ess_curve_{network}_seed{k}`` and plotted in ``benchmarks/leaps_ess_curves.png``.

Target evaluations (network passes not counted, as in the paper): a sampling step with the exact
weights evaluates ``log_prob`` once (after the jump; the value before it is carried from the previous
step, plus one evaluation at the start) and ``flip_log_ratios`` once (the backward kernel) per walker; a training rollout step evaluates ``flip_log_ratios`` once per walker
and its Metropolis correction ``mcmc_updates`` single-site updates, counted as ``mcmc_updates / N``
evaluations (a sweep of the N sites costs one). The SMC baseline (:func:`jaxsamp.smc.anneal`,
linear schedule on the same path, one checkerboard heat-bath sweep per level, systematic
resampling at ESS < 0.5; 1 evaluation per particle and level for the reweighting, 2 for the
sweep) gets (a) LEAPS's sampling evaluations, ``smc_logz_abs_err_L8_equal_evals``, and (b) those plus
the mean training evaluations of the three networks, ``smc_logz_abs_err_L8_total_evals``.

Usage: ``python scripts/bench_leaps.py [--quick] [--seeds 0 1 2] [--train-minutes 10] [--networks conv mlp attention]``
(writes ``benchmarks/results/bench_leaps.json``).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import jax
import numpy as np

from benchmark_io import read_results, record_seed, write_results
from jaxsamp.core import run
from jaxsamp.experiments.plots import pyplot
from jaxsamp.learned import buffer as replay
from jaxsamp.learned.leaps_training import (
    LeapsSettings,
    build_networks,
    curriculum_schedule,
    free_energy_log_Z,
    make_trainer,
    sampler,
)
from jaxsamp.mcmc.discrete import checkerboard
from jaxsamp.smc import anneal, linear_schedule
from jaxsamp.targets.lattice import LatticePath, ising

L, BETA, SAMPLING_STEPS = 8, 0.4407, 100
RULES = ("exact", "pre", "trapezoid")  # the headline first
CURVE_WALKERS = 500
CURVE_PLOT = Path(__file__).resolve().parent.parent / "benchmarks" / "leaps_ess_curves.png"

# CPU-sized networks for L = 8 (kernels with K // 2 < 8), each about 0.5 s per forward pass of 2000
# walkers on the 2-core machine (twice the conv width or a [256, 256] MLP costs 3-4x that)
NETWORKS = {
    "conv": {"kernel_sizes": [3, 5, 7], "channels": 8, "time_hidden": 16},
    "mlp": {"hidden": [128, 128]},
    "attention": {"features": 16, "num_heads": 2, "num_layers": 2},
}
QUICK_NETWORKS = {
    "conv": {"kernel_sizes": [3, 5], "channels": 4, "time_hidden": 8},
    "mlp": {"hidden": [16]},
    "attention": {"features": 8, "num_heads": 2, "num_layers": 1},
}


def settings_for(network: str, quick: bool, curriculum_steps: int) -> LeapsSettings:
    return LeapsSettings(
        network=network,
        network_params=(QUICK_NETWORKS if quick else NETWORKS)[network],
        free_energy_hidden=[16] if quick else [64, 64, 64],
        learning_rate=3e-3 if quick else 1e-3,
        lr_decay=0.9,
        lr_decay_every=max(1, curriculum_steps),
        loss_batch=32 if quick else 256,
        rollout_steps=10 if quick else SAMPLING_STEPS,
        curriculum_steps=curriculum_steps,
        rollout_every=5 if quick else 50,
        buffer_rollouts=4 if quick else 50,
        states_per_walker=4 if quick else 16,
        mcmc_updates=8 if quick else 64,
        eval_steps=SAMPLING_STEPS,
    )


def train(path, network: str, quick: bool, minutes: float, walkers: int, key, curve_every: int):
    """Train one network for about ``minutes``.

    Returns (model, params, buffer, settings, steps, steps_per_s, curve). The number
    of updates comes from a timed probe of the same trainer. Every ``curve_every``
    updates the ESS of 500 walkers is recorded in ``curve`` as ``[updates, ess]``
    (off the training clock). ``--quick`` trains only the conv network, for a few
    updates, returns the other two untrained, and records no curve.
    """
    if quick:
        settings = settings_for(network, quick, 10)
        if network != "conv":
            model, params = build_networks(path, settings, key)
            return model, params, None, settings, 0, float("nan"), []
        trainer, model = make_trainer(path, settings, walkers)
        start = time.perf_counter()
        state, _ = run(trainer.step, jax.jit(trainer.init)(key), key, 12, progress=False, chunk=12)
        jax.block_until_ready(state)
        return model, state.params, state.buffer, settings, 12, 12 / (time.perf_counter() - start), []
    # steady-state rate: full-length rollouts every `rollout_every` updates
    steady = dataclasses.replace(settings_for(network, quick, 0), buffer_rollouts=1)
    probe, _ = make_trainer(path, steady, walkers)
    state = jax.jit(probe.init)(key)
    n_probe = steady.rollout_every  # one rollout per rollout_every updates, as in steady-state training
    run(probe.step, state, key, n_probe, progress=False, chunk=n_probe)  # compile
    start = time.perf_counter()
    jax.block_until_ready(run(probe.step, state, jax.random.fold_in(key, 1), n_probe, progress=False, chunk=n_probe)[0])
    planned = max(300, int(n_probe / (time.perf_counter() - start) * minutes * 60))
    settings = settings_for(network, quick, planned // 3)
    trainer, model = make_trainer(path, settings, walkers)
    state = jax.jit(trainer.init)(key)
    ess_of = jax.jit(lambda p, k: sampler(model, p, path, settings)(k, CURVE_WALKERS).ess)
    # train in chunks until the budget is spent (the curriculum is planned for `planned` updates)
    chunk, steps, trained, curve = 50, 0, 0.0, []  # small chunks: the budget is overrun by at most one
    while trained < minutes * 60 and steps < 2 * planned:
        start = time.perf_counter()
        state, _ = run(trainer.step, state, jax.random.fold_in(key, steps), chunk, progress=False, chunk=chunk)
        jax.block_until_ready(state)
        trained += time.perf_counter() - start
        steps += chunk
        line = f"leaps {network}: {steps} updates, {trained:.0f} s"
        if steps % curve_every == 0:
            curve.append([steps, float(ess_of(state.params, jax.random.fold_in(key, 10_000 + steps)))])
            line += f", ESS {curve[-1][1]:.3f} ({CURVE_WALKERS} walkers)"
        print(line, flush=True)
    return model, state.params, state.buffer, settings, steps, steps / trained, curve


def training_target_evals(settings: LeapsSettings, steps: int, walkers: int, num_sites: int) -> float:
    """Target evaluations of ``steps`` training updates (module docstring): the rollouts' passes and corrections."""
    ks = curriculum_schedule(settings.curriculum_start, settings.rollout_steps, settings.curriculum_steps,
                             settings.warm_up)
    i = np.arange(steps)
    k = ks[np.minimum(i, len(ks) - 1)]
    rollout = (i < settings.buffer_rollouts) | (i % settings.rollout_every == 0)
    return float(np.sum(k[rollout]) * walkers * (1.0 + settings.mcmc_updates / num_sites))


def plot_curves(results: dict, seeds, path: Path) -> None:
    """ESS against training updates of every network and seed with a recorded curve."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for i, network in enumerate(NETWORKS):
        for seed in seeds:
            curve = np.array(results.get(f"ess_curve_{network}_seed{seed}", []))
            if len(curve):
                ax.plot(curve[:, 0], curve[:, 1], marker=".", color=f"C{i}",
                        label=network if seed == seeds[0] else None)
    ax.axhline(0.8, color="grey", ls="--", lw=1, label="goal 0.8")
    ax.set(xlabel="training updates", ylabel=f"ESS ({CURVE_WALKERS} walkers)", ylim=(0, 1),
           title=f"LEAPS, Ising {L}x{L} at beta = {BETA}, {SAMPLING_STEPS} steps, seeds {list(seeds)}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def sample_figures(network: str, draws: dict, exact: float) -> dict:
    """ESS and log Z error (mean over repeats, mean absolute error against ``exact``) of one network's draws."""
    out = {}
    for rule, samples in draws.items():
        suffix = f"_{network}" + ("" if rule == "exact" else f"_{rule}")
        log_z = np.array([float(ws.log_Z) for ws in samples])
        out[f"ess_L8{suffix}"] = float(np.mean([float(ws.ess) for ws in samples]))
        out[f"logz_hat_L8{suffix}"] = float(log_z.mean())
        out[f"logz_abs_err_L8{suffix}"] = float(np.mean(np.abs(log_z - exact)))
    return out


def smc_error(path, key, walkers: int, evals: float, repeats: int, exact: float) -> tuple[float, int, int]:
    """Tempered SMC with as many levels as ``evals`` allow: mean |log Z error|, levels, evaluations spent."""
    levels = max(1, int(evals // (3 * walkers)))
    make_kernel = lambda t: checkerboard(lambda x: path.flip_log_ratios(x, t), "heat_bath")  # noqa: E731
    errors, spent = [], 0
    for j in range(repeats):
        out = anneal(jax.random.fold_in(key, j), path, make_kernel, walkers, schedule=linear_schedule(levels),
                     num_mcmc_steps=1, ess_threshold=0.5)
        errors.append(abs(float(out.samples.log_Z) - exact))
        spent = out.num_target_evals
    assert spent <= evals, (spent, evals)
    return float(np.mean(errors)), levels, int(spent)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI-sized run (tiny networks, seconds of training)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--train-minutes", type=float, default=10.0, help="training budget per network and seed")
    parser.add_argument("--networks", nargs="+", choices=NETWORKS, default=list(NETWORKS))
    parser.add_argument("--curve-every", type=int, default=500, help="updates between learning-curve ESS points")
    parser.add_argument("--walkers", type=int, default=None, help="walkers for ESS / log Z (default 2000, quick 256)")
    parser.add_argument("--repeats", type=int, default=None, help="independent sampling runs averaged for log Z")
    args = parser.parse_args(argv)
    walkers = args.walkers or (256 if args.quick else 2000)
    repeats = args.repeats or 2
    train_walkers = 16 if args.quick else 200
    seeds = args.seeds[:1] if args.quick else args.seeds
    rules = RULES[:1] if args.quick else RULES

    target = ising(L, BETA)
    path = LatticePath(target)
    exact = target.exact_log_Z()
    num_sites = L * L
    results: dict = {"logz_exact_L8": exact, "walkers": walkers}

    def save():
        print(f"  -> {write_results('bench_leaps', results, quick=args.quick, merge=True)}", flush=True)

    for seed in seeds:
        key = jax.random.key(seed)
        train_evals = []
        for network in args.networks:
            model, params, buffer, settings, steps, rate, curve = train(
                path, network, args.quick, args.train_minutes, train_walkers,
                jax.random.fold_in(key, list(NETWORKS).index(network)), args.curve_every,
            )
            if curve:
                results[f"ess_curve_{network}_seed{seed}"] = curve
            draws = {}
            for rule in rules:  # evaluation keys 100.. are used for nothing else
                draw = jax.jit(lambda p, k, r=rule: sampler(model, p, path, settings, weight_point=r)(k, walkers))
                draws[rule] = [draw(params, jax.random.fold_in(key, 100 + j)) for j in range(repeats)]
            figures = sample_figures(network, draws, exact)
            figures[f"logz_fe_abs_err_L8_{network}"] = abs(float(free_energy_log_Z(model, params, path)) - exact)
            figures[f"train_steps_L8_{network}"] = steps
            figures[f"train_steps_per_s_L8_{network}"] = rate
            train_evals.append(training_target_evals(settings, steps, train_walkers, num_sites))
            figures[f"train_target_evals_L8_{network}"] = train_evals[-1]
            for name, value in figures.items():
                record_seed(results, "bench_leaps", name, seed, value, args.quick)
            if buffer is not None:
                results["buffer_bytes_per_state"] = replay.bytes_per_item(buffer)
            print(f"seed {seed} {network}: " + ", ".join(f"{k}={v:.4g}" for k, v in figures.items()), flush=True)
            save()
        sampling_evals = walkers * (2 * SAMPLING_STEPS + 1)
        budgets = {"equal_evals": sampling_evals, "total_evals": sampling_evals + float(np.mean(train_evals))}
        for name, evals in budgets.items():
            error, levels, spent = smc_error(path, jax.random.fold_in(key, 200), walkers, evals, repeats, exact)
            for fig, value in ((f"smc_logz_abs_err_L8_{name}", error), (f"smc_levels_L8_{name}", levels),
                               (f"smc_target_evals_L8_{name}", spent)):
                record_seed(results, "bench_leaps", fig, seed, value, args.quick)
        record_seed(results, "bench_leaps", "leaps_sampling_target_evals_L8", seed, sampling_evals, args.quick)
        save()
    if not args.quick:
        plot_curves({**read_results("bench_leaps"), **results}, seeds, CURVE_PLOT)


if __name__ == "__main__":
    main()
