"""Run a suite cell by cell and seed by seed, recording each seed as it lands; a rerun skips what is recorded.

A seed's record carries the cell's definition as it ran, the machine and the command, so the results file
alone says how to reproduce any figure in it. A recorded seed whose cell definition differs from the
protocol's is not silently mixed with new ones: the run stops and names the difference.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from jaxsamp.bench import store
from jaxsamp.bench.cells import RUNNERS
from jaxsamp.bench.machine import machine
from jaxsamp.bench.protocol import Cell, Protocol, scaled_name
from jaxsamp.core.errors import ConfigError, InputError


def matched_budget(data: dict, cell: Cell, seed: int, budget_scale: int) -> float:
    """The mean training ``target_evals`` of the cells ``cell`` matches, at ``seed`` and ``budget_scale``, plus the
    cell's own ``budget.target_evals`` when it has one (the learned samplers' sampling evaluations, say)."""
    counts = []
    for other in cell.budget.match_target_evals:
        rec = data["records"].get(scaled_name(other, budget_scale), {}).get(str(seed))
        if rec is not None and "target_evals" in rec["figures"]:
            counts.append(rec["figures"]["target_evals"])
    if not counts:
        raise InputError(f"cell {cell.name!r} spends what {', '.join(cell.budget.match_target_evals)} spent at seed "
                         f"{seed}, and none of them is recorded", "run those cells first (or in the same run)")
    return float(np.mean(counts)) + (cell.budget.target_evals or 0)


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
        Run seeds that are recorded already (replacing them) instead of skipping them.
    after_seed : callable, optional
        ``after_seed(cell, seed, figures, artifacts)`` after each recorded seed (a suite's plots).
    """
    if budget_scale < 1:
        raise ConfigError(f"budget scale must be a positive integer, got {budget_scale}")
    chosen = protocol.select(cells)
    seeds = list(seeds if seeds is not None else protocol.seeds[:1] if quick else protocol.seeds)
    evaluation = dict(protocol.quick_evaluation if quick else protocol.evaluation)
    path = store.results_path(protocol.suite, quick, results_dir)
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
                if recorded.get("cell", definition) != definition:
                    raise InputError(
                        f"{path}: {name} seed {seed} was recorded with another definition of the cell "
                        f"({_first_difference(recorded['cell'], definition)})",
                        "give the changed cell a new name, or pass --rerun to replace the record")
                log(f"{protocol.suite} {name} seed {seed}: recorded already")
                continue
            budget = matched_budget(data, sized, seed, budget_scale) if sized.budget.match_target_evals else \
                sized.budget.target_evals
            start = time.perf_counter()
            figures, artifacts = RUNNERS[sized.runner](sized, seed, target_evals=budget, evaluation=evaluation,
                                                       budget_scale=budget_scale,
                                                       checkpoint=checkpoint_folder(path, name, seed))
            curves = {"curves": artifacts["curves"]} if "curves" in artifacts else {}  # lists, beside the figures
            data = store.record(path, protocol, name, seed, {
                "figures": figures, **curves, "cell": definition, "budget_scale": budget_scale,
                "evaluation": evaluation, "machine": machine(), "command": command, "revision": store.revision(),
                "wall_seconds": time.perf_counter() - start})
            shown = protocol.headline if protocol.headline in figures else next(iter(figures), None)
            log(f"{protocol.suite} {name} seed {seed}: " + (f"{shown} {figures[shown]:.4g}" if shown else "no figures")
                + f" ({time.perf_counter() - start:.0f} s) -> {path}")
            if after_seed is not None:
                after_seed(name, seed, figures, artifacts)
    return data


def checkpoint_folder(results: Path, cell: str, seed: int) -> Path:
    """Where a cell's run keeps its checkpoints (a cell that asks for them: ``params["checkpoint_every"]`` of a fit
    cell): ``<results dir>/checkpoints/<results file's stem>/<cell>/seed<k>``, the cell's ``/`` and spaces as ``_``
    (not committed: ``checkpoints/`` is ignored). A killed run started again with the same command resumes there."""
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
    path = store.results_path(protocol.suite, quick, results_dir)
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


def _first_difference(old, new, where: str = "") -> str:
    """The first field where two JSON values differ, as ``field: old -> new``."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            if old.get(key) != new.get(key):
                return _first_difference(old.get(key), new.get(key), f"{where}.{key}" if where else key)
    return f"{where or 'value'}: {old!r} -> {new!r}"
