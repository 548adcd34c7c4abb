import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from execute_notebooks import NotebookRunner, run_notebook  # noqa: E402


def test_the_runner_starts_every_channel_but_the_heartbeat(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 6 * 7\nx")])
    runner = NotebookRunner(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    with runner.setup_kernel():
        assert runner.kc.channels_running
        assert runner.kc._hb_channel is None
        runner.execute_cell(nb.cells[0], 0)
    assert nb.cells[0].outputs[0]["data"]["text/plain"] == "42"


def test_run_notebook_executes_in_place_in_the_given_folder(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import os\nprint(os.getcwd())")])
    run_notebook(nb, cwd=tmp_path, timeout=120)
    assert nb.cells[0].outputs[0]["text"].strip() == str(tmp_path)
