"""Suite ``mile``: MILE (Sommer et al. 2025) against the NUTS ensemble (BDE) and the deep ensemble (DE) on UCI
regression, each data set through its shipped config and the ``mile`` experiment kind, all three from the same
ensemble members."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from jaxsamp.bench import cells
from jaxsamp.bench.protocol import Cell, Goal, Protocol
from jaxsamp.core.errors import ConfigError

CONFIGS = Path(__file__).resolve().parents[3] / "configs"
DATASETS = ("airfoil", "concrete", "energy", "yacht")
METHODS = ("de", "mile", "bde")
#: the sections of the ``mile`` kind's sampler parameters that a cell states (the config's values)
SECTIONS = ("deep_ensemble", "mile", "bde")
#: the quick size: 4 members, at most 40 epochs, MILE 200 tuning steps and 20 draws thinned by 2, BDE 20 warm-up
#: steps and 20 draws at depth <= 5
QUICK = {"num_members": 4, "deep_ensemble": {"max_epochs": 40},
         "mile": {"tune_steps": 200, "num_samples": 20, "thinning": 2},
         "bde": {"warmup_steps": 20, "num_samples": 20, "max_num_doublings": 5}}


def ensembles_cell(dataset: str) -> Cell:
    """DE, MILE and BDE on one data set at the settings of ``configs/mile_<dataset>.yaml`` (read into the cell)."""
    from jaxsamp.experiments.config import load_config

    config = f"mile_{dataset}.yaml"
    cfg = load_config(CONFIGS / config)
    params = {"config": config, "num_members": cfg.run.num_chains,
              **{section: dict(cfg.sampler.params[section]) for section in SECTIONS}}
    target = {"name": cfg.target.name, **{k: v for k, v in cfg.target.params.items() if k != "split_seed"}}
    return Cell(f"mile/{dataset}", "mile_ensembles", target, params,
                quick=QUICK)


def derived_figures(figures: dict) -> dict:
    """The figures the goals decide, from a seed's recorded ones: ``mile_speedup_vs_bde`` (``bde_seconds /
    mile_seconds``) and ``mile_lppd_gain_vs_<method>`` (``mile_lppd - <method>_lppd``, same members and split)."""
    out = {}
    if "bde_seconds" in figures and "mile_seconds" in figures:
        out["mile_speedup_vs_bde"] = figures["bde_seconds"] / figures["mile_seconds"]
    for method in ("de", "bde"):
        if f"{method}_lppd" in figures and "mile_lppd" in figures:
            out[f"mile_lppd_gain_vs_{method}"] = figures["mile_lppd"] - figures[f"{method}_lppd"]
    return out


@cells.runner("mile_ensembles")
def ensembles_run(cell: Cell, seed: int, *, target_evals, evaluation: dict, budget_scale: int = 1,
                  checkpoint=None) -> tuple[dict, dict]:
    """The ``mile`` experiment kind on ``params["config"]`` with the cell's settings, at ``seed``.

    Seed ``k`` sets the data split (``target.params.split_seed``) and every key of the run (``seed``); the
    cell's ``num_members`` and its ``deep_ensemble`` / ``mile`` / ``bde`` settings replace the config's. Figures:
    every number of the run's metrics (the kind's glossary names: ``{de,mile,bde}_lppd``, ``_rmse``,
    ``_coverage90``, ``_seconds``, ``_grad_evals``, R-hats, ...) and :func:`derived_figures`; artifacts the bytes
    of its LPPD-against-time plot (``lppd_vs_time_png``). Budgets are step counts of the settings, so
    ``budget_scale`` must be 1.
    """
    from jaxsamp.experiments.config import load_config
    from jaxsamp.experiments.runner import run_experiment

    if budget_scale != 1:
        raise ConfigError(f"cell {cell.name!r}: the mile suite's budgets are its settings' step counts; "
                          f"a budget scale of {budget_scale} does not apply")
    p = cell.params
    settings = [f"sampler.params.{section}.{key}={value!r}" for section in SECTIONS for key, value in p[section].items()]
    out_dir = Path(tempfile.mkdtemp(prefix="jaxsamp_mile_suite_"))
    try:
        cfg = load_config(CONFIGS / p["config"], [
            f"seed={seed}", f"target.params.split_seed={seed}", f"run.num_chains={p['num_members']}",
            f"run.out_dir={out_dir}", "run.progress=false", "sampler.params.save_draws=false", *settings])
        run_dir, metrics = run_experiment(cfg, verbose=False)
        plot = (run_dir / "lppd_vs_time.png").read_bytes()
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    figures = cells.floats({k: v for k, v in metrics.items() if k not in ("verdict", "warnings")})
    return {**figures, **derived_figures(figures)}, {"lppd_vs_time_png": plot, "warnings": metrics["warnings"]}


def after_seed(cell: str, seed: int, figures: dict, artifacts: dict, *, results_dir, quick: bool) -> None:
    """Keep the seed's LPPD-against-time plot as ``mile_<dataset>_seed<k>[_quick].png``; print its warnings."""
    for warning in artifacts.get("warnings", ()):
        print(f"  {cell} seed {seed} warning: {warning}", flush=True)
    if "lppd_vs_time_png" in artifacts:
        dataset = cell.split("/")[1]
        path = Path(results_dir) / f"mile_{dataset}_seed{seed}{'_quick' if quick else ''}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(artifacts["lppd_vs_time_png"])


