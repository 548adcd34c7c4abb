"""Every ``jaxsamp.…`` name a docstring gives can be typed after ``import jaxsamp`` (``help()`` shows them).

``help(jaxsamp.fit)`` named ``jaxsamp.learned.diffusion.pis_dds.PisSettings``, which raised AttributeError
after ``import jaxsamp`` (``jaxsamp.learned`` imported none of its subpackages). Every package now imports a
submodule at its first access (:mod:`jaxsamp.core.lazy`), and every dotted name in a docstring must resolve:
by attribute access from ``jaxsamp`` (a ``:mod:`` reference by import: ``jaxsamp.mcmc.sample`` is also the
function ``sample``, which the package exports).
"""

import ast
import importlib
import json
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import jaxsamp

PACKAGE = Path(jaxsamp.__file__).parent
#: an optional role (``:func:`~``) and a dotted name; a name stops at a character that cannot continue it
NAME = re.compile(r"(?::(\w+):`~?)?(?<![\w/.])(jaxsamp(?:\.[A-Za-z_]\w*)+)")

RESOLVE = """
import functools, importlib, json, sys
import jaxsamp
missing = []
for role, name in json.loads(sys.stdin.read()):
    try:
        if role == "mod":
            importlib.import_module(name)
        else:
            functools.reduce(getattr, name.split(".")[1:], jaxsamp)
    except (ImportError, AttributeError) as err:
        missing.append(f"{name}: {type(err).__name__}: {err}")
print(json.dumps(missing))
"""


def docstring_names(docstrings) -> dict[tuple[str, str], set[str]]:
    """``(role, dotted name) -> where it is written`` over ``(where, docstring)`` pairs."""
    found: dict[tuple[str, str], set[str]] = {}
    for where, text in docstrings:
        for role, name in NAME.findall(text or ""):
            found.setdefault((role, name), set()).add(where)
    return found


def source_docstrings():
    """``(file:line, docstring)`` of every module, class and function of the package, read from the source."""
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in [tree, *ast.walk(tree)]:
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                text = ast.get_docstring(node, clean=False)
                if text:
                    yield f"{path.relative_to(PACKAGE.parent)}:{getattr(node, 'lineno', 1)}", text


def unresolved(names) -> list[str]:
    """The names that do not resolve in a fresh interpreter that ran ``import jaxsamp`` only."""
    proc = subprocess.run([sys.executable, "-c", RESOLVE], input=json.dumps(sorted(names)), capture_output=True,
                          text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_names_in_help_of_fit_resolve_after_import_jaxsamp():
    names = docstring_names([("jaxsamp.fit", jaxsamp.fit.__doc__)])
    assert ("class", "jaxsamp.learned.diffusion.pis_dds.PisSettings") in names
    assert unresolved(names) == []


def test_every_dotted_name_in_a_docstring_resolves():
    names = docstring_names(source_docstrings())
    assert len(names) > 100
    missing = unresolved(names)
    where = {name: sorted(names[key])[:2] for key in names for name in [key[1]]}
    assert missing == [], [(m, where[m.split(":")[0]]) for m in missing]


def test_every_package_gives_its_submodules_as_attributes_on_first_use():
    """Each package's module ``__getattr__`` imports any of its submodules (whatever was imported before); a dunder
    module (``jaxsamp.__main__``, what ``python -m jaxsamp`` runs) is no attribute, as for any dunder name."""
    packages = [jaxsamp] + [importlib.import_module(m.name) for m in pkgutil.walk_packages(jaxsamp.__path__, "jaxsamp.")
                            if m.ispkg]
    for package in packages:
        for sub in pkgutil.iter_modules(package.__path__):
            if sub.name.startswith("__"):
                continue
            module = importlib.import_module(f"{package.__name__}.{sub.name}")
            assert vars(package)["__getattr__"](sub.name) is module, (package.__name__, sub.name)
