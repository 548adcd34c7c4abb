"""Imports every module that registers an experiment kind (``EXPERIMENTS``)."""

from jaxsamp.experiments import (
    adjoint_experiment,  # noqa: F401
    bernoulli_denoising_experiment,  # noqa: F401
    curves_experiment,  # noqa: F401
    diffusion_experiment,  # noqa: F401
    gflownet_experiment,  # noqa: F401
    leaps_experiment,  # noqa: F401
    mcmc_experiment,  # noqa: F401
    mile_experiment,  # noqa: F401
    scld_experiment,  # noqa: F401
    smc_experiment,  # noqa: F401
    tps_dps_experiment,  # noqa: F401
    vi_experiment,  # noqa: F401
    vmf_experiment,  # noqa: F401
)
