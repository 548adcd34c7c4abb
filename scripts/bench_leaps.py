"""LEAPS on the critical 8x8 Ising torus: ESS and log Z of three locally equivariant networks vs tempered SMC.

For each network (``conv``, ``mlp``, ``attention``) the script trains LEAPS for
``--train-minutes`` of wall time (the number of updates is set from a timed
warm-up, the curriculum takes the first third of them; ``--quick`` trains only
the conv network, for 12 updates, and samples the other two untrained), then draws
``--walkers`` samples with 100 uniform Euler steps and reports the normalised
ESS. ``logz_hat_L8`` / ``logz_abs_err_L8`` (against Kaufman's exact value) are
for the conv network with the paper's pre-jump weights, averaged over
``--repeats`` sampling runs; the trapezoid weights are reported next to them.

The SMC baseline (:func:`jaxsamp.smc.anneal`, linear schedule on the same path,
one checkerboard heat-bath sweep per level, systematic resampling at ESS < 0.5)
gets the same number of target evaluations as LEAPS sampling: LEAPS evaluates
``flip_log_ratios`` and ``log_prob`` once per walker and step (network passes are
not counted, as in the paper); SMC pays 1 per particle and level for the
reweighting and 2 for a checkerboard sweep.

Usage: ``python scripts/bench_leaps.py [--quick] [--train-minutes 10]``
(writes ``benchmarks/results/bench_leaps.json``).
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import jax
import jax.numpy as jnp
import numpy as np

from benchmark_io import write_results
from jaxsamp.core import run
from jaxsamp.learned import buffer as replay
from jaxsamp.learned.leaps_training import LeapsSettings, build_networks, make_trainer, sampler
from jaxsamp.mcmc.discrete import checkerboard
from jaxsamp.smc import anneal, linear_schedule
from jaxsamp.targets.lattice import LatticePath, ising

L, BETA, SAMPLING_STEPS = 8, 0.4407, 100

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


def train(path, network: str, quick: bool, minutes: float, walkers: int, key):
    """Train one network for about ``minutes``; return (model, params, buffer, settings, steps, steps_per_s).

    The number of updates comes from a timed probe of the same trainer; ``--quick``
    trains only the conv network, for a few updates, and returns the other two untrained.
    """
    if quick:
        settings = settings_for(network, quick, 10)
        if network != "conv":
            model, params = build_networks(path, settings, key)
            return model, params, None, settings, 0, float("nan")
        trainer, model = make_trainer(path, settings, walkers)
        start = time.perf_counter()
        state, _ = run(trainer.step, jax.jit(trainer.init)(key), key, 12, progress=False, chunk=12)
        jax.block_until_ready(state)
        return model, state.params, state.buffer, settings, 12, 12 / (time.perf_counter() - start)
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
    # train in chunks until the budget is spent (the curriculum is planned for `planned` updates)
    chunk, steps, start = 50, 0, time.perf_counter()  # small chunks: the budget is overrun by at most one
    while time.perf_counter() - start < minutes * 60 and steps < 2 * planned:
        state, _ = run(trainer.step, state, jax.random.fold_in(key, steps), chunk, progress=False, chunk=chunk)
        jax.block_until_ready(state)
        steps += chunk
        print(f"leaps {network}: {steps} updates, {time.perf_counter() - start:.0f} s", flush=True)
    return model, state.params, state.buffer, settings, steps, steps / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI-sized run (tiny networks, seconds of training)")
    parser.add_argument("--train-minutes", type=float, default=10.0,
                        help="training budget per network (three networks: 30 minutes in all, the issue's cap)")
    parser.add_argument("--walkers", type=int, default=None, help="walkers for ESS / log Z (default 2000, quick 256)")
    parser.add_argument("--repeats", type=int, default=None, help="independent sampling runs averaged for log Z")
    args = parser.parse_args()
    walkers = args.walkers or (256 if args.quick else 2000)
    repeats = args.repeats or 2
    train_walkers = 16 if args.quick else 200

    target = ising(L, BETA)
    path = LatticePath(target)
    exact = target.exact_log_Z()
    key = jax.random.key(0)
    results = {}

    for i, network in enumerate(NETWORKS):
        model, params, buffer, settings, steps, rate = train(
            path, network, args.quick, args.train_minutes, train_walkers, jax.random.fold_in(key, i)
        )
        results[f"train_steps_{network}"] = steps
        draws = {}
        for rule in ("pre", "trapezoid") if network == "conv" and not args.quick else ("pre",):
            draw = jax.jit(lambda p, k, r=rule: sampler(model, p, path, settings, weight_point=r)(k, walkers))
            draws[rule] = [draw(params, jax.random.fold_in(key, 100 + j)) for j in range(repeats)]
        results[f"ess_L8_{network}"] = float(np.mean([float(ws.ess) for ws in draws["pre"]]))
        if network == "conv":
            results["train_steps_per_s_L8"] = rate
            log_z = np.array([float(ws.log_Z) for ws in draws["pre"]])
            results["logz_hat_L8"] = float(log_z.mean())
            results["logz_abs_err_L8"] = float(np.mean(np.abs(log_z - exact)))
            if "trapezoid" in draws:  # not in --quick
                log_z_trap = np.array([float(ws.log_Z) for ws in draws["trapezoid"]])
                results["logz_hat_L8_trapezoid"] = float(log_z_trap.mean())
                results["logz_abs_err_L8_trapezoid"] = float(np.mean(np.abs(log_z_trap - exact)))
                results["ess_L8_conv_trapezoid"] = float(np.mean([float(ws.ess) for ws in draws["trapezoid"]]))
            buffer_bytes = replay.bytes_per_item(buffer)

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
            "buffer_bytes_per_state": buffer_bytes,
            "walkers": walkers,
            "train_minutes_per_network": 0.0 if args.quick else args.train_minutes,
        }
    )
    path_out = write_results("bench_leaps", results, quick=args.quick)
    for name, value in results.items():
        print(f"{name:34s} {value:.6g}" if isinstance(value, float) else f"{name:34s} {value}")
    print(f"wrote {path_out}")


if __name__ == "__main__":
    main()
