"""A chain of coupled quartic double wells (the 8-d "lattice double well"): exact log Z by the transfer integral.

The energy is the discretised Euclidean action of a particle in a quartic double
well, ``N`` time slices of length ``dt = time_extent / N`` on a ring (or an open
chain)::

    E(x) = sum_i dt V(x_i) + sum_<i,j> (mass / (2 dt)) (x_i - x_j)^2,
    V(x) = (quartic / 4) x^4 - (quadratic / 2) x^2,

with nearest neighbours ``<i, j>`` on the ring ``(i, i+1 mod N)`` or on the open
chain. Máté & Fleuret's ``DoubleWellEnergy`` (``balintmate/boltzmann-interpolations``,
``src/targets/doublewell.py`` and ``experiments/config.yaml``: ``N = 8``, ``m = 3``
used both as the mass and the well's quadratic coefficient, ``lam = 1``,
``T = 4``) is the default; research/paths.md §B says that the Fisher–Rao curves
paper's 8-d example is plausibly this one (unverified). Each site has two wells
at ``+-sqrt(quadratic / quartic)``; the coupling makes the chain flip as a whole,
so the target has two dominant modes ``x ~ +-sqrt(3) (1, ..., 1)``.

**Exact references.** The density is a product of the symmetric two-site kernel
``K(x, y) = exp(-dt (V(x) + V(y)) / 2 - (mass / (2 dt)) (x - y)^2)`` around the
chain, so ``Z = tr K^N`` (ring) or ``Z = <u, K^(N-1) u>`` with
``u(x) = exp(-dt V(x) / 2)`` (open chain): the transfer-integral method. The
operator is discretised by the trapezoid rule on ``num_grid`` points of
``[-L, L]`` (Nyström), where ``L`` is where ``dt (V - min V)`` reaches 60; for
these smooth, rapidly decaying integrands the rule converges faster than any
power of the spacing (the tests compare 512 and 1024 points, an 8-d Gaussian
chain's closed form and a brute-force 3-site quadrature). ``sample`` draws the
sites one after another from their exact conditionals on the same grid (forward
filtering on the transfer matrices), then spreads each grid value uniformly over
its cell: the law is the grid law within a cell width (about 0.02) of the exact one.
"""

from __future__ import annotations

import functools
import math
from typing import Annotated

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core.errors import InputError
from jaxsamp.core.registry import TARGETS
from jaxsamp.core.target import Target
from jaxsamp.core.validation import (
    FiniteFloat,
    Interval,
    NonNegativeFloat,
    PositiveFloat,
)

TAIL = 60.0  # the grid ends where dt (V - min V) reaches this: exp(-60) of the peak per site


