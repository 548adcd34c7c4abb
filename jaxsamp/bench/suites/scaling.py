"""Suite ``scaling``: data-parallel training throughput of PIS and LEAPS on 1, 2, 4 and 8 forced CPU devices, each
family and device count a cell run in its own process; the speed-up as a comparison with the 1-device cell."""

from __future__ import annotations

from jaxsamp.bench import cells, child
from jaxsamp.bench.protocol import Budget, Cell, Comparison, Protocol
from jaxsamp.bench.suites.paths import TARGETS as PATH_TARGETS
from jaxsamp.core.errors import RunHealthError

DEVICES = (1, 2, 4, 8)
#: family -> (method, target, settings, batch, quick overrides); batches divisible by 8
FAMILIES = {
    "pis": ("pis", PATH_TARGETS["funnel"][0], {"num_time_steps": 32, "hidden": 64, "num_layers": 2}, 64,
            {"settings": {"num_time_steps": 4, "hidden": 8}, "batch_size": 8}),
    "leaps": ("leaps", {"name": "ising", "L": 8, "beta": 0.4407},
              {"network": "conv", "network_params": {"kernel_sizes": [3, 5], "channels": 8, "time_hidden": 32},
               "free_energy_hidden": [32], "loss_batch": 64, "rollout_steps": 20, "curriculum_steps": 0, "warm_up": 0,
               "rollout_every": 5, "buffer_rollouts": 1, "states_per_walker": 4, "mcmc_updates": 8}, 64,
              {"target": {"name": "ising", "L": 4, "beta": 0.4407},
               "settings": {"network_params": {"kernel_sizes": [3], "channels": 4, "time_hidden": 8},
                            "free_energy_hidden": [8], "loss_batch": 8, "rollout_steps": 4, "states_per_walker": 2,
                            "mcmc_updates": 1},
               "batch_size": 8}),
}
CHUNK = 10
#: train until 20 s of training have passed (compilation left out); the update count is a cap never reached
TIMED = Budget(updates=10**6, seconds=20.0)


@cells.runner("data_parallel_fit")
def data_parallel_cell(cell: Cell, seed: int, *, target_evals, evaluation: dict, budget_scale: int = 1,
                       checkpoint=None) -> tuple[dict, dict]:
    """The ``fit`` runner with the batch split over ``params["devices"]`` devices, in a fresh process with that
    many forced CPU devices (:mod:`jaxsamp.bench.child`); ``train_steps_per_s`` is its updates per second of
    training, compilation left out."""
    import jax

    devices = cell.params["devices"]
    if not child.in_child():
        return child.run_in_child(data_parallel_cell, cell, seed, env=child.forced_cpu_devices(devices),
                                  target_evals=target_evals, evaluation=evaluation, budget_scale=budget_scale)
    if jax.device_count() != devices:
        raise RunHealthError(f"cell {cell.name!r}: the child has {jax.device_count()} devices, not {devices}")
    figures, _ = cells.fit_cell(cell, seed, target_evals=target_evals, evaluation=evaluation,
                                budget_scale=budget_scale)
    figures["train_steps_per_s"] = figures["train_steps"] / figures["train_seconds"]
    return figures, {}


def scaling_cell(family: str, devices: int) -> Cell:
    """``family``'s small config trained on ``devices`` forced CPU devices for ``TIMED``'s 20 s."""
    method, target, settings, batch, quick = FAMILIES[family]
    return Cell(f"{family}/dev{devices}", "data_parallel_fit", target,
                {"method": method, "settings": settings, "batch_size": batch, "chunk": CHUNK, "evaluate": None,
                 "devices": devices},
                TIMED, quick={**quick, "budget_updates": 2 * CHUNK})


