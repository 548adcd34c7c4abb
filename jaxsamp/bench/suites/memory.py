"""Suite ``memory``: peak device memory of one training step at each paper config, from XLA's memory analysis of the
step compiled (not run) for the CPU at two small batches, extrapolated linearly to the paper's batch."""

from __future__ import annotations

import numpy as np

from jaxsamp.bench import cells
from jaxsamp.bench.protocol import Cell, Protocol
from jaxsamp.bench.suites.device import PROTOCOL as DEVICE
from jaxsamp.bench.suites.device import QUICK_DIFFUSION
from jaxsamp.bench.suites.particles import QUICK_PATHS, config_run, quick_settings

#: the measured batches, as fractions of the paper's
SCALES = (1 / 20, 1 / 10)
QUICK_SCALES = (1 / 4, 1 / 2)
GIB, MIB = 2.0**30, 2.0**20
#: LEAPS' quick size: a 6 x 6 torus, one small kernel, a buffer of 4 rollouts
QUICK_LEAPS = {"target": {"name": "ising", "L": 6, "beta": 0.4407},
               "settings": {"network_params": {"kernel_sizes": [3], "channels": 4, "time_hidden": 8},
                            "free_energy_hidden": [16], "loss_batch": 32, "rollout_steps": 8, "buffer_rollouts": 4,
                            "states_per_walker": 4, "mcmc_updates": 2},
               "batch_size": 16}


def step_bytes(sampler) -> dict:
    """Bytes of the compiled train step (the state donated, as the driver runs it), from XLA's memory analysis:
    ``peak`` = arguments + outputs - aliased + temporaries, ``state`` (the train state's arrays), ``temp``."""
    import jax

    state = jax.eval_shape(sampler.init, jax.random.key(0))
    analysis = jax.jit(sampler.step, donate_argnums=1).lower(jax.random.key(1), state).compile().memory_analysis()
    state_bytes = sum(int(np.prod(a.shape)) * a.dtype.itemsize for a in jax.tree.leaves(state))
    peak = (analysis.argument_size_in_bytes + analysis.output_size_in_bytes - analysis.alias_size_in_bytes
            + analysis.temp_size_in_bytes)
    return {"peak": float(peak), "state": float(state_bytes), "temp": float(analysis.temp_size_in_bytes)}


@cells.runner("step_memory")
def step_memory_cell(cell: Cell, seed: int, *, target_evals, evaluation: dict, budget_scale: int = 1,
                     checkpoint=None) -> tuple[dict, dict]:
    """The train step of ``method`` at ``settings`` compiled at the paper's ``batch_size`` times each of ``scales``
    (the settings named in ``scaled_settings`` scaled with it: loss and Adam batches, so the replay buffers too),
    and the line through the two points read at the paper's batch (GiB): ``peak_gib``, ``state_gib``, ``temp_gib``,
    each with its ``*_per_sample_mib`` slope and ``*_fixed_gib`` intercept, and ``measured_peak_gib_batch<b>`` at the
    two measured batches. Nothing runs, so the seed is not used."""
    import jaxsamp.learned.methods  # noqa: F401  (registers the methods)
    from jaxsamp.core.registry import LEARNED

    p = cell.params
    entry, target = LEARNED.entry(p["method"]), cells.build_target(cell.target)
    points = []
    for scale in p["scales"]:
        batch = max(1, round(p["batch_size"] * scale))
        scaled = {k: max(1, round(p["settings"][k] * scale)) for k in p["scaled_settings"]}
        settings = entry.meta["settings"](**{**p["settings"], **scaled})
        points.append((batch, step_bytes(entry.factory(target, settings, batch_size=batch))))
    (b1, m1), (b2, m2) = points
    figures = {}
    for part in ("peak", "state", "temp"):
        slope = (m2[part] - m1[part]) / (b2 - b1)
        figures[f"{part}_gib"] = (m1[part] + slope * (p["batch_size"] - b1)) / GIB
        figures[f"{part}_per_sample_mib"] = slope / MIB
        figures[f"{part}_fixed_gib"] = (m1[part] - slope * b1) / GIB
    for batch, measured in points:
        figures[f"measured_peak_gib_batch{batch}"] = measured["peak"] / GIB
    return figures, {}


def memory_cell(name: str, method: str, target: dict, settings: dict, batch: int, scaled: tuple, quick: dict) -> Cell:
    return Cell(f"{method}/{name}", "step_memory", target,
                {"method": method, "settings": settings, "batch_size": batch, "scaled_settings": list(scaled),
                 "scales": list(SCALES)},
                quick={**quick, "scales": list(QUICK_SCALES)})


def diffusion_cell(method: str) -> Cell:
    """PIS / DDS on the funnel as the ``device`` suite's timing cell trains it (Sendera et al.'s 300 paths of 100
    SDE steps)."""
    timing = DEVICE.cell(f"{method}-timing/funnel")
    return memory_cell("funnel", method, timing.target, timing.params["settings"], timing.params["batch_size"], (),
                       QUICK_DIFFUSION)


