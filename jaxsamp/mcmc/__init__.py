"""Markov kernels: blackjax adapters and what blackjax lacks. Importing registers them in ``SAMPLERS``."""
from jaxsamp.mcmc import discrete  # noqa: F401  (registers metropolis_site, glauber, checkerboard)
from jaxsamp.mcmc import (  # noqa: F401  (register the continuous kernels)
    annealed_langevin,
    blackjax_kernels,
    block_langevin,
    randomized_midpoint,
    speculative_langevin,
    ula,
)
