"""Curves of Boltzmann densities ``rho_t ∝ exp(-f_t)`` from a Gaussian to a target, and their continuity residual.

Chemseddine, Wald, Duong & Steidl (2025), "Neural Sampling from Boltzmann
Densities: Fisher-Rao Curves in the Wasserstein Geometry", ICLR (arXiv
2410.03282), compare three interpolations between the base
``rho_0 = N(0, s^2 I)`` (``f_0 = |x|^2 / (2 s^2)``) and the target
``rho_1 ∝ p~`` (``f_1 = -log p~``); research/paths.md §B:

* **linear**: ``f_t = (1 - t) f_0 + t f_1``; only the velocity ``v_t`` is learned;
* **learned** (Máté & Fleuret 2023, "Learning interpolations between Boltzmann
  densities", TMLR): ``f_t = (1 - t) f_0 + t f_1 + t (1 - t) g(x, t)`` with a
  network ``g``, and ``v_t`` learned too;
* **gradient flow**: the same ``f_t`` with a learned ``g``, but ``v_t`` is fixed by
  ``f_t``: the curve is the Wasserstein gradient flow of ``KL(. | rho_0)`` (the
  Ornstein-Uhlenbeck / Langevin Fokker-Planck flow), run from the target to the
  base. Our derivation (paths.md §B is a reconstruction; the paper's time
  parametrisation was not seen): the OU process ``dX = -X / s^2 dtau + sqrt(2) dW``
  has marginals ``e^{-tau/s^2} X_1 + s sqrt(1 - e^{-2 tau/s^2}) Z`` and Fokker-Planck
  velocity ``u = grad f - x / s^2``; in the time ``t = e^{-tau/s^2}`` (so
  ``rho_0 = N(0, s^2 I)`` exactly at ``t = 0`` and the target at ``t = 1``; the
  curve is the variance-preserving noising ``t X_1 + s sqrt(1 - t^2) Z``),
  ``v_t = u dtau/dt = (x - s^2 grad f_t) / t``. With the ``f_t`` above the
  ``1 / t`` cancels exactly::

      v_t(x) = x - s^2 grad f_1(x) - (1 - t) s^2 grad g(x, t),

  finite on all of ``[0, 1]``. The tests check that the exact variance-preserving
  curve of a Gaussian target makes the residual vanish with this velocity.

The log-continuity equation ``d/dt rho_t + div(rho_t v_t) = 0`` of
``rho_t = exp(-f_t) / Z_t`` is the PINN residual (paths.md §B, as in Máté &
Fleuret's Eqs. 11-12)::

    R_t(x) = d/dt f_t(x) - div v_t(x) + <grad f_t(x), v_t(x)> + C(t),

zero everywhere exactly when ``v_t`` transports ``rho_t`` and
``C(t) = d/dt log Z_t = -E_{rho_t}[d/dt f_t]`` (so ``log Z_1 = log Z_0 + int_0^1 C``;
paths.md writes the constant with the opposite sign convention, which a
learned ``C`` absorbs).

The objects here are small and immutable: an interpolation gives ``f_t``,
``d/dt f_t`` and ``grad f_t`` at one state (one target evaluation with its
gradient), and the gradient-flow one also its fixed velocity. Networks enter as
plain callables ``g(x, t) -> scalar``, so closed-form curves plug in for tests.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxsamp.core.errors import InputError

INTERPOLATIONS = ("linear", "learned", "gradient_flow")

ScalarField = Callable[[jax.Array, jax.Array], jax.Array]  # g(x (d,), t ()) -> ()
VectorField = Callable[[jax.Array, jax.Array], jax.Array]  # v(x (d,), t ()) -> (d,)


class CurveTerms(NamedTuple):
    """``f_t(x)``, ``d/dt f_t(x)`` and ``grad_x f_t(x)`` at one state: shapes (), (), (d,)."""

    f: jax.Array
    dt_f: jax.Array
    grad_f: jax.Array


class CurveFields(NamedTuple):
    """What a curve's networks give, as plain callables at ONE state.

    Attributes
    ----------
    g : callable or None
        ``g(x, t) -> ()``, the learned part of ``f_t`` (``None`` for the linear interpolation).
    velocity : callable
        ``v(x, t) -> (d,)``.
    rate : callable
        ``C(t) -> ()``, the learned ``d/dt log Z_t``.
    """

    g: ScalarField | None
    velocity: VectorField
    rate: Callable[[jax.Array], jax.Array]


# --------------------------------------------------------------------------
# divergence
# --------------------------------------------------------------------------


def value_and_divergence(
    fn: Callable, x: jax.Array, key=None, num_probes: int = 1
) -> tuple[jax.Array, jax.Array]:
    """``fn(x)`` and ``div fn(x) = tr d fn / dx`` for ``fn: R^d -> R^d`` at one state ``x`` (d,).

    Exact (``key=None``): the trace of the Jacobian from ``d`` forward-mode
    products (one ``jax.linearize``, the value computed once). Hutchinson
    (Hutchinson 1989, "A stochastic estimator of the trace of the influence
    matrix"): ``mean_k e_k^T J e_k`` over ``num_probes`` Rademacher probes drawn
    from ``key``, unbiased with variance ``sum_{i<j} (J_ij + J_ji)^2 / num_probes``.

    Returns
    -------
    value : (d,)
    divergence : ()
    """
    value, jvp = jax.linearize(fn, x)
    if key is None:
        columns = jax.vmap(jvp)(jnp.eye(x.shape[-1], dtype=x.dtype))  # row i: J e_i
        return value, jnp.trace(columns)
    probes = jax.random.rademacher(key, (num_probes, x.shape[-1]), x.dtype)
    return value, jnp.mean(jnp.sum(probes * jax.vmap(jvp)(probes), axis=-1))


def continuity_residual(
    terms: CurveTerms, velocity: jax.Array, divergence: jax.Array, rate: jax.Array
) -> jax.Array:
    """``R = d/dt f - div v + <grad f, v> + C``: the log-continuity residual at one state (module docstring)."""
    return terms.dt_f - divergence + jnp.dot(terms.grad_f, velocity) + rate


# --------------------------------------------------------------------------
# the interpolations
# --------------------------------------------------------------------------


class Interpolation:
    """``f_t = (1 - t) f_0 + t f_1 [+ t (1 - t) g(x, t)]`` between ``N(0, s^2 I)`` and a target.

    Parameters
    ----------
    target : Target
        Real-valued with a flat state ``(d,)``; ``f_1 = -target.log_prob``.
    base_scale : float
        ``s``.

    Attributes
    ----------
    name : str
    learns_f : bool
        ``f_t`` has a learned part ``g``.
    learns_velocity : bool
        ``v_t`` is a network (False: fixed by ``f_t``).
    dim : int
    log_Z0 : float
        ``(d/2) log(2 pi s^2)``, the base's log normaliser.
    """

    name = "linear"
    learns_f = False
    learns_velocity = True

    def __init__(self, target, base_scale: float = 1.0):
        shape = getattr(target, "event_shape", None)
        if target.domain.kind != "real" or shape is None or len(shape) != 1:
            raise InputError(
                f"Boltzmann curves need a real-valued target with a flat state (d,), got {target.name!r}"
            )
        if not base_scale > 0:
            raise InputError(f"base_scale must be > 0, got {base_scale}")
        self.target, self.base_scale, self.dim = (
            target,
            float(base_scale),
            int(shape[0]),
        )
        self.log_Z0 = 0.5 * self.dim * math.log(2.0 * math.pi * self.base_scale**2)

    def base_energy(self, x: jax.Array) -> jax.Array:
        """``f_0(x) = |x|^2 / (2 s^2)`` at one state."""
        return 0.5 * jnp.sum(x**2) / self.base_scale**2

    def target_energy(self, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        """``f_1(x) = -log p~(x)`` and its gradient at one state (one target evaluation)."""
        value, grad = jax.value_and_grad(self.target.log_prob)(x)
        return -value, -grad

    def _check_g(self, g):
        if self.learns_f and g is None:
            raise InputError(f"the {self.name} interpolation needs its network g(x, t)")

    def f(self, g: ScalarField | None, x: jax.Array, t) -> jax.Array:
        """``f_t(x)`` at one state (one target evaluation)."""
        self._check_g(g)
        value = (1.0 - t) * self.base_energy(x) - t * self.target.log_prob(x)
        return value + t * (1.0 - t) * g(x, t) if self.learns_f else value

    def terms(self, g: ScalarField | None, x: jax.Array, t) -> CurveTerms:
        """``f_t``, ``d/dt f_t`` and ``grad f_t`` at one state (one target evaluation with its gradient)."""
        self._check_g(g)
        f0, grad_f0 = self.base_energy(x), x / self.base_scale**2
        f1, grad_f1 = self.target_energy(x)
        f = (1.0 - t) * f0 + t * f1
        dt_f = f1 - f0
        grad_f = (1.0 - t) * grad_f0 + t * grad_f1
        if self.learns_f:
            t = jnp.asarray(t, x.dtype)
            g_value, dg_dt = jax.jvp(lambda s: g(x, s), (t,), (jnp.ones_like(t),))
            grad_g = jax.grad(g)(x, t)
            f = f + t * (1.0 - t) * g_value
            dt_f = dt_f + (1.0 - 2.0 * t) * g_value + t * (1.0 - t) * dg_dt
            grad_f = grad_f + t * (1.0 - t) * grad_g
        return CurveTerms(f, dt_f, grad_f)

    def velocity(
        self, g: ScalarField | None, x: jax.Array, t
    ) -> jax.Array:  # pragma: no cover - overridden
        raise InputError(
            f"the {self.name} interpolation's velocity is a network, not fixed by f"
        )


class LinearInterpolation(Interpolation):
    """``f_t = (1 - t) f_0 + t f_1``: the geometric path; only ``v_t`` (and ``C``) are learned."""

    name, learns_f, learns_velocity = "linear", False, True


class LearnedInterpolation(Interpolation):
    """``f_t = (1 - t) f_0 + t f_1 + t (1 - t) g(x, t)`` (Máté & Fleuret 2023); ``g``, ``v_t`` and ``C`` learned."""

    name, learns_f, learns_velocity = "learned", True, True


class GradientFlowInterpolation(Interpolation):
    """The learned ``f_t`` with ``v_t`` fixed by it: the OU gradient flow toward ``N(0, s^2 I)`` (module docstring)."""

    name, learns_f, learns_velocity = "gradient_flow", True, False

    def velocity(self, g: ScalarField, x: jax.Array, t) -> jax.Array:
        """``v_t(x) = (x - s^2 grad f_t(x)) / t = x - s^2 grad f_1(x) - (1 - t) s^2 grad g(x, t)`` at one state."""
        self._check_g(g)
        s2 = self.base_scale**2
        _, grad_f1 = self.target_energy(x)
        return (
            x - s2 * grad_f1 - (1.0 - t) * s2 * jax.grad(g)(x, jnp.asarray(t, x.dtype))
        )


_CLASSES = {
    c.name: c
    for c in (LinearInterpolation, LearnedInterpolation, GradientFlowInterpolation)
}


def make_interpolation(name: str, target, base_scale: float = 1.0) -> Interpolation:
    """The interpolation ``name`` (one of :data:`INTERPOLATIONS`) between ``N(0, base_scale^2 I)`` and ``target``."""
    if name not in _CLASSES:
        raise InputError(
            f"interpolation must be one of {', '.join(INTERPOLATIONS)}, got {name!r}"
        )
    return _CLASSES[name](target, base_scale)
