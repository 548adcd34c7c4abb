"""Suite ``leaps``: LEAPS on the critical Ising torus (8 x 8, 15 x 15) and the 15 x 15 Potts model with exact
discrete-time weights, three locally equivariant networks, and tempered SMC with checkerboard heat-bath sweeps at
equal target evaluations (Holderrieth, Albergo & Jaakkola 2025)."""

from __future__ import annotations

import re

import numpy as np

from jaxsamp.bench.protocol import Budget, Cell, Comparison, Goal, Protocol

BETA, POTTS_BETA, POTTS_Q = 0.4407, 1.0010, 3
NETWORKS = ("conv", "mlp", "attention")
#: CPU-sized networks (kernels with K // 2 < 8), each about 0.5 s per forward pass of 2000 walkers on 2 cores
NETWORK_PARAMS = {
    "conv": {"kernel_sizes": [3, 5, 7], "channels": 8, "time_hidden": 16},
    "mlp": {"hidden": [128, 128]},
    "attention": {"features": 16, "num_heads": 2, "num_layers": 2},
}
QUICK_NETWORK_PARAMS = {
    "conv": {"kernel_sizes": [3], "channels": 4, "time_hidden": 8},
    "mlp": {"hidden": [16]},
    "attention": {"features": 8, "num_heads": 2, "num_layers": 1},
}
#: the updates ten minutes of training bought each network alone at 8 x 8 (the recorded runs' means, rounded to
#: the curve's spacing): the plan that sets the curriculum (a third of it); the clock ends the training
PLANNED_UPDATES = {"conv": 19_500, "mlp": 29_500, "attention": 18_500}
STUDY_UPDATES = 10_000  # the proposal study's count: what ten minutes bought LE-attention alone
WALKERS, SAMPLING_STEPS, CURVE_EVERY, CURVE_WALKERS = 2000, 100, 500, 500
SAMPLING_EVALS = WALKERS * (2 * SAMPLING_STEPS + 1)  # one log_prob and one reverse kernel per step, one at the start
FLOORS = {"per_step": None, "per_unit_time": 0.01}  # the exact rule's floor: 1e-4 per step, or 0.01 h per step
#: 15 x 15: the paper's problems, evaluation and training rollouts (Metropolis updates per step: Ising 200, Potts
#: 1000 after 1000 warm-up updates at one step)
L15 = {
    "ising": ({"name": "ising", "L": 15, "beta": BETA},
              {"rollout_steps": 125, "mcmc_updates": 200, "eval_steps": 100, "eval_grid": "uniform"}),
    "potts": ({"name": "potts", "L": 15, "beta": POTTS_BETA, "q": POTTS_Q},
              {"rollout_steps": 125, "mcmc_updates": 1000, "warm_up": 1000, "eval_steps": 300,
               "eval_grid": "cubic_exponential"}),
}
L15_UPDATES = {"ising": 49_850, "potts": 16_850}  # what the recorded finals made (Ising: 102 minutes, Potts: 120)
L15_PILOT_PLAN = {"ising": 4_900, "potts": 1_400}  # ten minutes at the finals' rates (8.1 and 2.3 updates/s)
L15_CURVE_EVERY = {"ising": 500, "potts": 2000}  # a Potts point (500 walkers x 300 steps) costs 0.25-1.5 minutes
QUICK_L15 = {"rollout_steps": 10, "mcmc_updates": 8, "warm_up": 0, "eval_steps": 10}
ISING_8, QUICK_LATTICE = {"name": "ising", "L": 8, "beta": BETA}, {"name": "ising", "L": 4, "beta": BETA}
#: the figures of a learning-curve point (500 walkers, both estimators on the same walkers)
CURVE = {"every": CURVE_EVERY, "num_samples": CURVE_WALKERS, "options": {"compare_weight_points": False},
         "figures": ["ess", "ess_quadrature_paper"]}
QUICK_CURVE = {**CURVE, "every": 4, "num_samples": 32}


