"""LEAPS on the critical 8x8 Ising torus: three locally equivariant networks at equal budgets, against tempered SMC.

Protocol (fixed before the run; issue 16): for each seed (0, 1, 2) and each network (``conv``, ``mlp``,
``attention``), LEAPS trains for the same ``--train-minutes`` of wall time (the number of updates is
set from a timed warm-up of that network, the curriculum takes the first third of them), then
draws ``--walkers`` samples with 100 uniform Euler steps on evaluation keys used for nothing else,
``--repeats`` times. The headline rule, fixed before any error was seen, is the unbiased
discrete-time weights (``weight_point="exact"``): ``ess_L8_{network}``, ``logz_abs_err_L8_{network}``
(mean absolute error of the repeats against Kaufman's exact log Z); the free-energy network's own
estimate ``logz_fe_abs_err_L8_{network}``; and the quadrature rules as labelled extras
(``..._pre``, ``..._trapezoid``). No network is picked on these draws. ``train_steps_per_s_L8_{network}``
and ``train_target_evals_L8_{network}`` record the training. Every figure is recorded per seed
(``_seed{k}``) and as mean / sd over the seeds recorded so far (the JSON merges across runs).
Every ``--curve-every`` updates the ESS of 500 walkers is recorded (off the training clock) as
``ess_curve_{network}_seed{k}`` and plotted in ``benchmarks/leaps_ess_curves.png``.

**Both estimators, everywhere** (issue 44; added after the runs recorded before it): every scoring draw -- the
final evaluations, the learning-curve points, the pilots and the studies -- also records LEAPS' own estimator, the
Jarzynski quadrature as the reference code scores it (after the jump for Ising, before it for Potts), on the SAME
walkers as the exact weights (``Leaps.sample_paired_with``; the floored chain's integrand, see
``jaxsamp.learned.leaps.simulation.simulate``): ``..._quadrature_paper`` beside each exact-weight figure, and
``ess_quadrature_paper_curve_...`` beside each ``ess_curve_...``. The exact weights stay the headline (unbiased);
the quadrature is the like-for-like figure to set beside the paper's ESS (0.67 Ising, 0.20 Potts). Its extra
network pass and evaluations per step (post-jump) are not charged to the sampler's evaluation counts: it is a
second reading of the same walkers. The separately drawn quadrature rules (``_pre``, ``_trapezoid``, jumps without
the floor) are kept as before.

Target evaluations (network passes not counted, as in the paper): a sampling step with the exact
weights evaluates ``log_prob`` once (after the jump; the value before it is carried from the previous
step, plus one evaluation at the start) and ``flip_log_ratios`` once (the backward kernel) per walker; a training rollout step evaluates ``flip_log_ratios`` once per walker
and its Metropolis correction ``mcmc_updates`` single-site updates, counted as ``mcmc_updates / N``
evaluations (a sweep of the N sites costs one). The SMC baseline (:func:`jaxsamp.smc.anneal`,
linear schedule on the same path, one checkerboard heat-bath sweep per level, systematic
resampling at ESS < 0.5; 1 evaluation per particle and level for the reweighting, 2 for the
sweep) gets (a) LEAPS's sampling evaluations, ``smc_logz_abs_err_L8_equal_evals``, and (b) those plus
the mean training evaluations of the three networks, ``smc_logz_abs_err_L8_total_evals``.

**L = 15** (``--lattice 15``; protocol fixed before its first run): the paper's two problems, Ising at beta =
0.4407 (exact log Z, Kaufman) and the q = 3 Potts model at beta = 1.0010 (reference log Z: the mean of 4 tempered
SMC runs of 4000 particles and 2000 levels, ``logz_reference_L15_potts`` with its sd), with the paper's evaluation
(Ising 100 uniform Euler steps; Potts 300 steps on the cubic-exponential grid) and training rollouts (125 steps;
Metropolis updates per step: Ising 200, Potts 1000 after 1000 warm-up updates at one step). **Network choice on a
separate draw**: each network trains for ``--pilot-minutes`` (10) and is scored by the ESS of 500 walkers on
validation keys (300..) used for nothing else, ``pilot_ess_L15_{problem}_{network}``; the best trains afresh for
``--train-minutes`` (120) and is scored on the evaluation keys (100..): ``ess_L15_{problem}``,
``logz_abs_err_L15_{problem}`` (exact weights), ``logz_fe_abs_err_L15_{problem}``, ``train_minutes_L15_{problem}``,
``network_L15_{problem}``, and for Ising ``sample_seconds_L15_1000x100`` (1000 walkers x 100 steps, best of 3 after
compiling). One seed (the first of ``--seeds``). Learning curves: ``benchmarks/leaps_ess_curves_L15.png`` (Potts
with ``--curve-every 2000``: its points, 500 walkers x 300 steps, cost 0.25-1.5 minutes each, off the clock). Goals
(issue 16): ESS >= 0.75 (Ising) and >= 0.30 (Potts); the paper on a GPU: 0.67 and 0.20.
A problem takes hours alone, so it goes on where it stopped: each finished stage (the log Z reference, each
pilot, the final run) is recorded in the results file with its settings (``stages_L15_{problem}``) and is not run
again (``--fresh`` starts over; a setting a recorded stage depends on cannot change, see ``STAGE_SETTINGS``), and the final training is checkpointed every
``--checkpoint-minutes`` (10) of training under ``benchmarks/results/checkpoints/`` (not committed), its clock
counting only the training seconds not yet spent. A stage killed before its end starts over, except the final
training while its checkpoints are on the machine. ``--pilots-only`` stops before the final training, so that the
final stage (120 training minutes, the curve points and the evaluation) can have a session of its own.
``--redo-final`` runs the final stage again on the recorded reference and pilots (its settings may then change;
a redo killed before its end goes on from its checkpoints when the same command is run again), and ``--train-updates N`` counts the final's training in updates instead of minutes, so that it can share the
machine (the recorded 120-minute LE-conv Ising final made 49 850 updates alone). ``--final-network NAME`` trains
that network in the final without running pilots, for a pick recorded before the stages were (the Ising run of
2026-12-04, whose pilots picked LE-conv).

**Proposal cells at L = 15** (issue 44; protocol fixed 2026-12-05 before the first run with them): the final Ising
model is also sampled as in the proposal study below, on keys 800.. (used for nothing else): at the problem's
``eval_steps`` (100) and twice that, with the floor per step and per unit time, unsplit (exact weights and the
paper's quadrature on the same walkers) and with colour-class sub-steps (``_checkerboard``; the 15 x 15 torus is not
bipartite, so 3 colours and 3 network passes a step). Figures ``proposal_{ess,logz_hat,logz_abs_err}_L15_ising_
{n}steps_{floor}[_checkerboard|_quadrature_paper]``, with ``proposal_ising_network_passes_{n}steps[_checkerboard]``.
Goal (issue 44): an exact-weight ESS >= 0.1 with the lower-variance proposals. Potts is not sampled so (300 steps on
3 colours would cost about an hour of sampling); ``--quick`` runs one step count and one floor of them on every
problem.

**Profile of the L = 15 training step** (``--lattice 15 --profile``; the issue's speed work): for each problem
and network (untrained, the protocol's settings), the seconds of each piece of an update, best of 3 after
compiling: ``profile_L15_{problem}_{network}_rate_forward_200`` (the rate network on a rollout's 200 walkers,
once per rollout step), ``_correction_200`` (their Metropolis updates of one rollout step, one site's
ratios from its neighbours), ``_correction_200_whole_lattice`` (the same chain with every update computing the
whole lattice's ratios, as before ``site_log_ratios``), ``_rollout_125`` (a whole training rollout, one call),
``_loss_grad_256`` (the PINN loss and its gradient on a batch of 256 pairs; one per update). A rollout comes
every 50 updates.

**Sampling steps study** (``--steps-study``; protocol fixed before its first run, 2026-12-04): does the exact
weights' ESS rise when the same trained model samples on a finer time grid, as the Euler proposal's mismatch with
the reverse kernel shrinks? At L = 8, LE-attention (the network the L = 8 protocol found best, on its own draws)
trains 10 minutes per seed as in the protocol (same training keys, seeds 0, 1, 2), then samples 2000 walkers x 2
repeats on keys 600.. (used for nothing else) with ``STUDY_STEPS`` = 100, 200 and 400 uniform Euler steps, the
same keys at every step count. Headline: the exact weights' ESS and log Z error per step count,
``steps_study_{ess,logz_abs_err}_L8_attention_{n}steps``, mean / sd over seeds, with the sampling target
evaluations ``steps_study_target_evals_L8_{n}steps``. Nothing is picked: every step count is reported.

**Floor study** (``--floor-study``; protocol fixed before its first run, 2026-12-04): is the exact rule's floor
per step what makes 400 steps worse than 200? The steps study's design with its own evaluation keys (700..), and
each trained model sampled with both floors on the same keys: the library's 1e-4 per step (``_per_step``) and
the floor per unit time ``FLOOR_RATE`` = 0.01 (``_per_unit_time``: 0.01 h per step, the same 1e-4 at 100
steps, so the two agree there). Headline: ``floor_study_{ess,logz_abs_err}_L8_attention_{n}steps_{floor}``,
mean / sd over seeds 0, 1, 2. Nothing is picked: every floor and step count is reported.

**Proposal study** (``--proposal-study``; issue 44, protocol fixed 2026-12-05 before its first run): do proposals
that never move two interacting sites in one step lower the exact weights' variance? Design of the floor study,
with its own evaluation keys (800..) and one change: training is counted in updates, not minutes, so the study can
share the machine: ``--train-updates`` (default ``PROPOSAL_UPDATES`` = 10 000, what the L = 8 protocol's 10 minutes
bought LE-attention alone: 10 000, 10 100 and 11 700 updates for seeds 0-2; the curriculum takes a third). Each
trained model samples at 100 and 200 uniform Euler steps, with the floor per step (1e-4) and per unit time
(``FLOOR_RATE``), each (a) unsplit: exact weights and the paper's post-jump quadrature on the same walkers, and
(b) ``_checkerboard``: every step split into the 2 colour classes of the 8 x 8 torus, each sub-step an exact AIS
move (``simulate(checkerboard=True)``), exact weights only (the quadrature belongs to the unsplit chain); all on the
same keys. A checkerboard step costs 2 network passes to the unsplit step's 1, so ``_checkerboard`` at 100 steps
is to be read beside the unsplit chain at 200 (equal passes) as well as at 100 (equal steps). Headline:
``proposal_study_ess_L8_attention_{n}steps_{floor}[_checkerboard]`` (exact weights), mean / sd over seeds 0, 1, 2,
with ``_quadrature_paper`` and ``logz_abs_err`` beside it, and ``proposal_study_network_passes_{n}steps[_checkerboard]``.
Goal (issue 44): exact-weight ESS >= 0.6 at <= 200 steps. Nothing is picked: every cell is reported.

**Training through** ``jaxsamp.fit("leaps", ...)`` (issue 58; after the runs recorded before it, same protocol): the
budget is ``fit``'s ``max_seconds`` (training time with compilation left out; those runs counted the first chunk's
compilation in), checked at the end of each chunk of ``--curve-every`` updates (those runs: of 50), and the update
rate of the plan is a probe's ``seconds - compile_seconds`` (those runs: a second, timed call). The learning curve
is ``fit``'s (``evaluate(..., compare_weight_points=False)`` on 500 walkers: both estimators, one draw). ``fit``
splits each run's key its own way (initialisation, updates and curve keys), so the runs recorded before drew
another random stream; ``train_steps_per_s`` still counts compilation in. The L = 15 final's checkpoints are
``fit``'s, every ``--checkpoint-minutes`` of training at the probed rate; those runs' checkpoints cannot be resumed.

Usage: ``python scripts/bench_leaps.py [--quick] [--lattice 8|15] [--seeds 0 1 2] [--train-minutes M]
[--networks conv mlp attention] [--problems ising potts] [--pilot-minutes 10] [--fresh]
[--pilots-only] [--redo-final] [--checkpoint-minutes 10] [--profile] [--steps-study] [--floor-study]
[--proposal-study] [--train-updates N]``
(writes ``benchmarks/results/bench_leaps.json``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
from pathlib import Path

import jax
import numpy as np

import jaxsamp
from benchmark_io import best_seconds, read_results, record_seed, results_path, timed, write_results
from jaxsamp.core.errors import CheckpointError
from jaxsamp.experiments.plots import pyplot, save_figure
from jaxsamp.learned import buffer as replay
from jaxsamp.learned.leaps.simulation import metropolis_correction
from jaxsamp.learned.leaps.simulation import simulate as leaps_simulate
from jaxsamp.learned.leaps.training import (
    Leaps,
    LeapsSettings,
    build_networks,
    curriculum_schedule,
    free_energy_log_Z,
    network_structure,
    pinn_loss,
)
from jaxsamp.mcmc.discrete import checkerboard, checkerboard_colours, lattice_categories
from jaxsamp.smc import anneal, linear_schedule
from jaxsamp.targets.lattice import LatticePath, ising, potts

L, BETA, SAMPLING_STEPS = 8, 0.4407, 100
RULES = ("exact", "pre", "trapezoid")  # the headline first
STUDY_STEPS, STUDY_NETWORK = (100, 200, 400), "attention"
FLOOR_RATE = 0.01  # the floor study's floor per unit time: 1e-4 per step at 100 steps, like leaps.JUMP_FLOOR
PROPOSAL_UPDATES = 10_000  # the proposal study's training: what the L = 8 protocol's 10 minutes bought alone
STUDIES = {  # name: (evaluation keys from, step counts, {suffix: jump_floor_rate (None: per step)}, checkerboard too)
    "steps_study": (600, STUDY_STEPS, {"": None}, False),
    "floor_study": (700, STUDY_STEPS, {"_per_step": None, "_per_unit_time": FLOOR_RATE}, False),
    "proposal_study": (800, (100, 200), {"_per_step": None, "_per_unit_time": FLOOR_RATE}, True),
}
CURVE_WALKERS = 500
CURVE_PLOT = Path(__file__).resolve().parent.parent / "benchmarks" / "leaps_ess_curves.png"
CURVE_PLOT_L15 = Path(__file__).resolve().parent.parent / "benchmarks" / "leaps_ess_curves_L15.png"

# L = 15: the paper's problems and evaluation (configs/leaps_{ising,potts}_L15.yaml); training rollouts of 125
# steps with the paper's Metropolis updates per step (Ising 200; Potts 1000, after 1000 warm-up updates at one
# step); everything else as at L = 8. Potts' log Z has no exact value at this size: its reference is the mean of
# POTTS_REFERENCE tempered-SMC runs, recorded with their sd.
L15, POTTS_BETA, POTTS_Q = 15, 1.0010, 3
L15_PROBLEMS = {
    "ising": (lambda size: ising(size, BETA),
              {"rollout_steps": 125, "mcmc_updates": 200, "eval_steps": 100, "eval_grid": "uniform"}),
    "potts": (lambda size: potts(size, POTTS_BETA, POTTS_Q),
              {"rollout_steps": 125, "mcmc_updates": 1000, "warm_up": 1000, "eval_steps": 300,
               "eval_grid": "cubic_exponential"}),
}
L15_GOALS = {"ising": 0.75, "potts": 0.30}
QUICK_L15 = {"rollout_steps": 10, "mcmc_updates": 8, "warm_up": 0, "eval_steps": 10}
# the final model's proposal cells (issue 44's L = 15 goal is on Ising; Potts' 300 steps on 3 colours would cost
# about an hour of sampling); --quick runs them on every problem, so that its Potts run covers the code
L15_PROPOSAL_PROBLEMS = ("ising",)
POTTS_REFERENCE = {"walkers": 4000, "levels": 2000, "repeats": 4}

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


def settings_for(network: str, quick: bool, curriculum_steps: int, **problem) -> LeapsSettings:
    """The protocol's settings for ``network``; ``problem`` replaces fields for the L = 15 problems."""
    return LeapsSettings(**{
        "network": network,
        "network_params": (QUICK_NETWORKS if quick else NETWORKS)[network],
        "free_energy_hidden": [16] if quick else [64, 64, 64],
        "learning_rate": 3e-3 if quick else 1e-3,
        "lr_decay": 0.9,
        "lr_decay_every": max(1, curriculum_steps),
        "loss_batch": 32 if quick else 256,
        "rollout_steps": 10 if quick else SAMPLING_STEPS,
        "curriculum_steps": curriculum_steps,
        "rollout_every": 5 if quick else 50,
        "buffer_rollouts": 4 if quick else 50,
        "states_per_walker": 4 if quick else 16,
        "mcmc_updates": 8 if quick else 64,
        "eval_steps": SAMPLING_STEPS,
        **problem,
    })


