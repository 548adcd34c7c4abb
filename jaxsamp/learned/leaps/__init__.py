"""LEAPS: a discrete neural sampler, a CTMC with locally equivariant rates and Jarzynski weights.

Paper: Holderrieth, Albergo & Jaakkola (2025), "LEAPS: a discrete neural sampler via
locally equivariant networks", ICML.

Files
-----
simulation
    The CTMC on a lattice annealing path: Euler jumps, time grids, exact (and quadrature) importance weights.
training
    The PINN loss over an int8 replay buffer, the step-count curriculum, and :class:`Leaps`: the
    trainer with ``sample(state, key, n)`` and ``evaluate(state, key, n)`` (``jaxsamp.fit("leaps", ...)``).

The main names are re-exported here: ``from jaxsamp.learned.leaps import Leaps, LeapsSettings``.
"""

from jaxsamp.learned.leaps.simulation import metropolis_correction, sample, simulate
from jaxsamp.learned.leaps.training import Leaps, LeapsSettings

__all__ = ["Leaps", "LeapsSettings", "metropolis_correction", "sample", "simulate"]
