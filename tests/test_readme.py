"""The README's runnable examples run as written: every fenced Python block after a ``<!-- readme-test -->`` line.

Each block runs alone in a fresh interpreter (as a user pasting it would), from a temporary folder, and must
exit 0. The marked blocks are the self-contained ones; the others are excerpts.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"<!-- readme-test -->\n```python\n(.*?)```", README.read_text(), flags=re.S)


def test_the_readme_has_runnable_blocks():
    assert BLOCKS


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_block_runs_alone(index, tmp_path):
    script = tmp_path / f"readme_block_{index}.py"
    script.write_text(BLOCKS[index])
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
