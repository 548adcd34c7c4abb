"""Figures in the README, the docs and the notebooks, written from the results files and checked against them.

A figure in prose is a marked span whose text the tool writes::

    PIS's funnel log Z error is <!--bench paths ; pis-kl/funnel ; log_Z_abs_err ; {mean:.2f} ± {sd:.2f} (n = {n})-->0.72 ± 0.53 (n = 3)<!--/bench-->.

The fields are separated by ``;`` (a ``|`` would split a markdown table's cell). The comments are invisible on GitHub and in the rendered docs; the text between them is generated from
``benchmarks/results/<suite>.json`` by ``jaxsamp bench docs`` (and ``--check`` fails, listing each figure, when
a file differs from its results: the test suite runs the check). The marker's fields are the suite (``SUITE.DEVICE``
for the seeds an accelerator ran: ``device.nvidia-h200`` reads ``device.nvidia-h200.json``), the cell
(``"name xK"`` for a budget-scaled cell), the figure (``goal:log_Z_abs_err`` for the cell's goal on that
figure, ``goal:tv vs BASELINE`` for its goal on the ratio to a baseline cell, ``goal:w2 @ 0.8`` for the goal
of that threshold where a cell has several on one figure, ``compare:tv vs BASELINE`` for its paired comparison), the format and, when the cell was run on several machines, a substring of the machine
to use. The format's fields: ``mean``, ``sd``, ``n`` (seeds), ``lo`` and ``hi`` (the 95 % interval), ``seed<k>`` (one
seed's value, for prose that names a seed); for a
goal also ``decision`` and ``threshold``; for a comparison ``mean``, ``sd``, ``lo`` and ``hi`` of the paired differences,
``ratio_median``, ``ratio_of_means``, ``ratio_min`` and ``ratio_max`` of the per-seed ratios. A marker whose suite, cell, figure or machine has no results
behind it is an error naming it. The flat files of the scripts not yet made suites
(``{"results": {key: value}}``) are read too: the cell field is ``-``, the figure the key, the format's one
field ``value``.

A whole generated table is a block, ``<!--bench-table NAME-->`` ... ``<!--/bench-table-->``, whose text a
function of :func:`table_blocks` writes (``standard``: every method on the standard targets,
:func:`jaxsamp.bench.standard.table`; ``scld-break-even``: how many sampling runs pay for SCLD's training,
:func:`jaxsamp.bench.suites.scld.break_even_table`); the check compares it as it compares a figure.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from jaxsamp.bench import store
from jaxsamp.bench.suites import SUITES
from jaxsamp.bench.suites import suite as suite_protocol
from jaxsamp.core.errors import InputError

MARKER = re.compile(r"<!--bench (?P<spec>[^>]*?)-->(?P<text>.*?)<!--/bench-->", re.DOTALL)
#: A generated table: ``<!--bench-table NAME-->`` ... ``<!--/bench-table-->`` (:mod:`jaxsamp.bench.standard`).
TABLE = re.compile(r"<!--bench-table (?P<name>[\w-]+)-->(?P<text>.*?)<!--/bench-table-->", re.DOTALL)
#: The files whose figures are generated: the README, the docs' pages and the notebooks' markdown.
ROOT = Path(__file__).resolve().parents[2]


def documented_files(root: Path = ROOT) -> list[Path]:
    """``README.md``, ``BENCHMARKS.md``, ``docs/**/*.md`` (generated API pages and the build apart) and
    ``notebooks/*.ipynb``."""
    docs = [p for p in sorted((root / "docs").rglob("*.md")) if not {"_build", "api"} & set(p.parts)]
    return [root / "README.md", root / "BENCHMARKS.md", *docs, *sorted((root / "notebooks").glob("*.ipynb"))]


class MissingFigure(InputError):
    """A marker's cell has no such figure (its suite and cell exist)."""


def render(spec: str, results_dir: Path | None = None, cache: dict | None = None) -> str:
    """The text of one marker (``suite ; cell ; figure ; format [; machine]``) from the results."""
    found = values(spec, results_dir, cache)  # checks the fields first
    return _format(spec, spec.split(";")[3].strip(), found)


def values(spec: str, results_dir: Path | None = None, cache: dict | None = None) -> dict:
    """The values a marker's format may name (``mean``, ``sd``, ``n``, ...), read from the results."""
    fields = [f.strip() for f in spec.split(";")]
    if len(fields) not in (4, 5):
        raise InputError(f"bench marker {spec!r}: expected 'suite ; cell ; figure ; format [; machine]'")
    suite, cell, figure = fields[:3]
    cache = {} if cache is None else cache
    if suite not in cache:
        name, _, device = suite.partition(".")  # "device.nvidia-h200": the seeds that device kind ran
        path = store.results_path(name, results_dir=results_dir, device=device)
        if not path.exists():
            raise InputError(f"bench marker {spec!r}: no results file {path}")
        data = json.loads(path.read_text())
        if data.get("schema") == store.SCHEMA and name in SUITES:  # aggregates under the suite's current rules
            data = store.read_current(path, suite_protocol(name))
        cache[suite] = data
    data = cache[suite]
    if data.get("schema") != store.SCHEMA:  # a flat file of a script not yet made a suite: its figure by key
        if figure not in data.get("results", {}):
            raise MissingFigure(f"bench marker {spec!r}: {suite}.json has no figure {figure!r}")
        return {"value": data["results"][figure]}
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
    if figure.startswith(("goal:", "compare:")):
        kind, _, rest = figure.partition(":")
        rest, _, threshold = (part.strip() for part in rest.partition(" @ "))
        name, _, baseline = (part.strip() for part in rest.partition(" vs "))
        if kind == "goal":
            found = [g for g in data.get("goals", []) if g["cell"] == cell and g["figure"] == name
                     and g.get("baseline", "") == baseline and g["machine"] == group["machine"]
                     and (not threshold or g["threshold"] == float(threshold))]
        else:
            found = [c for c in data.get("comparisons", []) if c["cell"] == cell and c["figure"] == name
                     and c["baseline"] == baseline and c["machine"] == group["machine"]]
        if not found:
            asked = figure.partition(":")[2].strip()
            raise InputError(f"bench marker {spec!r}: no {kind} on {asked!r} of cell {cell!r}")
        g = found[0]
        if kind == "goal":
            lo, hi = g["interval"] or (float("nan"), float("nan"))
            values = {"mean": g["mean"], "sd": g["sd"], "n": g["n"], "lo": lo, "hi": hi, "decision": g["decision"],
                      "threshold": g["threshold"]}
        else:
            d = g["difference"]
            lo, hi = d["interval"] or (float("nan"), float("nan"))
            values = {"mean": d["mean"], "sd": d["sd"], "n": d["n"], "lo": lo, "hi": hi,
                      "ratio_median": g["ratio_median"], "ratio_of_means": g["ratio_of_means"],
                      "ratio_min": min(g["ratios"]), "ratio_max": max(g["ratios"])}
    else:
        if figure not in group["figures"]:
            raise MissingFigure(f"bench marker {spec!r}: cell {cell!r} of suite {suite!r} has no figure {figure!r}")
        s = group["figures"][figure]
        lo, hi = s["interval"] or (float("nan"), float("nan"))
        values = {"mean": s["mean"], "sd": s["sd"], "n": s["n"], "lo": lo, "hi": hi,
                  **{f"seed{seed}": value for seed, value in s["values"].items()}}
    return values


def _format(spec: str, template: str, values: dict) -> str:
    try:
        return template.format(**values)
    except (KeyError, ValueError, IndexError) as err:
        raise InputError(f"bench marker {spec!r}: bad format {template!r} ({err})") from None


def table_blocks() -> dict:
    """``{name: render(results_dir, cache) -> markdown}``: the tables a ``<!--bench-table NAME-->`` block holds."""
    from jaxsamp.bench import standard
    from jaxsamp.bench.suites import scld

    return {standard.BLOCK: standard.table, "scld-break-even": scld.break_even_table, "scld-paper": scld.paper_table,
            "scld-posterior": scld.posterior_table}


def rewrite(text: str, results_dir: Path | None = None, cache: dict | None = None) -> str:
    """``text`` with every marked figure, and every generated table block, written from the results."""
    cache = {} if cache is None else cache
    blocks = table_blocks()

    def block(match) -> str:
        if match["name"] not in blocks:
            raise InputError(f"unknown bench table block {match['name']!r}", f"the blocks: {', '.join(blocks)}")
        table = blocks[match["name"]](results_dir, cache)
        return f"<!--bench-table {match['name']}-->\n{table}\n<!--/bench-table-->"

    text = TABLE.sub(block, text)
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
        if "<!--bench " not in raw and "<!--bench-table " not in raw:
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
    changes = [f"{path.name}: {a!r} -> {b!r}" for a, b in zip(before, after) if a != b]
    tables = zip(TABLE.finditer(old), TABLE.finditer(new))
    return changes + [f"{path.name}: the {a['name']} table differs from its results" for a, b in tables
                      if a["text"] != b["text"]]
