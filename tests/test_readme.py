"""The README's examples run as written: every fenced Python block, each after a ``<!-- readme-test -->`` line.

Each block runs alone in a fresh interpreter (as a user pasting it would), from a temporary folder, and must
exit 0. A block that takes minutes at its printed size carries its reduction in the marker,
``<!-- readme-test: "num_samples=1000" -> "num_samples=100"; ... -->``: the same code path at a smaller size.
Each replaced text must occur in the block, so a reduction cannot silently stop applying.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
TEXT = README.read_text()
BLOCKS = re.findall(r"<!-- readme-test(?::(.*?))? -->\n```python\n(.*?)```", TEXT, flags=re.S)
REDUCTION = re.compile(r'\s*"((?:[^"\\]|\\.)*)"\s*->\s*"((?:[^"\\]|\\.)*)"\s*')


def reduced(marker: str, code: str) -> str:
    """``code`` with the marker's ``"old" -> "new"`` replacements applied; each ``old`` must occur."""
    for item in filter(str.strip, (marker or "").split(";")):
        found = REDUCTION.fullmatch(item)
        assert found, f"malformed reduction {item!r} in a readme-test marker"
        old, new = found.groups()
        assert old in code, f"the reduction's text {old!r} is not in its block"
        code = code.replace(old, new)
    return code


def test_every_python_block_is_tested():
    """No README Python block is an untested excerpt."""
    assert len(BLOCKS) == TEXT.count("```python")


def test_a_reduction_must_find_its_text():
    assert reduced(' "a=1" -> "a=2"; "b" -> "c"', "a=1, b") == "a=2, c"
    with pytest.raises(AssertionError, match="not in its block"):
        reduced('"zzz" -> "y"', "a=1")


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_block_runs_alone(index, tmp_path):
    marker, code = BLOCKS[index]
    script = tmp_path / f"readme_block_{index}.py"
    script.write_text(reduced(marker, code))
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
