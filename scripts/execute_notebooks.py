"""Execute the notebooks at full size and store their outputs (what the docs render).

    python scripts/execute_notebooks.py                 # every notebook in notebooks/
    python scripts/execute_notebooks.py notebooks/vi.ipynb

Each notebook runs top to bottom in a fresh kernel with ``JAXSAMP_SMALL`` unset, is written back
with its outputs and ``metadata.jaxsamp = {"small": false, "wall_seconds": ...}``, and its wall time
is merged into ``benchmarks/results/execute_notebooks.json`` as ``<notebook>_wall_seconds``: the aim
is at most 180 s each on 2 CPU cores. It is a timing: run it with nothing else on the machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import nbformat
from jupyter_client.asynchronous import AsyncKernelClient
from nbclient import NotebookClient

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchmark_io import write_results  # noqa: E402

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


class KernelClientWithoutHeartbeat(AsyncKernelClient):
    """A kernel client that never starts the heartbeat channel.

    The heartbeat thread can hang a run at the kernel's shutdown: after a missed beat (a loaded machine) it
    reopens its socket and awaits a send that no peer takes once the kernel has exited, and ``stop_channels``
    joins it for ever (seen once: ``vi.ipynb`` held a test worker for pytest-timeout's 900 s). Liveness still
    comes from the kernel manager, the client's parent, which polls the kernel's process.
    """

    def start_channels(self, *args, **kwargs) -> None:
        super().start_channels(*args, **{**kwargs, "hb": False})


class NotebookRunner(NotebookClient):
    """``nbclient.NotebookClient`` whose kernel clients start without a heartbeat (see above)."""

    def create_kernel_manager(self):
        km = super().create_kernel_manager()
        km.client_factory = KernelClientWithoutHeartbeat
        return km


def run_notebook(nb, *, cwd: Path, timeout: int) -> None:
    """Execute ``nb`` in place, top to bottom, in a fresh ``python3`` kernel started in ``cwd``."""
    NotebookRunner(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}).execute()


def execute(path: Path) -> float:
    """Run ``path`` at full size, write it back with its outputs; return the wall seconds."""
    os.environ.pop("JAXSAMP_SMALL", None)
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    run_notebook(nb, cwd=NOTEBOOKS, timeout=1800)
    seconds = time.perf_counter() - start
    nb.metadata["jaxsamp"] = {"small": False, "wall_seconds": round(seconds, 1)}
    nbformat.write(nb, path)
    return seconds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every notebook in notebooks/")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted(NOTEBOOKS.glob("*.ipynb"))
    for path in paths:  # each time recorded as it lands: a failing notebook keeps the others'
        seconds = execute(path)
        write_results("execute_notebooks", {f"{path.stem}_wall_seconds": seconds}, merge=True)
        print(f"{path.name}: {seconds:.1f} s", flush=True)


if __name__ == "__main__":
    main()
