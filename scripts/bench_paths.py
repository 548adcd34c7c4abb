"""Diffusion path samplers on the Beyond-ELBOs targets, SMC at equal evaluations, and TPS-DPS on the double well.

Protocol (fixed before the first run; every variant gets the same budget):

* **PIS and DDS** (``jaxsamp.learned.diffusion.pis_dds``), each with the ``kl`` and the
  ``log_variance`` loss, on ``funnel`` (d = 10), ``gmm`` (40 modes, d = 2) and ``many_well``
  (d = 32). 100 SDE steps (the published yardstick's), batches of 256 paths, learning rate 1e-3
  (twice the Beyond-ELBOs 5e-4: the CPU budget allows ~1/40 of its 40 000 iterations), gradient
  clip 1, LangevinNet 2 x 64, and the Beyond-ELBOs per-target scales (PIS ``max_diffusion`` 4 /
  160 / 4, DDS ``init_std`` 1 / 40 / 1, DDS ``noise_scale`` 6). The issue's CPU caps (3 minutes on
  funnel and gmm, 8 on many-well) are turned into update counts, equal for the four variants of a target,
  so that the quality figures do not depend on machine load (the log-variance loss evaluates the target's
  gradient twice per path step, to simulate and again along the stored path, so at equal updates it
  spends twice the KL loss's energy evaluations; ``energy_evals`` records them): the slowest
  variant, timed alone on this 2-core machine after compilation (5.49 / 4.65 / 4.55 updates per
  second), fits the cap: 950 (funnel), 800 (gmm) and 2100 (many-well) updates. ``train_minutes`` is
  recorded as measured (it grows when other jobs share the machine).
* **KL without the stochastic term** (issue 44; variants ``pis-kl_nostochastic`` and ``dds-kl_nostochastic``,
  run only when named in ``--variants``; fixed before their first run): the ``kl`` loss trained with
  ``kl_stochastic_term=False`` (``PisSettings`` / ``DdsSettings``: the zero-mean stochastic Girsanov term left out of the
  training loss; evaluation weights exact as for every variant), at the same updates, batch, steps and
  learning rate as ``kl`` on the funnel, seeds 0, 1, 2, evaluated as above (10 000 paths). Headline
  ``{pis,dds}_kl_nostochastic_funnel_logz_abs_err`` beside ``{pis,dds}_kl_funnel_logz_abs_err`` (the issue's
  goal: <= 0.26).
* **The 15-minute budget** (issue 44's funnel goal, log Z error <= 0.26 "at a budget that fits <= 15 minutes per
  run"; ``--budget-scale K``, fixed 2026-12-05 before its first run): each run trains K times its target's
  updates (K = 5: 4750 funnel updates, what 15 minutes buy the slowest variant alone at the rate above), the
  figures named ``{method}_{loss}_{target}_x{K}_{figure}``. Variants ``pis-kl_nostochastic`` (the headline:
  the 3-minute protocol's best on the funnel, picked on its seeds 0-2) and ``pis-kl`` (the same budget with
  the stochastic term), on **new seeds 3, 4, 5**, so that nothing is scored on the draws it was picked on;
  evaluation as below (10 000 paths). Command: ``python scripts/bench_paths.py --groups diffusion --targets
  funnel --budget-scale 5 --seeds 3 4 5 --variants pis-kl_nostochastic pis-kl``. Counted in updates, so it
  can share the machine; each run is recorded as it lands.
* **Mode coverage plot**: samples of the four gmm runs of each seed next to exact samples,
  ``benchmarks/results/bench_paths_gmm_seed{k}.png``.
* **Evaluation** (``jaxsamp.learned.diffusion.evaluation.path_figures``): 2000 forward paths, 2000
  exact samples and their backward paths. Headline: ``logz_abs_err``, the importance-weighted
  (reverse) log Z error; also ``elbo``, ``eubo``, ``ess``, ``sinkhorn``, ``emc`` (gmm),
  ``energy_evals`` (training) and ``train_minutes``.
  **From issue 44 on** (the runs recorded before it used the 2000 paths above, and are to be re-run): one 2000-path
  log Z is about as noisy as the spread between trained models (one funnel model: 0.43 ± 0.10 over disjoint
  2000-path sets), so ``--eval-paths`` (default 10 000, as Sendera et al.'s code) forward paths and as many exact
  samples are scored: ``logz_abs_err`` is the error of the log Z of all of them (headline), and
  ``logz_abs_err_sets_mean`` / ``logz_abs_err_sets_sd`` the mean and sd of the errors of ``--eval-sets`` (5)
  disjoint sets of them (2000 paths each: Sendera et al.'s Table 1 reports such a mean ± sd, over 5 runs), with
  ``logz_sets_sd`` the sd of their log Z. ``elbo``, ``eubo`` and ``ess`` use all paths; ``sinkhorn`` the first
  set (2000, its protocol size). ``--quick``: 128 paths in 2 sets.
* **Many-well against the collapse value**: a sampler whose paths sit only in the deeper well of each of the 16
  double wells gets a log Z error of ``16 log(1 / p)`` with ``p`` the deeper well's mass (0.8443), 2.708 --
  the published PIS / TB / VarGrad 2.67-2.69 is that value. It is computed from the target
  (``ManyWell.deeper_wells_log_Z_gap``) and recorded as ``many_well_collapse_logz_abs_err``; a many-well figure
  shows mode mixing only below it.
* **SMC at equal evaluations**: ``jaxsamp.smc.anneal`` along the geometric path from
  ``N(0, s^2 I)`` (s = 1 / 40 / 2 for funnel / gmm / many-well), 2000 particles, a linear schedule
  whose length spends the mean training evaluations of the four diffusion runs of that target and
  seed, 5 MALA steps per level (step 0.05 / 0.5 / 0.02), resampling at ESS < 0.5:
  ``smc_{target}_logz_abs_err``.
* **TPS-DPS** (``jaxsamp.learned.diffusion.tps_dps``) on ``double_well_2d``: the reference's settings at half
  its energy evaluations (256 paths per rollout, 19 rollouts, annealing over the first 10, 100
  updates of batch 256 per rollout, learning rates 1e-3 / 1e-2), with each control variate
  (``learned`` is the headline: ``tps_thp``, ``tps_ets``, ``tps_rmsd``, ``tps_energy_evals``; then
  ``tps_{variate}_thp`` ...); evaluation on 512 paths at 1200 K.
* **Seeds 0, 1, 2**; each figure is recorded per seed (``..._seed{k}``) as soon as its run ends (the
  JSON merges), and ``{figure}`` / ``{figure}_sd`` are the mean and standard deviation over the
  seeds recorded so far (``{figure}_seeds`` counts them). Runs go seed by seed, cheapest target first.

Every learned run trains through :func:`jaxsamp.fit` (registered ``pis``, ``dds`` and ``tps_dps`` with their
settings objects, ``key`` the seed's key); the evaluation and sample keys are the seed key's ``fold_in`` 2 and 3,
as before. Changes from the results recorded before training moved onto ``fit`` (same protocol): ``fit`` splits
the seed's key into the initialisation and the training key, where the earlier runs initialised at its
``fold_in`` 0 and trained at its ``fold_in`` 1, so the random stream of training differs; ``tps_train_minutes``
is ``fit``'s training seconds (compilation included), where before it also counted the evaluation's 512 paths.

Usage: python scripts/bench_paths.py [--quick] [--groups diffusion smc tps] [--targets ...] [--seeds 0 1 2]
       [--variants pis-kl ... pis-kl_nostochastic dds-kl_nostochastic] [--variates learned batch_mean zero]
       [--eval-paths 10000] [--eval-sets 5] [--budget-scale 1]
"""

