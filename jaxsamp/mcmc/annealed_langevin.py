"""Annealed Langevin Monte Carlo (ALMC) along ``pi_theta ~ exp(-eta(theta) V - lambda(theta) |x|^2 / 2)``.

Guo, Tao & Chen, "Provable Benefit of Annealed Langevin Monte Carlo for
Non-log-concave Sampling", ICLR 2025 (arXiv 2407.16936); digest:
``research/paths.md`` Sec. C, reconstructed from the abstract and summaries
(the paper's own schedules and constants were not available: here they are
configurable, :func:`power_schedule` / :func:`make_schedule`). With ``V = -log pi``, ``eta`` non-decreasing to
``eta(1) = 1`` and ``lambda`` non-increasing to ``lambda(1) = 0``, the annealed
Langevin diffusion ``dX = -[eta(t/T) grad V(X) + lambda(t/T) X] dt + sqrt(2) dB``
is discretised on a partition ``0 = t_0 < ... < t_M = T`` with ``eta, lambda``
frozen at ``theta_l = t_l / T`` on ``(t_{l-1}, t_l]`` and ONE exponential
integrator step per level (the linear part ``-lambda X`` integrated exactly)::

    X_l = e^{-lambda_l h_l} X_{l-1} - phi_1(lambda_l, h_l) eta_l grad V(X_{l-1})
          + sqrt(phi_2(lambda_l, h_l)) xi_l,
    phi_1 = (1 - e^{-lambda h}) / lambda,  phi_2 = (1 - e^{-2 lambda h}) / lambda,

which is plain LMC (ULA with step ``h``) when ``lambda = 0`` (then
``phi_1 = h``, ``phi_2 = 2h``). The KL error is ``O(A / T)`` for the action
``A`` of the curve plus a discretisation term ``~ d beta^2 sum h_l^2``.

The kernel's state carries the level index (``AnnealedLangevinState.level``):
ALMC is a time-inhomogeneous chain, and keeping the level in the state makes it
an ordinary :class:`~jaxsamp.core.Kernel` that runs through ``ensemble``,
``run`` (checkpoint/resume) and ``shard`` unchanged. Step ``k`` does:

* ``k = 0`` when ``eta(0) = 0`` (``pi_0 = N(0, lambda(0)^-1 I)``): an exact draw
  from ``pi_0`` (no gradient), whatever the initial position;
* the next ``M`` steps: levels ``l = 1..M``;
* afterwards: plain LMC on ``pi = pi_1`` with the last step size (so
  ``num_steps > M + 1`` continues sampling ``pi`` with ULA).

When ``eta(0) > 0`` there is no exact draw and step ``k`` is level ``k + 1``:
start the chains from (an approximation of) ``pi_0``.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core.compiled import cached_kernel
from jaxsamp.core.errors import InputError
from jaxsamp.core.protocols import Kernel
from jaxsamp.core.registry import SAMPLERS
from jaxsamp.core.validation import NonNegativeFloat, PositiveFloat, PositiveInt


class AnnealingSchedule(NamedTuple):
    """A discretised ALMC curve: ``M`` levels with frozen coefficients.

    Attributes
    ----------
    eta, lam, step_size : arrays, shape (M,)
        ``eta(theta_l)``, ``lambda(theta_l)`` and ``h_l = t_l - t_{l-1}`` for
        ``l = 1..M``.
    eta0, lam0 : float
        ``eta(0)`` and ``lambda(0)``, which define the base ``pi_0``.
    """

    eta: np.ndarray
    lam: np.ndarray
    step_size: np.ndarray
    eta0: float
    lam0: float

    @property
    def num_levels(self) -> int:
        return int(self.eta.shape[0])

    @property
    def exact_base(self) -> bool:
        """``pi_0`` is the Gaussian ``N(0, lambda(0)^-1 I)`` (``eta(0) = 0``)."""
        return self.eta0 == 0.0


def make_schedule(eta_fn: Callable, lambda_fn: Callable, times) -> AnnealingSchedule:
    """Discretise any curve: ``theta_l = t_l / T`` on the partition ``times = (t_0=0, ..., t_M=T)``.

    Parameters
    ----------
    eta_fn, lambda_fn : callables
        ``theta -> eta(theta)``, ``theta -> lambda(theta)`` on numpy arrays; must
        satisfy ``eta(1) = 1``, ``lambda(1) = 0`` so the last level is ``pi``.
    times : array, shape (M + 1,)
        Increasing, starting at 0.
    """
    t = np.asarray(times, dtype=np.float64)
    if t.ndim != 1 or t.shape[0] < 2 or t[0] != 0.0 or np.any(np.diff(t) <= 0):
        raise InputError("times must be an increasing 1-D array starting at 0 with at least 2 points")
    theta = t[1:] / t[-1]
    eta = np.asarray(eta_fn(theta), dtype=np.float64) * np.ones_like(theta)
    lam = np.asarray(lambda_fn(theta), dtype=np.float64) * np.ones_like(theta)
    if not np.isclose(eta[-1], 1.0) or not np.isclose(lam[-1], 0.0):
        raise InputError(f"the curve must end at the target: eta(1) = 1, lambda(1) = 0; got {eta[-1]}, {lam[-1]}")
    if np.any(lam < 0) or np.any(eta < 0):
        raise InputError("eta and lambda must be non-negative")
    eta0 = float(np.asarray(eta_fn(np.zeros(1)))[0])
    lam0 = float(np.asarray(lambda_fn(np.zeros(1)))[0])
    if eta0 == 0.0 and lam0 <= 0.0:
        raise InputError("with eta(0) = 0 the base N(0, 1/lambda(0)) needs lambda(0) > 0")
    return AnnealingSchedule(eta, lam, np.diff(t), eta0, lam0)


def power_schedule(
    num_levels: int,
    total_time: float,
    lambda0: float,
    eta_power: float = 1.0,
    lambda_power: float = 1.0,
) -> AnnealingSchedule:
    """``eta(theta) = theta^a``, ``lambda(theta) = lambda0 (1 - theta)^b`` on a uniform partition of ``[0, T]``.

    ``a = 0`` gives ``eta = 1`` (pure Gaussian-tilt annealing, no exact base);
    ``a > 0`` starts from the exact base ``N(0, lambda0^-1 I)``. ``h = T / M``.
    """
    if num_levels < 1 or total_time <= 0 or lambda0 < 0 or eta_power < 0 or lambda_power <= 0:
        raise InputError("need num_levels >= 1, total_time > 0, lambda0 >= 0, eta_power >= 0, lambda_power > 0")
    return make_schedule(
        lambda th: th**eta_power,
        lambda th: lambda0 * (1.0 - th) ** lambda_power,
        np.linspace(0.0, total_time, num_levels + 1),
    )


def exponential_integrator_coefficients(lam, h):
    """``(e^{-lambda h}, (1 - e^{-lambda h}) / lambda, (1 - e^{-2 lambda h}) / lambda)``, continuous at ``lambda = 0``."""
    small = lam * h < 1e-6
    safe = jnp.where(small, 1.0, lam)
    decay = jnp.exp(-lam * h)
    phi1 = jnp.where(small, h * (1.0 - 0.5 * lam * h), -jnp.expm1(-lam * h) / safe)
    phi2 = jnp.where(small, 2.0 * h * (1.0 - lam * h), -jnp.expm1(-2.0 * lam * h) / safe)
    return decay, phi1, phi2


class AnnealedLangevinState(NamedTuple):
    """``position`` and ``level``: the number of ALMC steps done (0 at init)."""

    position: jax.Array
    level: jax.Array


class AnnealedLangevinInfo(NamedTuple):
    """``theta`` of the level just simulated (0 for the exact base draw) and gradient evaluations."""

    theta: jax.Array
    num_target_evals: jax.Array


def annealed_langevin(logdensity_fn: Callable, schedule: AnnealingSchedule) -> Kernel:
    """The ALMC kernel along ``schedule`` (one exponential-integrator step per level).

    Parameters
    ----------
    logdensity_fn : callable
        ``log pi = -V`` (unnormalised) of one position.
    schedule : AnnealingSchedule
        From :func:`power_schedule` or :func:`make_schedule`.

    Returns
    -------
    Kernel
        ``init(position)`` sets ``level = 0``; see the module docstring for what
        step ``k`` does. After ``M + schedule.exact_base`` steps the chain has
        finished the annealing.
    """
    m = schedule.num_levels
    offset = int(schedule.exact_base)
    eta = jnp.asarray(schedule.eta, jnp.float32)
    lam = jnp.asarray(schedule.lam, jnp.float32)
    hs = jnp.asarray(schedule.step_size, jnp.float32)
    theta = jnp.cumsum(hs) / jnp.sum(hs)
    grad_log_pi = jax.grad(logdensity_fn)

    def init_fn(position, rng_key=None):
        return AnnealedLangevinState(jnp.asarray(position), jnp.int32(0))

    def step_fn(rng_key, state: AnnealedLangevinState):
        x = state.position
        i = jnp.clip(state.level - offset, 0, m - 1)  # level index l - 1, frozen at the last level
        decay, phi1, phi2 = exponential_integrator_coefficients(lam[i], hs[i])
        noise = jax.random.normal(rng_key, x.shape, x.dtype)
        # -grad V = grad log pi
        new_x = decay * x + phi1 * eta[i] * grad_log_pi(x) + jnp.sqrt(phi2) * noise
        if schedule.exact_base:
            base = noise / jnp.sqrt(jnp.asarray(schedule.lam0, x.dtype))
            at_base = state.level == 0
            new_x = jnp.where(at_base, base, new_x)
            info = AnnealedLangevinInfo(jnp.where(at_base, 0.0, theta[i]), jnp.where(at_base, 0, 1).astype(jnp.int32))
        else:
            info = AnnealedLangevinInfo(theta[i], jnp.int32(1))
        return AnnealedLangevinState(new_x.astype(x.dtype), state.level + 1), info

    return Kernel(init_fn, step_fn)


@SAMPLERS.register("annealed_langevin")
def annealed_langevin_sampler(
    target,
    num_levels: PositiveInt = 1000,
    total_time: PositiveFloat = 20.0,
    lambda0: NonNegativeFloat = 1.0,
    eta_power: NonNegativeFloat = 1.0,
    lambda_power: PositiveFloat = 1.0,
) -> Kernel:
    """ALMC (Guo, Tao & Chen 2025): eta = theta^a, lambda = lambda0 (1-theta)^b, one step per level, then LMC."""
    return cached_kernel(_power_annealed_langevin, target.log_density, num_levels=num_levels, total_time=total_time,
                         lambda0=lambda0, eta_power=eta_power, lambda_power=lambda_power)


def _power_annealed_langevin(logdensity_fn: Callable, **schedule) -> Kernel:
    """:func:`annealed_langevin` along :func:`power_schedule` ``(**schedule)``: the registered kernel, made per trace."""
    return annealed_langevin(logdensity_fn, power_schedule(**schedule))
