"""Subpackages and modules as attributes of their package on first use (PEP 562).

``import jaxsamp`` imports little; ``jaxsamp.learned.diffusion.pis_dds.PisSettings`` then works as
written in the docstrings, each package importing the submodule named at its first access.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from types import ModuleType


def submodule(package: str, name: str) -> ModuleType:
    """Module ``package.name``, imported now.

    Raises
    ------
    AttributeError
        When ``package`` has no such submodule (a dunder name or a folder without ``__init__.py`` is none),
        as for any missing attribute.
    """
    spec = None if name.startswith("__") else importlib.util.find_spec(f"{package}.{name}")
    if spec is not None and spec.origin is not None:  # a data folder (a namespace package, no origin) is no module
        return importlib.import_module(f"{package}.{name}")
    raise AttributeError(f"module {package!r} has no attribute {name!r}")


def submodule_getattr(package: str) -> Callable[[str], ModuleType]:
    """The module ``__getattr__`` of ``package`` that imports a submodule at its first access."""

    def __getattr__(name: str) -> ModuleType:
        return submodule(package, name)

    return __getattr__
