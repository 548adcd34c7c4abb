"""Suite ``device``: what an accelerator measures, as cells: the learned families' seconds per update at their papers'
configs, NUTS on a 100-d posterior with 1024 chains, and the papers' training budgets that no CPU session can reach
(PIS/DDS on the funnel at Sendera et al.'s 25 000 updates, Adjoint Sampling and ASBS on DW-4 at their configs').

``jaxsamp bench run device --device-budget SECONDS`` runs the cells an accelerator of this kind has not yet
recorded, most valuable first (``PROTOCOL.device``), each in its own process, into
``benchmarks/results/device.<device kind>.json``; ``scripts/device_check.sh`` is that one call after the
``gpu``-marked tests. The long training cells checkpoint, so a budget that ends inside one resumes it at the next
call. A plain ``jaxsamp bench run device`` runs the same cells on a CPU (hours: the paper budgets are why this
suite exists).
"""

from __future__ import annotations

from jaxsamp.bench.protocol import Budget, Cell, Goal, Protocol
from jaxsamp.bench.suites.particles import (
    QUICK_EPOCHS,
    QUICK_PATHS,
    config_run,
    quick_settings,
)
from jaxsamp.bench.suites.paths import TARGETS as PATH_TARGETS

#: Sendera et al. (NeurIPS 2024), the funnel protocol: batches of 300 paths of 100 SDE steps, 25 000 updates; the
#: learning rate is the paths suite's, the rest (LangevinNet 2 x 64, ...) the configs'
SENDERA = {"batch": 300, "num_time_steps": 100, "learning_rate": 1e-3, "loss": "kl", "updates": 25_000}
#: the goals' source: the absolute error of the importance-weighted log Z (and of the ELBO) on 2000 samples
SENDERA_TABLE = ("Sendera et al. 2024 (NeurIPS), Table 1, funnel d = 10: |log Z error| of the importance-weighted "
                 "estimate / of the ELBO on 2000 samples, mean over 5 runs (PIS 0.262 / 0.534, DDS 0.206 / 0.424)")
#: a timing cell trains until this many seconds of training have passed (compilation left out)
TIMING = Budget(updates=10**6, seconds=12.0)
QUICK_TIMING = {"budget_updates": 6, "chunk": 2}
QUICK_DIFFUSION = {"settings": {"num_time_steps": 8, "hidden": 16}, "batch_size": 16}
QUICK_LEAPS = {"target": {"name": "ising", "L": 6, "beta": 0.4407},
               "settings": {"network_params": {"kernel_sizes": [3, 5], "channels": 4, "time_hidden": 8},
                            "free_energy_hidden": [16], "loss_batch": 32, "rollout_steps": 10, "rollout_every": 2,
                            "states_per_walker": 4, "mcmc_updates": 8, "eval_steps": 10},
               "batch_size": 16}
LOGREG = {"name": "bayes_logreg", "dataset": "synthetic", "num_data": 1000, "num_features": 99, "seed": 0}


def diffusion_settings(method: str) -> tuple[dict, dict]:
    """``(target, settings)`` of PIS / DDS on the funnel: ``configs/{method}_funnel.yaml`` at Sendera's size."""
    _, _, settings, _, _ = config_run(f"{method}_funnel.yaml")
    sendera = {k: SENDERA[k] for k in ("num_time_steps", "learning_rate", "loss")}
    return PATH_TARGETS["funnel"][0], {**settings, **sendera}


def timing_cell(method: str, target: dict, settings: dict, batch: int, chunk: int, paper_updates: int,
                name: str, quick: dict) -> Cell:
    """Seconds per update of ``method`` at a paper config: ``TIMING``'s seconds of training, no evaluation."""
    return Cell(f"{method}-timing/{name}", "fit", target,
                {"method": method, "settings": settings, "batch_size": batch, "chunk": chunk, "evaluate": None,
                 "paper_updates": paper_updates},
                TIMING, quick={**QUICK_TIMING, **quick})


def diffusion_timing(method: str) -> Cell:
    target, settings = diffusion_settings(method)
    return timing_cell(method, target, settings, SENDERA["batch"], 100, SENDERA["updates"], "funnel", QUICK_DIFFUSION)


