"""The results file of a suite: every seed recorded as it lands, with its machine, command and cell definition.

``benchmarks/results/<suite>.json`` (``<suite>_quick.json`` for the quick size, so that a test never
overwrites a recorded figure; ``<suite>.<device>.json`` for the seeds an accelerator ran) holds:

- ``protocol``: the suite's :class:`~jaxsamp.bench.protocol.Protocol` as last run;
- ``records``: ``{cell: {seed: {figures, cell, machine, command, date, revision}}}``, every per-seed value, the
  cell's definition as it ran (so that ``jaxsamp bench run`` can reproduce it) and the machine that ran it (and
  ``curves``, a learning curve as lists, where the cell records one: never aggregated);
- ``summary``: per cell and per machine, :func:`~jaxsamp.bench.aggregate.summarise` of every figure;
- ``goals`` and ``comparisons``: each goal's decision and each paired comparison, per machine.

Two runs of one suite may share the file: each write is a locked read-merge-write, so neither loses the
other's seeds, and a rename means that a reader never sees half a file.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import json
import os
import subprocess
from pathlib import Path

from jaxsamp.bench.aggregate import compare, decide, per_seed_ratios, summarise
from jaxsamp.bench.machine import machine_label
from jaxsamp.bench.protocol import Protocol
from jaxsamp.core.errors import InputError

SCHEMA = "jaxsamp.bench/1"
#: Where the suites write, beside the package (the repository's ``benchmarks/results``).
RESULTS_DIR = Path(__file__).resolve().parents[2] / "benchmarks" / "results"


def results_path(suite: str, quick: bool = False, results_dir: Path | None = None, device: str = "") -> Path:
    """``<results_dir>/<suite>.json``, ``<suite>_quick.json`` at the quick size, and ``<suite>.<device>.json``
    (``<suite>_quick.<device>.json``) for the seeds an accelerator ran (:func:`~jaxsamp.bench.machine.accelerator`)."""
    return Path(results_dir or RESULTS_DIR) / f"{suite}{'_quick' if quick else ''}{f'.{device}' if device else ''}.json"


def device_files(suite: str, quick: bool = False, results_dir: Path | None = None) -> dict[str, Path]:
    """``{device: path}`` of the suite's results files that accelerators wrote."""
    base = results_path(suite, quick, results_dir)
    return {p.name[len(base.stem) + 1:-len(".json")]: p for p in sorted(base.parent.glob(f"{base.stem}.*.json"))}


def read(path: Path) -> dict:
    """The results file at ``path`` (an empty record when there is none yet)."""
    if not path.exists():
        return {"schema": SCHEMA, "records": {}}
    data = json.loads(path.read_text())
    if data.get("schema") != SCHEMA:
        raise InputError(f"{path} is not a jaxsamp bench results file (schema {data.get('schema')!r})",
                         "files written by the old scripts are converted by `jaxsamp bench convert`")
    return data


def read_current(path: Path, protocol: Protocol) -> dict:
    """The results file with its summary, goals and comparisons recomputed from its records under ``protocol``.

    What the report and the documented figures read: the stored aggregates are as of the file's last write, and a
    goal or a rule added since (or a machine label made finer) must not wait for the next run to show.
    """
    data = read(path)
    data["protocol"] = protocol.to_dict()
    data.update(aggregate(data["records"], protocol))
    return data


def revision() -> str:
    """The git revision of the checkout that runs, ``-dirty`` appended when its tracked files differ from it
    (``jaxsamp <version>`` outside a checkout). A run reads it once, when it starts: commits made while it runs are
    not the code it runs."""
    root = Path(__file__).resolve().parents[2]
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], check=False, capture_output=True,
                             text=True, timeout=10)
        if out.returncode == 0:
            dirty = subprocess.run(["git", "-C", str(root), "diff", "--quiet", "HEAD", "--"], check=False,
                                   capture_output=True, timeout=10).returncode == 1
            return out.stdout.strip() + ("-dirty" if dirty else "")
    except OSError:
        pass
    import jaxsamp

    return f"jaxsamp {jaxsamp.__version__}"


