"""The examples in the README and the docs run as written.

Every fenced Python block in ``README.md``, ``docs/*.md`` and ``docs/guide/*.md`` follows an
``<!-- example-test -->`` line and runs alone in a fresh interpreter (as a user pasting it would), from a
temporary folder, and must exit 0. A block that takes minutes at its printed size carries its reduction in the
marker, ``<!-- example-test: "num_samples=1000" -> "num_samples=100"; ... -->``: the same code path at a
smaller size. Each replaced text must occur in the block, so a reduction cannot silently stop applying. A
block shown in two places (the README repeats two of the guide's) runs once.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs" / "guide").glob("*.md"))]
MARKED = re.compile(r"<!-- example-test(?::(.*?))? -->\n```python\n(.*?)```", flags=re.S)
REDUCTION = re.compile(r'\s*"((?:[^"\\]|\\.)*)"\s*->\s*"((?:[^"\\]|\\.)*)"\s*')


def reduced(marker: str, code: str) -> str:
    """``code`` with the marker's ``"old" -> "new"`` replacements applied; each ``old`` must occur."""
    for item in filter(str.strip, (marker or "").split(";")):
        found = REDUCTION.fullmatch(item)
        assert found, f"malformed reduction {item!r} in an example-test marker"
        old, new = found.groups()
        assert old in code, f"the reduction's text {old!r} is not in its block"
        code = code.replace(old, new)
    return code


def _examples() -> dict[str, str]:
    """Each distinct runnable example (after its reduction), named by the first page and block showing it."""
    examples: dict[str, str] = {}
    for page in PAGES:
        for number, (marker, code) in enumerate(MARKED.findall(page.read_text())):
            script = reduced(marker, code)
            if script not in examples.values():
                examples[f"{page.relative_to(ROOT)}#{number}"] = script
    return examples


EXAMPLES = _examples()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_python_block_is_tested(page):
    """No Python block in the README or the docs is an untested excerpt."""
    text = page.read_text()
    assert len(MARKED.findall(text)) == text.count("```python")


def test_a_reduction_must_find_its_text():
    assert reduced(' "a=1" -> "a=2"; "b" -> "c"', "a=1, b") == "a=2, c"
    with pytest.raises(AssertionError, match="not in its block"):
        reduced('"zzz" -> "y"', "a=1")


@pytest.mark.slow
@pytest.mark.parametrize("name", list(EXAMPLES))
def test_example_runs_alone(name, tmp_path):
    script = tmp_path / "example.py"
    script.write_text(EXAMPLES[name])
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