def updates_per_second(path, network: str, walkers: int, key, problem, checkpoint: Path | None) -> float:
    """Training updates per second, from a timed probe of the steady-state trainer (or the rate a checkpoint kept).

    The probe is ``rollout_every`` updates of full-length rollouts, one rollout among them, as in
    steady-state training, through :func:`jaxsamp.fit`, timed with compilation left out
    (``seconds - compile_seconds``). With ``checkpoint``, the rate is written to
    ``checkpoint/plan.json`` and read back on a resumed run, whose curriculum (planned from it) must match.
    """
    plan = checkpoint / "plan.json" if checkpoint is not None else None
    if plan is not None and plan.exists():
        return float(json.loads(plan.read_text())["updates_per_second"])
    steady = dataclasses.replace(settings_for(network, False, 0, **(problem or {})), buffer_rollouts=1, warm_up=0)
    probe = jaxsamp.fit("leaps", path, key=key, settings=steady, batch_size=walkers, num_steps=steady.rollout_every,
                        progress=False)
    rate = steady.rollout_every / (probe.seconds - probe.compile_seconds)
    if plan is not None:
        plan.parent.mkdir(parents=True, exist_ok=True)
        plan.write_text(json.dumps({"updates_per_second": rate}))
    return rate


def train(path, network: str, quick: bool, minutes: float, walkers: int, key, curve_every: int | None, problem=None,
          checkpoint: Path | None = None, checkpoint_minutes: float = 10.0, updates: int | None = None):
    """Train one network through :func:`jaxsamp.fit` for about ``minutes`` of training time (``problem``: settings
    replaced for an L = 15 problem).

    With ``updates``, train for exactly that many updates instead (planned for them; no clock).

    Returns (model, params, buffer, settings, steps, steps_per_s, curve). The curriculum is planned
    for the updates that :func:`updates_per_second` says fit ``minutes``; training stops at the end
    of the first chunk of updates past ``minutes`` of training time (fit's ``max_seconds``,
    compilation left out) or when twice the plan is done. Every ``curve_every`` updates (None: never)
    the ESS of 500 walkers is recorded in ``curve`` as ``[updates, ess exact, ess quadrature_paper]``
    (both on the same walkers, :func:`split_curve`; fit's learning curve, off the training clock,
    ``evaluate(..., compare_weight_points=False)``). ``steps_per_s`` counts compilation in, as the
    runs recorded before fit did.

    With ``checkpoint`` (a folder), fit checkpoints the training about every ``checkpoint_minutes``
    of training (in updates at the probed rate, a multiple of ``curve_every``); a call with the same
    folder resumes from the newest valid checkpoint and spends only the rest of the budget, its
    learning curve and training seconds going on from there (``jaxsamp.learned.fit.BUDGET_RECORD``).

    ``--quick`` plans 12 updates with a checkpoint every 4, trains only the conv network and returns
    the other two untrained.
    """
    problem = problem or {}
    if quick:
        settings = settings_for(network, quick, 10, **problem)
        if network != "conv":
            model, params = build_networks(path, settings, key)
            return model, params, None, settings, 0, float("nan"), []
        limit, max_seconds, spacing = 12, None, None if checkpoint is None else 4
        every = curve_every if curve_every is not None and curve_every <= limit else None
    else:
        rate = updates_per_second(path, network, walkers, key, problem, checkpoint) if (
            updates is None or checkpoint is not None) else None
        planned = updates if updates is not None else max(300, int(rate * minutes * 60))
        limit, max_seconds = (updates, None) if updates is not None else (2 * planned, minutes * 60)
        settings = settings_for(network, quick, planned // 3, **problem)
        every = curve_every if curve_every is not None and curve_every <= limit else None
        unit = every or 1  # fit's chunks divide the curve's spacing and the checkpoints'
        if updates is None:
            limit = -(-limit // unit) * unit
        spacing = None if checkpoint is None else unit * max(1, round(rate * checkpoint_minutes * 60 / unit))
    try:
        fitted = jaxsamp.fit(
            "leaps", path, key=key, settings=settings, batch_size=walkers, num_steps=limit, max_seconds=max_seconds,
            evaluate_every=every, evaluate_samples=CURVE_WALKERS,
            evaluate_options={"compare_weight_points": False} if every else None,
            checkpoint=checkpoint, checkpoint_every=spacing, progress=not quick)
    except CheckpointError as error:
        raise SystemExit(f"{error.one_line()}; or pass --fresh to start over") from error
    steps = len(fitted.history["loss"])
    points = fitted.curve
    curve = [[int(u), float(e), float(q)] for u, e, q in zip(
        points.get("step", ()), points.get("ess", ()), points.get("ess_quadrature_paper", ())) if u % curve_every == 0]
    line = f"leaps {network}: {steps} updates, {fitted.seconds:.0f} s"
    if curve:
        line += f", ESS {curve[-1][1]:.3f}, paper's quadrature {curve[-1][2]:.3g} ({CURVE_WALKERS} walkers)"
    print(line, flush=True)
    model = network_structure(path, settings)
    return model, fitted.state.params, fitted.state.buffer, settings, steps, steps / fitted.seconds, curve


def split_curve(curve) -> tuple[list, list]:
    """``(ess_curve, ess_quadrature_paper_curve)``, each ``[[updates, ess], ...]``, from :func:`train`'s curve."""
    return [[u, e] for u, e, _ in curve], [[u, q] for u, _, q in curve]


def paired_draws(path, settings: LeapsSettings, params, key, first: int, repeats: int, walkers: int) -> dict:
    """``{"exact": [...], "quadrature_paper": [...]}``: ``repeats`` draws on keys ``first..``, both on the same walkers."""
    draw = jax.jit(lambda p, k: Leaps(path, settings).sample_paired_with(k, p, walkers))
    pairs = [draw(params, jax.random.fold_in(key, first + j)) for j in range(repeats)]
    return {"exact": [e for e, _ in pairs], "quadrature_paper": [q for _, q in pairs]}


def split_draws(path, settings: LeapsSettings, params, key, first: int, repeats: int, walkers: int) -> list:
    """:func:`paired_draws`' keys with checkerboard sub-steps: the exact weights' ``repeats`` draws."""
    draw = jax.jit(lambda p, k: Leaps(path, settings).sample_with(k, p, walkers, "exact", True))
    return [draw(params, jax.random.fold_in(key, first + j)) for j in range(repeats)]


def training_target_evals(settings: LeapsSettings, steps: int, walkers: int, num_sites: int) -> float:
    """Target evaluations of ``steps`` training updates (module docstring): the rollouts' passes and corrections."""
    ks = curriculum_schedule(settings.curriculum_start, settings.rollout_steps, settings.curriculum_steps,
                             settings.warm_up)
    i = np.arange(steps)
    k = ks[np.minimum(i, len(ks) - 1)]
    rollout = (i < settings.buffer_rollouts) | (i % settings.rollout_every == 0)
    return float(np.sum(k[rollout]) * walkers * (1.0 + settings.mcmc_updates / num_sites))


def draw_ess_curves(ax, series: dict, goals: dict, log_scale: bool = False) -> None:
    """Draw ESS against training updates on ``ax``: ``series`` maps a label to ``(curve, colour index[, line
    style])`` (a label starting with ``_`` is left out of the legend), ``goals`` a label to a level.

    ``log_scale`` puts the ESS on a log axis from 1e-5, for curves that stay near 1 / walkers.
    """
    for label, (curve, colour, *style) in series.items():
        curve = np.array(curve)
        if len(curve):
            ax.plot(curve[:, 0], curve[:, 1], marker=".", color=f"C{colour}", ls=(style or ["-"])[0], label=label)
    for i, (label, level) in enumerate(goals.items()):
        ax.axhline(level, color="grey", ls=("--", ":")[i % 2], lw=1, label=label)
    ax.set(xlabel="training updates", ylabel=f"ESS ({CURVE_WALKERS} walkers)")
    if log_scale:
        ax.set(yscale="log", ylim=(1e-5, 1))
        ax.axhline(1 / CURVE_WALKERS, color="black", lw=0.8, alpha=0.5, label=f"1 / {CURVE_WALKERS} (one walker)")
        ax.legend(loc="lower center", ncol=2, fontsize=7)
    else:
        ax.set(ylim=(0, 1))
        ax.legend(loc="upper left", fontsize=8)


def plot_curves(results: dict, seeds, path: Path) -> None:
    """ESS against training updates of every network and seed with a recorded curve (L = 8): the exact weights
    (the headline) on the left, the paper's quadrature on the same walkers on the right; one colour per network."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    for ax, (prefix, rule) in zip(axes, [("ess_curve", "exact weights"), ("ess_quadrature_paper_curve",
                                                                          "the paper's quadrature")]):
        series = {
            network if seed == seeds[0] else f"_{network} seed {seed}": (
                results.get(f"{prefix}_{network}_seed{seed}", []), i)
            for i, network in enumerate(NETWORKS) for seed in seeds
        }
        draw_ess_curves(ax, series, {"goal 0.8": 0.8})
        ax.set_title(f"{rule}, seeds {list(seeds)}", fontsize=10)
    axes[1].set_ylabel("")
    fig.suptitle(f"LEAPS, Ising {L}x{L} at beta = {BETA}, {SAMPLING_STEPS} sampling steps", fontsize=11)
    save_figure(fig, path, dpi=120)


def plot_l15_curves(results: dict) -> None:
    """The L = 15 learning curve of each problem's chosen network, on a log ESS axis, with the goals."""
    series = {p: (results.get(f"ess_curve_L15_{p}", []), i) for i, p in enumerate(L15_PROBLEMS)}
    series.update({f"{p}, paper's quadrature": (results.get(f"ess_quadrature_paper_curve_L15_{p}", []), i, "--")
                   for i, p in enumerate(L15_PROBLEMS)})
    goals = {f"goal {p} {g}": g for p, g in L15_GOALS.items()}
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    draw_ess_curves(ax, series, goals, log_scale=True)
    ax.set_title(f"LEAPS at {L15}x{L15}, the chosen network per problem")
    save_figure(fig, CURVE_PLOT_L15, dpi=120)


def sample_figures(name: str, draws: dict, exact: float, lattice: str = "L8") -> dict:
    """ESS and log Z error (mean over repeats, mean absolute error against ``exact``) of one network's draws.

    Figures are ``{ess,logz_hat,logz_abs_err}_{lattice}_{name}``, with ``_{rule}`` for the quadrature rules.
    """
    out = {}
    for rule, samples in draws.items():
        suffix = f"_{name}" + ("" if rule == "exact" else f"_{rule}")
        log_z = np.array([float(ws.log_Z) for ws in samples])
        out[f"ess_{lattice}{suffix}"] = float(np.mean([float(ws.ess) for ws in samples]))
        out[f"logz_hat_{lattice}{suffix}"] = float(log_z.mean())
        out[f"logz_abs_err_{lattice}{suffix}"] = float(np.mean(np.abs(log_z - exact)))
    return out


def smc_log_z(path, key, walkers: int, levels: int, repeats: int) -> tuple[np.ndarray, int]:
    """``repeats`` independent tempered-SMC estimates of log Z (``levels`` levels, one heat-bath sweep each) and
    the target evaluations of one run."""
    q = lattice_categories(path.target)
    make_kernel = lambda t: checkerboard(lambda x: path.flip_log_ratios(x, t), "heat_bath", q)  # noqa: E731
    estimates, spent = [], 0
    for j in range(repeats):
        out = anneal(jax.random.fold_in(key, j), path, make_kernel, walkers, schedule=linear_schedule(levels),
                     num_mcmc_steps=1, ess_threshold=0.5)
        estimates.append(float(out.samples.log_Z))
        spent = out.num_target_evals
    return np.array(estimates), int(spent)


def smc_error(path, key, walkers: int, evals: float, repeats: int, exact: float) -> tuple[float, int, int]:
    """Tempered SMC with as many levels as ``evals`` allow: mean |log Z error|, levels, evaluations spent."""
    levels = max(1, int(evals // (3 * walkers)))
    estimates, spent = smc_log_z(path, key, walkers, levels, repeats)
    assert spent <= evals, (spent, evals)
    return float(np.mean(np.abs(estimates - exact))), levels, spent


STAGE_SETTINGS = {"reference": {"seed"}, "pilot": {"seed", "networks", "pilot_minutes"}}  # final: every setting


class Stages:
    """The stages of an L = 15 problem already finished, recorded in the results file beside their figures.

    ``stages_L15_{problem}`` holds the run's settings and, for each finished stage (the log Z
    reference, each pilot, the final run), the names of its figures. A stage whose record and
    figures are in the results file is not run again, so a problem can be finished over several
    sessions from the committed results. A setting may change until a stage that depends on it is
    recorded (:data:`STAGE_SETTINGS`; the final stage depends on all of them): such a change is
    refused unless ``fresh``, which starts the problem over, or the stages depending on it are in ``redo``
    (``--redo-final``: the final runs again on the recorded reference and pilots).
    """

    def __init__(self, problem: str, settings: dict, recorded: dict, fresh: bool, save, redo: tuple[str, ...] = ()):
        self.name, self.recorded, self.save = f"stages_L15_{problem}", recorded, save
        kept = {} if fresh else {k: v for k, v in recorded.get(self.name, {}).items() if k not in redo}
        if kept:
            changed = {k for k in settings.keys() | kept["settings"].keys() if settings.get(k) != kept["settings"].get(k)}
            used = set().union(*(STAGE_SETTINGS.get(stage.split("_")[0], changed) for stage in kept if stage != "settings"))
            if changed & used:
                raise SystemExit(f"the results file holds {problem} stages run with other settings "
                                 f"({', '.join(sorted(changed & used))}): pass --fresh to start this problem over")
        self.record = {**kept, "settings": settings}

    def stage(self, name: str, compute) -> dict:
        """The figures of stage ``name``: the recorded ones, or ``compute()``'s, recorded at once."""
        names = self.record.get(name)
        if names is not None and all(n in self.recorded for n in names):
            print(f"{self.name} {name}: finished in an earlier run, figures from the results file", flush=True)
            return {n: self.recorded[n] for n in names}
        figures = compute()
        self.record[name] = sorted(figures)
        self.save({**figures, self.name: self.record})
        return figures


def run_l15(problem: str, args, seed: int, walkers: int, repeats: int, train_walkers: int, stages: Stages,
            checkpoints: Path) -> dict:
    """The L = 15 protocol for one problem (module docstring): pilot per network, the best trained in full, scored.

    Each stage is recorded by ``stages`` as it finishes, and the final training is checkpointed in
    ``checkpoints``, so a killed run started again goes on where it stopped.
    """
    make_target, settings = L15_PROBLEMS[problem]
    size = 5 if args.quick else L15
    target = make_target(size)
    path = LatticePath(target)
    overrides = {**settings, **(QUICK_L15 if args.quick else {})}
    key = jax.random.fold_in(jax.random.key(seed), 1000 + list(L15_PROBLEMS).index(problem))

    def reference() -> dict:
        if problem == "ising":
            return {f"logz_reference_L15_{problem}": float(target.exact_log_Z())}
        sizes = {"walkers": 64, "levels": 20, "repeats": 2} if args.quick else POTTS_REFERENCE
        estimates, spent = smc_log_z(path, jax.random.fold_in(key, 500), **sizes)
        return {f"logz_reference_L15_{problem}": float(estimates.mean()),
                f"logz_reference_L15_{problem}_sd": float(estimates.std(ddof=1)),
                f"logz_reference_L15_{problem}_target_evals": spent}

    out = dict(stages.stage("reference", reference))
    log_z_ref = out[f"logz_reference_L15_{problem}"]

    def pilot(i: int, network: str) -> dict:  # validation keys 300.. score it, and nothing else uses them
        model, params, _, pilot_settings, *_ = train(path, network, args.quick, args.pilot_minutes, train_walkers,
                                                     jax.random.fold_in(key, 10 + i), None, overrides)
        exact, quadrature = Leaps(path, pilot_settings).sample_paired_with(jax.random.fold_in(key, 300 + i), params,
                                                                             CURVE_WALKERS)
        ess = float(exact.ess)  # the pick uses the exact weights, as the protocol fixed
        print(f"L15 {problem} pilot {network}: ESS {ess:.3f}, paper's quadrature {float(quadrature.ess):.3g}", flush=True)
        return {f"pilot_ess_L15_{problem}_{network}": ess,
                f"pilot_ess_L15_{problem}_{network}_quadrature_paper": float(quadrature.ess)}

    networks = ["conv"] if args.quick else args.networks
    if args.final_network is None:
        for i, network in enumerate(networks):
            out.update(stages.stage(f"pilot_{network}", lambda i=i, network=network: pilot(i, network)))
    if args.pilots_only:
        return out
    best = args.final_network or max(networks, key=lambda n: out[f"pilot_ess_L15_{problem}_{n}"])

    def final() -> dict:
        model, params, _, final_settings, steps, rate, curve = train(
            path, best, args.quick, args.train_minutes or 120.0, train_walkers, jax.random.fold_in(key, 20),
            args.curve_every, overrides, checkpoints / f"final_{best}", args.checkpoint_minutes,
            updates=args.train_updates)
        draws = paired_draws(path, final_settings, params, key, 100, repeats, walkers)
        figures = sample_figures(problem, draws, log_z_ref, "L15")
        if problem in L15_PROPOSAL_PROBLEMS or args.quick:
            figures.update(l15_proposal_cells(problem, path, final_settings, params, key, walkers, repeats, log_z_ref,
                                              args.quick))
        curve, quadrature_curve = split_curve(curve)
        figures.update({
            f"network_L15_{problem}": best,
            f"logz_fe_abs_err_L15_{problem}": abs(float(free_energy_log_Z(model, params, path)) - log_z_ref),
            f"train_steps_L15_{problem}": steps,
            f"train_minutes_L15_{problem}": steps / rate / 60,
            f"ess_curve_L15_{problem}": curve,
            f"ess_quadrature_paper_curve_L15_{problem}": quadrature_curve,
        })
        if problem == "ising":
            thousand = jax.jit(lambda p, k: Leaps(path, final_settings).sample_with(k, p, 1000).log_w)
            jax.block_until_ready(thousand(params, jax.random.fold_in(key, 400)))
            figures["sample_seconds_L15_1000x100"] = min(
                timed(thousand, params, jax.random.fold_in(key, 401 + j)) for j in range(3))
        return figures

    out.update(stages.stage("final", final))
    print(f"L15 {problem}: " + ", ".join(f"{k}={v:.4g}" for k, v in out.items() if isinstance(v, float)), flush=True)
    return out


def l15_proposal_cells(problem: str, path, settings: LeapsSettings, params, key, walkers: int, repeats: int,
                       log_z_ref: float, quick: bool = False) -> dict:
    """The proposal study's cells on the final L = 15 model (module docstring): the problem's ``eval_steps`` and
    twice that, each floor, unsplit (both estimators) and with colour-class sub-steps, on keys 800.. (``quick``: one
    step count and one floor, the same code path at a quarter of the compilations)."""
    out = {}
    floors = STUDIES["proposal_study"][2]
    if quick:
        floors = dict(list(floors.items())[:1])
    for n in (settings.eval_steps,) if quick else (settings.eval_steps, 2 * settings.eval_steps):
        for variant, figures in study_cell_figures(path, settings, params, key, 800, n, floors, True, walkers, repeats,
                                                   problem, log_z_ref, "L15"):
            out.update({f"proposal_{name}": value for name, value in figures.items()})
            print(f"L15 {problem} proposal cell {n} steps{variant}: "
                  + ", ".join(f"{k}={v:.4g}" for k, v in figures.items()), flush=True)
        out.update(study_costs(f"proposal_{problem}_", "L15", path.target, n, walkers, True))
    return out


def profile_l15(problem: str, network: str, quick: bool, walkers: int) -> dict:
    """Seconds of each piece of an L = 15 training update (module docstring), for one problem and network."""
    make_target, overrides = L15_PROBLEMS[problem]
    path = LatticePath(make_target(5 if quick else L15))
    settings = settings_for(network, quick, 100, **{**overrides, **(QUICK_L15 if quick else {})})
    model, params = build_networks(path, settings, jax.random.key(0))
    x = path.sample_base(jax.random.key(1), walkers)
    pairs = path.sample_base(jax.random.key(2), settings.loss_batch)
    t_pairs, t_mid = jax.numpy.linspace(0.0, 1.0, settings.loss_batch), jax.numpy.float32(0.5)
    rate = jax.jit(lambda p, x: jax.vmap(model.rate_fn(p), in_axes=(0, None))(x, t_mid))
    loss_grad = jax.jit(jax.value_and_grad(lambda p: pinn_loss(model, p, path, pairs, t_pairs)))
    local = metropolis_correction(path, settings.mcmc_updates)
    whole = metropolis_correction(_WholeLatticeRatios(path), settings.mcmc_updates)
    ts = jax.numpy.linspace(0.0, 1.0, settings.rollout_steps + 1)
    rollout = jax.jit(lambda k, p: leaps_simulate(
        k, model.rate_fn(p), path, x, ts, correction=local, weight_point="pre", record=True).x)
    prefix = f"profile_L15_{problem}_{network}"
    return {
        f"{prefix}_rate_forward_{walkers}": best_seconds(rate, params, x),
        f"{prefix}_correction_{walkers}": best_seconds(jax.jit(lambda k, x: local(k, x, t_mid)), jax.random.key(3), x),
        f"{prefix}_correction_{walkers}_whole_lattice": best_seconds(
            jax.jit(lambda k, x: whole(k, x, t_mid)), jax.random.key(3), x),
        f"{prefix}_rollout_{settings.rollout_steps}": best_seconds(rollout, jax.random.key(4), params, calls=1),
        f"{prefix}_loss_grad_{settings.loss_batch}": best_seconds(loss_grad, params),
    }


class _WholeLatticeRatios:
    """A lattice path without ``site_log_ratios``: its random scan computes the whole lattice's ratios per update."""

    def __init__(self, path):
        self.target, self.flip_log_ratios = path.target, path.flip_log_ratios


def steps_study(study: str, args, seeds, walkers: int, repeats: int, train_walkers: int, results: dict, save) -> None:
    """The sampling steps, floor or proposal study (module docstring): one trained model per seed, sampled at each
    of the study's step counts with each of its floors (and, for the proposal study, with checkerboard sub-steps
    too), on the same keys."""
    first_key, steps_grid, floors, with_checkerboard = STUDIES[study]
    target = ising(L, BETA)
    path = LatticePath(target)
    exact = target.exact_log_Z()
    steps_grid = (4, 8) if args.quick else steps_grid
    updates = None if args.quick or study != "proposal_study" else args.train_updates or PROPOSAL_UPDATES
    for seed in seeds:
        key = jax.random.key(seed)
        model, params, _, settings, *_ = train(
            path, STUDY_NETWORK, args.quick, args.train_minutes or 10.0, train_walkers,
            jax.random.fold_in(key, list(NETWORKS).index(STUDY_NETWORK)), None, updates=updates)
        for n in steps_grid:
            results.update(study_costs(f"{study}_", "L8", target, n, walkers, with_checkerboard))
            for variant, figures in study_cell_figures(path, settings, params, key, first_key, n, floors,
                                                       with_checkerboard, walkers, repeats, STUDY_NETWORK, exact):
                figures = {f"{study}_{name}": value for name, value in figures.items()}
                for name, value in figures.items():
                    record_seed(results, "bench_leaps", name, seed, value, args.quick)
                print(f"{study} seed {seed}, {n} steps{variant}: "
                      + ", ".join(f"{k}={v:.4g}" for k, v in figures.items()), flush=True)
                save()


def study_cell_figures(path, settings: LeapsSettings, params, key, first: int, n: int, floors: dict,
                       with_checkerboard: bool, walkers: int, repeats: int, name: str, log_z_ref: float,
                       lattice: str = "L8"):
    """Yield ``(variant, figures)`` for one trained model's study cells at ``n`` steps, keys ``first..``: for each
    floor ``{suffix: floor per unit time (None: per step)}``, the unsplit chain with both estimators on the same
    walkers (``variant = suffix``) and, ``with_checkerboard``, colour-class sub-steps with exact weights
    (``suffix_checkerboard``), every variant on the same keys; figures as :func:`sample_figures` names them."""
    for suffix, floor_rate in floors.items():
        at_n = dataclasses.replace(settings, eval_steps=n, jump_floor_rate=floor_rate)
        cells = {suffix: paired_draws(path, at_n, params, key, first, repeats, walkers)}
        if with_checkerboard:
            cells[f"{suffix}_checkerboard"] = {"exact": split_draws(path, at_n, params, key, first, repeats, walkers)}
        for variant, draws in cells.items():
            yield variant, sample_figures(f"{name}_{n}steps{variant}", draws, log_z_ref, lattice)


def study_costs(prefix: str, lattice: str, target, n: int, walkers: int, with_checkerboard: bool) -> dict:
    """The sampling target evaluations of a study cell at ``n`` steps and, ``with_checkerboard``, the network passes
    of both chains: one pass, ``log_prob`` and reverse kernel per (sub-)step."""
    costs = {f"{prefix}target_evals_{lattice}_{n}steps": walkers * (2 * n + 1)}
    if with_checkerboard:
        colours = int(checkerboard_colours(target.event_shape).max()) + 1
        costs.update({f"{prefix}network_passes_{n}steps": n, f"{prefix}network_passes_{n}steps_checkerboard": colours * n,
                      f"{prefix}target_evals_{lattice}_{n}steps_checkerboard": walkers * (2 * colours * n + 1)})
    return costs


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI-sized run (tiny networks, seconds of training)")
    parser.add_argument("--lattice", type=int, choices=(8, 15), default=8, help="the L = 8 protocol or the L = 15 runs")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--train-minutes", type=float, default=None,
                        help="training budget per network and seed (L = 8: 10) or per problem (L = 15: 120)")
    parser.add_argument("--pilot-minutes", type=float, default=10.0, help="L = 15: each network's pilot training")
    parser.add_argument("--fresh", action="store_true",
                        help="L = 15: start the problems over instead of going on from their recorded stages")
    parser.add_argument("--pilots-only", action="store_true",
                        help="L = 15: record the reference and the pilots, and stop before the final training")
    parser.add_argument("--checkpoint-minutes", type=float, default=10.0,
                        help="L = 15: training minutes between checkpoints of the final training")
    parser.add_argument("--networks", nargs="+", choices=NETWORKS, default=list(NETWORKS))
    parser.add_argument("--problems", nargs="+", choices=L15_PROBLEMS, default=list(L15_PROBLEMS), help="L = 15 only")
    parser.add_argument("--curve-every", type=int, default=500, help="updates between learning-curve ESS points")
    parser.add_argument("--walkers", type=int, default=None, help="walkers for ESS / log Z (default 2000, quick 256)")
    parser.add_argument("--repeats", type=int, default=None, help="independent sampling runs averaged for log Z")
    parser.add_argument("--profile", action="store_true",
                        help="L = 15 only: time the pieces of a training update instead of training")
    parser.add_argument("--steps-study", action="store_true",
                        help="L = 8: sample one trained LE-attention per seed at 100, 200 and 400 Euler steps")
    parser.add_argument("--floor-study", action="store_true",
                        help="L = 8: the steps study with the exact rule's floor per step and per unit time")
    parser.add_argument("--proposal-study", action="store_true",
                        help="L = 8: the floor study at 100 and 200 steps with checkerboard sub-steps beside, "
                             "training counted in updates")
    parser.add_argument("--train-updates", type=int, default=None,
                        help=f"training counted in updates, not minutes: the proposal study's per seed (default "
                             f"{PROPOSAL_UPDATES}), or the L = 15 final's (default: --train-minutes)")
    parser.add_argument("--redo-final", action="store_true",
                        help="L = 15: run the final stage again on the recorded reference and pilots")
    parser.add_argument("--final-network", choices=NETWORKS, default=None,
                        help="L = 15: train this network in the final, without pilots (a pick recorded before)")
    args = parser.parse_args(argv)
    walkers = args.walkers or (256 if args.quick else 2000)
    repeats = args.repeats or 2
    train_walkers = 16 if args.quick else 200
    seeds = args.seeds[:1] if args.quick else args.seeds

    def save():
        print(f"  -> {write_results('bench_leaps', results, quick=args.quick, merge=True)}", flush=True)

    if args.profile:
        results = {}
        for problem in args.problems:
            for network in args.networks[:1] if args.quick else args.networks:
                results.update(profile_l15(problem, network, args.quick, train_walkers))
                print(", ".join(f"{k}={v:.4g}" for k, v in results.items() if k.startswith(f"profile_L15_{problem}_{network}")),
                      flush=True)
                save()
        return
    if args.final_network is not None and args.pilots_only:
        parser.error("--final-network skips the pilots that --pilots-only would run alone")
    studies = [name for name in STUDIES if getattr(args, name)]
    if len(studies) > 1:
        parser.error("run one study at a time: " + ", ".join("--" + name.replace("_", "-") for name in studies))
    if studies:
        results = {}
        steps_study(studies[0], args, seeds, walkers, repeats, train_walkers, results, save)
        return
    if args.lattice == 15:
        results: dict = {"walkers_L15": walkers}
        settings = {"seed": seeds[0], "walkers": walkers, "repeats": repeats, "networks": args.networks,
                    "train_minutes": args.train_minutes, "pilot_minutes": args.pilot_minutes,
                    "curve_every": args.curve_every, "train_updates": args.train_updates,
                    "final_network": args.final_network}
        recorded = read_results("bench_leaps", args.quick)

        def record(figures: dict) -> None:
            results.update(figures)
            save()

        for problem in args.problems:
            checkpoints = results_path("bench_leaps", args.quick).parent / "checkpoints" / f"bench_leaps_L15_{problem}"
            # --redo-final drops a recorded final and its checkpoints; a redo killed before its end is not recorded,
            # so the same command goes on from its checkpoints
            redo = ("final",) if args.redo_final and "final" in recorded.get(f"stages_L15_{problem}", {}) else ()
            if args.fresh or redo:
                shutil.rmtree(checkpoints, ignore_errors=True)
            stages = Stages(problem, settings, recorded, args.fresh, record, redo)
            results.update(run_l15(problem, args, seeds[0], walkers, repeats, train_walkers, stages, checkpoints))
            save()
        if not args.quick:
            plot_l15_curves({**read_results("bench_leaps"), **results})
        return

    rules = RULES[:1] if args.quick else RULES
    target = ising(L, BETA)
    path = LatticePath(target)
    exact = target.exact_log_Z()
    num_sites = L * L
    results = {"logz_exact_L8": exact, "walkers": walkers}
    for seed in seeds:
        key = jax.random.key(seed)
        train_evals = []
        for network in args.networks:
            model, params, buffer, settings, steps, rate, curve = train(
                path, network, args.quick, args.train_minutes or 10.0, train_walkers,
                jax.random.fold_in(key, list(NETWORKS).index(network)), args.curve_every,
            )
            if curve:
                results[f"ess_curve_{network}_seed{seed}"], results[f"ess_quadrature_paper_curve_{network}_seed{seed}"] = (
                    split_curve(curve))
            # evaluation keys 100.. are used for nothing else; the exact weights with the paper's quadrature beside them
            draws = paired_draws(path, settings, params, key, 100, repeats, walkers)
            for rule in rules[1:]:
                draw = jax.jit(lambda p, k, r=rule: Leaps(path, settings).sample_with(k, p, walkers, r))
                draws[rule] = [draw(params, jax.random.fold_in(key, 100 + j)) for j in range(repeats)]
            figures = sample_figures(network, draws, exact)
            figures[f"logz_fe_abs_err_L8_{network}"] = abs(float(free_energy_log_Z(model, params, path)) - exact)
            figures[f"train_steps_L8_{network}"] = steps
            figures[f"train_steps_per_s_L8_{network}"] = rate
            train_evals.append(training_target_evals(settings, steps, train_walkers, num_sites))
            figures[f"train_target_evals_L8_{network}"] = train_evals[-1]
            for name, value in figures.items():
                record_seed(results, "bench_leaps", name, seed, value, args.quick)
            if buffer is not None:
                results["buffer_bytes_per_state"] = replay.bytes_per_item(buffer)
            print(f"seed {seed} {network}: " + ", ".join(f"{k}={v:.4g}" for k, v in figures.items()), flush=True)
            save()
        sampling_evals = walkers * (2 * SAMPLING_STEPS + 1)
        budgets = {"equal_evals": sampling_evals, "total_evals": sampling_evals + float(np.mean(train_evals))}
        for name, evals in budgets.items():
            error, levels, spent = smc_error(path, jax.random.fold_in(key, 200), walkers, evals, repeats, exact)
            for fig, value in ((f"smc_logz_abs_err_L8_{name}", error), (f"smc_levels_L8_{name}", levels),
                               (f"smc_target_evals_L8_{name}", spent)):
                record_seed(results, "bench_leaps", fig, seed, value, args.quick)
        record_seed(results, "bench_leaps", "leaps_sampling_target_evals_L8", seed, sampling_evals, args.quick)
        save()
    if not args.quick:
        plot_curves({**read_results("bench_leaps"), **results}, seeds, CURVE_PLOT)


if __name__ == "__main__":
    main()
