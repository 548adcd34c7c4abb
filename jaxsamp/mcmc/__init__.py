"""Markov kernels: blackjax adapters and what blackjax lacks. Importing registers them in ``SAMPLERS``."""