from __future__ import annotations

import argparse
import json

import benchmark_io
import blackjax
import jax
import numpy as np

import jaxsamp
from jaxsamp.learned.diffusion.pis_dds import DdsSettings, PisSettings
from jaxsamp.learned.diffusion.tps_dps import TpsDpsSettings

TARGETS = {  # name: (registry params, PIS max_diffusion, DDS init_std, training updates, SMC base scale, MALA step)
    "funnel": ({"name": "funnel", "dim": 10}, 4.0, 1.0, 950, 1.0, 0.05),
    "gmm": ({"name": "gmm", "dim": 2, "num_modes": 40}, 160.0, 40.0, 800, 40.0, 0.5),
    "many_well": ({"name": "many_well", "dim": 32}, 4.0, 1.0, 2100, 2.0, 0.02),
}
METHODS, LOSSES = ("pis", "dds"), ("kl", "log_variance")
KL_WITHOUT_STOCHASTIC_TERM = "kl_nostochastic"  # a variant run only when named: kl with kl_stochastic_term=False
VARIATES = ("learned", "batch_mean", "zero")


def build_target(name: str):
    params = dict(TARGETS[name][0])
    return jaxsamp.targets.get(params.pop("name"), **params)


def train_diffusion(method, loss, target_name, seed, quick, n_eval: int, n_sets: int, budget_scale: int = 1):
    """Train one PIS/DDS run for ``budget_scale`` times its target's number of updates; return the evaluation
    figures on ``n_eval`` paths (scored whole and as ``n_sets`` disjoint sets) and ``n_eval // n_sets`` samples
    for the mode plots."""
    _, max_diffusion, init_std, updates, _, _ = TARGETS[target_name]
    target = build_target(target_name)
    steps, batch, updates = (16, 32, 20) if quick else (100, 256, updates)
    updates *= budget_scale
    keep_term = loss != KL_WITHOUT_STOCHASTIC_TERM
    common = dict(loss="kl" if not keep_term else loss, num_time_steps=steps, learning_rate=1e-3,
                  kl_stochastic_term=keep_term)
    if method == "pis":
        settings = PisSettings(**common, max_diffusion=max_diffusion)
    else:
        settings = DdsSettings(**common, init_std=init_std)
    key = jax.random.key(seed)
    fitted = jaxsamp.fit(method, target, settings=settings, batch_size=batch, num_steps=updates, key=key,
                         progress=False)
    figures = fitted.evaluate(jax.random.fold_in(key, 2), n_eval, num_sets=n_sets)
    nan = float("nan")
    out = {  # a run whose every path is non-finite has no log Z: recorded as NaN, with the count
        "logz_abs_err": figures.get("log_Z_abs_err", nan),
        "logz_abs_err_sets_mean": figures.get("log_Z_abs_err_sets_mean", nan),
        "logz_abs_err_sets_sd": figures.get("log_Z_abs_err_sets_sd", nan),
        "logz_sets_sd": figures.get("log_Z_hat_sets_sd", nan),
        "eval_paths": n_eval,
        "elbo": figures.get("elbo", nan),
        "eubo": figures.get("eubo", nan),
        "ess": figures.get("ess", 0.0),
        "sinkhorn": figures.get("sinkhorn", nan),
        "nonfinite_paths": int(figures["nonfinite_samples"]),
        "energy_evals": int(fitted.history["target_evals"][-1]),
        "train_minutes": fitted.seconds / 60,
        "skipped_updates": int(fitted.state.opt_state.total_notfinite),
    }
    if "emc" in figures:
        out["emc"] = figures["emc"]
    samples = np.asarray(fitted.sample(jax.random.fold_in(key, 3), n_eval // n_sets).x)
    return out, samples


def plot_modes(target_name, seed, samples: dict, quick):
    """Samples of each 2-D run over the target's density, with exact samples in the last panel."""
    from jaxsamp.experiments.plots import pyplot, save_figure

    plt = pyplot()
    target = build_target(target_name)
    panels = {**samples, "exact": np.asarray(target.sample(jax.random.key(seed), len(next(iter(samples.values())))))}
    lim = 1.15 * np.abs(panels["exact"]).max()
    grid = np.linspace(-lim, lim, 200)
    X, Y = np.meshgrid(grid, grid)
    Z = np.asarray(jax.vmap(target.log_prob)(np.stack([X.ravel(), Y.ravel()], -1).astype(np.float32))).reshape(X.shape)
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 3.4), squeeze=False)
    for ax, (label, pts) in zip(axes[0], panels.items()):
        ax.contourf(X, Y, np.exp(Z - Z.max()), levels=20, cmap="Blues")
        ax.scatter(pts[:, 0], pts[:, 1], s=2, c="C3", alpha=0.4)
        ax.set_title(label, fontsize=9)
        ax.set_xlim(-lim, lim)
        ax.set_ylim(-lim, lim)
        ax.set_aspect("equal")
        ax.set_xticks([])
        ax.set_yticks([])
    suffix = "_quick" if quick else ""
    path = benchmark_io.RESULTS_DIR / f"bench_paths_{target_name}_seed{seed}{suffix}.png"
    save_figure(fig, path, dpi=100)
    print(f"  -> {path}", flush=True)