def leaps_timing() -> Cell:
    """LEAPS at ``configs/leaps_ising_L15.yaml`` in steady state: full-length rollouts (no curriculum), one every
    ``rollout_every`` updates, so that a chunk of that many updates holds one rollout."""
    _, target, settings, walkers, updates = config_run("leaps_ising_L15.yaml")
    settings = {**settings, "curriculum_steps": 0, "buffer_rollouts": 1, "warm_up": 0}
    return timing_cell("leaps", target, settings, walkers, settings["rollout_every"], updates, "ising_L15", QUICK_LEAPS)


def particle_timing(method: str) -> Cell:
    """Adjoint Sampling / ASBS at ``configs/{method}_dw4.yaml``: seconds per epoch (an update of ``fit``)."""
    _, target, settings, batch, epochs = config_run(f"{method}_dw4.yaml")
    return timing_cell(method, target, settings, batch, 2, epochs, "dw4",
                       {"settings": quick_settings(method), "batch_size": QUICK_PATHS, "chunk": 1})


def sendera_cell(method: str, updates: int = SENDERA["updates"], suffix: str = "") -> Cell:
    """PIS / DDS on the funnel at Sendera et al.'s size and budget, checkpointed every 2500 updates, scored on the
    protocol's 2000 paths (the paths suite's estimators, Sinkhorn divergence included)."""
    target, settings = diffusion_settings(method)
    return Cell(f"{method}-sendera{suffix}/funnel", "fit", target,
                {"method": method, "settings": settings, "batch_size": SENDERA["batch"], "chunk": 250,
                 "checkpoint_every": 2500},
                Budget(updates=updates),
                quick={**QUICK_DIFFUSION, "budget_updates": 8, "chunk": 4, "checkpoint_every": 4,
                       "evaluate": {"sinkhorn": False}})


def paper_particle_cell(method: str) -> Cell:
    """Adjoint Sampling / ASBS on DW-4 at ``configs/{method}_dw4.yaml``'s full budget (GPU-sized), checkpointed."""
    _, target, settings, batch, epochs = config_run(f"{method}_dw4.yaml")
    return Cell(f"{method}/dw4", "fit", target,
                {"method": method, "settings": settings, "batch_size": batch, "chunk": 10, "checkpoint_every": 200},
                Budget(updates=epochs),
                quick={"settings": quick_settings(method), "batch_size": QUICK_PATHS, "budget_updates": QUICK_EPOCHS,
                       "chunk": 1, "checkpoint_every": 1})


CELLS = (
    diffusion_timing("pis"),
    diffusion_timing("dds"),
    Cell("nuts/logreg_d100", "nuts", LOGREG, {"num_chains": 1024, "num_warmup": 1000, "num_samples": 1000, "calls": 2},
         quick={"target": {**LOGREG, "num_data": 100}, "num_chains": 8, "num_warmup": 30, "num_samples": 20,
                "calls": 1}),
    leaps_timing(),
    particle_timing("adjoint"),
    particle_timing("asbs"),
    sendera_cell("pis"),
    sendera_cell("dds"),
    paper_particle_cell("adjoint"),
    paper_particle_cell("asbs"),
    # the first device call's training: the 6000 updates its leftover 110 s bought (converted; not in the plan)
    sendera_cell("pis", 6000, "-6000"),
)

