"""Config schema, registries, the experiment runner and its plots."""

from jaxsamp.core.lazy import submodule_getattr

__getattr__ = submodule_getattr(__name__)  # submodules on first use