@contextlib.contextmanager
def locked(path: Path):
    """Hold an exclusive lock on ``path``'s companion ``.<name>.lock`` file (POSIX ``flock``) for the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f".{path.name}.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _write(path: Path, data: dict) -> None:
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.write_text(json.dumps(data, indent=1, allow_nan=True) + "\n")
    os.replace(partial, path)


def record(path: Path, protocol: Protocol, cell: str, seed: int, entry: dict) -> dict:
    """Add one seed's ``entry`` (``figures``, ``cell``, ``machine``, ``command``, ...) for ``cell``; return the file.

    The summary, goals and comparisons are recomputed from every record in the file.
    """
    with locked(path):
        data = read(path)
        data["suite"], data["protocol"] = protocol.suite, protocol.to_dict()
        data["records"].setdefault(cell, {})[str(seed)] = {
            "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"), **entry}
        data.update(aggregate(data["records"], protocol))
        _write(path, data)
    return data


def merge_records(path: Path, protocol: Protocol, records: dict) -> tuple[dict, dict[str, list[str]]]:
    """Put ``records`` (``{cell: {seed: record}}``, as another file recorded them) into the file at ``path``.

    Each record is kept as it is (its date, machine and command) and replaces the file's record of that cell and
    seed; the summary, goals and comparisons are recomputed. Returns the file and ``{"added", "replaced",
    "unchanged"}`` lists of ``"cell seed K"``.
    """
    changes = {"added": [], "replaced": [], "unchanged": []}
    with locked(path):
        data = read(path)
        data["suite"], data["protocol"] = protocol.suite, protocol.to_dict()
        for cell, seeds in records.items():
            mine = data["records"].setdefault(cell, {})
            for seed, entry in sorted(seeds.items(), key=lambda item: int(item[0])):
                key = "unchanged" if mine.get(seed) == entry else "replaced" if seed in mine else "added"
                changes[key].append(f"{cell} seed {seed}")
                mine[seed] = entry
        data.update(aggregate(data["records"], protocol))
        _write(path, data)
    return data, changes


def by_machine(seeds: dict) -> dict[str, dict]:
    """``{machine label: {seed: record}}``: the seeds of one cell grouped by the machine that ran them."""
    groups: dict[str, dict] = {}
    for seed, rec in seeds.items():
        groups.setdefault(machine_label(rec.get("machine", {})), {})[seed] = rec
    return groups


def figure_values(seeds: dict, figure: str) -> dict[str, float]:
    """``{seed: value}`` of one figure over the records that have it."""
    return {s: r["figures"][figure] for s, r in seeds.items() if figure in r["figures"]}


def aggregate(records: dict, protocol: Protocol) -> dict:
    """``summary``, ``goals`` and ``comparisons`` of ``records``, each per machine (never pooled across)."""
    summary = {}
    for cell, seeds in records.items():
        summary[cell] = []
        for label, group in by_machine(seeds).items():
            names = sorted({f for r in group.values() for f, v in r["figures"].items() if _number(v)})
            summary[cell].append({"machine": label, "seeds": sorted(map(int, group)),
                                  "figures": {f: summarise(figure_values(group, f)) for f in names}})
    goals = []
    for goal in protocol.goals:
        for group in summary.get(goal.cell, []):
            values = _goal_values(records, goal, group)
            if values:
                goals.append({"goal": goal.name, "cell": goal.cell, "figure": goal.figure, "baseline": goal.baseline,
                              "better": goal.better, "source": goal.source, "machine": group["machine"],
                              **decide(goal, summarise(values, goal.level))})
    comparisons = []
    for comparison in protocol.comparisons:
        cells = records.get(comparison.cell, {}), records.get(comparison.baseline, {})
        groups = [by_machine(c) for c in cells]
        for label in sorted(set(groups[0]) & set(groups[1])):
            result = compare(*(figure_values(g[label], comparison.figure) for g in groups))
            if result is not None:
                comparisons.append({"cell": comparison.cell, "baseline": comparison.baseline,
                                    "figure": comparison.figure, "machine": label, **result})
    return {"summary": summary, "goals": goals, "comparisons": comparisons}


def _goal_values(records: dict, goal, group: dict) -> dict[str, float]:
    """The per-seed values a goal is decided on, on one machine: the figure, or its ratio to the baseline's."""
    if not goal.baseline:
        return group["figures"][goal.figure]["values"] if goal.figure in group["figures"] else {}
    base = by_machine(records.get(goal.baseline, {})).get(group["machine"], {})
    mine = by_machine(records[goal.cell]).get(group["machine"], {})
    return per_seed_ratios(figure_values(mine, goal.figure), figure_values(base, goal.figure))


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
