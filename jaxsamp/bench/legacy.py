"""Convert a results file of the old ``scripts/bench_*.py`` into its suite's results file, once.

The old files were flat: ``{"results": {"<cell>_<figure>_seed<k>": value, ...}, "machine": {...}}``, one machine
record for the whole file and the command behind each figure in ``figure_commands``. Each suite that had such a
file names it (``LEGACY_FILE``) and parses its keys (``legacy_key(name) -> (cell, figure, scale) or None``). The
converted seeds keep the old file's one machine record, marked ``legacy`` (it may stand for several hosts: the
old format could not say), their command, and the old figure names mapped onto the glossary's
(:data:`FIGURE_NAMES`; minutes become seconds). A suite that can tell which host ran a command (from the old
file's history: each write of it recorded the machine of the command that wrote it) gives each seed its own
machine record with ``legacy_machine(command)``, so that seeds of different hosts are never pooled.

    jaxsamp bench convert paths      # benchmarks/results/bench_paths.json -> benchmarks/results/paths.json
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

from jaxsamp.bench import store
from jaxsamp.bench.protocol import Protocol, scaled_name
from jaxsamp.core.errors import InputError

#: old figure name -> (glossary name, factor)
FIGURE_NAMES = {
    "logz_abs_err": ("log_Z_abs_err", 1.0), "logz_abs_err_sets_mean": ("log_Z_abs_err_sets_mean", 1.0),
    "logz_abs_err_sets_sd": ("log_Z_abs_err_sets_sd", 1.0), "logz_sets_sd": ("log_Z_hat_sets_sd", 1.0),
    "energy_evals": ("target_evals", 1.0), "nonfinite_paths": ("nonfinite_samples", 1.0),
    "train_minutes": ("train_seconds_incl_compile", 60.0), "levels": ("num_levels", 1.0),
    "logz_jarzynski_abs_err": ("log_Z_abs_err_jarzynski", 1.0), "logz_learned_abs_err": ("log_Z_learned_abs_err", 1.0),
    "diverged_points": ("diverged_collocation_points", 1.0),
    "nonfinite": ("nonfinite_samples", 1.0), "epochs": ("train_steps", 1.0), "log_Z_reverse": ("log_Z_hat", 1.0),
}
SEED = re.compile(r"(.+)_seed(\d+)\Z")


def _figure_name(old: str) -> str:
    return FIGURE_NAMES.get(old, (old, 1.0))[0]


def convert(protocol: Protocol, old_path: Path, legacy_key, new_path: Path, legacy_machine=None,
            unsuffixed_seed: int | None = None) -> dict:
    """Read ``old_path``, map every per-seed figure through ``legacy_key`` and write ``new_path``; return it.

    Figures of the old file that are not per seed (its means and sds) are recomputed, not copied; a per-seed key
    that ``legacy_key`` does not place is an error naming it, so nothing is dropped silently. The number of
    paths a seed was scored on (``eval_paths``) goes into its record's ``evaluation``. A per-seed value that is a
    mapping of lists is a learning curve (``<run>_curve_seed<k>``): it goes into the record's ``curves``, each
    series named as ``legacy_key`` names the run's figure of that name (``<run>_<series>``); any other value that is not a number (a
    list, or a mapping that is not of numeric series ``legacy_key`` places) goes into ``curves`` under its figure name.
    ``legacy_machine(command)``, if given, is the machine record of the host that ran ``command`` (with its
    ``legacy`` note saying how that is known), or None for the old file's one record. ``unsuffixed_seed``: a
    script that ran each figure once (fixed keys, or a figure of its first seed only) wrote keys without
    ``_seed<k>``; those ``legacy_key`` places are that seed's figures (the suite's ``LEGACY_UNSUFFIXED_SEED``),
    the others are aggregates of the old file, left out.
    """
    if new_path.exists():
        raise InputError(f"{new_path} exists already: the conversion runs once", "remove it to convert again")
    old = json.loads(old_path.read_text())
    commands = old.get("figure_commands") or {}
    seeds: dict = defaultdict(lambda: {"figures": {}, "evaluation": {}})
    for name, value in old["results"].items():
        match = SEED.match(name)
        if match is None:
            if unsuffixed_seed is None or legacy_key(name) is None:
                continue
            match = SEED.match(f"{name}_seed{unsuffixed_seed}")
        placed = legacy_key(match.group(1))
        if placed is None:
            raise InputError(f"{old_path}: no cell of suite {protocol.suite!r} takes {name!r}")
        cell, figure, scale = placed
        entry = seeds[(scaled_name(cell, scale), match.group(2))]
        if isinstance(value, Mapping):  # a learning curve: each series named as its run's figure of that name
            run = match.group(1)[:len(match.group(1)) - len(figure)]
            named = {series: legacy_key(run + series) for series in value}
            numeric = all(isinstance(x, (int, float)) for v in value.values() for x in (v if isinstance(v, list) else [v]))
            if numeric and all(named.values()):
                entry.setdefault("curves", {}).update(
                    {_figure_name(named[series][1]): list(v) for series, v in value.items()})
            else:  # a record of another shape (a list of evaluation points): kept whole, under its figure name
                entry.setdefault("curves", {})[figure] = value
            continue
        if figure == "eval_paths":
            entry["evaluation"]["num_samples"] = int(value)
            continue
        figure, factor = FIGURE_NAMES.get(figure, (figure, 1.0))
        if isinstance(value, (int, float)):
            entry["figures"][figure] = value * factor
        else:
            entry.setdefault("curves", {})[figure] = value
        entry["command"] = commands.get(name, old.get("command", ""))
        entry["budget_scale"] = scale
    data = {"schema": store.SCHEMA, "suite": protocol.suite, "protocol": protocol.to_dict(), "records": {}}
    machine = {**old.get("machine", {}), "legacy": f"the one machine record of {old_path.name}"}
    for (cell, seed), entry in sorted(seeds.items()):
        data["records"].setdefault(cell, {})[seed] = {
            "date": old.get("date", ""), "revision": "", "legacy_file": old_path.name, **entry,
            "machine": (legacy_machine and legacy_machine(entry["command"])) or machine}
    data.update(store.aggregate(data["records"], protocol))
    new_path.parent.mkdir(parents=True, exist_ok=True)
    new_path.write_text(json.dumps(data, indent=1) + "\n")
    return data
