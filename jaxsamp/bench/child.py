"""Run one cell in a fresh Python process: for a cell that needs JAX started otherwise than the running process's
(a number of forced CPU devices, fixed when JAX starts), or a process of its own (a timing that nothing before
it may have warmed).

A runner calls :func:`run_in_child` with the environment the child needs; the child imports the runner's module
(which registers it), runs the same runner on the same cell and seed, and prints its figures as one JSON line,
which the parent returns. Inside the child :func:`in_child` is true, so the runner runs there instead of
starting another child. Artifacts do not come back (they are not JSON): a runner that plots runs in-process.

    python -m jaxsamp.bench.child MODULE RUNNER < {"cell": ..., "seed": ..., "options": ...}
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import subprocess
import sys
from collections.abc import Callable

from jaxsamp.core.errors import RunHealthError

#: set to "1" in a child's environment
CHILD = "JAXSAMP_BENCH_CHILD"
#: the prefix of the child's line of figures
EVENT = "@@jaxsamp-bench-figures "


def in_child() -> bool:
    """True inside a process that :func:`run_in_child` started."""
    return os.environ.get(CHILD) == "1"


def forced_cpu_devices(count: int) -> dict:
    """The environment of a child whose JAX has ``count`` CPU devices and no accelerator
    (``--xla_force_host_platform_device_count`` appended to ``XLA_FLAGS``, ``JAX_PLATFORMS=cpu``)."""
    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={count}".strip()
    return {"XLA_FLAGS": flags, "JAX_PLATFORMS": "cpu"}


def run_in_child(run: Callable, cell, seed: int, *, env: dict, target_evals=None, evaluation=None,
                 budget_scale: int = 1, timeout: float = 3600) -> tuple[dict, dict]:
    """Run the cell runner ``run`` on ``cell`` at ``seed`` in a fresh process with ``env`` added to this one's
    environment; its figures (and no artifacts). A child that fails is a RunHealthError with its output's tail."""
    payload = {"cell": dataclasses.asdict(cell), "seed": seed, "options": {
        "target_evals": target_evals, "evaluation": evaluation or {}, "budget_scale": budget_scale}}
    proc = subprocess.run([sys.executable, "-m", "jaxsamp.bench.child", run.__module__, run.__name__],
                          input=json.dumps(payload), env={**os.environ, **env, CHILD: "1"}, capture_output=True,
                          text=True, timeout=timeout, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.startswith(EVENT)]
    if proc.returncode or not lines:
        raise RunHealthError(f"cell {cell.name!r} seed {seed}: its child process failed (exit {proc.returncode}): "
                             + (proc.stderr.strip().splitlines() or ["no output"])[-1])
    return json.loads(lines[-1][len(EVENT):]), {}


def main(argv: list[str]) -> None:
    """The child: run ``argv = [module, runner]`` on the cell and seed read from stdin; print its figures."""
    from jaxsamp.bench.protocol import Cell

    module, name = argv
    payload = json.loads(sys.stdin.read())
    run = getattr(importlib.import_module(module), name)
    figures, _ = run(Cell.from_dict(payload["cell"]), payload["seed"], **payload["options"])
    print(EVENT + json.dumps(figures), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
