"""What every benchmark script's never-rot test does first: run it with ``--quick`` and read its fresh results.

The script runs in the test's own process, as ``python scripts/bench_<name>.py --quick`` would run it
(``runpy`` with ``__name__ == "__main__"``, ``sys.argv`` set to that command line, the repository root
as working directory and ``scripts/`` on ``sys.path``): JAX, jaxsamp and the libraries the script
imports are then loaded once per test worker instead of once per script, which was 3-5 s a script.
Whatever process-wide state a script could change is put back afterwards (working directory,
``sys.argv``, ``sys.path``, environment variables, warning filters) and JAX's x64 switch is checked
to be unchanged, so that no setting leaks into the tests run after it.

Each run writes its JSON and plots into the calling test's own directory (``benchmark_io.RESULTS_DIR``
pointed there for the run), never into ``benchmarks/results/``: two tests of one script run at once by
two xdist workers would otherwise merge into, and read back, the same ``bench_<name>_quick.json``.
"""

import json
import os
import runpy
import sys
import warnings
from pathlib import Path

import jax
import pytest

ROOT = Path(__file__).resolve().parents[2]


def quick_payload(name: str, *args: str, results_dir: Path, script_name: str | None = None) -> dict:
    """Run ``scripts/bench_{name}.py --quick *args`` in this process, writing into ``results_dir``.

    ``results_dir`` is the test's own (``tmp_path``), so nothing earlier is merged in. Returns the
    whole JSON payload it wrote (``command``, ``results``, ...); the command it records is the
    script's command line. ``script_name`` names a script not called ``bench_{name}``
    (``memory_estimates``).
    """
    script_name = script_name or f"bench_{name}"
    result = results_dir / f"{script_name}_quick.json"
    script = f"scripts/{script_name}.py"
    environ, x64 = dict(os.environ), jax.config.jax_enable_x64
    try:
        with pytest.MonkeyPatch.context() as mp, warnings.catch_warnings():
            mp.chdir(ROOT)
            mp.syspath_prepend(str(ROOT / "scripts"))
            import benchmark_io

            mp.setattr(benchmark_io, "RESULTS_DIR", results_dir)
            mp.setattr(sys, "argv", [script, "--quick", *args])
            runpy.run_path(str(ROOT / script), run_name="__main__")
    finally:
        for key in set(os.environ) - set(environ):
            del os.environ[key]
        os.environ.update(environ)
    if jax.config.jax_enable_x64 != x64:
        jax.config.update("jax_enable_x64", x64)  # put back for the tests that follow, then fail this one
        raise AssertionError(f"{script} changed jax_enable_x64")
    payload = json.loads(result.read_text())
    assert payload["command"].startswith(f"python {script} --quick"), payload["command"]
    return payload


def run_quick(name: str, *args: str, results_dir: Path) -> dict:
    """Run ``scripts/bench_{name}.py --quick *args`` into ``results_dir``; return the ``results`` it wrote."""
    return quick_payload(name, *args, results_dir=results_dir)["results"]
