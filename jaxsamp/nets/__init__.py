"""Flax nnx networks: MLP and time embeddings, locally equivariant lattice networks (LEAPS), EGNN."""

from jaxsamp.core.lazy import submodule_getattr

__getattr__ = submodule_getattr(__name__)  # submodules on first use