def smc_at_budget(target_name, seed, budget, quick):
    """Tempered SMC with 2000 particles and 5 MALA steps per level, as many levels as ``budget`` evaluations allow."""
    from jaxsamp.smc import anneal
    from jaxsamp.targets.annealing import geometric_path

    *_, base_scale, step = TARGETS[target_name]
    target = build_target(target_name)
    path = geometric_path(target, base_scale=base_scale)
    particles, mcmc_steps = (64, 2) if quick else (2000, 5)
    levels = max(2, int(budget // (particles * (mcmc_steps + 1))))
    schedule = np.linspace(0.0, 1.0, levels + 1)
    result = anneal(jax.random.key(1000 + seed), path, lambda t: blackjax.mala(lambda x: path.log_prob(x, t), step),
                    particles, schedule=schedule, num_mcmc_steps=mcmc_steps, ess_threshold=0.5)
    return {"logz_abs_err": abs(float(result.samples.log_Z) - float(target.log_Z)),
            "target_evals": int(result.num_target_evals), "levels": levels}


def smc_budget(results: dict, target_name: str, seed: int, quick: bool) -> float:
    """Mean training evaluations of the diffusion runs of ``target_name`` and ``seed``, this run's or recorded ones."""
    recorded = {**benchmark_io.read_results("bench_paths", quick), **results}
    evals = [recorded[k] for m in METHODS for l in LOSSES
             if (k := f"{m}_{l}_{target_name}_energy_evals_seed{seed}") in recorded]
    if not evals:
        raise SystemExit(f"no diffusion run of {target_name} seed {seed} is recorded: run the diffusion group first")
    return float(np.mean(evals))


def tps(variate, seed, quick):
    """TPS-DPS on the double well at half the reference's evaluations; the evaluation figures."""
    target = jaxsamp.targets.get("double_well_2d")
    if quick:
        settings = TpsDpsSettings(num_time_steps=50, batch_size=16, updates_per_rollout=2, annealing_rollouts=2,
                                  control_variate=variate, learning_rate=1e-3, log_z_learning_rate=1e-2)
        paths, rollouts, n_eval = 16, 2, 32
    else:
        settings = TpsDpsSettings(batch_size=256, updates_per_rollout=100, annealing_rollouts=10, control_variate=variate,
                                  learning_rate=1e-3, log_z_learning_rate=1e-2)
        paths, rollouts, n_eval = 256, 19, 512
    key = jax.random.key(seed)
    fitted = jaxsamp.fit("tps_dps", target, settings=settings, batch_size=paths, num_steps=rollouts, key=key,
                         progress=False)
    evaluation = fitted.evaluate(jax.random.fold_in(key, 2), n_eval)
    figures = {f"tps_{name}": evaluation[name] for name in ("thp", "ets", "ets_std", "rmsd", "rmsd_std")}
    figures["tps_energy_evals"] = int(evaluation["target_evals"])  # the name of the recorded results
    figures["tps_train_minutes"] = fitted.seconds / 60
    return figures


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="CI-sized run (numbers not meaningful)")
    parser.add_argument("--groups", nargs="+", choices=("diffusion", "smc", "tps"), default=["diffusion", "smc", "tps"])
    parser.add_argument("--targets", nargs="+", choices=list(TARGETS), default=list(TARGETS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--variants", nargs="+",
                        choices=[f"{m}-{l}" for m in METHODS for l in (*LOSSES, KL_WITHOUT_STOCHASTIC_TERM)],
                        help="diffusion variants to run (default the four of METHODS x LOSSES; to finish a seed that "
                             f"was cut short); {{pis,dds}}-{KL_WITHOUT_STOCHASTIC_TERM} only when named")
    parser.add_argument("--variates", nargs="+", choices=VARIATES,
                        help="TPS-DPS control variates to run (default all three; to finish a seed that was cut short)")
    parser.add_argument("--eval-paths", type=int, default=None,
                        help="forward paths (and exact samples) scored per run (default 10 000; --quick 128)")
    parser.add_argument("--budget-scale", type=int, default=1,
                        help="train K times each target's updates; figures {method}_{loss}_{target}_x{K}_* (default 1)")
    parser.add_argument("--eval-sets", type=int, default=None,
                        help="disjoint sets the paths are also scored in, for the spread (default 5; --quick 2)")
    args = parser.parse_args(argv)
    if args.budget_scale < 1:
        parser.error(f"--budget-scale must be a positive integer, got {args.budget_scale}")
    if args.budget_scale > 1 and args.groups != ["diffusion"]:
        parser.error("--budget-scale scales the diffusion samplers' training only: pass --groups diffusion")
    budget = f"_x{args.budget_scale}" if args.budget_scale > 1 else ""
    n_eval = args.eval_paths or (128 if args.quick else 10_000)
    n_sets = args.eval_sets or (2 if args.quick else 5)
    targets = ["gmm"] if args.quick else args.targets
    seeds = args.seeds[:1] if args.quick else args.seeds
    variates = VARIATES[:1] if args.quick else [v for v in VARIATES if not args.variates or v in args.variates]
    # quick: both methods and both losses, in two runs (PIS-KL, DDS-LV) rather than four
    variants = list(zip(METHODS, LOSSES)) if args.quick else [(m, l) for m in METHODS for l in LOSSES]
    if args.variants:
        named = [tuple(v.split("-", 1)) for v in args.variants]
        variants = [v for v in variants if v in named] + [v for v in named if v[1] == KL_WITHOUT_STOCHASTIC_TERM]
    results: dict = {"many_well_collapse_logz_abs_err": build_target("many_well").deeper_wells_log_Z_gap}

    def save():
        path = benchmark_io.write_results("bench_paths", results, quick=args.quick, merge=True)
        print(f"  -> {path}", flush=True)

    for seed in seeds:
        for target_name in targets:
            samples = {}
            for method, loss in variants if "diffusion" in args.groups else ():
                figures, samples[f"{method}-{loss}"] = train_diffusion(method, loss, target_name, seed, args.quick,
                                                                       n_eval, n_sets, args.budget_scale)
                for fig, value in figures.items():
                    name = f"{method}_{loss}_{target_name}{budget}_{fig}"
                    benchmark_io.record_seed(results, "bench_paths", name, seed, value, args.quick)
                print(f"seed {seed} {method}-{loss} {target_name}{budget}: " + json.dumps(figures), flush=True)
                save()
            if samples and build_target(target_name).event_shape == (2,):
                plot_modes(target_name, seed, samples, args.quick)
            if "smc" in args.groups:
                budget = smc_budget(results, target_name, seed, args.quick)
                figures = smc_at_budget(target_name, seed, budget, args.quick)
                for fig, value in figures.items():
                    benchmark_io.record_seed(results, "bench_paths", f"smc_{target_name}_{fig}", seed, value, args.quick)
                print(f"seed {seed} smc {target_name}: " + json.dumps(figures), flush=True)
                save()
        if "tps" in args.groups:
            for variate in variates:
                figures = tps(variate, seed, args.quick)
                for fig, value in figures.items():
                    name = fig if variate == "learned" else fig.replace("tps_", f"tps_{variate}_")
                    benchmark_io.record_seed(results, "bench_paths", name, seed, value, args.quick)
                print(f"seed {seed} tps {variate}: " + json.dumps(figures), flush=True)
                save()


if __name__ == "__main__":
    main()
