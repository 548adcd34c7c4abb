"""Neal's funnel: a normalised density with exact samples (log Z = 0)."""

from __future__ import annotations

import math
from typing import Annotated

import jax
import jax.numpy as jnp

from jaxsamp.core.errors import InputError
from jaxsamp.core.registry import TARGETS
from jaxsamp.core.target import Target
from jaxsamp.core.validation import Interval, PositiveFloat


class Funnel(Target):
    """Neal's funnel ``x0 ~ N(0, s^2)``, ``x_{1:d-1} | x0 ~ N(0, e^{x0} I)``.

    The density is given normalised, so ``log Z = 0``, and it is sampled exactly
    by ancestral sampling. Definition: Neal (2003), "Slice sampling", Ann. Statist.
    31(3), 705-767, the funnel example (with s = 3, d = 10), as used by the Beyond-ELBOs benchmark
    (Blessing et al. 2024, ``targets/funnel.py``; ../shared/research/paths.md §D3).

    Parameters
    ----------
    dim : int
        Total dimension ``d >= 2``.
    scale : float
        Standard deviation ``s`` of the neck coordinate ``x0``.
    """

    name = "funnel"
    log_Z = 0.0

    def __init__(self, dim: int = 10, scale: float = 3.0):
        if dim < 2:
            raise InputError(f"funnel needs dim >= 2, got {dim}")
        if not scale > 0:
            raise InputError(f"funnel needs scale > 0, got {scale}")
        self.event_shape, self.scale = (int(dim),), float(scale)

    def _log_prob(self, x):
        x0, rest = x[0], x[1:]
        half_log_2pi = 0.5 * math.log(2 * math.pi)
        log_p0 = -0.5 * (x0 / self.scale) ** 2 - math.log(self.scale) - half_log_2pi
        log_rest = -0.5 * jnp.sum(rest**2) * jnp.exp(-x0) - rest.shape[0] * (0.5 * x0 + half_log_2pi)
        return log_p0 + log_rest

    def sample(self, key, n):
        """Exact ancestral samples, shape ``(n, d)``."""
        z = jax.random.normal(key, (n, self.event_shape[0]))
        x0 = self.scale * z[:, :1]
        return jnp.concatenate([x0, jnp.exp(0.5 * x0) * z[:, 1:]], axis=1)


@TARGETS.register("funnel")
def funnel(dim: Annotated[int, Interval(ge=2)] = 10, scale: PositiveFloat = 3.0) -> Funnel:
    """Neal's funnel, x0 ~ N(0, scale^2), rest ~ N(0, e^x0); exact log Z = 0 and exact samples."""
    return Funnel(dim, scale)
