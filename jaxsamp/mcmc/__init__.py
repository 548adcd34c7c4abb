"""Markov kernels: blackjax adapters and what blackjax lacks; multi-chain warm-up; one-call sampling.

Importing registers the kernels in ``SAMPLERS``. :func:`sample` is the one-call
path (:mod:`jaxsamp.mcmc.sample`); :func:`warmup` warms up every chain at once
(:mod:`jaxsamp.mcmc.warmup`).
"""
from jaxsamp.core.lazy import submodule_getattr
from jaxsamp.mcmc import (  # noqa: F401  (importing registers the kernels in SAMPLERS)
    annealed_langevin,
    blackjax_kernels,
    block_langevin,
    discrete,
    randomized_midpoint,
    speculative_langevin,
    sphere,
    ula,
)
from jaxsamp.mcmc.sample import (
    Posterior,
    RunHealthWarning,
    check_starting_points,
    sample,
)
from jaxsamp.mcmc.warmup import (
    TunedState,
    Warmup,
    WarmupInfo,
    sampling_kernel,
    starting_points,
    warmup,
)

__all__ = [
    "Posterior", "RunHealthWarning", "TunedState", "Warmup", "WarmupInfo", "check_starting_points", "sample",
    "sampling_kernel", "starting_points", "warmup",
]

__getattr__ = submodule_getattr(__name__)  # submodules on first use