PROTOCOL = Protocol(
    suite="device",
    summary="on an accelerator: seconds per update of PIS, DDS, LEAPS 15x15, Adjoint Sampling and ASBS at the papers' "
            "configs, NUTS on a 100-d logistic regression with 1024 chains, and the papers' training budgets (PIS/DDS "
            "funnel 25 000 updates, Adjoint/ASBS DW-4)",
    cells=CELLS,
    seeds=(0, 1, 2),
    headline="log_Z_abs_err",
    figures=("seconds_per_update", "hours_to_paper_budget", "compile_seconds", "train_steps", "ess", "elbo", "eubo",
             "sinkhorn", "w2", "energy_w2", "grad_evals_per_s", "draws_per_s", "min_ess_per_s",
             "first_call_seconds"),
    evaluation={"num_samples": 2000},
    quick_evaluation={"num_samples": 64},
    goals=tuple(Goal(f"{method}-sendera/funnel", figure, threshold, source=SENDERA_TABLE)
                for method, figures in {"pis": {"log_Z_abs_err": 0.262, "elbo_abs_err": 0.534},
                                        "dds": {"log_Z_abs_err": 0.206, "elbo_abs_err": 0.424}}.items()
                for figure, threshold in figures.items()),
    # seconds per seed on one H200 (the first device call, 2026-12-04): start-up and compilation, the timing's 12 s,
    # or the training at 0.016 s per PIS/DDS update and 0.15-0.16 s per Adjoint/ASBS epoch, and the evaluation
    device={"pis-timing/funnel": 45, "dds-timing/funnel": 45, "nuts/logreg_d100": 90, "leaps-timing/ising_L15": 70,
            "adjoint-timing/dw4": 60, "asbs-timing/dw4": 65, "pis-sendera/funnel": 460, "dds-sendera/funnel": 460,
            "adjoint/dw4": 850, "asbs/dw4": 800},
    notes="The timings train until 12 s of training have passed (compilation left out, as `Fitted.compile_seconds`) "
          "and score nothing; `hours_to_paper_budget` is the paper's updates times `seconds_per_update` (Adjoint "
          "Sampling and ASBS: epochs; LEAPS: 1e5 updates, the low end of the paper's 1e5-4e5 on one H100). The NUTS "
          "cell's second call compiles nothing: its `grad_evals_per_s` and `draws_per_s` are the sampling phase's. "
          "The training cells run the papers' budgets at the configs' networks (ours, not the papers'), each seed "
          "checkpointed so that a device call that ends inside one resumes it at the next. Converted once from "
          "`scripts/device_check.py`'s `device_2026-12-04.json` (one H200, seed 0 of every timing; its training "
          "phase's 6000 updates as `pis-sendera-6000/funnel`); the settings echoed per figure there (batch, chunk, "
          "SDE steps, walkers, the paper budget) are the cells' definitions here, and the gpu-test counts are the "
          "device log's, not figures.",
)

#: the old device script's results file (``jaxsamp bench convert device`` wrote ``device.nvidia-h200.json``)
LEGACY_FILE = "device_2026-12-04.json"
#: old family -> cell
_LEGACY_FAMILIES = {"pis_funnel": "pis-timing/funnel", "dds_funnel": "dds-timing/funnel",
                    "nuts_logreg_d100": "nuts/logreg_d100", "leaps_L15_ising": "leaps-timing/ising_L15",
                    "adjoint_dw4": "adjoint-timing/dw4", "asbs_dw4": "asbs-timing/dw4",
                    "train_pis_funnel": "pis-sendera-6000/funnel"}
#: old figure -> glossary name (the rest keep theirs)
_LEGACY_FIGURES = {"s_per_update": "seconds_per_update", "s_per_epoch": "seconds_per_update",
                   "timed_updates": "train_steps", "timed_epochs": "train_steps", "updates": "train_steps",
                   "compile_s": "compile_seconds", "first_call_s": "first_call_seconds", "warmup_s": "warmup_seconds",
                   "sampling_s": "sampling_seconds"}
#: the old file's keys that are not one cell's figure: the call's own (budget, gpu-test counts, versions) and the
#: settings it echoed beside each family's figures (the cells' definitions now)
_LEGACY_DROPPED = {"budget_seconds", "quick", "wall_seconds", "gpu_tests_passed", "gpu_tests_failed",
                   "gpu_tests_errors", "gpu_tests_skipped", "gpu_tests_seconds", "gpu_tests_files", "jax_version",
                   "backend", "device_kind", "chunk", "batch", "sde_steps", "chains", "dim", "loss_batch", "walkers",
                   "rollout_every", "paper_budget_updates", "paper_budget_epochs", "reached_paper_budget",
                   "eval_paths", "seed", "s_per_step"}


def legacy_key(name: str):
    """The old file kept no per-seed keys (every figure is seed 0's): nothing for this hook."""
    return


def legacy_single(name: str):
    """``(cell, figure, 1, 0)`` of a key of ``device_2026-12-04.json``, None for a key that is no cell's figure
    (``_LEGACY_DROPPED``); an unknown key is an error, so nothing is dropped silently."""
    from jaxsamp.core.errors import InputError

    for family, cell in _LEGACY_FAMILIES.items():
        if name.startswith(family + "_"):
            figure = name[len(family) + 1:]
            if figure in _LEGACY_DROPPED:
                return None
            return cell, _LEGACY_FIGURES.get(figure, figure), 1, 0
    if name in _LEGACY_DROPPED:
        return None
    raise InputError(f"{LEGACY_FILE}: no cell of suite 'device' takes {name!r}")
