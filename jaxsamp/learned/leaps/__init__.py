"""LEAPS: a discrete neural sampler, a CTMC with locally equivariant rates and Jarzynski weights.

Paper: Holderrieth, Albergo & Jaakkola (2025), "LEAPS: a discrete neural sampler via
locally equivariant networks", ICML.

Files
-----
simulation
    The CTMC on a lattice annealing path: Euler jumps, time grids, exact (and quadrature) importance weights.
pinn
    The physics-informed loss and the step-count curriculum.
training
    The training over an int8 replay buffer, :func:`build` (the
    :class:`~jaxsamp.core.LearnedSampler` that ``jaxsamp.fit("leaps", ...)`` trains) and :class:`Leaps`,
    its numerics (every weight rule's draws, key first).
transition
    The exact-rule Euler step as a transition of :func:`jaxsamp.smc.smc` (resampled, moved SMC from a trained LEAPS).

The main names are re-exported here: ``from jaxsamp.learned.leaps import LeapsSettings, build``.
"""

from jaxsamp.core.lazy import submodule_getattr
from jaxsamp.learned.leaps.simulation import metropolis_correction, sample, simulate
from jaxsamp.learned.leaps.training import Leaps, LeapsSettings, build
from jaxsamp.learned.leaps.transition import leaps_transition

__all__ = ["Leaps", "LeapsSettings", "build", "leaps_transition", "metropolis_correction", "sample", "simulate"]

__getattr__ = submodule_getattr(__name__)  # submodules on first use
