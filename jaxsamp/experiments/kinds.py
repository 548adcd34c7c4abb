"""Imports every module that registers an experiment kind (``EXPERIMENTS``)."""

from jaxsamp.experiments import mcmc_experiment  # noqa: F401
from jaxsamp.experiments import smc_experiment  # noqa: F401
from jaxsamp.experiments import adjoint_experiment  # noqa: F401
from jaxsamp.experiments import leaps_experiment  # noqa: F401
