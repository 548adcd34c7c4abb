"""Execute every notebook at a small size (``JAXSAMP_SMALL=1``) so that none can rot.

Each notebook checks its own results against exact answers with ``assert`` cells whose
tolerances hold at both sizes, so a notebook that runs but gives a wrong figure fails here.
The stored outputs (what the docs show) come from a full-size run, alone on 2 CPU cores.
"""

import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from execute_notebooks import run_notebook  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def code_of(nb) -> str:
    return "\n".join(cell.source for cell in nb.cells if cell.cell_type == "code")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_executes_and_checks_itself(path, monkeypatch, tmp_path):
    monkeypatch.setenv("JAXSAMP_SMALL", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(path, as_version=4)
    assert "assert " in code_of(nb), f"{path.name} checks none of its results"
    run_notebook(nb, cwd=tmp_path, timeout=600)  # the script's runner: no heartbeat channel, whose thread can hang


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_stored_outputs_come_from_a_full_size_run_with_a_plot(path):
    """The docs render the stored outputs: they must exist, show a figure and carry no error."""
    nb = nbformat.read(path, as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert any("image/png" in o.get("data", {}) for o in outputs), f"{path.name}: no stored plot"
    assert not any(o.get("output_type") == "error" for o in outputs), f"{path.name}: a stored error"
    assert all(c.get("execution_count") for c in nb.cells if c.cell_type == "code"), f"{path.name}: not executed"
    assert nb.metadata.get("jaxsamp", {}).get("small") is False, f"{path.name}: outputs not from a full-size run"
