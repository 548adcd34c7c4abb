"""Sphinx configuration of the jaxsamp documentation (``make docs`` builds it into ``docs/_build``)."""

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS.parent))
sys.path.insert(0, str(DOCS / "_ext"))

import jaxsamp  # noqa: E402

project = "jaxsamp"
author = "the jaxsamp authors"
copyright = "the jaxsamp authors, Apache-2.0"
release = version = jaxsamp.__version__

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "api_pages",
    "benchmark_tables",
    "metric_glossary",
]

exclude_patterns = ["_build", "**.ipynb_checkpoints"]

# The API reference: one page per module, written into docs/api/ (a build output) by the
# api_pages extension and filled by autodoc from the docstrings.
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_format = "short"
autoclass_content = "class"

# numpydoc-style docstrings, read by napoleon.
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
napoleon_use_ivar = True
# Parameter types stay text: a shape such as ``(num_steps,)`` is not a cross-reference.
napoleon_use_param = False

# Notebooks are rendered with their stored outputs: the test suite executes them
# (tests/notebooks), the docs build never does.
nb_execution_mode = "off"
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

html_theme = "sphinx_book_theme"
html_title = f"jaxsamp {release}"
html_theme_options = {"show_toc_level": 2}


def setup(app):
    """Attribute types stay text, as parameter types do (``napoleon_use_param = False``).

    A numpydoc type such as ``array (num_samples, K, d)`` is a shape, not a list of
    cross-references; Sphinx would otherwise link every word of it.
    """
    from sphinx.domains.python import PyObject

    for field in PyObject.doc_field_types:
        if field.name == "variable":
            field.typerolename = None