def config_cell(config: str, name: str, scaled: tuple, quick: dict) -> Cell:
    """The method of ``configs/<config>`` at its settings and paths (walkers) per update."""
    method, target, settings, batch, _ = config_run(config)
    return memory_cell(name, method, target, settings, batch, scaled, quick)


CELLS = (
    diffusion_cell("pis"),
    diffusion_cell("dds"),
    config_cell("leaps_ising_L15.yaml", "ising_L15", ("loss_batch",), QUICK_LEAPS),
    *(config_cell(f"{method}_dw4.yaml", "dw4", ("train_batch_size",),
                  {"settings": quick_settings(method), "batch_size": QUICK_PATHS}) for method in ("adjoint", "asbs")),
)

PROTOCOL = Protocol(
    suite="memory",
    summary="peak memory of one training step at each paper config (PIS/DDS funnel, LEAPS 15x15, Adjoint Sampling "
            "and ASBS on DW-4): XLA's memory analysis at 1/20 and 1/10 of the batch, extrapolated",
    cells=CELLS,
    seeds=(0,),
    headline="peak_gib",
    figures=("state_gib", "temp_gib", "peak_per_sample_mib", "peak_fixed_gib"),
    evaluation={},
    quick_evaluation={},
    notes="""\
Configs (the issue's paper configs): ``pis/funnel`` / ``dds/funnel`` as the ``device`` suite's timing cells train
them (Sendera et al.'s 300 paths of 100 SDE steps, LangevinNet 2 x 64, KL loss: the whole path is differentiated,
one state per step kept by ``jax.checkpoint``); ``leaps/ising_L15`` (``configs/leaps_ising_L15.yaml``: LE-conv 3, 5,
7, 9, 15 x 20 channels, 200 walkers, loss batch 400, a buffer of 100 rollouts x 200 walkers x 16 states);
``adjoint/dw4`` / ``asbs/dw4`` (``configs/{adjoint,asbs}_dw4.yaml``: EGNN 5 x 128, 512 paths of 200 time points,
Adam batch 512, a buffer of 20 rollouts).

Measurement: the train step as the driver runs it (``jax.jit``, the train state donated), compiled for the CPU at
two small batches, the paper's batch times ``r`` for ``r`` in 1/20, 1/10 (quick: 1/4, 1/2 of the quick configs),
every batch-sized setting scaled together (paths, walkers, loss / Adam batches, so the replay buffers too); XLA's
``memory_analysis()`` of the compiled step gives its arguments, outputs, aliased (donated) bytes and temporaries;
the step's peak is arguments + outputs - aliased + temporaries. Nothing is run, only compiled, so the figures are
the same at every seed and under any load: one seed.

Extrapolation: each figure is linear in the batch (the parameters and optimiser state are the intercept,
``*_fixed_gib``, the per-sample work and the buffers the slope, ``*_per_sample_mib``), fitted through the two
measured points and read at the paper's batch: ``peak_gib`` is the headline, with the measured points
(``measured_peak_gib_batch<b>``) and the state's share beside it. On a mesh of ``n`` devices
(``jaxsamp.core.data_parallel``) the slope part is divided by ``n``, the intercept is not. The extrapolation ignores
what XLA's GPU compiler fuses or schedules differently; it is a sizing estimate, not a measurement on the device.

Converted once from ``scripts/memory_estimates.py``'s ``memory_estimates.json`` (its run of 2026-12-05 at
``a9ebfe5``) as seed 0; the paper batch it echoed is the cell's ``batch_size``. The script built LEAPS through the
leaps experiment's ``check`` and the particle methods through their configs' settings objects; the suite builds
every method through the method registry from the same settings.
""",
)

# --------------------------------------------------------------------------
# the old results file
# --------------------------------------------------------------------------

LEGACY_FILE = "memory_estimates.json"
_LEGACY_CONFIGS = {"pis_funnel": "pis/funnel", "dds_funnel": "dds/funnel", "leaps_L15_ising": "leaps/ising_L15",
                   "adjoint_dw4": "adjoint/dw4", "asbs_dw4": "asbs/dw4"}


def legacy_key(name: str):
    """The old file kept no per-seed keys (its one run is seed 0's): nothing for this hook."""
    return


def legacy_single(name: str):
    """``(cell, figure, 1, 0)`` of ``{config}_{figure}`` in ``memory_estimates.json``; None for the echoed
    ``{config}_paper_batch`` (the cell's ``batch_size``); an unknown key is an error."""
    from jaxsamp.core.errors import InputError

    for config, cell in _LEGACY_CONFIGS.items():
        if name.startswith(config + "_"):
            figure = name[len(config) + 1:]
            return None if figure == "paper_batch" else (cell, figure, 1, 0)
    raise InputError(f"{LEGACY_FILE}: no cell of suite 'memory' takes {name!r}")
