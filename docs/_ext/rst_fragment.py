"""Parse generated reStructuredText into nodes from a directive, in a Markdown (MyST) page as in a reST one.

``nested_parse`` would hand the text to the page's own parser, which in a MyST page reads
it as Markdown; the generated tables and sections are reST, so they get a parser of their own.
"""

from __future__ import annotations

from docutils import nodes
from docutils.parsers.rst import Parser
from docutils.utils import new_document


def parse_rst(directive, lines: list[str], source: str) -> list[nodes.Node]:
    """The nodes of ``lines`` (reST) parsed with the settings (and so the Sphinx environment) of the directive's page."""
    document = new_document(source, directive.state.document.settings)
    Parser().parse("\n".join(lines), document)
    return list(document.children)


def escape(text: str) -> str:
    """``text`` with the characters reST would read as markup escaped (``|``, ``*``, ``_``, a backquote)."""
    for char in ("\\", "|", "*", "_", "`"):
        text = text.replace(char, "\\" + char)
    return text
