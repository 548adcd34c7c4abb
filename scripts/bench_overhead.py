"""What jaxsamp's combinators and driver cost over hand-written JAX.

Two ratios of median per-step times, measured in one process with the two
variants alternated (so machine noise hits both alike):

* ``wrapped_over_direct``: blackjax MALA through ``jaxsamp.ensemble`` +
  ``jaxsamp.run`` over the same MALA vmapped and scanned by hand;
* ``driver_over_scan``: the same ensemble kernel under ``jaxsamp.run`` with its
  progress bar and chunking on, over a hand-written jitted ``lax.scan``;
* ``control_direct_over_direct``: the hand-written scan against itself, the
  noise floor of the two ratios above.

It also times what a checkpointed ``jaxsamp.run`` pays once per call to
fingerprint the run (:mod:`jaxsamp.core.fingerprint`: one trace of the step,
the initial state hashed): ``fingerprint_seconds_mala`` for the ensemble above
and ``fingerprint_seconds_leaps_L15`` for the LEAPS trainer at the paper's
15 x 15 configuration (``configs/leaps_ising_L15.yaml``, 200 walkers, LE-conv
[3, 5, 7, 9, 15] x 20 channels), the largest training step in the library
(median of 5).

Default: 1024 chains on a 32-d target, 400 steps per trial, 15 trials each.
Usage: python scripts/bench_overhead.py [--quick]
"""

from __future__ import annotations

import argparse
import io
import statistics
import time

import blackjax
import jax
import jax.numpy as jnp

import benchmark_io
import jaxsamp
from jaxsamp.core import fingerprint


def log_prob(x):
    """A 32-d anisotropic, non-Gaussian target: sum of scaled quartic wells."""
    scales = jnp.linspace(0.5, 2.0, x.shape[-1])
    return -0.5 * jnp.sum((x / scales) ** 2) - 0.05 * jnp.sum(x**4)


def hand_written(mala, num_steps):
    """The reference: vmap over chains and scan over steps, written by hand."""

    @jax.jit
    def go(state, key):
        def body(s, i):
            keys = jax.random.split(jax.random.fold_in(key, i), s.position.shape[0])
            s, info = jax.vmap(mala.step)(keys, s)
            return s, None

        return jax.lax.scan(body, state, jnp.arange(num_steps, dtype=jnp.uint32))[0]

    return go


def time_call(fn):
    start = time.perf_counter()
    out = fn()
    jax.block_until_ready(out)
    return time.perf_counter() - start


def fingerprint_seconds(step, state, key, repeats: int = 5) -> float:
    """Median seconds to fingerprint a run of ``step`` from ``state`` (what a checkpointed run pays once)."""

    def once():
        start = time.perf_counter()
        fingerprint.of_computation(step, key, state)
        fingerprint.of_values(state)
        return time.perf_counter() - start

    return statistics.median(once() for _ in range(repeats))


def leaps_trainer(quick: bool):
    """The LEAPS training step and its initial state at the paper's 15 x 15 config (8 x 8 with ``--quick``)."""
    from pathlib import Path

    from jaxsamp.experiments.config import load_config
    from jaxsamp.experiments.leaps_experiment import check
    from jaxsamp.learned.leaps.training import build

    name = "leaps_ising_L8" if quick else "leaps_ising_L15"
    cfg = load_config(Path(__file__).resolve().parent.parent / "configs" / f"{name}.yaml")
    target = jaxsamp.targets.get(cfg.target.name, **cfg.target.params)
    sampler = build(target, check(cfg, target), batch_size=cfg.run.num_chains)
    return sampler.step, jax.jit(sampler.init)(jax.random.key(0))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="CI-sized run (numbers not meaningful)")
    parser.add_argument("--chains", type=int, default=1024)
    parser.add_argument("--dim", type=int, default=32)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--trials", type=int, default=15)
    args = parser.parse_args(argv)
    if args.quick:
        args.chains, args.steps, args.trials = 64, 20, 3

    mala = blackjax.mala(log_prob, step_size=0.05)
    ensemble = jaxsamp.ensemble(mala)
    x0 = jax.random.normal(jax.random.key(0), (args.chains, args.dim))
    state = ensemble.init(x0)
    key = jax.random.key(1)
    direct = hand_written(mala, args.steps)
    sink = io.StringIO()  # the progress bar is drawn (and costs what it costs) but not shown

    def wrapped():
        return jaxsamp.run(ensemble.step, state, key, args.steps, chunk=args.steps, progress=False)[0]

    def driver():
        from unittest import mock

        with mock.patch("sys.stderr", sink):
            return jaxsamp.run(ensemble.step, state, key, args.steps, chunk=max(1, args.steps // 10), progress=True)[0]

    # "control" runs the hand-written scan a second time: its ratio to "direct" is the
    # noise floor of this measurement on this machine (an A/A comparison).
    variants = {"direct": lambda: direct(state, key), "wrapped": wrapped, "driver": driver, "control": lambda: direct(state, key)}
    for fn in variants.values():  # compile
        time_call(fn)
    times = {name: [] for name in variants}
    for _ in range(args.trials):
        for name, fn in variants.items():
            times[name].append(time_call(fn) / args.steps)
    med = {name: statistics.median(v) for name, v in times.items()}
    leaps_step, leaps_state = leaps_trainer(args.quick)
    results = {
        "wrapped_over_direct": med["wrapped"] / med["direct"],
        "driver_over_scan": med["driver"] / med["direct"],
        "control_direct_over_direct": med["control"] / med["direct"],
        "direct_step_ms": 1e3 * med["direct"],
        "wrapped_step_ms": 1e3 * med["wrapped"],
        "driver_step_ms": 1e3 * med["driver"],
        "fingerprint_seconds_mala": fingerprint_seconds(ensemble.step, state, key),
        "fingerprint_seconds_leaps_L15": fingerprint_seconds(leaps_step, leaps_state, key),
        "chains": args.chains,
        "dim": args.dim,
        "steps_per_trial": args.steps,
        "trials": args.trials,
    }
    path = benchmark_io.write_results("bench_overhead", results, quick=args.quick)
    for k, v in results.items():
        print(f"{k:>22}: {v:.4g}")
    print(f"wrote {path}")
    return results


if __name__ == "__main__":
    main()
