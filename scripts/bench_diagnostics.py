"""Speed and statistical power of the diagnostics, and the noise floors of the particle metrics.

Figures (``benchmarks/results/bench_diagnostics.json``):

* ``psd_over_ksd_speedup_n10000``: wall time of the IMQ-KSD bootstrap test over that of the
  PSD (r = 2) bootstrap test, both with B = 500, on n = 10^4 points in d = 5 (compiled
  beforehand, best of 3). The issue's goal is >= 50.
* ``psd_size``, ``psd_power_meanshift_r1``, ``psd_power_var_r2``, ``psd_power_laplace_r4``,
  ``ksd_power_meanshift``: rejection rates at level 0.05 over 100 repetitions, d = 3,
  n = 1000, B = 500 (the oracle table of the PSD paper, research/methods.md Sec. 1): target
  N(0, I); null (size, PSD r = 2), mean shift 0.3, Var(x_1) = 1.7, unit-variance Laplace.
* ``geom_w2_lj13_2000_seconds``: wall time of one geometric-W2 evaluation, LJ-13 test
  split against validation split, 2000 vs 2000 (first call, compilation included); the
  issue's goal is <= 120 s on the 2-core CI machine.
* ``geom_w2_dw4_reference_vs_reference``, ``energy_w2_dw4_reference_vs_reference`` (and the
  LJ-13 ones): the metrics between 2000 random test-split and 2000 random validation-split
  reference samples (seed 0), i.e. the noise floor no sampler can be claimed to beat.

The geometric W2 shards its pairs over the visible devices; on a CPU this script makes
one host device per core (``XLA_FLAGS=--xla_force_host_platform_device_count``) unless
``XLA_FLAGS`` is already set.

Usage: python scripts/bench_diagnostics.py [--quick]
"""

from __future__ import annotations

import argparse
import functools
import os
import time

os.environ.setdefault("XLA_FLAGS", f"--xla_force_host_platform_device_count={os.cpu_count()}")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import benchmark_io  # noqa: E402
import jaxsamp.targets  # noqa: E402
from jaxsamp.diagnostics import energy_w2, geometric_w2, ksd_test, psd_test  # noqa: E402


def gaussian_score(x):
    return -x


def _timed(fn, repeats):
    """Best wall time of ``repeats`` calls after one warm-up (compilation) call."""
    jax.block_until_ready(fn())
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        best = min(best, time.perf_counter() - start)
    return best


def speedup(n, dim, num_bootstrap, repeats):
    x = jax.random.normal(jax.random.key(0), (n, dim))
    key = jax.random.key(1)
    ksd = jax.jit(lambda k, x: ksd_test(k, x, gaussian_score, num_bootstrap=num_bootstrap))
    psd = jax.jit(lambda k, x: psd_test(k, x, gaussian_score, 2, num_bootstrap=num_bootstrap))
    return _timed(lambda: ksd(key, x), repeats) / _timed(lambda: psd(key, x), repeats)


def _sample(kind, key, reps, n, dim):
    z = jax.random.normal(key, (reps, n, dim))
    if kind == "mean_shift":
        return z + 0.3
    if kind == "variance":
        return z * jnp.sqrt(jnp.asarray([1.7] + [1.0] * (dim - 1)))
    if kind == "laplace":
        return jax.random.laplace(key, (reps, n, dim)) / jnp.sqrt(2.0)
    return z


@functools.partial(jax.jit, static_argnames=("test", "num_bootstrap"))
def _rejection_rate(key, xs, test, num_bootstrap):
    keys = jax.random.split(key, xs.shape[0])
    run = {
        "psd1": lambda k, x: psd_test(k, x, gaussian_score, 1, num_bootstrap=num_bootstrap),
        "psd2": lambda k, x: psd_test(k, x, gaussian_score, 2, num_bootstrap=num_bootstrap),
        "psd4": lambda k, x: psd_test(k, x, gaussian_score, 4, num_bootstrap=num_bootstrap),
        "ksd": lambda k, x: ksd_test(k, x, gaussian_score, num_bootstrap=num_bootstrap, block_size=256),
    }[test]
    return jnp.mean(jax.lax.map(lambda kx: run(*kx).reject, (keys, xs)))


def powers(reps, n, num_bootstrap):
    rows = {
        "psd_size": ("null", "psd2"),
        "psd_power_meanshift_r1": ("mean_shift", "psd1"),
        "psd_power_var_r2": ("variance", "psd2"),
        "psd_power_laplace_r4": ("laplace", "psd4"),
        "ksd_power_meanshift": ("mean_shift", "ksd"),
    }
    out = {}
    for i, (name, (kind, test)) in enumerate(rows.items()):
        xs = _sample(kind, jax.random.key(10 + i), reps, n, 3)
        out[name] = float(_rejection_rate(jax.random.key(20 + i), xs, test, num_bootstrap))
    return out


def _subset(x, size, seed):
    return x[np.random.default_rng(seed).permutation(len(x))[:size]]


def particle_metrics(size):
    out = {}
    for name in ("dw4", "lj13"):
        target = jaxsamp.targets.get(name)
        test = _subset(target.reference("test"), size, 0)
        val = _subset(target.reference("val"), size, 0)
        start = time.perf_counter()
        w2 = geometric_w2(test, val, target.n_particles, target.spatial_dim)
        seconds = time.perf_counter() - start
        out[f"geom_w2_{name}_reference_vs_reference"] = w2
        out[f"energy_w2_{name}_reference_vs_reference"] = energy_w2(target.energy, test, val)
        if name == "lj13":
            out["geom_w2_lj13_2000_seconds"] = seconds
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="CI-sized run (numbers not meaningful)")
    args = parser.parse_args(argv)
    if args.quick:
        results = {"psd_over_ksd_speedup_n10000": speedup(1000, 5, 50, 1)}
        results.update(powers(reps=8, n=200, num_bootstrap=50))
        results.update(particle_metrics(48))
    else:
        results = {"psd_over_ksd_speedup_n10000": speedup(10_000, 5, 500, 3)}
        results.update(powers(reps=100, n=1000, num_bootstrap=500))
        results.update(particle_metrics(2000))
    path = benchmark_io.write_results("bench_diagnostics", results, quick=args.quick)
    for key, value in results.items():
        print(f"{key:45s} {value:.4g}")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
