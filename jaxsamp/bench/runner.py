"""Run a suite cell by cell and seed by seed, recording each seed as it lands; a rerun skips what is recorded.

A seed's record carries the cell's definition as it ran, the machine and the command, so the results file
alone says how to reproduce any figure in it. A recorded seed whose cell definition differs from the
protocol's is not silently mixed with new ones: the run stops and names the difference.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from jaxsamp.bench import store
from jaxsamp.bench.cells import RUNNERS
from jaxsamp.bench.machine import accelerator, machine
from jaxsamp.bench.protocol import Budget, Cell, Protocol, scaled_name
from jaxsamp.core.errors import ConfigError, InputError

#: ``--device-budget`` starts no cell with fewer seconds than this left (start-up and compilation alone take it)
MIN_DEVICE_START = 30.0


def matched_budget(data: dict, cell: Cell, seed: int, budget_scale: int) -> float:
    """The mean ``budget.match_figure`` (training ``target_evals`` unless named) of the cells ``cell`` matches, at
    ``seed`` and ``budget_scale``, times ``budget.match_scale``, plus the cell's own ``budget.target_evals`` when it
    has one (the learned samplers' sampling evaluations, say)."""
    counts, figure = [], cell.budget.match_figure
    for other in cell.budget.match_target_evals:
        rec = data["records"].get(scaled_name(other, budget_scale), {}).get(str(seed))
        if rec is not None and figure in rec["figures"]:
            counts.append(rec["figures"][figure])
    if not counts:
        raise InputError(f"cell {cell.name!r} spends what {', '.join(cell.budget.match_target_evals)} spent at seed "
                         f"{seed}, and none of them is recorded", "run those cells first (or in the same run)")
    return float(np.mean(counts)) * cell.budget.match_scale + (cell.budget.target_evals or 0)


def run_suite(protocol: Protocol, *, cells=None, seeds=None, budget_scale: int = 1, quick: bool = False,
              results_dir: Path | None = None, rerun: bool = False, after_seed: Callable | None = None,
              log: Callable[[str], None] = print) -> dict:
    """Run ``protocol``'s cells (all, or those matching the patterns ``cells``) at ``seeds``; return the file.

    Parameters
    ----------
    protocol : Protocol
    cells : list of str, optional
        Shell-style patterns of cell names (``"pis-*/funnel"``).
    seeds : list of int, optional
        Default the protocol's seeds (the first only at the quick size).
    budget_scale : int
        Multiplies every update budget; the results are named ``"<cell> xK"``.
    quick : bool
        The suite's quick size, into ``<suite>_quick.json`` (what a test runs; numbers not meaningful).
    results_dir : path, optional
        Default ``benchmarks/results``.
    rerun : bool
        Run seeds that are recorded already (replacing them) instead of skipping them, from the start: their
        checkpoints (:func:`checkpoint_folder`) are removed first. A seed not yet recorded resumes from its own.
    after_seed : callable, optional
        ``after_seed(cell, seed, figures, artifacts)`` after each recorded seed (a suite's plots).
    """
    if budget_scale < 1:
        raise ConfigError(f"budget scale must be a positive integer, got {budget_scale}")
    chosen = protocol.select(cells)
    seeds = list(seeds if seeds is not None else protocol.seeds[:1] if quick else protocol.seeds)
    evaluation = dict(protocol.quick_evaluation if quick else protocol.evaluation)
    here, revision = machine(), store.revision()
    path = store.results_path(protocol.suite, quick, results_dir, accelerator(here))
    command = "jaxsamp bench " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if "bench" in sys.argv else \
        f"run_suite({protocol.suite!r}, cells={cells}, seeds={seeds}, budget_scale={budget_scale}, quick={quick})"
    data = store.read(path)
    for seed in seeds:
        for cell in chosen:
            sized = cell.sized(quick)
            name = scaled_name(cell.name, budget_scale)
            recorded = data["records"].get(name, {}).get(str(seed))
            definition = json.loads(json.dumps(dataclasses.asdict(sized)))
            if recorded is not None and not rerun:
                changed = _changed_definition(recorded, definition)
                if changed:
                    raise InputError(
                        f"{path}: {name} seed {seed} was recorded with another definition of the cell ({changed})",
                        "give the changed cell a new name, or pass --rerun to replace the record")
                log(f"{protocol.suite} {name} seed {seed}: recorded already")
                continue
            if recorded is not None:  # run again from the start: the recorded run's checkpoints would be resumed
                shutil.rmtree(checkpoint_folder(path, name, seed), ignore_errors=True)
            budget = matched_budget(data, sized, seed, budget_scale) if sized.budget.match_target_evals else \
                sized.budget.target_evals
            start = time.perf_counter()
            figures, artifacts = RUNNERS[sized.runner](sized, seed, target_evals=budget, evaluation=evaluation,
                                                       budget_scale=budget_scale,
                                                       checkpoint=checkpoint_folder(path, name, seed))
            curves = {"curves": artifacts["curves"]} if "curves" in artifacts else {}  # lists, beside the figures
            data = store.record(path, protocol, name, seed, {
                "figures": figures, **curves, "cell": definition, "budget_scale": budget_scale,
                "evaluation": evaluation, "machine": here, "command": command, "revision": revision,
                "wall_seconds": time.perf_counter() - start})
            # the headline, else the first of the suite's figures the cell has (a posterior has no log Z error)
            shown = next((f for f in (protocol.headline, *protocol.figures) if f in figures), next(iter(figures), None))
            log(f"{protocol.suite} {name} seed {seed}: " + (f"{shown} {figures[shown]:.4g}" if shown else "no figures")
                + f" ({time.perf_counter() - start:.0f} s) -> {path}")
            if after_seed is not None:
                after_seed(name, seed, figures, artifacts)
    return data


def device_queue(protocol: Protocol, records: dict, *, cells=None, seeds=None) -> list[tuple[str, int, float]]:
    """What ``--device-budget`` runs, in order: ``[(cell, seed, expected seconds)]`` of the protocol's device
    cells (``protocol.device``, most valuable first) not yet in ``records`` (the device kind's results file).

    Seed-major: the first seed of every device cell before the second of any, so that a short budget measures
    every cell once before it repeats one. The expected seconds are the median wall seconds of the cell's seeds
    already recorded on this device kind, else the protocol's estimate. ``cells`` (shell-style patterns) and
    ``seeds`` narrow the queue.
    """
    chosen = {c.name for c in protocol.select(cells)}
    queue = []
    for seed in seeds if seeds is not None else protocol.seeds:
        for cell, estimate in protocol.device.items():
            done = records.get(cell, {})
            if cell not in chosen or str(seed) in done:
                continue
            measured = [r["wall_seconds"] for r in done.values() if "wall_seconds" in r]
            queue.append((cell, seed, float(np.median(measured)) if measured else float(estimate)))
    return queue


def run_device_budget(protocol: Protocol, seconds: float, *, cells=None, seeds=None, quick: bool = False,
                      results_dir: Path | None = None, log: Callable[[str], None] = print) -> dict:
    """Run the protocol's device cells not yet recorded for this device kind that fit in ``seconds`` of wall time.

    Each cell and seed runs in a child process (``jaxsamp bench run SUITE --cells CELL --seeds K``), so that this
    process never holds the accelerator's memory and a hang or a crash costs one cell: the child is killed when
    the budget runs out, and a cell with ``checkpoint_every`` resumes from its checkpoint at the next call. A cell
    whose expected seconds exceed what is left is passed over for a cheaper one, except a checkpointed cell,
    which starts whenever at least ``MIN_DEVICE_START`` seconds are left and goes as far as they reach. Returns
    ``{"ran": [...], "stopped": [...], "failed": [...], "passed_over": [...]}`` of ``"cell seed K"`` strings.
    """
    import os
    import signal
    import subprocess

    start = time.monotonic()
    probe = subprocess.run([sys.executable, "-m", "jaxsamp.bench.machine"], capture_output=True, text=True,
                           check=False, timeout=max(seconds, 60))
    if probe.returncode != 0:
        raise InputError("jax does not start here: " + (probe.stderr.strip().splitlines() or ["no output"])[-1])
    here = json.loads(probe.stdout.strip().splitlines()[-1])
    path = store.results_path(protocol.suite, quick, results_dir, accelerator(here))
    queue = device_queue(protocol, store.read(path)["records"], cells=cells, seeds=seeds)
    kind = here.get("device_kind") or "this machine"
    log(f"{protocol.suite}: {len(queue)} device cell-seeds not yet recorded on {kind} ({path.name}); "
        f"{seconds:.0f} s budget")
    outcome = {"ran": [], "stopped": [], "failed": [], "passed_over": []}
    for cell, seed, expected in queue:
        left = seconds - (time.monotonic() - start)
        resumable = bool(protocol.cell(cell).sized(quick).params.get("checkpoint_every"))
        name = f"{cell} seed {seed}"
        if left < MIN_DEVICE_START or (expected > left and not resumable):
            log(f"{name}: expects {expected:.0f} s, {left:.0f} s left: passed over")
            outcome["passed_over"].append(name)
            continue
        command = [sys.executable, "-m", "jaxsamp", "bench", "run", protocol.suite, "--cells", cell, "--seeds",
                   str(seed), *(["--quick"] if quick else []), *(["--results-dir", str(results_dir)] if results_dir
                                                                 else [])]
        log(f"{name}: expects {expected:.0f} s, {left:.0f} s left: running")
        child = subprocess.Popen(command, start_new_session=True)
        try:
            code = child.wait(timeout=left)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            log(f"{name}: stopped at the budget" + (" (its checkpoint resumes at the next call)" if resumable else ""))
            outcome["stopped"].append(name)
            continue
        outcome["ran" if code == 0 else "failed"].append(name)
        if code != 0:
            log(f"{name}: failed (exit {code}); the next cell runs")
    log(f"{protocol.suite}: " + "; ".join(f"{k.replace('_', ' ')} {len(v)}" for k, v in outcome.items())
        + f" in {time.monotonic() - start:.0f} s -> {path}")
    return outcome


def checkpoint_folder(results: Path, cell: str, seed: int) -> Path:
    """Where a cell's run keeps its checkpoints (a cell that asks for them: ``params["checkpoint_every"]`` of a fit
    cell): ``<results dir>/checkpoints/<results file's stem>/<cell>/seed<k>``, the cell's ``/`` and spaces as ``_``
    (not committed: ``checkpoints/`` is ignored). A killed run started again with the same command resumes there; a
    rerun of a recorded seed removes it first, so that it trains again."""
    return results.parent / "checkpoints" / results.stem / cell.replace("/", "_").replace(" ", "_") / f"seed{seed}"


def reproduce(protocol: Protocol, cell: str, seed: int, *, quick: bool = False, results_dir: Path | None = None,
              log: Callable[[str], None] = print) -> dict:
    """Run one recorded cell and seed again from its stored definition; return ``{figure: (recorded, again)}``.

    The definition, evaluation and budget scale are the record's (a record converted from an old script has no
    stored definition: the protocol's current one runs, and the log says so); a baseline spends what the
    record's matched cells spent. Nothing is written: the figures are compared, not recorded. Equal figures on
    the machine that recorded them show the run is reproducible; on another machine XLA's round-off may move a
    long training run (the machine records say which ran what).
    """
    path = store.results_path(protocol.suite, quick, results_dir, accelerator(machine()))
    data = store.read(path)
    record = data["records"].get(cell, {}).get(str(seed))
    if record is None:
        raise InputError(f"{path} has no record of {cell} seed {seed}",
                         f"recorded: {', '.join(sorted(data['records'])) or 'nothing'}")
    scale = record.get("budget_scale", 1)
    if "cell" in record:
        definition = Cell.from_dict(record["cell"])
    else:
        definition = protocol.cell(cell.split(" x")[0]).sized(quick)
        log(f"{cell} seed {seed} was converted from an old results file: running the protocol's current definition")
    budget = matched_budget(data, definition, seed, scale) if definition.budget.match_target_evals else \
        definition.budget.target_evals
    evaluation = {**(protocol.quick_evaluation if quick else protocol.evaluation), **record.get("evaluation", {})}
    figures, _ = RUNNERS[definition.runner](definition, seed, target_evals=budget, evaluation=evaluation,
                                            budget_scale=scale)
    return {name: (value, figures.get(name)) for name, value in record["figures"].items()}


def merge(protocol: Protocol, source_dir: Path, *, cells=None, results_dir: Path | None = None,
          log: Callable[[str], None] = print) -> dict[str, list[str]]:
    """Copy the records of ``protocol``'s results files in ``source_dir`` into those in ``results_dir``.

    What a run into another folder recorded (another machine's, a cluster job's, or a re-run kept apart until it is
    whole) joins the suite's own files: the CPU file and each device kind's file into its namesake. Every record
    keeps its machine, date and command, and a recorded (cell, seed) is replaced by the source's; the summary,
    goals and comparisons are recomputed, per machine as always. A record whose cell definition differs from the
    protocol's is refused, naming the difference (run it again instead).

    Parameters
    ----------
    protocol : Protocol
    source_dir : path
        The folder another run wrote to with ``--results-dir``.
    cells : list of str, optional
        Shell-style patterns of the record names to merge (``"pis-*/many_well"``; ``"NAME xK"`` for a budget-scaled
        cell); default every record.
    results_dir : path, optional
        Default ``benchmarks/results``.

    Returns
    -------
    dict
        ``{"added": [...], "replaced": [...], "unchanged": [...]}`` of ``"cell seed K"`` strings.
    """
    import fnmatch

    source_dir = Path(source_dir)
    sources = {"": store.results_path(protocol.suite, results_dir=source_dir),
               **store.device_files(protocol.suite, results_dir=source_dir)}
    sources = {device: path for device, path in sources.items() if path.exists()}
    if not sources:
        raise InputError(f"{source_dir} holds no results of suite {protocol.suite!r}",
                         f"expected {store.results_path(protocol.suite, results_dir=source_dir).name}")
    chosen: dict[str, dict] = {}  # device -> {cell: {seed: record}}, every record checked before any is written
    for device, source in sources.items():
        chosen[device] = {}
        for name, seeds in store.read(source)["records"].items():
            if cells and not any(fnmatch.fnmatchcase(name, pattern) for pattern in cells):
                continue
            current = json.loads(json.dumps(dataclasses.asdict(protocol.cell(name.split(" x")[0]))))
            for seed, entry in seeds.items():
                changed = _changed_definition(entry, current)
                if changed:
                    raise InputError(f"{source}: {name} seed {seed} was recorded with another definition of the cell "
                                     f"({changed})",
                                     "run it again with the current protocol instead of merging it")
            chosen[device][name] = seeds
    names = {name for records in chosen.values() for name in records}
    unmatched = [pattern for pattern in cells or () if not any(fnmatch.fnmatchcase(n, pattern) for n in names)]
    if unmatched:
        raise InputError(f"{source_dir}: no record of suite {protocol.suite!r} matches {unmatched}",
                         "`jaxsamp bench list --results-dir DIR` lists what it holds")
    outcome = {"added": [], "replaced": [], "unchanged": []}
    for device, records in chosen.items():
        if not records:
            continue
        path = store.results_path(protocol.suite, results_dir=results_dir, device=device)
        data, changes = store.merge_records(path, protocol, records)
        for key, done in changes.items():
            outcome[key] += done
        for name in records:
            machines = len(store.by_machine(data["records"][name]))
            if machines > 1:
                log(f"{name}: seeds from {machines} machines in {path.name}, reported apart (never pooled)")
        log(f"{sources[device]} -> {path}: " + "; ".join(f"{k} {len(v)}" for k, v in changes.items()))
    return outcome


def _changed_definition(record: dict, definition: dict) -> str:
    """The first field where a record's stored cell definition differs from ``definition`` (``""`` when it does not,
    or when the record, converted from an old script, stores none)."""
    stored = _with_budget_defaults(record.get("cell", definition))
    return _first_difference(stored, definition) if stored != definition else ""


def _with_budget_defaults(cell: dict) -> dict:
    """A recorded cell's definition with the budget fields added since it was recorded, at their defaults (a field
    that did not exist then was at its default)."""
    defaults = json.loads(json.dumps(dataclasses.asdict(Budget())))
    return {**cell, "budget": {**defaults, **cell.get("budget", {})}}


def _first_difference(old, new, where: str = "") -> str:
    """The first field where two JSON values differ, as ``field: old -> new``."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            if old.get(key) != new.get(key):
                return _first_difference(old.get(key), new.get(key), f"{where}.{key}" if where else key)
    return f"{where or 'value'}: {old!r} -> {new!r}"
