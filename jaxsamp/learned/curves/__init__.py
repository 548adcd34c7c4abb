"""Boltzmann curves: a curve of densities ``rho_t ∝ exp(-f_t)`` and its velocity field, trained by a PINN loss.

Papers: Chemseddine, Wald, Duong & Steidl (2025), "Neural Sampling from Boltzmann Densities:
Fisher-Rao Curves in the Wasserstein Geometry", ICLR; Máté & Fleuret (2023), "Learning
interpolations between Boltzmann densities", TMLR.

Files
-----
training
    The networks, the continuity-equation (PINN) loss, :func:`build` (the
    :class:`~jaxsamp.core.LearnedSampler` that ``jaxsamp.fit("curves", ...)`` trains) and :class:`Curves`, the
    method's numerics: training, ODE sampling and evaluation, key first.
interpolations
    The linear, learned and gradient-flow interpolations and the residual of the continuity equation.
ode
    Sampling by the ODE (RK4) with change-of-variables and Jarzynski weights, optional MALA corrections.
transition
    The ODE flow as a transition of :func:`jaxsamp.smc.smc` along the curve (resampled, moved SMC from a trained curve).

The main names are re-exported here:
``from jaxsamp.learned.curves import CurvesSettings, build``.
"""

from jaxsamp.core.lazy import submodule_getattr
from jaxsamp.learned.curves.training import Curves, CurvesSettings, build

__all__ = ["Curves", "CurvesSettings", "build"]

__getattr__ = submodule_getattr(__name__)  # submodules on first use
