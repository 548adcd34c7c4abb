"""Annealing paths shared by the SMC tests: a Gaussian path with a closed-form log Z, and one not affine in t."""

from __future__ import annotations

from jaxsamp.core.target import AnnealingPath
from jaxsamp.targets import get
from jaxsamp.targets.annealing import geometric_path


def gaussian_path():
    """``N(0, I) -> N((1, -0.5), 0.25 I)`` in 2-D, geometric: every ``pi_t`` Gaussian, ``log Z_1`` exact."""
    return geometric_path(get("gaussian", dim=2, scale=0.5, mean=[1.0, -0.5]), base_scale=1.0)


class SquaredTime(AnnealingPath):
    """``pi_t = inner_{t^2}``: a path that is not affine in t (exercises the general weight update)."""

    def __init__(self, inner):
        self.inner, self.base, self.target, self.log_Z0 = inner, inner.base, inner.target, inner.log_Z0

    def log_prob(self, x, t):
        return self.inner.log_prob(x, t * t)
