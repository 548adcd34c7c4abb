"""von Mises-Fisher sampling speed against TFP and scipy, the log normaliser's accuracy, and vMF-exp against Boltzmann.

Protocol (fixed before the first run; run alone on the machine):

* ``vmf_samples_per_s_{impl}_d{d}_k{kappa}`` for ``impl`` in ours (``jaxsamp.targets.sphere.sample_vmf``,
  jitted), TensorFlow Probability's JAX-substrate ``VonMisesFisher`` (jitted) and
  ``scipy.stats.vonmises_fisher``; d in {3, 64, 256}, kappa in {1, 100}; 100 000 draws per call (``--quick``:
  d = 64 and kappa = 1 only, 1000 draws), the best of 3 timed calls after a compiling one; plus ``..._ratio_vs_best_other``
  (ours over the faster of TFP and scipy).
* ``vmf_log_norm_max_rel_err``: float64 log normaliser against mpmath (40 digits) over d in {2, 3, 4,
  10, 64, 256, 1024} and kappa in {0, 1e-8, 1e-3, 0.1, 1, 10, 100, 1e3, 1e4, 1e5} (``--quick``: d in {2, 1024}
  only, every d being one more compilation; tests/targets/test_sphere.py checks the whole grid).
* Selection over 10^6 actions in d = 64, kappa = 10, one selection for each of 256 scored queries (seed 1),
  timed two ways: **one at a time** (``lax.map`` over the queries, each paying its own search; figures
  ``{method}_selections_per_s_{set}``) and **batched** (the 256 queries in one call, sharing matrix-matrix
  products; ``{method}_batched_selections_per_s_{set}``). Boltzmann is exact and float32 like vMF-exp, by two
  samplers: every score, a softmax and the inverse CDF over all n (``boltzmann_select``, figure
  ``boltzmann_full_cdf_...``), and the same blocked products as vMF-exp's exact search with one softmax per
  block and weighted reservoir sampling (``boltzmann_select_batch``, figure ``boltzmann_streamed_...``, also
  given one query at a time); ``boltzmann_selections_per_s_{set}`` is the faster of the two one-at-a-time
  figures and ``boltzmann_batched_...`` the streamed batch, so the comparison stays like for like. vMF-exp
  exact: ``vmf_exp_select`` / ``vmf_exp_select_batch`` over the array (one at a time on the uniform set only).
* vMF-exp through the inverted-file index (``jaxsamp.selection.inverted_file_index``, paged: it reads only
  the pages of the lists it probes; a batch shares them): 1024 lists (about sqrt(n)), 10 Lloyd iterations
  on 65 536 training vectors, the default page size. **nprobe is chosen by selection fidelity**
  (``jaxsamp.selection.index_fidelity.choose_nprobe``): the smallest of 8, 16, 32, 64, 128, 192, 256, 384,
  512, 640, 768, 896, 1024 whose coupling bound on the total variation between the index's and exact
  vMF-exp's selection laws (the per-draw disagreement rate on common perturbed directions) is <= 0.02, on
  256 *tuning* queries (seed 3) x 16 perturbed directions (key 5). Then on the scored queries x 16
  directions (key 6): ``vmfexp_ivf_tv_bound_{set}`` (and ``_se``), ``vmfexp_ivf_recall_{set}`` (recall@1 on
  the same draws, = 1 - the bound), ``vmfexp_ivf_rows_read_fraction_{set}`` (rows read per draw over n),
  ``vmfexp_ivf_nprobe_{set}``; speeds ``vmfexp_ivf_selections_per_s_{set}`` and
  ``vmfexp_ivf_batched_selections_per_s_{set}``; the headline ``vmfexp_ivf_speedup_vs_boltzmann_{set}``
  (one at a time over one at a time) and ``vmfexp_ivf_batched_speedup_vs_boltzmann_batched_{set}``.
  Two action sets: ``n1e6_d64`` (uniform, the worst case for any index: no structure) and
  ``n1e6_d64_clustered`` (1000 vMF clusters of concentration 50 around uniform centres, like real
  embeddings).
* The selection-probability plot of the paper's simulation (the ``vmf_exploration_uniform`` config:
  d = 4, kappa = 1, 10^6 uniform actions, 30 000 draws, exact search) is copied to
  ``benchmarks/results/bench_vmf_selection_uniform.png`` with its ``max_rel_dev_*`` figures.

Goals (the issues): sampling at least as fast as the faster of TFP and scipy everywhere; log normaliser
error <= 1e-6; ``vmfexp_ivf_speedup_vs_boltzmann`` >= 10 at n = 10^6 on both sets, at TV bound <= 0.02
(issue 43; batched and one-at-a-time figures both recorded); the d = 4 paper simulation within 5 % of
Boltzmann per bin.

``--quick`` (run by tests/scripts/test_bench_vmf.py) runs every part once at CI size: sampling at d = 64 and
kappa = 1 (1000 draws), the log normaliser at d = 2 and 1024, selection over 10^4 uniform actions (16 queries,
32 lists, nprobe from 8, 16, 32 on 16 x 4 tuning draws; no clustered set) and the selection plot at 5000
actions and 1000 draws.

Usage: python scripts/bench_vmf.py [--quick] [--only sampling|selection]
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np
from benchmark_io import RESULTS_DIR, write_results

from jaxsamp.experiments.vmf_experiment import VmfExplorationSettings, action_embeddings
from jaxsamp.selection.index_fidelity import TV_THRESHOLD, choose_nprobe, perturbed_directions, selection_tv_bound
from jaxsamp.selection.inverted_file_index import build_ivf_index, scanned_rows
from jaxsamp.selection.vmf_exploration import (
    boltzmann_select,
    boltzmann_select_batch,
    max_inner_product,
    uniform_actions,
    vmf_exp_select,
    vmf_exp_select_batch,
)
from jaxsamp.targets.sphere import log_vmf_normalizer, sample_vmf

DIMS, KAPPAS = (3, 64, 256), (1.0, 100.0)
GRID_DIMS = (2, 3, 4, 10, 64, 256, 1024)
GRID_KAPPAS = (0.0, 1e-8, 1e-3, 0.1, 1.0, 10.0, 100.0, 1e3, 1e4, 1e5)
QUICK_GRID_DIMS = (2, 1024)  # the grid's two ends


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


def log_norm_error(dims=GRID_DIMS) -> float:
    import mpmath

    mpmath.mp.dps = 40
    worst = 0.0
    with jax.enable_x64(True):
        for d in dims:
            got = np.asarray(log_vmf_normalizer(d, np.asarray(GRID_KAPPAS, np.float64)))
            for kappa, value in zip(GRID_KAPPAS, got):
                if kappa == 0:
                    want = mpmath.loggamma(d / 2) - mpmath.log(2) - d / 2 * mpmath.log(mpmath.pi)
                else:
                    v = mpmath.mpf(d) / 2 - 1
                    want = v * mpmath.log(kappa) - d / 2 * mpmath.log(2 * mpmath.pi) - mpmath.log(mpmath.besseli(v, kappa))
                worst = max(worst, abs(value - float(want)) / max(1.0, abs(float(want))))
    return worst


NPROBE_CANDIDATES = (8, 16, 32, 64, 128, 192, 256, 384, 512, 640, 768, 896, 1024)


def selection_rates(n_actions: int, num_queries: int, num_lists: int, clustered: bool = True, d: int = 64,
                    kappa: float = 10.0, draws_per_query: int = 16) -> dict:
    tag = f"n1e{int(round(np.log10(n_actions)))}_d{d}"
    keys = jax.random.split(jax.random.key(2), num_queries)

    def per_query(select):
        """One query after another (lax.map): each selection pays its own search, and memory stays O(n)."""
        return jax.jit(lambda ks, qs, x: jax.lax.map(lambda a: select(a[0], a[1], x), (ks, qs)))

    def batched(select):
        """The queries in one call: one selection each, sharing the matrix-matrix products."""
        return jax.jit(lambda k, qs, x: select(k, qs, x))

    one_at_a_time = {
        "boltzmann_full_cdf": per_query(lambda k, q, x: boltzmann_select(k, q, x, kappa, 1)[0]),
        "boltzmann_streamed": per_query(lambda k, q, x: boltzmann_select_batch(k, q[None], x, kappa)[0]),
        "vmfexp": per_query(lambda k, q, x: vmf_exp_select(k, q, x, kappa, 1)[0]),
    }
    all_at_once = {
        "boltzmann": batched(lambda k, qs, x: boltzmann_select_batch(k, qs, x, kappa)),
        "vmfexp": batched(lambda k, qs, x: vmf_exp_select_batch(k, qs, x, kappa)),
    }
    out = {}
    sets = [("", uniform_actions(jax.random.key(0), n_actions, d))]
    if clustered:
        sets.append(("_clustered", action_embeddings(VmfExplorationSettings(
            actions="clustered", num_actions=n_actions, num_clusters=min(1000, n_actions // 10), cluster_kappa=50.0), d)))
    for name, actions in sets:
        queries = uniform_actions(jax.random.key(1), num_queries, d)
        tuning = uniform_actions(jax.random.key(3), num_queries, d)
        rates = {}
        for method, select in one_at_a_time.items():
            if method != "vmfexp" or not name:  # exact vMF-exp one at a time: the uniform set only
                rates[method] = best_rate(lambda: select(keys, queries, actions).block_until_ready(), num_queries)
        rates["boltzmann"] = max(rates["boltzmann_full_cdf"], rates["boltzmann_streamed"])  # the faster exact sampler
        for method, select in all_at_once.items():
            rates[method + "_batched"] = best_rate(lambda: select(keys[0], queries, actions).block_until_ready(),
                                                   num_queries)
        start = time.perf_counter()
        index = build_ivf_index(jax.random.key(4), actions, num_lists)
        out[f"ivf_build_seconds_{tag}{name}"] = time.perf_counter() - start

        candidates = [p for p in NPROBE_CANDIDATES if p < num_lists] + [num_lists]
        choice = choose_nprobe(jax.random.key(5), index, actions, tuning, kappa, threshold=TV_THRESHOLD,
                               draws_per_query=draws_per_query, candidates=candidates)
        nprobe = choice.nprobe
        scored = perturbed_directions(jax.random.key(6), queries, kappa, draws_per_query)
        bound, se = selection_tv_bound(index, scored, max_inner_product(scored, actions, "exact", 0.0), nprobe)
        ivf = per_query(lambda k, q, x: vmf_exp_select(k, q, x, kappa, 1, nprobe=nprobe, batch_size=1)[0])
        ivf_batched = batched(lambda k, qs, x: vmf_exp_select_batch(k, qs, x, kappa, nprobe=nprobe))
        rates["vmfexp_ivf"] = best_rate(lambda: ivf(keys, queries, index).block_until_ready(), num_queries)
        rates["vmfexp_ivf_batched"] = best_rate(lambda: ivf_batched(keys[0], queries, index).block_until_ready(),
                                                num_queries)
        out[f"vmfexp_ivf_nprobe_{tag}{name}"] = nprobe
        out[f"vmfexp_ivf_tuning_tv_bound_{tag}{name}"] = choice.tv_bound
        out[f"vmfexp_ivf_tv_bound_{tag}{name}"] = bound
        out[f"vmfexp_ivf_tv_bound_se_{tag}{name}"] = se
        out[f"vmfexp_ivf_recall_{tag}{name}"] = 1.0 - bound
        rows_read = float(jnp.mean(scanned_rows(index, scored, nprobe)))
        out[f"vmfexp_ivf_rows_read_fraction_{tag}{name}"] = rows_read / n_actions
        out.update({f"{method}_selections_per_s_{tag}{name}": rate for method, rate in rates.items()})
        out[f"vmfexp_ivf_speedup_vs_boltzmann_{tag}{name}"] = rates["vmfexp_ivf"] / rates["boltzmann"]
        out[f"vmfexp_ivf_batched_speedup_vs_boltzmann_batched_{tag}{name}"] = (rates["vmfexp_ivf_batched"]
                                                                              / rates["boltzmann_batched"])
        print(tag + name, {k: f"{v:.3g}" for k, v in rates.items()},
              f"nprobe {nprobe} (tuning bounds {choice.tv_bounds}), TV bound {bound:.4f} +- {se:.4f}", flush=True)
    return out


def selection_plot(quick: bool) -> dict:
    """Run the paper's simulation config and keep its plot next to the JSON."""
    import shutil
    from pathlib import Path

    from jaxsamp.experiments.config import load_config
    from jaxsamp.experiments.runner import run_experiment

    root = Path(__file__).resolve().parents[1]
    overrides = ["sampler.params.num_actions=5000", "sampler.params.num_draws=1000"] if quick else []
    cfg = load_config(root / "configs" / "vmf_exploration_uniform.yaml", [*overrides, "run.out_dir=" + str(root / "runs")])
    run_dir, metrics = run_experiment(cfg, verbose=False)
    suffix = "_quick" if quick else ""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    shutil.copy(run_dir / "selection_probabilities.png", RESULTS_DIR / f"bench_vmf_selection_uniform{suffix}.png")
    return {f"uniform_d4_{k}": v for k, v in metrics.items() if k.startswith("max_rel_dev")}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="CI-sized run (d = 64, kappa = 1, 1000 draws; log normaliser at d = 2 and 1024; "
                        "10^4 uniform actions only; a 5000-action plot)")
    parser.add_argument("--only", choices=("sampling", "selection"),
                        help="one part: the vMF draws and log normaliser, or the exploration selections with the "
                        "d = 4 paper simulation; the other part's recorded figures are kept")
    args = parser.parse_args(argv)
    results = {}
    if args.only != "selection":
        results.update(sampling_rates(1_000, (64,), (1.0,)) if args.quick else sampling_rates(100_000))
        results["vmf_log_norm_max_rel_err"] = log_norm_error(QUICK_GRID_DIMS if args.quick else GRID_DIMS)
    if args.only != "sampling":
        results.update(selection_rates(10_000, 16, 32, clustered=False, draws_per_query=4) if args.quick
                       else selection_rates(1_000_000, 256, 1024))
        results.update(selection_plot(args.quick))
    for key, value in results.items():
        print(f"{key}: {value:.4g}")
    print(f"wrote {write_results('bench_vmf', results, quick=args.quick, merge=args.only is not None)}")


if __name__ == "__main__":
    main()
