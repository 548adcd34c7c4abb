"""von Mises-Fisher sampling speed against TFP and scipy, the log normaliser's accuracy, and vMF-exp against Boltzmann.

Protocol (fixed before the first run; run alone on the machine):

* ``vmf_samples_per_s_{impl}_d{d}_k{kappa}`` for ``impl`` in ours (``jaxsamp.targets.sphere.sample_vmf``,
  jitted), TensorFlow Probability's JAX-substrate ``VonMisesFisher`` (jitted) and
  ``scipy.stats.vonmises_fisher``; d in {3, 64, 256}, kappa in {1, 100}; 100 000 draws per call (``--quick``:
  d = 64 and kappa = 1 only, 1000 draws), the best of 3 timed calls after a compiling one; plus ``..._ratio_vs_best_other``
  (ours over the faster of TFP and scipy).
* ``vmf_log_norm_max_rel_err``: float64 log normaliser against mpmath (40 digits) over d in {2, 3, 4,
  10, 64, 256, 1024} and kappa in {0, 1e-8, 1e-3, 0.1, 1, 10, 100, 1e3, 1e4, 1e5}.
* ``vmfexp_selections_per_s_n1e6_d64`` and ``boltzmann_selections_per_s_n1e6_d64``: one selection for
  each of 256 different queries over 10^6 uniform actions in d = 64 (the per-query cost: Boltzmann
  needs every score and a softmax per query; vMF-exp one maximum-inner-product search per query, exact).

Goals (the issue): sampling at least as fast as the faster of TFP and scipy everywhere; log normaliser
error <= 1e-6; vMF-exp >= 10x faster than Boltzmann at n = 10^6.

Usage: python scripts/bench_vmf.py [--quick]
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
from benchmark_io import write_results

from jaxsamp.learned.vmf_exploration import boltzmann_select, uniform_actions, vmf_exp_select
from jaxsamp.targets.sphere import log_vmf_normalizer, sample_vmf

DIMS, KAPPAS = (3, 64, 256), (1.0, 100.0)
GRID_DIMS = (2, 3, 4, 10, 64, 256, 1024)
GRID_KAPPAS = (0.0, 1e-8, 1e-3, 0.1, 1.0, 10.0, 100.0, 1e3, 1e4, 1e5)


def best_rate(fn, n: int, repeats: int = 3) -> float:
    """Draws per second: ``n`` over the best of ``repeats`` timed calls after a warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return n / min(times)


def sampling_rates(n: int, dims=DIMS, kappas=KAPPAS) -> dict:
    from scipy import stats
    from tensorflow_probability.substrates import jax as tfp

    out = {}
    for d in dims:
        mu = np.zeros(d, np.float32)
        mu[0] = 1.0
        for kappa in kappas:
            ours = jax.jit(lambda k, m=jnp.asarray(mu), kap=kappa: sample_vmf(k, m, kap, n))
            tfp_dist = tfp.distributions.VonMisesFisher(jnp.asarray(mu), jnp.float32(kappa))
            theirs = jax.jit(lambda k, dist=tfp_dist: dist.sample(n, seed=k))
            scipy_dist = stats.vonmises_fisher(mu.astype(np.float64), kappa)
            rng = np.random.default_rng(0)
            tag = f"d{d}_k{int(kappa)}"
            rates = {
                "jaxsamp": best_rate(lambda: ours(jax.random.key(0)).block_until_ready(), n),
                "tfp": best_rate(lambda: theirs(jax.random.key(0)).block_until_ready(), n),
                "scipy": best_rate(lambda: scipy_dist.rvs(n, random_state=rng), n),
            }
            for impl, rate in rates.items():
                out[f"vmf_samples_per_s_{impl}_{tag}"] = rate
            out[f"vmf_samples_per_s_{tag}_ratio_vs_best_other"] = rates["jaxsamp"] / max(rates["tfp"], rates["scipy"])
            print(tag, {k: f"{v:.3g}" for k, v in rates.items()}, flush=True)
    return out


def log_norm_error() -> float:
    import mpmath

    mpmath.mp.dps = 40
    worst = 0.0
    with jax.enable_x64(True):
        for d in GRID_DIMS:
            got = np.asarray(log_vmf_normalizer(d, np.asarray(GRID_KAPPAS, np.float64)))
            for kappa, value in zip(GRID_KAPPAS, got):
                if kappa == 0:
                    want = mpmath.loggamma(d / 2) - mpmath.log(2) - d / 2 * mpmath.log(mpmath.pi)
                else:
                    v = mpmath.mpf(d) / 2 - 1
                    want = v * mpmath.log(kappa) - d / 2 * mpmath.log(2 * mpmath.pi) - mpmath.log(mpmath.besseli(v, kappa))
                worst = max(worst, abs(value - float(want)) / max(1.0, abs(float(want))))
    return worst


def selection_rates(n_actions: int, num_queries: int, d: int = 64, kappa: float = 10.0) -> dict:
    actions = uniform_actions(jax.random.key(0), n_actions, d)
    queries = uniform_actions(jax.random.key(1), num_queries, d)
    keys = jax.random.split(jax.random.key(2), num_queries)
    # one query after another (lax.map): each selection pays its own search, and memory stays O(n)
    vmf = jax.jit(lambda ks, qs, x: jax.lax.map(lambda a: vmf_exp_select(a[0], a[1], x, kappa, 1)[0], (ks, qs)))
    boltz = jax.jit(lambda ks, qs, x: jax.lax.map(lambda a: boltzmann_select(a[0], a[1], x, kappa, 1)[0], (ks, qs)))
    tag = f"n1e{int(round(np.log10(n_actions)))}_d{d}"
    return {
        f"vmfexp_selections_per_s_{tag}": best_rate(lambda: vmf(keys, queries, actions).block_until_ready(), num_queries),
        f"boltzmann_selections_per_s_{tag}": best_rate(lambda: boltz(keys, queries, actions).block_until_ready(), num_queries),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI-sized run (d = 64, kappa = 1, 1000 draws; 10^4 actions)")
    args = parser.parse_args()
    results = sampling_rates(1_000, (64,), (1.0,)) if args.quick else sampling_rates(100_000)
    results["vmf_log_norm_max_rel_err"] = log_norm_error()
    results.update(selection_rates(10_000 if args.quick else 1_000_000, 16 if args.quick else 256))
    for key, value in results.items():
        print(f"{key}: {value:.4g}")
    print(f"wrote {write_results('bench_vmf', results, quick=args.quick)}")


if __name__ == "__main__":
    main()