class LatticeDoubleWell(Target):
    """``exp(-E(x))`` for a chain of ``num_sites`` coupled quartic double wells (module docstring).

    Parameters
    ----------
    num_sites : int
        ``N``, the dimension (8 in the benchmark).
    quartic : float
        ``lambda >= 0`` of ``V``; with 0 the chain is Gaussian (then ``quadratic < 0``).
    quadratic : float
        The well's quadratic coefficient ``a``: ``V = lambda x^4 / 4 - a x^2 / 2`` (a double well for ``a > 0``).
    mass : float
        The coupling is ``mass / (2 dt)`` per bond.
    time_extent : float
        ``T``; ``dt = T / N``.
    periodic : bool
        A ring (the reference's ``jnp.roll``) or an open chain.
    num_grid : int
        Points of the transfer-integral grid.
    """

    name = "lattice_double_well"

    def __init__(
        self,
        num_sites: int = 8,
        quartic: float = 1.0,
        quadratic: float = 3.0,
        mass: float = 3.0,
        time_extent: float = 4.0,
        periodic: bool = True,
        num_grid: int = 512,
    ):
        if num_sites < (3 if periodic else 2):
            raise InputError(
                f"a {'ring' if periodic else 'chain'} needs num_sites >= {3 if periodic else 2}, got {num_sites}"
            )
        if quartic < 0 or (quartic == 0 and quadratic >= 0):
            raise InputError(
                f"the density is not integrable for quartic={quartic}, quadratic={quadratic}: "
                "need quartic > 0, or quartic = 0 with quadratic < 0"
            )
        if mass <= 0 or time_extent <= 0 or num_grid < 16:
            raise InputError(
                f"mass and time_extent must be > 0 and num_grid >= 16, got {mass}, {time_extent}, {num_grid}"
            )
        self.num_sites, self.quartic, self.quadratic = (
            int(num_sites),
            float(quartic),
            float(quadratic),
        )
        self.mass, self.time_extent, self.periodic = (
            float(mass),
            float(time_extent),
            bool(periodic),
        )
        self.dt = self.time_extent / self.num_sites
        self.bond = self.mass / (2.0 * self.dt)
        self.event_shape = (self.num_sites,)
        self.grid = _grid(self.potential, self.dt, int(num_grid))
        self.log_Z = self._transfer_log_z()

    # -- the density ----------------------------------------------------
    def potential(self, x):
        """The one-site well ``V(x) = quartic x^4 / 4 - quadratic x^2 / 2`` (numpy or jax, any shape)."""
        return 0.25 * self.quartic * x**4 - 0.5 * self.quadratic * x**2

    def energy(self, x):
        """``E(x)`` of one state (N,) (module docstring)."""
        neighbours = jnp.roll(x, -1) if self.periodic else x[1:]
        here = x if self.periodic else x[:-1]
        return self.dt * jnp.sum(self.potential(x)) + self.bond * jnp.sum(
            (here - neighbours) ** 2
        )

    def _log_prob(self, x):
        return -self.energy(x)

    @property
    def wells(self) -> float:
        """The site wells' positions ``+-sqrt(quadratic / quartic)`` (0 without a double well)."""
        return (
            math.sqrt(self.quadratic / self.quartic)
            if self.quartic > 0 and self.quadratic > 0
            else 0.0
        )

    # -- the transfer integral ---------------------------------------------
    def _log_kernel(self) -> np.ndarray:
        """``log A_jk = log(sqrt(w_j) K(x_j, x_k) sqrt(w_k))`` on the grid (float64), ``w = h`` the trapezoid weights."""
        x, h = self.grid
        half = -0.5 * self.dt * self.potential(x)
        return (
            half[:, None]
            + half[None, :]
            - self.bond * (x[:, None] - x[None, :]) ** 2
            + math.log(h)
        )

    @functools.cached_property
    def _spectrum(self):
        """Eigen-decomposition of the symmetric transfer matrix ``A``, scaled by a constant ``exp(-shift)``."""
        log_k = self._log_kernel()
        shift = float(np.max(log_k))
        values, vectors = np.linalg.eigh(np.exp(log_k - shift))
        return values, vectors, shift

    def _transfer_log_z(self) -> float:
        values, vectors, shift = self._spectrum
        n = self.num_sites
        top = float(np.max(values))
        if self.periodic:  # tr A^N = sum_j lambda_j^N
            total = float(np.sum((values / top) ** n))
            return n * (math.log(top) + shift) + math.log(total)
        x, h = self.grid
        log_u = -0.5 * self.dt * self.potential(x) + 0.5 * math.log(h)  # u_j sqrt(w_j)
        u_shift = float(np.max(log_u))
        coef = vectors.T @ np.exp(log_u - u_shift)  # u in the eigenbasis
        total = float(np.sum(coef**2 * (values / top) ** (n - 1)))
        return (n - 1) * (math.log(top) + shift) + 2 * u_shift + math.log(total)

    def _power(self, r: int) -> np.ndarray:
        """``A^r / lambda_max^r`` (float64) from the spectrum."""
        values, vectors, _ = self._spectrum
        return (vectors * (values / np.max(values)) ** r) @ vectors.T

    def exact_moments(self) -> dict:
        """``E[x_1^2]``, ``E[x_1 x_2]`` and ``E[x_1^4]`` by the transfer integral (ring only; float64)."""
        if not self.periodic:
            raise InputError(
                "exact_moments is implemented for the ring (periodic=True)"
            )
        x, _ = self.grid
        a, full, rest = (
            self._power(1),
            self._power(self.num_sites),
            self._power(self.num_sites - 1),
        )
        marginal = np.diag(full) / np.trace(full)
        pair = np.einsum("j,jk,k,kj->", x, a, x, rest) / np.trace(full)
        return {
            "x2": float(marginal @ x**2),
            "x1x2": float(pair),
            "x4": float(marginal @ x**4),
        }

    @functools.cached_property
    def _sampling_tables(self):
        """Log transition tables on the grid: ``log A`` and ``log A^r`` for ``r = 1 .. N`` (float32)."""
        log_a = self._log_kernel() - self._spectrum[2]
        tiny = np.finfo(np.float64).tiny
        powers = np.stack(
            [
                np.log(np.maximum(self._power(r), tiny))
                for r in range(1, self.num_sites + 1)
            ]
        )
        x, h = self.grid
        log_u = -0.5 * self.dt * self.potential(x) + 0.5 * math.log(h)
        return (
            jnp.asarray(log_a, jnp.float32),
            jnp.asarray(powers, jnp.float32),
            jnp.asarray(log_u, jnp.float32),
            jnp.asarray(x, jnp.float32),
            jnp.float32(h),
        )

    def sample(self, key, n):
        """``n`` samples (n, N): each site from its exact conditional on the grid, spread over its cell."""
        draws = _sample_chain(self._sampling_tables, key, int(n), self.periodic)
        return draws.astype(jnp.result_type(float))  # the default float: float64 under jax.enable_x64


