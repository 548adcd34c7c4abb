"""The ``metric-glossary`` directive: one table per experiment kind from :mod:`jaxsamp.experiments.glossary`.

The runner warns about (and the test suite fails on) any ``metrics.json`` key the glossary
lacks, so the page rendered from it lists every key a run can write.
"""

from __future__ import annotations

from docutils import nodes
from rst_fragment import escape, parse_rst
from sphinx.util.docutils import SphinxDirective

from jaxsamp.core.registry import EXPERIMENTS
from jaxsamp.experiments import glossary
from jaxsamp.experiments import kinds as _kinds  # noqa: F401  (registers the kinds)


def _text(text: str) -> str:
    """A glossary text as reST: its double-backquoted literals kept, everything else escaped."""
    parts = text.split("``")
    return "``".join(part if i % 2 else escape(part) for i, part in enumerate(parts))


def _table(entries: dict) -> list[str]:
    lines = [".. list-table::", "   :header-rows: 1", "   :widths: 25 45 30", "",
             "   * - key", "     - meaning", "     - what good looks like"]
    for key, entry in entries.items():
        lines += [f"   * - ``{key}``", f"     - {_text(entry.meaning)}", f"     - {_text(entry.good)}"]
    return lines + [""]


class MetricGlossary(SphinxDirective):
    """The vocabulary, a section per registered experiment kind, then the keys every run writes."""

    def run(self) -> list[nodes.Node]:
        lines = ["Every learned method and kind", "-----------------------------", "",
                 "One name per concept: these figures mean the same wherever they appear (the canonical weight "
                 "figures of ``jaxsamp.diagnostics.weights.figures``, the learned log Z, the costs).", ""]
        lines += _table(glossary.VOCABULARY)
        for kind in sorted(EXPERIMENTS.names()):
            if kind not in glossary.GLOSSARY:
                raise self.error(f"experiment kind {kind!r} has no entry in jaxsamp.experiments.glossary")
            title = f"``{kind}``"
            lines += [title, "-" * len(title), "", escape(EXPERIMENTS.entry(kind).summary) + ".", ""]
            lines += _table(glossary.GLOSSARY[kind])
        lines += ["Every kind", "----------", "", "The runner adds these to every run's metrics.", ""]
        lines += _table(glossary.COMMON)
        return parse_rst(self, lines, "jaxsamp.experiments.glossary")


def setup(app):
    app.add_directive("metric-glossary", MetricGlossary)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