ISSUE = "issue 19: MILE's test LPPD at least BDE's and DE's on every data set, at least 5x faster than BDE"
PROTOCOL = Protocol(
    suite="mile",
    summary="MILE against the NUTS ensemble (BDE) and the deep ensemble on UCI airfoil, concrete, energy and yacht "
            "(CPU budgets, a fifth of the paper's), test LPPD and wall time",
    cells=tuple(ensembles_cell(d) for d in DATASETS),
    seeds=(0, 1, 2),
    headline="mile_lppd",
    figures=("bde_lppd", "de_lppd", "mile_lppd_gain_vs_bde", "mile_lppd_gain_vs_de", "mile_speedup_vs_bde",
             "mile_rmse", "bde_rmse", "de_rmse", "mile_coverage90", "bde_coverage90", "de_coverage90",
             "mile_seconds", "bde_seconds", "de_seconds", "mile_grad_evals", "bde_grad_evals", "de_grad_evals",
             "mile_rhat_test_loglik", "bde_rhat_test_loglik"),
    evaluation={},
    quick_evaluation={},
    goals=tuple(goal for d in DATASETS for goal in (
        Goal(f"mile/{d}", "mile_lppd_gain_vs_bde", 0.0, better="above", source=ISSUE),
        Goal(f"mile/{d}", "mile_lppd_gain_vs_de", 0.0, better="above", source=ISSUE),
        Goal(f"mile/{d}", "mile_speedup_vs_bde", 5.0, better="above", source=ISSUE))),
    notes="""\
MILE (Sommer et al. 2025, "Microcanonical Langevin Ensembles", ICLR): MCLMC tuned and run from each member of a
deep ensemble, against the deep ensemble itself (DE) and the NUTS ensemble (BDE) from the same members. Fixed
before the first full run (issue 19), to run alone on the machine.

Cells: one per data set (airfoil, concrete, energy, yacht), each the ``mile`` experiment kind on its shipped config
``configs/mile_<dataset>.yaml`` (the CLI's path): one run trains the deep ensemble and then samples MILE and BDE
from its members, so the three methods of a cell share members, split and seed, and their figures carry the
method's prefix (``de_``, ``mile_``, ``bde_``). Bikesharing and protein are not cells: on 2 CPU cores one gradient
of the 12 members costs 20-60x airfoil's, so MILE alone would take 15-40 minutes per seed and BDE hours (their
configs run MILE only).

Seeds 0, 1, 2: seed ``k`` sets the data split (``target.params.split_seed = k``) and every key of the run
(``seed = k``).

Network and deep ensemble as in the paper's code (``experiments/replicate_uci``): a 16-16-2 ReLU network with mean
and log-scale outputs, N(0, 1) prior, 12 members trained by AdamW (lr 1e-3, weight decay 1e-3, batch 32, at most
500 epochs, early stopping with patience 10 on the validation split).

Budgets, as steps per member (the paper's scaled by 1/5 for a 2-core CPU, NUTS's warm-up kept; each cell states
them): MILE tunes for 10 000 MCLMC steps (8000 / 1000 / 1000 over its three phases; V* 0.5 -> 0.1, eps_0 1e-3, L_0
max(sqrt d, 15)) and samples 2000 steps thinned by 10, 200 draws per member (paper: 50 000 and 10 000); BDE
window-adapts NUTS (max depth 10, target acceptance 0.8) for 100 steps and keeps 200 draws per member (paper: 100
and 1000). MILE and BDE do not get equal budgets, by design: as in the paper, each method runs at its own
budget and the comparison is quality against wall time.

Figures (the ``mile`` kind's glossary names): ``mile_lppd`` (the headline), ``de_lppd`` and ``bde_lppd``: test
LPPD, the log of the posterior-predictive mean density per test point, averaged (standardised units, all 12 x 200
draws); ``_rmse`` (of the predictive mean), ``_coverage90`` (central 90 % predictive intervals), ``_seconds`` (de:
training; mile / bde: tuning + sampling, the shared ensemble not included; compilation included), ``_grad_evals``
(gradient evaluations of all members in full-batch equivalents: a mini-batch of 32 counts 32 / n_train),
``{mile,bde}_rhat_test_loglik`` (R-hat over the members of each draw's mean test log density), and every other
number of the run's metrics. From them, per seed, the figures the goals decide: ``mile_speedup_vs_bde``
(``bde_seconds / mile_seconds``) and ``mile_lppd_gain_vs_{bde,de}`` (MILE's LPPD minus the other method's, paired
by construction). Each seed's LPPD-against-time plot goes to ``mile_<dataset>_seed<k>.png`` beside the results.

Goals (issue 19): MILE's LPPD at least BDE's and DE's on every data set (gain above 0), at least 5x less wall time
than BDE (speed-up above 5); each decided by the 95 % interval over the seeds of one machine.

What the suite changes against ``scripts/bench_mile.py`` (whose results, converted, are the legacy seeds): nothing
in the runs (the same configs, overrides, seeds and experiment kind); the script recorded only the five figures of
each method, the R-hats and the speed-up per seed (the LPPD gains are derived from them on conversion), and kept
seed 0's plot only (now ``mile_<dataset>_seed0.png``).
""",
)


LEGACY_FILE = "bench_mile.json"


def legacy_key(name: str):
    """``(cell, figure, 1)`` of a per-seed key of ``bench_mile.json`` (its ``_seed<k>`` cut off):
    ``{method}_{dataset}_{figure}``, the figure under the method's prefix (``mile_airfoil_lppd`` -> ``mile_lppd``)."""
    for method in METHODS:
        for dataset in DATASETS:
            head = f"{method}_{dataset}_"
            if name.startswith(head):
                return f"mile/{dataset}", f"{method}_{name[len(head):]}", 1
    return None
