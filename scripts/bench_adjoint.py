"""Adjoint Sampling on DW-4 and LJ-13 with the CPU-sized configs: W2, energy W2, cost.

Each system trains with its CPU config (``configs/adjoint_dw4_cpu.yaml``,
``configs/adjoint_lj13_cpu.yaml``) for the config's epochs or until
``--train-minutes`` have passed, whichever comes first, printing a progress line
after every block of epochs. Each is then evaluated on 2000 samples
against 2000 random samples of the test split (iDEM / Adjoint Sampling
protocol): geometric W2 and energy W2, plus the metrics' noise floor (test split
against validation split, same sizes). Paper (Havens et al. 2025, Table 1,
GPU, 5000 / 4000 epochs of the paper configs): DW-4 0.62 / 0.55, LJ-13 1.67 / 2.40.

Usage: python scripts/bench_adjoint.py [--quick] [--train-minutes 60] [--systems dw4 lj13]
Writes benchmarks/results/bench_adjoint.json (``--quick``: bench_adjoint_quick.json).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import jax
import numpy as np
from benchmark_io import write_results

import jaxsamp.targets
from jaxsamp.core import run
from jaxsamp.diagnostics import discrepancies
from jaxsamp.diagnostics.geometric_w2 import geometric_w2
from jaxsamp.experiments.adjoint_experiment import evaluate
from jaxsamp.experiments.config import load_config
from jaxsamp.core.registry import validate_dataclass
from jaxsamp.learned.adjoint import AdjointSampling, AdjointSettings

CONFIGS = Path(__file__).resolve().parent.parent / "configs"
SYSTEMS = {"dw4": "adjoint_dw4_cpu.yaml", "lj13": "adjoint_lj13_cpu.yaml"}
QUICK = dict(hidden=8, num_layers=1, nfe=10, steps_per_epoch=5, train_batch_size=32)


def build(config: str, quick: bool):
    """Sampler, epochs and evaluation size of a config (tiny in quick mode)."""
    cfg = load_config(CONFIGS / config)
    settings = validate_dataclass("sampler", cfg.sampler.params, AdjointSettings)
    target = jaxsamp.targets.get(cfg.target.name, **cfg.target.params)
    if quick:
        settings = dataclasses.replace(settings, **QUICK)
        return AdjointSampling(target, settings, 32), 3, 64, cfg
    return AdjointSampling(target, settings, cfg.run.num_chains), cfg.run.num_steps, cfg.run.num_eval_samples, cfg


def train(sampler, cfg, epochs: int, minutes: float, block: int, name: str):
    """Train in driver calls of ``block`` epochs until ``epochs`` or ``minutes`` have passed.

    Returns the state, the epochs done, the minutes taken and the epochs per second
    after the first block (which includes compilation; the driver compiles a block
    length once).
    """
    k_init, k_train = jax.random.split(jax.random.key(cfg.seed))
    state = sampler.init(k_init)
    start, done, after_first = time.perf_counter(), 0, None
    while done < epochs and time.perf_counter() - start < 60 * minutes:
        n = min(block, epochs - done)
        state, _ = run(sampler.step, state, jax.random.fold_in(k_train, done), n, chunk=n, progress=False)
        jax.block_until_ready(state)
        done += n
        after_first = after_first or (time.perf_counter(), done)
        elapsed = time.perf_counter() - start
        print(f"{name}: epoch {done}/{epochs}, {elapsed / 60:.1f} min, "
              f"{int(state.energy_evals)} energy evaluations", flush=True)
    took = time.perf_counter() - start
    rate = (done - after_first[1]) / (time.perf_counter() - after_first[0]) if done > after_first[1] else float("nan")
    return state, done, took / 60, rate


def noise_floor(target, n: int) -> dict:
    """Geometric and energy W2 of the test split against the validation split, n vs n samples."""
    rng = np.random.default_rng(0)
    test, val = (s[rng.permutation(len(s))[:n]] for s in (target.reference("test"), target.reference("val")))
    return {
        "w2_floor": geometric_w2(test, val, target.n_particles, target.spatial_dim),
        "energy_w2_floor": discrepancies.energy_w2(target.energy, test, val),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI-sized run (tiny networks, 3 epochs, 64 samples)")
    parser.add_argument("--train-minutes", type=float, default=60.0, help="wall-clock cap of each system's training run")
    parser.add_argument("--systems", nargs="+", choices=SYSTEMS, default=list(SYSTEMS),
                        help="systems to run; the results file keeps the other systems' earlier figures")
    args = parser.parse_args()

    results = {}
    for name in args.systems:
        sampler, epochs, n_eval, cfg = build(SYSTEMS[name], args.quick)
        block = 1 if args.quick else cfg.run.chunk or 10
        state, done, took, rate = train(sampler, cfg, epochs, args.train_minutes, block, name)
        metrics = evaluate(sampler, state.params, jax.random.key(cfg.seed + 1), n_eval)
        results.update({
            f"{name}_w2": metrics["w2"],
            f"{name}_energy_w2": metrics["energy_w2"],
            f"{name}_energy_evals": int(state.energy_evals),
            f"{name}_train_minutes": took,
            f"{name}_epochs": done,
            f"{name}_log_Z_reverse": metrics["log_Z_reverse"],
            f"{name}_elbo": metrics["elbo"],
            f"{name}_eubo": metrics.get("eubo", float("nan")),
            f"{name}_ess": metrics["ess"],
        })
        results.update({f"{name}_{k}": v for k, v in noise_floor(sampler.target, n_eval).items()})
        if name == "dw4":
            results["epochs_per_s_dw4"] = rate
        print(f"{name}: " + ", ".join(f"{k}={v:.4g}" for k, v in results.items() if k.startswith(name)), flush=True)
    path = write_results("bench_adjoint", results, quick=args.quick, merge=set(args.systems) != set(SYSTEMS))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
