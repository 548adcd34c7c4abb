"""Targets with exact references, by name: ``jaxsamp.targets.get(name, **params)``."""

from jaxsamp.experiments.registry import TARGETS
from jaxsamp.targets import gaussian as _gaussian  # noqa: F401  (registers)
from jaxsamp.targets import mixture as _mixture  # noqa: F401
from jaxsamp.targets import lattice as _lattice  # noqa: F401
from jaxsamp.targets.gaussian import Gaussian
from jaxsamp.targets.lattice import Ising, LatticePath, Potts
from jaxsamp.targets.mixture import GaussianMixture

get = TARGETS.get
names = TARGETS.names

__all__ = ["Gaussian", "GaussianMixture", "Ising", "LatticePath", "Potts", "get", "names"]
