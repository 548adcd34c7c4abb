"""Every ``pip install`` line the project shows keeps to pyproject.toml's constraints.

pyproject.toml leaves out jax 0.10.2 (it miscompiles, tests/core/test_jax_release.py); the README's accelerator
lines were ``pip install -U "jax[cuda13]"``, which fetches the newest jax, 0.10.2 included. A line that names a
package pyproject.toml constrains must allow no version the constraint refuses (a bare name is read as the newest
version, which only a lower bound is sure to accept), and the extras of jaxsamp it names must exist.
"""

import ast
import json
import re
import shlex
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
#: ``pip install`` and its arguments, up to the end of the line, a closing backquote or a comment
PIP_INSTALL = re.compile(r"pip install ([^`\n#]*)")
#: pip options that take a value (the value is not a requirement)
OPTIONS_WITH_VALUE = {"-r", "--requirement", "-c", "--constraint", "-f", "--find-links", "-i", "--index-url",
                      "--extra-index-url", "-t", "--target", "--prefix", "--root"}


def shown_files() -> list[Path]:
    """Where a user reads install lines: the README, the docs, the notebooks, the Makefile and the library's messages."""
    files = [ROOT / "README.md", ROOT / "Makefile", *sorted((ROOT / "docs").rglob("*.md")),
             *sorted((ROOT / "notebooks").glob("*.ipynb")), *sorted((ROOT / "jaxsamp").rglob("*.py"))]
    return [f for f in files if f.is_file()]


def install_lines(path: Path) -> list[str]:
    """The arguments of every ``pip install`` in ``path`` (every cell of a notebook, every string of a module)."""
    text = path.read_text()
    if path.suffix == ".ipynb":
        text = "\n".join("".join(cell["source"]) for cell in json.loads(text)["cells"])
    elif path.suffix == ".py":  # its strings: docstrings and messages, without the quotes around them
        text = "\n".join(node.value for node in ast.walk(ast.parse(text))
                         if isinstance(node, ast.Constant) and isinstance(node.value, str))
    return [m.group(1).strip() for m in PIP_INSTALL.finditer(text)]


def requirements(arguments: str) -> list[str]:
    """The requirements of one line's arguments (options and their values left out)."""
    out, words = [], shlex.split(arguments)
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word.startswith("-"):
            skip = word in OPTIONS_WITH_VALUE
        else:
            out.append(word)
    return out


def constraints() -> dict[str, SpecifierSet]:
    """pyproject.toml's specifier of every package it depends on, extras included (jaxsamp's own apart)."""
    out: dict[str, SpecifierSet] = {}
    extras = PYPROJECT["project"]["optional-dependencies"].values()
    for line in [*PYPROJECT["project"]["dependencies"], *(line for extra in extras for line in extra)]:
        req = Requirement(line)
        if canonicalize_name(req.name) != "jaxsamp":
            out[canonicalize_name(req.name)] = out.get(canonicalize_name(req.name), SpecifierSet()) & req.specifier
    return out


def probe_versions(*specifiers: SpecifierSet) -> list[Version]:
    """Versions at and next to every bound of ``specifiers``, and far below and above them."""
    out = {Version("0"), Version("9999")}
    for spec in specifiers:
        for s in spec:
            major, minor, micro = (list(Version(s.version.rstrip(".*")).release) + [0, 0])[:3]
            for v in ((major, minor, micro), (major, minor, micro + 1), (major, minor + 1, 0), (major + 1, 0, 0),
                      (major, minor, max(micro - 1, 0)), (major, max(minor - 1, 0), 0)):
                out.add(Version(".".join(map(str, v))))
    return sorted(out)


def problem(requirement: str, extras: set[str], known: dict[str, SpecifierSet]) -> str | None:
    """Why ``requirement`` (one word of a line) may install what pyproject.toml refuses, or None."""
    project = re.fullmatch(r"(?:\.|\./|jaxsamp)(?:\[([^\]]*)\])?", requirement)
    if project:
        unknown = {e.strip() for e in (project.group(1) or "").split(",") if e.strip()} - extras
        return f"jaxsamp has no extra {sorted(unknown)}" if unknown else None
    req = Requirement(requirement)
    allowed = known.get(canonicalize_name(req.name))
    if allowed is None:
        return None
    if not req.specifier:  # the newest version: safe only under lower bounds alone
        if all(s.operator in (">=", ">") for s in allowed):
            return None
        return f"{req.name} without a version may fetch one pyproject.toml refuses ({allowed})"
    refused = [str(v) for v in probe_versions(req.specifier, allowed)
               if req.specifier.contains(v, prereleases=True) and not allowed.contains(v, prereleases=True)]
    return f"{requirement} allows {refused}, which pyproject.toml refuses ({allowed})" if refused else None


def test_every_install_line_keeps_to_pyprojects_constraints():
    extras, known = set(PYPROJECT["project"]["optional-dependencies"]), constraints()
    lines = [(path.relative_to(ROOT), line) for path in shown_files() for line in install_lines(path)]
    assert len(lines) > 10 and any("cuda13" in line for _, line in lines)
    problems = [(str(path), line, p) for path, line in lines for word in requirements(line)
                if (p := problem(word, extras, known))]
    assert problems == []


def test_the_accelerator_extras_hold_jax_to_its_constraint():
    """``[cuda12]``, ``[cuda13]`` and ``[tpu]`` are jax's extras of the same name with jax's specifier of the
    dependencies, so that the two cannot drift apart."""
    jax = next(Requirement(d) for d in PYPROJECT["project"]["dependencies"] if Requirement(d).name == "jax")
    for extra in ("cuda12", "cuda13", "tpu"):
        (req,) = map(Requirement, PYPROJECT["project"]["optional-dependencies"][extra])
        assert (req.name, req.extras, req.specifier) == ("jax", {extra}, jax.specifier), extra
    assert not jax.specifier.contains("0.10.2")


@pytest.mark.parametrize(("line", "fragment"), [
    ('-U "jax[cuda13]"', "jax without a version"),
    ("-U jax", "jax without a version"),
    ("jax==0.10.2", "allows ['0.10.2']"),
    ('"jax>=0.10"', "0.10.2"),
    ("jaxlib>=0.9", "allows"),
    ('".[cuda14]"', "no extra ['cuda14']"),
    ("-e '.[numpyro,nope]'", "no extra ['nope']"),
])
def test_a_line_that_could_break_the_install_is_named(line, fragment):
    extras, known = set(PYPROJECT["project"]["optional-dependencies"]), constraints()
    found = [p for word in requirements(line) if (p := problem(word, extras, known))]
    assert found and fragment in found[0], (line, found)


def test_safe_lines_pass():
    extras, known = set(PYPROJECT["project"]["optional-dependencies"]), constraints()
    for line in ('-e ".[test]"', '".[cuda13]"', "--quiet --upgrade pip", '"jax[cuda12]>=0.10,!=0.10.2"',
                 "jax==0.10.1", "-U flax numpyro", "'jaxsamp[gym]'"):
        assert [p for word in requirements(line) if (p := problem(word, extras, known))] == [], line
