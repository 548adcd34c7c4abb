"""Imports every module that registers an experiment kind (``EXPERIMENTS``)."""

from jaxsamp.experiments import mcmc_experiment  # noqa: F401
