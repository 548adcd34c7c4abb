"""The ``benchmark-tables`` directive: the tables of ``benchmarks/results/*.json``, read at build time.

A suite's file (written by ``jaxsamp bench run SUITE``) becomes its tables: a row per cell and machine,
mean ± sd over seeds, the goals' decisions and the paired comparisons. Each file of the older scripts
(``{"command", "date", "machine", "results", "figure_commands"?}``, written
by ``scripts/bench_*.py``) becomes a section: its date and machine, its ``purpose`` or ``notes`` where it has them, then one table
of its scalar figures per command that produced them (``figure_commands`` names a figure's
command where it differs from the file's). Curves (lists, nested dicts) are named, not
tabulated. CI-sized outputs (``*_quick.json``) are left out.

Usage (MyST)::

    ```{benchmark-tables} ../benchmarks/results
    ```
"""

from __future__ import annotations

import json
from pathlib import Path

from docutils import nodes
from rst_fragment import escape, parse_rst
from sphinx.util.docutils import SphinxDirective


def _format(value) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:.4g}"


def _machine(machine) -> str:
    """One line for the ``machine`` record: device, cores, jax version."""
    if not isinstance(machine, dict):
        return str(machine)
    devices = machine.get("device_kind") or ", ".join(map(str, machine.get("devices", []))) or machine.get("processor")
    parts = [str(devices)] if devices else []
    if machine.get("cpu_count"):
        parts.append(f"{machine['cpu_count']} CPU cores")
    if machine.get("jax"):
        parts.append(f"jax {machine['jax']}")
    return ", ".join(parts)


def suite_rst(path: Path, data: dict) -> list[str]:
    """The section of a ``jaxsamp bench`` suite's file: its protocol's summary, then its tables
    (:func:`jaxsamp.bench.report.tables`)."""
    from jaxsamp.bench import store
    from jaxsamp.bench.report import tables
    from jaxsamp.bench.suites import SUITES, suite

    if data["suite"] in SUITES:  # aggregates under the suite's current rules
        data = store.read_current(path, suite(data["suite"]))

    title = f"{path.stem} (``jaxsamp bench run {data['suite']}``)"
    lines = [title, "-" * len(title), ""]
    summary = data.get("protocol", {}).get("summary")
    if summary:  # what the suite measures, from its stored protocol
        lines += [escape(summary[0].upper() + summary[1:] + "."), ""]
    for caption, header, rows in tables(data):
        lines += [f".. list-table:: {escape(caption)}", "   :header-rows: 1", ""]
        for row in [header, *rows]:
            lines += [f"   * - {escape(row[0])}"] + [f"     - {escape(cell)}" for cell in row[1:]]
        lines.append("")
    return lines


def results_rst(path: Path) -> list[str]:
    """The reStructuredText of one results file's section."""
    data = json.loads(path.read_text())
    if data.get("schema", "").startswith("jaxsamp.bench/"):
        return suite_rst(path, data)
    command = str(data.get("command", ""))
    title = path.stem
    lines = [title, "-" * len(title), ""]
    lines += [f"*{data.get('date', 'undated')}* -- {escape(_machine(data.get('machine', {})))}", ""]
    for note in ("purpose", "notes"):
        if data.get(note):
            lines += [escape(str(data[note])), ""]
    results = data.get("results", {})
    figure_commands = data.get("figure_commands") or {}
    by_command: dict[str, list[tuple[str, object]]] = {}
    curves = []
    for name, value in results.items():
        if isinstance(value, (list, dict)):
            curves.append(name)
            continue
        by_command.setdefault(str(figure_commands.get(name, command)), []).append((name, value))
    for cmd, rows in by_command.items():
        lines += ["``" + cmd.replace("`", "'") + "``" if cmd else "(no command recorded)", ""]
        lines += [".. list-table::", "   :header-rows: 1", "   :widths: 70 30", "", "   * - figure", "     - value"]
        for name, value in rows:
            lines += [f"   * - ``{name}``", f"     - {escape(_format(value))}"]
        lines.append("")
    if curves:
        lines += ["Curves in the file (not tabulated): " + ", ".join(f"``{c}``" for c in curves) + ".", ""]
    return lines


class BenchmarkTables(SphinxDirective):
    """One section per ``*.json`` in the folder given as the argument (relative to this document)."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        folder = (Path(self.env.doc2path(self.env.docname)).parent / self.arguments[0]).resolve()
        files = sorted(p for p in folder.glob("*.json") if not p.stem.endswith("_quick"))
        if not files:
            raise self.error(f"no benchmark results (*.json) in {folder}")
        lines = []
        for path in files:
            self.env.note_dependency(str(path))
            lines += results_rst(path)
        return parse_rst(self, lines, str(folder))


def setup(app):
    app.add_directive("benchmark-tables", BenchmarkTables)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