def _draw(key, logits):
    """One index per row of ``logits`` (..., K) with probability ``softmax(logits)``, by inverting the CDF."""
    weights = jnp.exp(logits - jnp.max(logits, axis=-1, keepdims=True))
    cdf = jnp.cumsum(weights, axis=-1)
    u = jax.random.uniform(key, logits.shape[:-1] + (1,), cdf.dtype) * cdf[..., -1:]
    return jnp.minimum(jnp.sum(cdf < u, axis=-1), logits.shape[-1] - 1)


@functools.partial(jax.jit, static_argnums=(2, 3))
def _sample_chain(tables, key, n: int, periodic: bool):
    """Forward sampling of the chain on the grid (``LatticeDoubleWell.sample``); the tables are arguments, not constants."""
    log_a, log_powers, log_u, x, h = tables
    num, size = log_powers.shape[0], x.size
    k_first, k_sites, k_cell = jax.random.split(key, 3)
    if (
        periodic
    ):  # p(x_1) ∝ (A^N)_11, p(x_k | x_{k-1}, x_1) ∝ A(x_{k-1}, x_k) A^(N-k+1)(x_k, x_1)
        first = _draw(
            k_first, jnp.broadcast_to(jnp.diagonal(log_powers[num - 1]), (n, size))
        )
        anchor = lambda k: log_powers[num - k][first]
    else:  # p(x_1) ∝ u_1 (A^(N-1) u)_1, p(x_k | x_{k-1}) ∝ A(x_{k-1}, x_k) (A^(N-k) u)(x_k)
        tails = jnp.stack(
            [log_u]
            + [
                jax.scipy.special.logsumexp(log_powers[r - 1] + log_u, axis=1)
                for r in range(1, num)
            ]
        )
        first = _draw(k_first, jnp.broadcast_to(log_u + tails[num - 1], (n, size)))
        anchor = lambda k: jnp.broadcast_to(tails[num - k], (n, size))

    def next_site(previous, k):
        site = _draw(jax.random.fold_in(k_sites, k), log_a[previous] + anchor(k))
        return site, site

    _, rest = jax.lax.scan(next_site, first, jnp.arange(2, num + 1))
    values = x[jnp.concatenate([first[:, None], rest.T], axis=1)]
    return values + h * (jax.random.uniform(k_cell, values.shape, values.dtype) - 0.5)


def _grid(potential, dt: float, num_grid: int) -> tuple[np.ndarray, float]:
    """Trapezoid nodes on ``[-L, L]``, ``L`` the first point of ``[1, 1000]`` past which ``dt (V - min V) >= TAIL``."""
    probe = np.linspace(0.0, 1000.0, 100_001)
    excess = dt * (potential(probe) - np.min(potential(probe)))
    beyond = np.nonzero((excess >= TAIL) & (probe >= 1.0))[0]
    half_width = float(probe[beyond[0]]) if beyond.size else 1000.0
    x = np.linspace(-half_width, half_width, num_grid)
    return x, float(x[1] - x[0])


@TARGETS.register("lattice_double_well")
def lattice_double_well(
    num_sites: Annotated[int, Interval(ge=2)] = 8,
    quartic: NonNegativeFloat = 1.0,
    quadratic: FiniteFloat = 3.0,
    mass: PositiveFloat = 3.0,
    time_extent: PositiveFloat = 4.0,
    periodic: bool = True,
) -> LatticeDoubleWell:
    """Chain of coupled quartic double wells (Máté & Fleuret's 8-site DoubleWellEnergy); exact log Z (transfer integral), samples."""
    return LatticeDoubleWell(num_sites, quartic, quadratic, mass, time_extent, periodic)
