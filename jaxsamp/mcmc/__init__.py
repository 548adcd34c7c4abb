"""Markov kernels: blackjax adapters and what blackjax lacks. Importing registers them in ``SAMPLERS``."""
from jaxsamp.mcmc import discrete  # noqa: F401  (registers metropolis_site, glauber, checkerboard)
