"""2-D potentials for transition-path sampling: the TPS-DPS double well and Müller–Brown.

Each is a :class:`Target` for the Boltzmann density ``exp(-V(x) / (kB T))`` with an exact
``log Z`` (2-D quadrature) and carries a :class:`TransitionPathSpec`: the start and end
states of the transition, the temperature and Boltzmann's constant in the system's units,
and the located minima and saddle points.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core.errors import InputError
from jaxsamp.core.registry import TARGETS
from jaxsamp.core.target import Target
from jaxsamp.core.validation import PositiveFloat

Point = tuple[float, float]


@dataclasses.dataclass(frozen=True)
class TransitionPathSpec:
    """What a transition-path sampler needs to know about a system.

    Attributes
    ----------
    start, end : (float, float)
        The endpoints: paths go from the minimum ``start`` to the minimum ``end``.
    temperature : float
        Temperature ``T`` of the target path measure.
    kB : float
        Boltzmann's constant in the potential's energy units per temperature unit.
    minima, saddles : tuple of points
        All local minima of ``V`` and its saddle points (transition states).
    """

    start: Point
    end: Point
    temperature: float
    kB: float
    minima: tuple[Point, ...]
    saddles: tuple[Point, ...]

    @property
    def kBT(self) -> float:
        return self.kB * self.temperature

    @property
    def beta(self) -> float:
        return 1.0 / self.kBT


def double_well_2d_potential(x):
    """TPS-DPS synthetic potential (Seong et al. 2025, ICLR, ``double-well.ipynb``; paths.md §A4).

    ``V(x, y) = [4(1 - x^2 - y^2)^2 + 2(x^2 - 2)^2 + ((x + y)^2 - 1)^2 + ((x - y)^2 - 1)^2 - 2] / 6``
    at points ``x`` of shape (..., 2) (jax or numpy arrays). Minima ``(+-sqrt(5)/2, 0)`` with
    ``V = -1/12``; saddles ``(0, +-1)`` with ``V = 1``, degenerate (``V(x, +-1) = 1 + 4x^4/3``,
    Hessian ``diag(0, 8)``) but the mountain pass: ``max_x min_y V(x, y) = 1`` at ``x = 0``.
    """
    a, b = x[..., 0], x[..., 1]
    return (
        4 * (1 - a**2 - b**2) ** 2 + 2 * (a**2 - 2) ** 2 + ((a + b) ** 2 - 1) ** 2 + ((a - b) ** 2 - 1) ** 2 - 2
    ) / 6


# Müller & Brown (1979), Theor. Chim. Acta 53, 75-93: (A, a, b, c, x0, y0) of each term.
_MB_TERMS = (
    (-200.0, -1.0, 0.0, -10.0, 1.0, 0.0),
    (-100.0, -1.0, 0.0, -10.0, 0.0, 0.5),
    (-170.0, -6.5, 11.0, -6.5, -0.5, 1.5),
    (15.0, 0.7, 0.6, 0.7, -1.0, 1.0),
)


def muller_brown_potential(x):
    """Müller–Brown surface ``V = sum_k A_k exp(a_k dx^2 + b_k dx dy + c_k dy^2)``, ``dx = x - x0_k``.

    Müller & Brown (1979), "Location of saddle points and minimum energy paths by a
    constrained simplex optimization procedure", Theor. Chim. Acta 53, 75-93. Points ``x``
    of shape (..., 2), jax or numpy arrays (numpy stays in numpy, for float64 quadrature).
    """
    exp = np.exp if isinstance(x, np.ndarray) else jnp.exp
    total = 0.0
    for big_a, a, b, c, x0, y0 in _MB_TERMS:
        dx, dy = x[..., 0] - x0, x[..., 1] - y0
        total = total + big_a * exp(a * dx**2 + b * dx * dy + c * dy**2)
    return total


def _grid_log_Z(potential: Callable, kBT: float, box: tuple[float, float, float, float], n: int = 601) -> float:
    """``log int exp(-V / kBT)`` over ``box = (x_min, x_max, y_min, y_max)``, trapezoid rule in float64.

    ``potential`` is evaluated on a numpy grid of shape (n, n, 2). The integrand is analytic
    and negligible on the box's edges, where the trapezoid rule converges faster than any
    power of the spacing (601 points per axis reach float64 round-off at the default
    temperatures).

    Raises
    ------
    ValueError
        When the density on the box's edges is not negligible (< 1e-12 of its peak), i.e.
        the temperature is too high for the box.
    """
    xs, ys = np.linspace(box[0], box[1], n), np.linspace(box[2], box[3], n)
    log_w = -potential(np.stack(np.meshgrid(xs, ys, indexing="ij"), axis=-1)) / kBT
    shift = log_w.max()
    w = np.exp(log_w - shift)
    edge = max(w[0].max(), w[-1].max(), w[:, 0].max(), w[:, -1].max())
    if edge > 1e-12:
        raise InputError(f"kB T = {kBT} is too high: the density is not negligible on the quadrature box {box}")
    integral = np.trapezoid(np.trapezoid(w, ys, axis=1), xs)
    return float(math.log(integral) + shift)


class TransitionPathTarget(Target):
    """Boltzmann density ``exp(-V(x) / (kB T))`` of a 2-D potential, with its path metadata.

    ``log_Z`` is exact up to the quadrature (trapezoid rule on a 601 x 601 grid over
    ``box``; error < 1e-9, tested against adaptive quadrature).

    Parameters
    ----------
    name : str
    potential_fn : callable
        ``V`` at one point of shape (2,).
    spec : TransitionPathSpec
    box : (x_min, x_max, y_min, y_max)
        Integration box outside which the density is negligible (< 1e-12 of its peak).
    """

    def __init__(self, name: str, potential_fn: Callable, spec: TransitionPathSpec, box):
        if not spec.temperature > 0:
            raise InputError(f"temperature must be positive, got {spec.temperature}")
        self.name, self.event_shape, self.spec = name, (2,), spec
        self._potential_fn = potential_fn
        self.log_Z = _grid_log_Z(potential_fn, spec.kBT, box)

    def potential(self, x):
        """``V(x)`` at one point of shape (2,) (checked like ``log_prob``)."""
        return -self.log_prob(x) * self.spec.kBT

    def force(self, x):
        """``-grad V(x)`` at one point (the drift of the Langevin dynamics a path sampler biases)."""
        return jax.grad(lambda y: -self.potential(y))(x)

    def _log_prob(self, x):
        return -self._potential_fn(x) / self.spec.kBT


@TARGETS.register("double_well_2d")
def double_well_2d(temperature: PositiveFloat = 1200.0) -> TransitionPathTarget:
    """TPS-DPS synthetic 2-D double well at T (K), kB in eV/K; exact log Z (quadrature), endpoints (+-sqrt5/2, 0).

    Start ``(-sqrt(5)/2, 0)``, end ``(+sqrt(5)/2, 0)`` (V = -1/12), saddles ``(0, +-1)``
    (V = 1), ``kB = 8.6173303e-5`` eV/K and T = 1200 K: the barrier is about 10.5 kB T
    (Seong et al. 2025, "Transition path sampling with improved off-policy training of
    diffusion path samplers", ICLR; ../shared/research/paths.md §A1, §A4).
    """
    m = math.sqrt(5.0) / 2
    spec = TransitionPathSpec(
        start=(-m, 0.0),
        end=(m, 0.0),
        temperature=temperature,
        kB=8.6173303e-5,
        minima=((-m, 0.0), (m, 0.0)),
        saddles=((0.0, -1.0), (0.0, 1.0)),
    )
    return TransitionPathTarget("double_well_2d", double_well_2d_potential, spec, box=(-3.0, 3.0, -3.0, 3.0))


# Stationary points located by Newton's method in float64 (|grad V| < 1e-12); values of V:
# minima -146.699517, -108.166724, -80.767818; saddles -40.664849, -72.248940.
MULLER_BROWN_MINIMA = (
    (-0.558223634633024, 1.441725841804669),
    (0.623499404930877, 0.028037758528686),
    (-0.050010822998206, 0.466694104871972),
)
MULLER_BROWN_SADDLES = (
    (-0.822001558732732, 0.624312802814871),
    (0.212486582000662, 0.292988325107368),
)


@TARGETS.register("muller_brown")
def muller_brown(temperature: PositiveFloat = 10.0) -> TransitionPathTarget:
    """Müller–Brown surface in reduced units (kB = 1); exact log Z (quadrature), path from the deepest to the second minimum.

    The default ``kB T = 10`` puts the highest barrier on the minimum-energy path,
    ``V(saddle) - V(start) = 106.03``, at 10.6 kB T, as for the double well.
    """
    spec = TransitionPathSpec(
        start=MULLER_BROWN_MINIMA[0],
        end=MULLER_BROWN_MINIMA[1],
        temperature=temperature,
        kB=1.0,
        minima=MULLER_BROWN_MINIMA,
        saddles=MULLER_BROWN_SADDLES,
    )
    return TransitionPathTarget("muller_brown", muller_brown_potential, spec, box=(-4.0, 3.0, -2.5, 4.0))
