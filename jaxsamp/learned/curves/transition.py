"""A Boltzmann curve's ODE flow as an SMC transition along its own interpolation.

A trained curve (Máté & Fleuret 2023, "Learning interpolations between Boltzmann
densities", TMLR; Chemseddine, Wald, Duong & Steidl 2025, ICLR) carries a path of
unnormalised densities ``rho_t = exp(-f_t)`` and a velocity ``v_t`` that
transports it. The flow map ``Phi`` of ``dx/dt = v_t(x)`` from ``t`` to ``t'`` is a
deterministic, invertible move, whose SMC incremental weight is the change of
variables (annealed flow transport: Arbel, Matthews & Doucet 2021, ICML, Alg. 1;
the deterministic case of Del Moral, Doucet & Jasra 2006, Sec. 3)::

    log w = log rho_{t'}(Phi(x)) + log |det dPhi/dx| - log rho_t(x),

with the log-determinant the RK4 integrator's own divergence term
(:func:`~jaxsamp.learned.curves.ode.flow_map`). Over a grid without resampling the
increments telescope to the curve's change-of-variables weight
``f_0(x_0) - f_1(x_1) + int div v`` (:func:`~jaxsamp.learned.curves.ode.transport`);
with resampling and MCMC moves at the levels (:func:`jaxsamp.smc.smc`) it is
annealed flow transport on the learned interpolation. As with the curve's own
weights, ``Z``-hat is unbiased up to the ODE's integration error: the RK4
log-determinant is that of the exact flow to the integrator's order, not of the
discrete map itself (``evaluate``'s ``log_Z_hat - log_Z_hat_jarzynski`` measures
that error).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core.combinators import num_chains
from jaxsamp.core.protocols import SMCProposal
from jaxsamp.core.target import AnnealingPath
from jaxsamp.learned.curves.interpolations import CurveFields, Interpolation, ScalarField
from jaxsamp.learned.curves.ode import flow_map
from jaxsamp.targets.gaussian import gaussian


class CurvePath(AnnealingPath):
    """A curve's intermediate densities ``log pi_t(x) = -f_t(x)`` from ``N(0, s^2 I)`` to the target.

    Parameters
    ----------
    interpolation : Interpolation
        ``f_t`` (:mod:`jaxsamp.learned.curves.interpolations`).
    g : callable or None
        The learned part ``g(x, t)`` of ``f_t`` (None for the linear interpolation).

    Attributes
    ----------
    base : Gaussian
        ``N(0, s^2 I)``, unnormalised as ``exp(-f_0)``, with exact samples.
    target : Target
    log_Z0 : float
        ``(d/2) log(2 pi s^2)``.
    """

    def __init__(self, interpolation: Interpolation, g: ScalarField | None):
        self.interpolation, self.g = interpolation, g
        self.target = interpolation.target
        self.base = gaussian(dim=interpolation.dim, scale=interpolation.base_scale)
        self.log_Z0 = interpolation.log_Z0

    def log_prob(self, x, t):
        """``-f_t(x)`` (one target evaluation)."""
        return -self.interpolation.f(self.g, x, t)


def curve_transition(interpolation: Interpolation, fields: CurveFields):
    """The curve's flow from level ``t`` to ``t_next`` (one RK4 step) with its exact incremental log weight.

    Parameters
    ----------
    interpolation : Interpolation
    fields : CurveFields
        The trained ``g`` and ``v`` at one state.

    Returns
    -------
    callable
        ``transition(key, positions, t, t_next) -> (positions, log_increment, evals)``
        (:mod:`jaxsamp.smc.transitions`; the key is unused: the move is deterministic).
        ``evals`` per particle: ``f_t(x)`` and ``f_{t'}(x')``, plus the target's gradient at
        the 4 RK4 stages for the gradient-flow curve, whose velocity needs it (``2 n``
        or ``6 n``).
    """
    path = CurvePath(interpolation, fields.g)
    evals_per_particle = 2 if interpolation.learns_velocity else 6

    def transition(key, positions, t, t_next):
        def move(x):
            x_next, log_det = flow_map(fields.velocity, x, t, t_next - t)
            return x_next, path.log_prob(x_next, t_next) + log_det - path.log_prob(x, t)

        x_next, log_increment = jax.vmap(move)(positions)
        return x_next, log_increment, jnp.int32(evals_per_particle * num_chains(positions))

    return transition


def curve_proposal(interpolation: Interpolation, fields: CurveFields, num_steps: int) -> SMCProposal:
    """The curve's path (:class:`CurvePath`), its flow (:func:`curve_transition`) and ``num_steps`` equal levels."""
    return SMCProposal(CurvePath(interpolation, fields.g), curve_transition(interpolation, fields),
                       np.linspace(0.0, 1.0, num_steps + 1))