PROTOCOL = Protocol(
    suite="scaling",
    summary="data-parallel training throughput of PIS (funnel) and LEAPS (Ising 8x8) on 1, 2, 4 and 8 forced CPU "
            "devices, each in its own process; the speed-up over 1 device",
    cells=tuple(scaling_cell(family, n) for family in FAMILIES for n in DEVICES),
    seeds=(0,),
    headline="train_steps_per_s",
    figures=("compile_seconds", "seconds_per_update", "train_steps", "first_call_seconds"),
    evaluation={},
    quick_evaluation={},
    comparisons=tuple(Comparison(f"{family}/dev{n}", f"{family}/dev1", "train_steps_per_s")
                      for family in FAMILIES for n in DEVICES[1:]),
    notes="""\
What: updates per second of data-parallel training through ``jaxsamp.fit`` (``mesh=jaxsamp.batch_mesh(n)``: the
batch split over a mesh of ``n`` devices, parameters replicated), ``n`` in 1, 2, 4, 8; each family and device count
a cell run in its own child process with ``XLA_FLAGS=--xla_force_host_platform_device_count=n`` (the count is
fixed when JAX starts; ``jaxsamp.bench.child``).

Configs (small, the same at every ``n``; batches divisible by 8): ``pis``: PIS on Neal's funnel (d = 10), 64 paths
of 32 SDE steps per update, LangevinNet 2 x 64, KL loss; ``leaps``: LEAPS on the critical 8 x 8 Ising torus, LE-conv
kernels 3, 5 x 8 channels, 64 walkers of 20-step rollouts (one every 5 updates, no curriculum: steady state), loss
batch 64.

Timing: chunks of 10 updates until 20 s of training have passed (``max_seconds``, compilation left out; at least
one chunk): ``train_steps_per_s`` is the updates made over ``Fitted.seconds - Fitted.compile_seconds`` and
``compile_seconds`` the compilation; the comparisons' per-seed ratios of ``train_steps_per_s`` to the 1-device cell
are the speed-ups. One seed (``fit``'s key ``key(seed)``): a throughput, not a statistic of the method.

Reading it: forced CPU devices share the machine's cores (2 here), so on this machine the curve shows the overhead
of partitioning (collectives, smaller per-device kernels), not a speed-up; on ``n`` real devices the same code
splits the per-sample work ``n`` ways.

Converted once from ``scripts/bench_scaling.py``'s ``bench_scaling.json`` (its run of 2026-12-05 at ``8e603ce``,
alone on the machine) as seed 0: ``{family}_updates_per_s_dev{n}`` as ``train_steps_per_s``; that run timed the
first call of 10 updates, compilation included, apart (``{family}_first_call_s_dev{n}``, here
``first_call_seconds``), where the suite records ``compile_seconds``; its speed-ups are the comparisons; its random
stream (the script's key) differs from ``fit``'s ``key(0)``: the same protocol.
""",
)

# --------------------------------------------------------------------------
# the old results file
# --------------------------------------------------------------------------

LEGACY_FILE = "bench_scaling.json"
#: old figure -> glossary name; the speed-ups are the comparisons' ratios, the run's settings the cells' definitions
_LEGACY_FIGURES = {"updates_per_s": "train_steps_per_s", "first_call_s": "first_call_seconds", "speedup": None}


def legacy_key(name: str):
    """The old file kept no per-seed keys (its one run is seed 0's): nothing for this hook."""
    return


def legacy_single(name: str):
    """``(cell, figure, 1, 0)`` of ``{family}_{figure}_dev{n}`` in ``bench_scaling.json``; None for a speed-up and
    the run's settings (``chunk``, ``seconds_per_point``); an unknown key is an error."""
    import re

    from jaxsamp.core.errors import InputError

    if name in ("chunk", "seconds_per_point"):
        return None
    match = re.fullmatch(r"([a-z]+)_([a-z_]+)_dev(\d+)", name)
    if match is None or match.group(1) not in FAMILIES or match.group(2) not in _LEGACY_FIGURES:
        raise InputError(f"{LEGACY_FILE}: no cell of suite 'scaling' takes {name!r}")
    family, figure, devices = match.groups()
    return None if _LEGACY_FIGURES[figure] is None else (f"{family}/dev{devices}", _LEGACY_FIGURES[figure], 1, 0)
