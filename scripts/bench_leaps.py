"""LEAPS on the critical 8x8 Ising torus: ESS and log Z of three locally equivariant networks vs tempered SMC.

For each network (``conv``, ``mlp``, ``attention``) the script trains LEAPS for
``--train-minutes`` of wall time (the number of updates is set from a timed
warm-up, the curriculum takes the first third of them; ``--quick`` trains only
the conv network, for 12 updates, and samples the other two untrained), then draws
``--walkers`` samples with 100 uniform Euler steps and reports the normalised
ESS, log Z-hat and its error against Kaufman's exact value (mean over
``--repeats`` sampling runs) for the paper's pre-jump weights and for trapezoid
weights. The headline ``logz_hat_L8`` / ``logz_abs_err_L8`` are the pre-jump
figures of the network with the best ESS. ``--networks`` trains a subset; the
results file keeps the other networks' earlier figures. Every ``--curve-every``
updates the ESS of 500 walkers is recorded (off the training clock) as
``ess_curve_<network>`` and plotted in ``benchmarks/leaps_ess_curves.png``.

The SMC baseline (:func:`jaxsamp.smc.anneal`, linear schedule on the same path,
one checkerboard heat-bath sweep per level, systematic resampling at ESS < 0.5)
gets the same number of target evaluations as LEAPS sampling: LEAPS evaluates
``flip_log_ratios`` and ``log_prob`` once per walker and step (network passes are
not counted, as in the paper); SMC pays 1 per particle and level for the
reweighting and 2 for a checkerboard sweep.

Usage: ``python scripts/bench_leaps.py [--quick] [--train-minutes 10] [--networks conv mlp attention]``
(writes ``benchmarks/results/bench_leaps.json``).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import jax
import numpy as np

from benchmark_io import read_results, write_results
from jaxsamp.core import run
from jaxsamp.experiments.plots import pyplot
from jaxsamp.learned import buffer as replay
from jaxsamp.learned.leaps_training import LeapsSettings, build_networks, make_trainer, sampler
from jaxsamp.mcmc.discrete import checkerboard
from jaxsamp.smc import anneal, linear_schedule
from jaxsamp.targets.lattice import LatticePath, ising

L, BETA, SAMPLING_STEPS = 8, 0.4407, 100
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


def plot_curves(results: dict, path: Path) -> None:
    """ESS against training updates of every network with a recorded curve."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for network in NETWORKS:
        curve = np.array(results.get(f"ess_curve_{network}", []))
        if len(curve):
            minutes = results[f"train_minutes_{network}"]
            ax.plot(curve[:, 0], curve[:, 1], marker=".", label=f"{network} ({minutes:g} min)")
    ax.axhline(0.8, color="grey", ls="--", lw=1, label="goal 0.8")
    ax.set(xlabel="training updates", ylabel=f"ESS ({CURVE_WALKERS} walkers)", ylim=(0, 1),
           title=f"LEAPS, Ising {L}x{L} at beta = {BETA}, {SAMPLING_STEPS} steps")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def sample_figures(network: str, draws: dict, exact: float) -> dict:
    """ESS and log Z (mean over repeats, mean absolute error against ``exact``) of one network's draws."""
    out = {}
    for rule, samples in draws.items():
        suffix = f"_{network}" + ("" if rule == "pre" else f"_{rule}")
        log_z = np.array([float(ws.log_Z) for ws in samples])
        out[f"ess_L8{suffix}"] = float(np.mean([float(ws.ess) for ws in samples]))
        out[f"logz_hat_L8{suffix}"] = float(log_z.mean())
        out[f"logz_abs_err_L8{suffix}"] = float(np.mean(np.abs(log_z - exact)))
    return out


