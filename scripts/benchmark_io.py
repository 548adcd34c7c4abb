"""The flat results file of the scripts that are not suites of :mod:`jaxsamp.bench` (``execute_notebooks.py``,
``compare_curve_integrators.py``):
``benchmarks/results/<script>.json`` = ``{"command": ..., "date": ..., "machine": {...}, "results": {figure: value}}``.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import shlex
import sys
from pathlib import Path

from jaxsamp.bench.machine import machine
from jaxsamp.bench.store import locked

RESULTS_DIR = Path(__file__).resolve().parent.parent / "benchmarks" / "results"


def results_path(script_name: str) -> Path:
    """``benchmarks/results/<script>.json``."""
    return RESULTS_DIR / f"{script_name}.json"


def read_results(script_name: str) -> dict:
    """The ``results`` already recorded for ``script_name`` (empty when there is no file yet)."""
    path = results_path(script_name)
    return json.loads(path.read_text())["results"] if path.exists() else {}


def write_results(
    script_name: str, results: dict, argv: list[str] | None = None, merge: bool = False
) -> Path:
    """Write the results JSON for ``script_name`` (e.g. ``"execute_notebooks"``); return its path.

    With ``merge=True`` (a run of part of a script's figures) the figures already in the file are kept unless
    re-measured, and ``figure_commands`` records the command behind every figure.
    """
    argv = sys.argv if argv is None else argv
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = results_path(script_name)
    command = "python " + " ".join(shlex.quote(a) for a in [os.path.relpath(argv[0])] + list(argv[1:]))
    results = {k: (float(v) if isinstance(v, (int, float)) else v) for k, v in results.items()}
    payload = {
        "command": command,
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "results": results,
    }
    # Two runs of one script may share the file, each merging its figures on every write. The lock makes each
    # read-merge-write whole, so neither overwrites what the other wrote between its read and its write; the
    # rename means a reader never sees half a file.
    with locked(path):
        if merge and path.exists():
            old = json.loads(path.read_text())  # the full payload: its command stands behind its figures
            commands = old.get("figure_commands") or {k: old["command"] for k in old["results"]}
            payload["results"] = {**old["results"], **results}
            payload["figure_commands"] = {**commands, **{k: command for k in results}}
        partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
        partial.write_text(json.dumps(payload, indent=2) + "\n")
        os.replace(partial, path)
    return path

