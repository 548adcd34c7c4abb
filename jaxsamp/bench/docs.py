"""Figures in the README, the docs and the notebooks, written from the results files and checked against them.

A figure in prose is a marked span whose text the tool writes::

    PIS's funnel log Z error is <!--bench paths ; pis-kl/funnel ; log_Z_abs_err ; {mean:.2f} ± {sd:.2f} (n = {n})-->0.72 ± 0.53 (n = 3)<!--/bench-->.

The fields are separated by ``;`` (a ``|`` would split a markdown table's cell). The comments are invisible on GitHub and in the rendered docs; the text between them is generated from
``benchmarks/results/<suite>.json`` by ``jaxsamp bench docs`` (and ``--check`` fails, listing each figure, when
a file differs from its results: the test suite runs the check). The marker's fields are the suite, the cell
(``"name xK"`` for a budget-scaled cell), the figure (or ``goal`` for the decision of the cell's goal on that
figure: ``goal:log_Z_abs_err``; ``goal:call_seconds / blackjax/eight_schools`` for a goal on per-seed ratios), the format and, when the cell was run on several machines, a substring of the
machine to use. The format's fields: ``mean``, ``sd``, ``n`` (seeds), ``lo`` and ``hi`` (the 95 % interval),
and for a goal ``decision`` and ``threshold``. A marker whose suite, cell, figure or machine has no results
behind it is an error naming it. The flat files of the scripts not yet made suites
(``{"results": {key: value}}``) are read too: the cell field is ``-``, the figure the key, the format's one
field ``value``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from jaxsamp.bench import store
from jaxsamp.core.errors import InputError

MARKER = re.compile(r"<!--bench (?P<spec>[^>]*?)-->(?P<text>.*?)<!--/bench-->", re.DOTALL)
#: The files whose figures are generated: the README, the docs' pages and the notebooks' markdown.
ROOT = Path(__file__).resolve().parents[2]


def documented_files(root: Path = ROOT) -> list[Path]:
    """``README.md``, ``docs/**/*.md`` (generated API pages and the build apart) and ``notebooks/*.ipynb``."""
    docs = [p for p in sorted((root / "docs").rglob("*.md")) if not {"_build", "api"} & set(p.parts)]
    return [root / "README.md", *docs, *sorted((root / "notebooks").glob("*.ipynb"))]


def render(spec: str, results_dir: Path | None = None, cache: dict | None = None) -> str:
    """The text of one marker (``suite ; cell ; figure ; format [; machine]``) from the results."""
    fields = [f.strip() for f in spec.split(";")]
    if len(fields) not in (4, 5):
        raise InputError(f"bench marker {spec!r}: expected 'suite ; cell ; figure ; format [; machine]'")
    suite, cell, figure, template = fields[:4]
    cache = {} if cache is None else cache
    if suite not in cache:
        path = store.results_path(suite, results_dir=results_dir)
        if not path.exists():
            raise InputError(f"bench marker {spec!r}: no results file {path}")
        cache[suite] = json.loads(path.read_text())
    data = cache[suite]
    if data.get("schema") != store.SCHEMA:  # a flat file of a script not yet made a suite: its figure by key
        if figure not in data.get("results", {}):
            raise InputError(f"bench marker {spec!r}: {suite}.json has no figure {figure!r}")
        return _format(spec, template, {"value": data["results"][figure]})
    groups = data["summary"].get(cell)
    if not groups:
        raise InputError(f"bench marker {spec!r}: suite {suite!r} has no results for cell {cell!r}")
    if len(fields) == 5:
        groups = [g for g in groups if fields[4] in g["machine"]]
    if len(groups) != 1:
        machines = "; ".join(g["machine"] for g in data["summary"][cell])
        raise InputError(f"bench marker {spec!r}: {len(groups)} machines match (recorded: {machines})",
                         "name the machine in a fifth field")
    group = groups[0]
    if figure.startswith("goal:"):
        name = figure[len("goal:"):]
        goals = [g for g in data.get("goals", []) if g["cell"] == cell and g["figure"] == name
                 and g["machine"] == group["machine"]]
        if not goals:
            raise InputError(f"bench marker {spec!r}: no goal on {name!r} of cell {cell!r}")
        g = goals[0]
        lo, hi = g["interval"] or (float("nan"), float("nan"))
        values = {"mean": g["mean"], "n": g["n"], "lo": lo, "hi": hi, "decision": g["decision"],
                  "threshold": g["threshold"], "sd": g["sd"] if "sd" in g else group["figures"][name]["sd"]}
    else:
        if figure not in group["figures"]:
            raise InputError(f"bench marker {spec!r}: cell {cell!r} of suite {suite!r} has no figure {figure!r}")
        s = group["figures"][figure]
        lo, hi = s["interval"] or (float("nan"), float("nan"))
        values = {"mean": s["mean"], "sd": s["sd"], "n": s["n"], "lo": lo, "hi": hi}
    return _format(spec, template, values)


def _format(spec: str, template: str, values: dict) -> str:
    try:
        return template.format(**values)
    except (KeyError, ValueError, IndexError) as err:
        raise InputError(f"bench marker {spec!r}: bad format {template!r} ({err})") from None


def rewrite(text: str, results_dir: Path | None = None, cache: dict | None = None) -> str:
    """``text`` with every marked figure written from the results."""
    cache = {} if cache is None else cache
    return MARKER.sub(lambda m: f"<!--bench {m['spec']}-->{render(m['spec'], results_dir, cache)}<!--/bench-->", text)


def update(paths=None, *, check: bool = False, results_dir: Path | None = None) -> list[str]:
    """Write (or, with ``check``, only compare) the marked figures of ``paths``; return ``file: old -> new`` lines.

    Notebooks are JSON: their markdown cells' sources are rewritten, the rest of the file untouched.
    """
    cache: dict = {}
    changes = []
    for path in paths or documented_files():
        path = Path(path)
        raw = path.read_text()
        if "<!--bench " not in raw:
            continue
        file_changes = []
        if path.suffix == ".ipynb":
            nb = json.loads(raw)
            for cell in nb["cells"]:
                if cell["cell_type"] == "markdown":
                    source = "".join(cell["source"])
                    new = rewrite(source, results_dir, cache)
                    file_changes += _differences(path, source, new)
                    cell["source"] = new.splitlines(keepends=True)
            new_raw = json.dumps(nb, indent=1, ensure_ascii=False) + "\n"
        else:
            new_raw = rewrite(raw, results_dir, cache)
            file_changes += _differences(path, raw, new_raw)
        if file_changes and not check:
            path.write_text(new_raw)
        changes += file_changes
    return changes


def _differences(path: Path, old: str, new: str) -> list[str]:
    before = [m["text"] for m in MARKER.finditer(old)]
    after = [m["text"] for m in MARKER.finditer(new)]
    return [f"{path.name}: {a!r} -> {b!r}" for a, b in zip(before, after) if a != b]