def headline(results: dict) -> dict:
    """``logz_hat_L8`` / ``logz_abs_err_L8``: the pre-jump figures of the network with the best ESS."""
    measured = [n for n in NETWORKS if f"logz_hat_L8_{n}" in results]
    best = max(measured, key=lambda n: results[f"ess_L8_{n}"])
    return {
        "logz_network_L8": best,
        "logz_hat_L8": results[f"logz_hat_L8_{best}"],
        "logz_abs_err_L8": results[f"logz_abs_err_L8_{best}"],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI-sized run (tiny networks, seconds of training)")
    parser.add_argument("--train-minutes", type=float, default=10.0,
                        help="training budget per network (three networks: 30 minutes in all)")
    parser.add_argument("--networks", nargs="+", choices=NETWORKS, default=list(NETWORKS),
                        help="networks to train; the results file keeps the other networks' earlier figures")
    parser.add_argument("--curve-every", type=int, default=500, help="updates between learning-curve ESS points")
    parser.add_argument("--walkers", type=int, default=None, help="walkers for ESS / log Z (default 2000, quick 256)")
    parser.add_argument("--repeats", type=int, default=None, help="independent sampling runs averaged for log Z")
    args = parser.parse_args()
    walkers = args.walkers or (256 if args.quick else 2000)
    repeats = args.repeats or 2
    train_walkers = 16 if args.quick else 200
    merge = set(args.networks) != set(NETWORKS)

    target = ising(L, BETA)
    path = LatticePath(target)
    exact = target.exact_log_Z()
    key = jax.random.key(0)
    results = {}

    for network in args.networks:
        model, params, buffer, settings, steps, rate, curve = train(
            path, network, args.quick, args.train_minutes, train_walkers,
            jax.random.fold_in(key, list(NETWORKS).index(network)), args.curve_every,
        )
        if curve:
            results[f"ess_curve_{network}"] = curve
        results[f"train_steps_{network}"] = steps
        results[f"train_steps_per_s_L8_{network}"] = rate
        results[f"train_minutes_{network}"] = 0.0 if args.quick else args.train_minutes
        draws = {}
        for rule in ("pre",) if args.quick else ("pre", "trapezoid"):
            draw = jax.jit(lambda p, k, r=rule: sampler(model, p, path, settings, weight_point=r)(k, walkers))
            draws[rule] = [draw(params, jax.random.fold_in(key, 100 + j)) for j in range(repeats)]
        results.update(sample_figures(network, draws, exact))
        if network == "conv":
            results["train_steps_per_s_L8"] = rate
        if buffer is not None:
            results["buffer_bytes_per_state"] = replay.bytes_per_item(buffer)

    leaps_evals = 2 * walkers * SAMPLING_STEPS
    levels = leaps_evals // (3 * walkers)
    make_kernel = lambda t: checkerboard(lambda x: path.flip_log_ratios(x, t), "heat_bath")  # noqa: E731
    smc_log_z, smc_evals = [], 0
    for j in range(repeats):
        out = anneal(
            jax.random.fold_in(key, 200 + j), path, make_kernel, walkers, schedule=linear_schedule(levels),
            num_mcmc_steps=1, ess_threshold=0.5,
        )
        smc_log_z.append(float(out.samples.log_Z))
        smc_evals = out.num_target_evals
    assert smc_evals <= leaps_evals, (smc_evals, leaps_evals)
    results.update(
        {
            "logz_exact_L8": exact,
            "smc_logz_abs_err_L8_equal_evals": float(np.mean(np.abs(np.array(smc_log_z) - exact))),
            "smc_levels_L8": levels,
            "smc_target_evals_L8": smc_evals,
            "leaps_target_evals_L8": leaps_evals,
            "walkers": walkers,
        }
    )
    earlier = read_results("bench_leaps", args.quick) if merge else {}
    results.update(headline({**earlier, **results}))
    path_out = write_results("bench_leaps", results, quick=args.quick, merge=merge)
    if not args.quick:
        plot_curves({**earlier, **results}, CURVE_PLOT)
    for name, value in results.items():
        if not name.startswith("ess_curve_"):
            print(f"{name:34s} {value:.6g}" if isinstance(value, float) else f"{name:34s} {value}")
    print(f"wrote {path_out}")


if __name__ == "__main__":
    main()