def settings(network: str, planned: int, **problem) -> dict:
    """The protocol's LEAPS settings for ``network`` trained ``planned`` updates (the curriculum a third of them);
    ``problem`` replaces fields for the 15 x 15 problems."""
    return {"network": network, "network_params": NETWORK_PARAMS[network], "free_energy_hidden": [64, 64, 64],
            "learning_rate": 1e-3, "lr_decay": 0.9, "lr_decay_every": max(1, planned // 3), "loss_batch": 256,
            "rollout_steps": SAMPLING_STEPS, "curriculum_steps": planned // 3, "rollout_every": 50,
            "buffer_rollouts": 50, "states_per_walker": 16, "mcmc_updates": 64, "eval_steps": SAMPLING_STEPS,
            **problem}


QUICK_SETTINGS = {"free_energy_hidden": [16], "learning_rate": 3e-3, "lr_decay_every": 10, "loss_batch": 32,
                  "rollout_steps": 10, "curriculum_steps": 10, "rollout_every": 5, "buffer_rollouts": 4,
                  "states_per_walker": 4, "mcmc_updates": 8, "eval_steps": 10}


def leaps_cell(name: str, network: str, target: dict, budget: Budget, planned: int, *, problem=None,
               evaluate=None, curve_every: int | None = CURVE_EVERY, quick_target=None, **extra) -> Cell:
    """A LEAPS cell through ``jaxsamp.fit("leaps", ...)``: 200 walkers per training rollout, the training's target
    evaluations summed from its rollouts, a learning curve every 500 updates (with ``curve``)."""
    params = {"method": "leaps", "settings": settings(network, planned, **(problem or {})), "batch_size": 200,
              "evaluate": evaluate or {"compare_weight_points": False},
              "history_totals": {"target_evals": "rollout_target_evals"}, "chunk": CURVE_EVERY, **extra}
    quick = {"target": quick_target or QUICK_LATTICE, "budget_updates": 12, "batch_size": 16, "chunk": 4,
             "settings": {**QUICK_SETTINGS, "network_params": QUICK_NETWORK_PARAMS[network],
                          **({k: v for k, v in QUICK_L15.items()} if problem else {})}}
    if curve_every:
        params["curve"], quick["curve"] = {**CURVE, "every": curve_every}, QUICK_CURVE
    if "checkpoint_every" in extra:
        quick["checkpoint_every"] = 4
    return Cell(name, "fit", target, params, budget, quick=quick)


def study_cell(steps: int, floor: str | None, checkerboard: bool, ten_minutes: bool) -> Cell:
    """LE-attention at 8 x 8 sampled at ``steps`` uniform Euler steps with the floor ``floor`` (None: the steps
    study's, per step), unsplit or in colour-class sub-steps; trained ten minutes or ``STUDY_UPDATES``."""
    problem = {"eval_steps": steps, "jump_floor_rate": FLOORS[floor or "per_step"], "checkerboard": checkerboard}
    name = "-".join(filter(None, ("leaps-attention", f"{steps}steps", floor, "checkerboard" * checkerboard,
                                  "10min" * ten_minutes))) + "/ising-8"
    budget = Budget(updates=2 * STUDY_UPDATES, seconds=600.0) if ten_minutes else Budget(updates=STUDY_UPDATES)
    return leaps_cell(name, "attention", ISING_8, budget, STUDY_UPDATES, problem=problem, curve_every=None)


def smc_cell(name: str, target: dict, budget: Budget, quick_target=None, particles: int = WALKERS) -> Cell:
    """Tempered SMC on LEAPS' path with one checkerboard heat-bath sweep per level, systematic resampling at
    ESS < 0.5."""
    return Cell(name, "tempered_smc", target,
                {"kernel": "heat_bath", "num_particles": particles, "num_mcmc_steps": 1, "ess_threshold": 0.5},
                budget, quick={"target": quick_target or QUICK_LATTICE})  # the same levels on a smaller lattice


L8_CELLS = tuple(f"leaps-{n}/ising-8" for n in NETWORKS)
#: LEAPS inside SMC (issue 59): the trained sampler's own Euler jumps as SMC proposals with their exact
#: incremental weights, systematic resampling below ESS 0.5, one checkerboard heat-bath sweep per level
LEAPS_SMC = {"resample_threshold": 0.5, "resampler": "systematic", "moves": "checkerboard", "num_moves": 1,
             "segment_length": 1}
LEAPS_SMC_GOAL = ("issue 59: LEAPS inside SMC on Ising 15 x 15 at beta_c, its log Z error at most half of tempered "
                  "SMC's with the same moves, particles and evaluations, and an ESS >= 0.67 at every level before "
                  "resampling (the LEAPS paper's figure)")
CELLS = (
    *(leaps_cell(f"leaps-{n}/ising-8", n, ISING_8, Budget(updates=2 * PLANNED_UPDATES[n], seconds=600.0),
                 PLANNED_UPDATES[n], evaluate={"compare_weight_points": True}) for n in NETWORKS),
    smc_cell("smc-heat_bath/ising-8", ISING_8, Budget(target_evals=SAMPLING_EVALS)),
    smc_cell("smc-heat_bath-total/ising-8", ISING_8, Budget(target_evals=SAMPLING_EVALS, match_target_evals=L8_CELLS)),
    *(study_cell(n, None, False, True) for n in (100, 200, 400)),
    *(study_cell(n, floor, False, True) for n in (100, 200, 400) for floor in FLOORS),
    *(study_cell(n, floor, checkerboard, False) for n in (100, 200) for floor in FLOORS
      for checkerboard in (False, True)),
    *(leaps_cell(f"leaps-{n}-10min/{p}-15", n, spec, Budget(updates=2 * L15_PILOT_PLAN[p], seconds=600.0),
                 L15_PILOT_PLAN[p], problem=extra, curve_every=None, quick_target={**spec, "L": 5})
      for p, (spec, extra) in L15.items() for n in NETWORKS),
    *(leaps_cell(f"leaps-conv/{p}-15", "conv", spec, Budget(updates=L15_UPDATES[p]), L15_UPDATES[p], problem=extra,
                 curve_every=L15_CURVE_EVERY[p], quick_target={**spec, "L": 5}, checkpoint_every=5000)
      for p, (spec, extra) in L15.items()),
    smc_cell("smc-heat_bath-reference/potts-15", L15["potts"][0], Budget(target_evals=32_000_000),
             quick_target={**L15["potts"][0], "L": 5}, particles=4000),
    leaps_cell("leaps_smc-conv/ising-15", "conv", L15["ising"][0], Budget(updates=L15_UPDATES["ising"]),
               L15_UPDATES["ising"], problem=L15["ising"][1], evaluate={"smc": LEAPS_SMC}, curve_every=None,
               quick_target={**L15["ising"][0], "L": 5}, checkpoint_every=5000),
    smc_cell("smc-heat_bath-leaps_smc/ising-15", L15["ising"][0],
             Budget(match_target_evals=("leaps_smc-conv/ising-15",), match_figure="sample_target_evals"),
             quick_target={**L15["ising"][0], "L": 5}),
)

PROTOCOL = Protocol(
    suite="leaps",
    summary="LEAPS on Ising 8x8 (three networks, ten minutes each; sampling-step, floor and proposal studies) and on "
            "Ising / Potts 15x15, tempered SMC with heat-bath sweeps at equal target evaluations",
    cells=CELLS,
    seeds=(0, 1, 2),
    headline="log_Z_abs_err",
    figures=("ess", "ess_quadrature_paper", "log_Z_abs_err_quadrature_paper", "log_Z_learned_abs_err", "ess_pre",
             "ess_trapezoid", "log_Z_abs_err_trapezoid", "log_Z_hat", "target_evals", "num_levels", "train_steps",
             "train_seconds", "segment_ess_min", "num_resamplings", "sample_target_evals"),
    evaluation={"num_samples": WALKERS},
    quick_evaluation={"num_samples": 64},
    goals=(
        Goal("leaps-conv/ising-15", "ess", 0.75, better="above", source="issue 16 (the paper on a GPU: 0.67)"),
        Goal("leaps-conv/potts-15", "ess", 0.30, better="above", source="issue 16 (the paper on a GPU: 0.20)"),
        *(Goal(f"leaps-attention-{n}steps-{floor}{cb}/ising-8", "ess", 0.6, better="above", source="issue 44")
          for n in (100, 200) for floor in FLOORS for cb in ("", "-checkerboard")),
        Goal("leaps_smc-conv/ising-15", "log_Z_abs_err", 0.5, "below", source=LEAPS_SMC_GOAL,
             baseline="smc-heat_bath-leaps_smc/ising-15"),
        Goal("leaps_smc-conv/ising-15", "segment_ess_min", 0.67, better="above", source=LEAPS_SMC_GOAL),
    ),
    comparisons=(*(Comparison(cell, baseline, "log_Z_abs_err") for cell in L8_CELLS
                   for baseline in ("smc-heat_bath/ising-8", "smc-heat_bath-total/ising-8")),
                 Comparison("leaps_smc-conv/ising-15", "smc-heat_bath-leaps_smc/ising-15", "log_Z_abs_err")),
    notes="""\
Holderrieth, Albergo & Jaakkola (2025), "LEAPS: a discrete neural sampler via locally equivariant networks" (ICML).

**8 x 8** (issue 16; Ising at beta = 0.4407, exact log Z by Kaufman's formula): LE-conv, LE-MLP and LE-attention
(CPU-sized, ``NETWORK_PARAMS``) each train for ten minutes of training time (``fit``'s ``max_seconds``, compilation
left out, checked every 500 updates); the curriculum takes a third of ``PLANNED_UPDATES``, what ten minutes bought
each network alone in the recorded runs (the script this suite replaces measured it with a timed probe before each
run; the update cap is twice the plan). Training: 200 walkers per rollout of 100 steps, 64 Metropolis updates per
step, a rollout every 50 updates into a buffer of 50 rollouts, Adam 1e-3 decaying x0.9 per curriculum third.
Scored on 2000 walkers with 100 uniform Euler steps: the headline is the unbiased exact discrete-time weights
(``ess``, ``log_Z_abs_err``); LEAPS' own estimator, the paper's Jarzynski quadrature on the SAME walkers
(``_quadrature_paper``: after the jump for Ising, before it for Potts), is the like-for-like figure beside the
paper's ESS (0.67 Ising, 0.20 Potts); the free-energy network's ``log_Z_learned_abs_err``; the quadrature rules on
their own draws as labelled extras (``_pre``, ``_trapezoid``, ``_post``). No network is picked on these draws. The
learning curve: ESS of 500 walkers every 500 updates (both estimators, off the training clock), in each seed's
``curves`` and in ``leaps_ess_curves.png``.

Target evaluations (network passes not counted, as in the paper): a sampling step evaluates ``log_prob`` once
and ``flip_log_ratios`` once per walker (plus one at the start): 2000 x 201 = 402 000; a training rollout step
one ``flip_log_ratios`` per walker and ``mcmc_updates / N`` for its Metropolis correction (LEAPS'
``rollout_target_evals``, summed: ``target_evals``). The SMC baseline (``tempered_smc`` with ``kernel:
heat_bath``: LEAPS' linear-in-beta path, a linear schedule, one checkerboard heat-bath sweep per level, 2000
particles, systematic resampling at ESS < 0.5; a level costs 3 evaluations per particle at 8 x 8, 1 for the weight
and one per colour, as ``jaxsamp.smc.anneal`` counts) gets (a) LEAPS' sampling evaluations
(``smc-heat_bath/ising-8``: 67 levels) and (b) those plus the mean training evaluations of the three networks at
the seed (``smc-heat_bath-total/ising-8``). The old script's counts are the same (it took ``evals // (3 x
particles)`` levels, so the SMC spent exactly 402 000).

**Studies at 8 x 8** (nothing is picked: every cell is reported). The sampling-steps study (2026-12-04,
``leaps-attention-{100,200,400}steps-10min``): does the exact weights' ESS rise with finer time grids? The floor
study (``-{per_step,per_unit_time}-10min``): is the floor per step (1e-4) what makes 400 steps worse than 200? It
samples with the floor per unit time 0.01 (0.01 h per step, equal at 100 steps) beside it. Both train LE-attention
ten minutes as above. The proposal study (issue 44, 2026-12-05; ``leaps-attention-{100,200}steps-{floor}
[-checkerboard]``): training counted in ``STUDY_UPDATES`` updates, so that it can share the machine; sampled unsplit
(both estimators) and in the 2 colour classes of the torus (``checkerboard``: each sub-step an exact AIS move, exact
weights only, 2 network passes per step; read it beside the unsplit chain at twice the steps). Goal (issue 44):
exact-weight ESS >= 0.6 at <= 200 steps.

**15 x 15** (issue 16): the paper's problems, Ising at beta = 0.4407 (exact log Z) and the q = 3 Potts model at
beta = 1.0010 (no exact log Z at this size; ``smc-heat_bath-reference/potts-15``, tempered SMC with 4000 particles
and 32 million evaluations per seed, 2000 levels, is the reference that its ``log_Z_hat`` is read against; the
converted Potts record's ``log_Z_abs_err`` is against the script's reference, the mean of 4 such runs), with the paper's evaluation (Ising 100 uniform Euler steps; Potts 300 steps on the cubic-exponential
grid) and training rollouts (125 steps; Metropolis updates per step Ising 200, Potts 1000 after 1000 warm-up updates
at one step). The network: LE-conv, picked once by ten-minute pilots of each network on validation draws of 500
walkers used for nothing else (recorded 2026-12-04, seed 0; ``leaps-{network}-10min/{problem}-15`` are those pilots' cells, the curriculum
planned for ten minutes at the finals' rates,
reported as results in their own right, not as a choice: the suite picks nothing). The final cells
``leaps-conv/{ising,potts}-15`` train a fixed number of updates (Ising: 49 850, what the recorded 120-minute run
made, and Potts: 16 850, what its 120 minutes made; curve points every 500 and 2000 updates) and checkpoint every 5000 updates under
``benchmarks/results/checkpoints/`` (not committed): a killed run started again with the same command resumes from
its newest checkpoint, so a cell of hours runs in sessions. Goals (issue 16): ESS >= 0.75 (Ising) and >= 0.30
(Potts). Every 15 x 15 cell was run for one seed (0) so far.

**LEAPS inside SMC** (issue 59; fixed on 2026-12-07 before any run): ``leaps_smc-conv/ising-15`` trains as
``leaps-conv/ising-15`` does (LE-conv, 49 850 updates, the same settings, checkpointed every 5000 updates) and is
scored by ``Fitted.evaluate(..., smc=LEAPS_SMC)``: one SMC run of 2000 particles along LEAPS' path whose proposals
are its own 100 Euler jumps with their exact incremental weights, systematic resampling below ESS 0.5 and one
checkerboard heat-bath sweep per level (``Fitted.smc``). Its baseline ``smc-heat_bath-leaps_smc/ising-15`` is
tempered SMC with the same moves, particles and resampling at the evaluations of that sampling run
(``sample_target_evals``). Headline: the SMC estimate's log Z error against Kaufman's exact log Z; goals: at most
half of the baseline's (the per-seed ratio below 0.5) and an ESS >= 0.67, 3 seeds. The ESS read is
``segment_ess_min``, the lowest normalised ESS the weights reach at any level before a resampling: the final
weights after a resampling are uniform (their ESS is 1 whatever the proposal), and the paper's 0.67 is the ESS of
weights never resampled, which a run keeps above 0.67 only if its weights never fall that low. The training
(about 3 hours per seed on one core of the 2-core CPU, two seeds side by side) runs in sessions from its
checkpoints, or on an accelerator.

**What differs from the script** (``scripts/bench_leaps.py``, 2026-11/12; its figures converted): each cell trains
through ``jaxsamp.fit`` with the seed's key (the script folded in the network's index) and is scored once on
``fold_in(key, 2)`` (the script averaged 2 repeats of 2000 walkers: its ``log_Z_abs_err`` was the mean absolute
error of the two, its ``ess`` their mean); the SMC baseline runs once per seed on ``key(1000 + seed)`` (the script
averaged 2 runs); every study cell trains its own model (the script sampled one trained model at every step count
and floor: in the suite, cells of one seed with the same training settings train the same model, bit for bit on one
machine, at the price of a training per cell); the 15 x 15 pilots and the final are separate cells with their own
seeds' keys (the script chained them in resumable stages). Not carried over: the L = 15 proposal cells on the final
model (their figures stay in BENCHMARKS.md's history), the profile of an L = 15 training update and the Potts
reference's 4-run aggregate (the reference cell records one run per seed).
""",
)


def after_seed(cell: str, seed: int, figures: dict, artifacts: dict, *, results_dir, quick: bool) -> None:
    """Redraw the 8 x 8 learning curves from the results file after a seed of a main 8 x 8 cell."""
    if cell not in L8_CELLS:
        return
    from jaxsamp.bench import store

    data = store.read(store.results_path(PROTOCOL.suite, quick, results_dir))
    plot_curves(data["records"], results_dir / f"leaps_ess_curves{'_quick' if quick else ''}.png")


def curve_points(curves: dict, figure: str) -> np.ndarray:
    """``[[updates, value], ...]`` of one estimator's curve: the suite's ``{"step", figure}`` lists or a converted
    record's ``<figure>_curve`` pairs."""
    if figure in curves:
        return np.column_stack([curves["step"], curves[figure]])
    return np.asarray(curves.get(f"{figure}_curve", np.zeros((0, 2))), dtype=float).reshape(-1, 2)


def plot_curves(records: dict, path) -> None:
    """ESS against training updates of every 8 x 8 network and seed: the exact weights (the headline) on the left,
    the paper's quadrature on the same walkers on the right; one colour per network."""
    from jaxsamp.experiments.plots import pyplot, save_figure

    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for ax, (figure, title) in zip(axes, (("ess", "exact weights"), ("ess_quadrature_paper", "the paper's quadrature"))):
        for colour, network in enumerate(NETWORKS):
            for i, (seed, rec) in enumerate(sorted(records.get(f"leaps-{network}/ising-8", {}).items())):
                points = curve_points(rec.get("curves", {}), figure)
                if len(points):
                    ax.plot(points[:, 0], points[:, 1], marker=".", color=f"C{colour}",
                            label=network if i == 0 else None)
        ax.axhline(0.8, color="grey", ls="--", lw=1, label="goal 0.8")
        ax.set(xlabel="training updates", ylabel=f"ESS ({CURVE_WALKERS} walkers)", ylim=(0, 1), title=title)
        ax.legend(loc="upper left", fontsize=8)
    axes[1].set_ylabel("")
    fig.suptitle(f"LEAPS, Ising 8x8 at beta = {BETA}, {SAMPLING_STEPS} sampling steps", fontsize=11)
    save_figure(fig, path, dpi=120)


LEGACY_FILE = "bench_leaps.json"
_RULE = r"(?:_(pre|trapezoid|quadrature_paper))?"
_FIGURE = {"ess": "ess", "logz_hat": "log_Z_hat", "logz_abs_err": "log_Z_abs_err", "logz_fe_abs_err":
           "log_Z_learned_abs_err", "train_steps": "train_steps", "train_steps_per_s": "train_steps_per_s",
           "train_target_evals": "target_evals", "smc_logz_abs_err": "log_Z_abs_err", "smc_levels": "num_levels",
           "smc_target_evals": "target_evals", "train_minutes": "train_minutes"}
_L8 = re.compile(rf"(ess|logz_hat|logz_abs_err)_L8_({'|'.join(NETWORKS)}){_RULE}")
_L8_TRAINING = re.compile(rf"(logz_fe_abs_err|train_steps|train_steps_per_s|train_target_evals)_L8_({'|'.join(NETWORKS)})")
_SMC = re.compile(r"(smc_logz_abs_err|smc_levels|smc_target_evals)_L8_(equal|total)_evals")
_STUDY = re.compile(rf"(steps_study|floor_study|proposal_study)_(ess|logz_hat|logz_abs_err)_L8_attention_(\d+)steps"
                    rf"(?:_(per_step|per_unit_time))?(_checkerboard)?{_RULE}")
_CURVE = re.compile(rf"(ess|ess_quadrature_paper)_curve_({'|'.join(NETWORKS)})")


def legacy_key(name: str):
    """``(cell, figure, 1)`` of a per-seed key of ``bench_leaps.json`` (its ``_seed<k>`` cut off)."""
    if match := _L8.fullmatch(name):
        figure, network, rule = match.groups()
        return f"leaps-{network}/ising-8", _FIGURE[figure] + (f"_{rule}" if rule else ""), 1
    if match := _L8_TRAINING.fullmatch(name):
        return f"leaps-{match[2]}/ising-8", _FIGURE[match[1]], 1
    if match := _SMC.fullmatch(name):
        return f"smc-heat_bath{'-total' if match[2] == 'total' else ''}/ising-8", _FIGURE[match[1]], 1
    if name == "leaps_sampling_target_evals_L8":  # the equal-evaluation baseline's budget, which it spent exactly
        return "smc-heat_bath/ising-8", "target_evals", 1
    if match := _STUDY.fullmatch(name):
        study, figure, steps, floor, checkerboard, rule = match.groups()
        cell = "-".join(filter(None, ("leaps-attention", f"{steps}steps", floor, "checkerboard" if checkerboard else "",
                                      "" if study == "proposal_study" else "10min"))) + "/ising-8"
        return cell, _FIGURE[figure] + (f"_{rule}" if rule else ""), 1
    if match := _CURVE.fullmatch(name):
        return f"leaps-{match[2]}/ising-8", f"{match[1]}_curve", 1
    return None


_L15 = re.compile(rf"(ess|logz_hat|logz_abs_err|logz_fe_abs_err|train_steps|train_minutes)_L15_(ising|potts){_RULE}")
_L15_CURVE = re.compile(r"(ess|ess_quadrature_paper)_curve_L15_(ising|potts)")
_PILOT = re.compile(rf"pilot_ess_L15_(ising|potts)_({'|'.join(NETWORKS)})(_quadrature_paper)?")


def legacy_single(name: str):
    """``(cell, figure, 1, seed)`` of a key of ``bench_leaps.json`` recorded without a seed: the 15 x 15 runs, all of
    seed 0 (the pilots scored 500 walkers); None for the rest (constants, costs of a study, the profile, the L = 15
    proposal cells and the Potts reference's aggregate, which stay in BENCHMARKS.md's history)."""
    if match := _L15.fullmatch(name):
        figure, problem, rule = match.groups()
        return f"leaps-conv/{problem}-15", _FIGURE[figure] + (f"_{rule}" if rule else ""), 1, 0
    if match := _L15_CURVE.fullmatch(name):
        return f"leaps-conv/{match[2]}-15", f"{match[1]}_curve", 1, 0
    if name == "sample_seconds_L15_1000x100":
        return "leaps-conv/ising-15", "sample_seconds_per_1000_walkers_exact", 1, 0
    if match := _PILOT.fullmatch(name):
        return f"leaps-{match[2]}-10min/{match[1]}-15", "ess" + (match[3] or ""), 1, 0
    return None
