"""MILE against the NUTS ensemble (BDE) and the deep ensemble (DE) on UCI regression, CPU-sized.

Protocol (fixed before the first full run; run alone on the machine, issue 19):

* Data sets airfoil, concrete, energy and yacht, each through its shipped config
  ``configs/mile_<dataset>.yaml`` and the ``mile`` experiment kind (the CLI's path). Bikesharing and
  protein are not run: on 2 CPU cores one gradient of the 12 members costs 20-60x airfoil's, so MILE
  alone would take about 15-40 minutes per seed and BDE hours (their configs run MILE only).
* Seeds 0, 1, 2: seed ``k`` sets the data split (``target.params.split_seed=k``) and every key of the
  run (``seed=k``).
* Network and deep ensemble as in the paper's code (``experiments/replicate_uci``): 16-16-2 ReLU network
  with mean and log-scale outputs, N(0, 1) prior, 12 members trained by AdamW (lr 1e-3, weight decay 1e-3,
  batch 32, at most 500 epochs, early stopping with patience 10 on the validation split).
* Budgets, as counts of steps per member (the paper's scaled by 1/5 for a 2-core CPU, NUTS's warm-up
  kept): MILE tunes for 10 000 MCLMC steps (8000 / 1000 / 1000 over its three phases; V* 0.5 -> 0.1,
  eps_0 1e-3, L_0 max(sqrt d, 15)) and samples 2000 steps thinned by 10, 200 draws per member (paper:
  50 000 and 10 000); BDE window-adapts NUTS (max depth 10, target acceptance 0.8) for 100 steps and
  keeps 200 draws per member (paper: 100 and 1000).
* Figures, per method ``de`` / ``mile`` / ``bde`` and data set, each recorded per seed and as mean, sd
  and seed count (``benchmark_io.record_seed``): ``{m}_{ds}_lppd`` (the headline: test LPPD, the
  log of the posterior-predictive mean density per test point, averaged; standardised units, all
  12 x 200 draws), ``_rmse`` (of the predictive mean), ``_coverage90`` (central 90 % predictive
  intervals), ``_seconds`` (de: training; mile / bde: tuning + sampling, the shared ensemble not
  included; compilation included) and ``_grad_evals`` (gradient evaluations of all members in
  full-batch equivalents: a mini-batch of 32 counts 32 / n_train); plus ``mile_{ds}_speedup_vs_bde``
  (``bde_seconds / mile_seconds``) and ``{mile,bde}_{ds}_rhat_test_loglik`` (R-hat over the members of
  each draw's mean test log density).
* Seed 0's LPPD-against-time figure of each data set goes to ``benchmarks/results/bench_mile_<ds>.png``.

Goals (the issue): MILE's LPPD >= BDE's and >= DE's on every data set, at >= 5x less wall time than BDE.

``--quick`` (run by tests/scripts/test_bench_mile.py): yacht, seed 0, 4 members, at most 40 epochs,
MILE 200 tuning steps and 20 draws thinned by 2, BDE 20 warm-up steps and 20 draws at depth <= 5.

Usage: python scripts/bench_mile.py [--quick] [--datasets airfoil yacht] [--seeds 0 1 2]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from benchmark_io import RESULTS_DIR, record_seed, write_results

from jaxsamp.experiments.config import load_config
from jaxsamp.experiments.runner import run_experiment

ROOT = Path(__file__).resolve().parent.parent
DATASETS = ("airfoil", "concrete", "energy", "yacht")
SEEDS = (0, 1, 2)
FIGURES = ("lppd", "rmse", "coverage90", "seconds", "grad_evals")
QUICK = [
    "run.num_chains=4",
    "sampler.params.deep_ensemble.max_epochs=40",
    "sampler.params.mile.tune_steps=200",
    "sampler.params.mile.num_samples=20",
    "sampler.params.mile.thinning=2",
    "sampler.params.bde.warmup_steps=20",
    "sampler.params.bde.num_samples=20",
    "sampler.params.bde.max_num_doublings=5",
]


def run_one(dataset: str, seed: int, out_dir: Path, quick: bool) -> tuple[dict, Path]:
    """One (data set, seed) cell through the experiment kind; its metrics and run folder."""
    overrides = [
        f"seed={seed}",
        f"target.params.split_seed={seed}",
        f"run.out_dir={out_dir}",
        "run.progress=false",
        "sampler.params.save_draws=false",
        *(QUICK if quick else []),
    ]
    cfg = load_config(ROOT / "configs" / f"mile_{dataset}.yaml", overrides)
    run_dir, metrics = run_experiment(cfg, verbose=False)
    return metrics, run_dir


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--datasets", nargs="+", choices=DATASETS, default=None)
    parser.add_argument("--seeds", nargs="+", type=int, default=None)
    args = parser.parse_args(argv)
    datasets = args.datasets or (("yacht",) if args.quick else DATASETS)
    seeds = args.seeds or ((0,) if args.quick else SEEDS)
    name = "bench_mile"
    suffix = "_quick" if args.quick else ""
    results: dict = {}
    out_dir = Path(tempfile.mkdtemp(prefix="bench_mile_"))
    try:
        for dataset in datasets:
            for seed in seeds:
                start = time.perf_counter()
                metrics, run_dir = run_one(dataset, seed, out_dir, args.quick)
                for method in ("de", "mile", "bde"):
                    for figure in FIGURES:
                        record_seed(
                            results,
                            name,
                            f"{method}_{dataset}_{figure}",
                            seed,
                            metrics[f"{method}_{figure}"],
                            args.quick,
                        )
                for method in ("mile", "bde"):
                    record_seed(
                        results,
                        name,
                        f"{method}_{dataset}_rhat_test_loglik",
                        seed,
                        metrics.get(f"{method}_rhat_test_loglik", float("nan")),
                        args.quick,
                    )
                record_seed(
                    results,
                    name,
                    f"mile_{dataset}_speedup_vs_bde",
                    seed,
                    metrics["bde_seconds"] / metrics["mile_seconds"],
                    args.quick,
                )
                if seed == 0:
                    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
                    shutil.copy(run_dir / "lppd_vs_time.png", RESULTS_DIR / f"{name}_{dataset}{suffix}.png")
                write_results(name, results, quick=args.quick, merge=True)
                print(
                    f"{dataset} seed {seed} ({time.perf_counter() - start:.0f} s): "
                    + ", ".join(
                        f"{m} LPPD {metrics[f'{m}_lppd']:.3f} in {metrics[f'{m}_seconds']:.0f} s"
                        for m in ("de", "mile", "bde")
                    ),
                    flush=True,
                )
                for warning in metrics["warnings"]:
                    print(f"  warning: {warning}", flush=True)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
