"""The API reference's pages: one reST page per module of ``jaxsamp``, written into ``docs/api/`` at build time.

Each page is an ``automodule`` of the module (every public class and function defined there,
documented or not; names re-exported by a package are documented once, where they are
defined), an ``autodata`` entry for every public module-level constant that has no ``#:``
doc comment (autodoc lists module data only when it has one), and a table of contents of
the package's submodules.

Modules are found on disk, not through ``autosummary``: autosummary resolves
``jaxsamp.mcmc.sample`` to the function ``sample`` that ``jaxsamp.mcmc`` re-exports, and
would lose the module ``jaxsamp.mcmc.sample`` behind it.

A reference spelled the way users write a name (``jaxsamp.run``, ``jaxsamp.fit``) is linked to
the page of the module that defines it (``jaxsamp.core.driver.run``).
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

from sphinx.pycode import ModuleAnalyzer

PACKAGE = "jaxsamp"
OPTIONS = ("members", "undoc-members", "show-inheritance", "ignore-module-all")


def find_modules(root: Path) -> dict[str, Path]:
    """Every module and package under ``root / PACKAGE`` by dotted name, sorted."""
    out = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return dict(sorted(out.items()))


def undocumented_data(module: str, path: Path) -> list[str]:
    """Public names bound by a top-level assignment in ``path`` that have no ``#:`` doc comment."""
    commented = {name for (_, name) in ModuleAnalyzer.for_module(module).find_attr_docs()}
    names = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        else:
            continue
        for target in targets:
            bound = target.elts if isinstance(target, ast.Tuple) else [target]  # ``A, B = 1, 2`` binds both
            names += [t.id for t in bound if isinstance(t, ast.Name) and not t.id.startswith("_") and t.id not in commented]
    return list(dict.fromkeys(names))


def page(module: str, data: list[str], children: list[str]) -> str:
    """The reST of one module's page."""
    lines = [module, "=" * len(module), "", f".. automodule:: {module}"]
    lines += [f"   :{option}:" for option in OPTIONS] + [""]
    for name in data:
        lines += [f".. autodata:: {module}.{name}", ""]
    if children:
        lines += [".. rubric:: Modules", "", ".. toctree::", "   :maxdepth: 1", ""]
        lines += [f"   {child}" for child in children] + [""]
    return "\n".join(lines)


def write_pages(app) -> None:
    """Write ``docs/api/<module>.rst`` for every module (a file is rewritten only when it changes)."""
    root = Path(app.srcdir).parent
    out = Path(app.srcdir) / "api"
    out.mkdir(exist_ok=True)
    modules = find_modules(root)
    data = {module: undocumented_data(module, path) for module, path in modules.items()}
    app.env.jaxsamp_undocumented_data = data
    for module in modules:
        children = [m for m in modules if m.rpartition(".")[0] == module]
        text = page(module, data[module], children)
        target = out / f"{module}.rst"
        if not target.exists() or target.read_text() != text:
            target.write_text(text)
    for stale in out.glob("*.rst"):
        if stale.stem not in modules:
            stale.unlink()


def value_only(app, what, name, obj, options, lines) -> None:
    """A constant without a doc comment shows its value, not the docstring of its type (``tuple``, ``ndarray``)."""
    module, _, attribute = name.rpartition(".")
    data = getattr(app.env, "jaxsamp_undocumented_data", {})
    if what == "data" and attribute in data.get(module, ()) and not inspect.isroutine(obj):
        lines.clear()


def defined_name(target: str) -> str | None:
    """Where ``target`` (``jaxsamp.run``, a re-export) is defined (``jaxsamp.core.driver.run``); None if unknown."""
    parts = target.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for part in parts[i:]:
                obj = getattr(obj, part)
        except AttributeError:
            return None
        module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
        return f"{module}.{qualname}" if module and qualname else None
    return None


def resolve_reexport(app, env, node, contnode):
    """Link a reference written the way users spell it (``jaxsamp.run``) to the page that documents it."""
    target = node.get("reftarget", "")
    if node.get("refdomain") != "py" or not target.startswith(PACKAGE + "."):
        return None
    defined = defined_name(target)
    if defined is None or defined == target or not defined.startswith(PACKAGE + "."):
        return None
    return env.get_domain("py").resolve_xref(env, node["refdoc"], app.builder, node["reftype"], defined, node, contnode)


def setup(app):
    app.connect("builder-inited", write_pages)
    app.connect("missing-reference", resolve_reexport)
    app.connect("autodoc-process-docstring", value_only, priority=400)  # before napoleon rewrites the lines
    return {"parallel_read_safe": True, "parallel_write_safe": True}
