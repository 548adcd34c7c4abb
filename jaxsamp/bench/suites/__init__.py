"""The benchmark suites, one module each; each module defines ``PROTOCOL`` (and may register cell runners
and an ``after_seed`` hook for its plots)."""

from __future__ import annotations

import importlib

from jaxsamp.core.errors import ConfigError
from jaxsamp.core.lazy import submodule_getattr

#: The suites by name: the module of each (imported when used).
SUITES = {
    "paths": "jaxsamp.bench.suites.paths",
    "curves": "jaxsamp.bench.suites.curves",
    "gflownet": "jaxsamp.bench.suites.gflownet",
    "particles": "jaxsamp.bench.suites.particles",
    "vi": "jaxsamp.bench.suites.vi",
    "binary": "jaxsamp.bench.suites.binary",
    "mile": "jaxsamp.bench.suites.mile",
    "vmf": "jaxsamp.bench.suites.vmf",
    "leaps": "jaxsamp.bench.suites.leaps",
    "mcmc": "jaxsamp.bench.suites.mcmc",
    "classical": "jaxsamp.bench.suites.classical",
    "device": "jaxsamp.bench.suites.device",
    "overhead": "jaxsamp.bench.suites.overhead",
    "diagnostics": "jaxsamp.bench.suites.diagnostics",
    "scaling": "jaxsamp.bench.suites.scaling",
    "memory": "jaxsamp.bench.suites.memory",
    "chains": "jaxsamp.bench.suites.chains",
    "scld": "jaxsamp.bench.suites.scld",
}


def module(name: str):
    """The module of suite ``name`` (a ConfigError listing the suites otherwise)."""
    if name not in SUITES:
        raise ConfigError(f"unknown benchmark suite {name!r}; known: {', '.join(sorted(SUITES))}")
    return importlib.import_module(SUITES[name])


def suite(name: str):
    """The :class:`~jaxsamp.bench.protocol.Protocol` of suite ``name``."""
    return module(name).PROTOCOL

__getattr__ = submodule_getattr(__name__)  # submodules on first use
