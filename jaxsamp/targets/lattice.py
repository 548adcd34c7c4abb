"""Lattice targets on a periodic 2-D lattice: the Ising and q-state Potts models, and the LEAPS path.

Both models live on an ``Lx x Ly`` torus. A state is an array of shape
``(Lx, Ly)``: Ising spins ``+-1`` (any numeric dtype, float32 by default) or
Potts categories ``0..q-1`` (integers). The bonds are the ``2 Lx Ly``
(right, down) nearest-neighbour pairs with periodic wrap::

    (i, j) -- (i, j + 1 mod Ly)        (i, j) -- (i + 1 mod Lx, j)

This is the ordinary torus for ``Lx, Ly >= 3``. When a side is 2 the "right"
bond of ``(i, 1)`` wraps onto ``(i, 0)``, which is already bonded to it, so the
pair is counted twice (a double bond); the energy, the single-site move deltas
(which sum the four rolled neighbours) and the exact references of
:mod:`jaxsamp.targets.lattice_exact` all use that same convention.

Ising (Onsager 1944; Kaufman 1949)::

    E(s) = -J sum_<ij> s_i s_j - h sum_i s_i,        p(s) ∝ exp(-beta E(s))

Potts (Potts 1952; Wu 1982, "The Potts model", Rev. Mod. Phys. 54)::

    E(x) = -J sum_<ij> 1[x_i = x_j],                  p(x) ∝ exp(-beta E(x))

The critical couplings of the square lattice are ``beta_c J = ln(1 + sqrt 2) / 2
= 0.44069`` (Ising) and ``ln(1 + sqrt q)`` (Potts; 1.0051 for q = 3).

Every model gives, in one vectorised call, the log-probability change of every
single-site move (:meth:`Ising.flip_log_ratios`, :meth:`Potts.flip_log_ratios`),
which is what Glauber / Metropolis kernels and LEAPS rate matrices need
(Holderrieth, Albergo & Jaakkola 2025, "LEAPS: a discrete neural sampler via
locally equivariant networks", ICML; ``ΔU`` of their Sec. 3). Both are
:class:`LatticeModel` s, as is an energy of your own
(:func:`~jaxsamp.targets.energy_lattice.lattice_energy`).
"""

from __future__ import annotations

import functools
import math
from typing import Annotated

import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core.errors import InputError
from jaxsamp.core.registry import TARGETS
from jaxsamp.core.target import SPIN, AnnealingPath, Target, categorical
from jaxsamp.core.validation import FiniteFloat, Interval, NonNegativeFloat
from jaxsamp.targets import lattice_exact

#: Transfer matrices up to this many row states are cheap enough to fill ``Target.log_Z`` on access.
_CHEAP_TRANSFER_STATES = 256


def lattice_shape(L) -> tuple[int, int]:
    """``(Lx, Ly)`` from an int ``L`` (square) or a pair ``[Lx, Ly]``; each side >= 2."""
    sides = [L, L] if np.ndim(L) == 0 else list(L)
    shape = tuple(int(v) for v in sides)
    if len(shape) != 2 or any(v < 2 for v in shape) or shape != tuple(sides):
        raise InputError(f"L must be an int >= 2 or a pair [Lx, Ly] of ints >= 2, got {L!r}")
    return shape


def _check_finite(name: str, value: float) -> float:
    value = float(value)
    if not math.isfinite(value):
        raise InputError(f"{name} must be finite, got {value}")
    return value


def _check_beta(beta: float) -> float:
    beta = float(beta)
    if not (math.isfinite(beta) and beta >= 0):
        raise InputError(f"beta must be finite and >= 0, got {beta}")
    return beta


def _float_dtype(x: jax.Array):
    """The float dtype a state's log-probabilities are computed in (at least float32)."""
    return jnp.promote_types(x.dtype, jnp.float32) if jnp.issubdtype(x.dtype, jnp.floating) else jnp.result_type(float)


def _neighbour_sum(x: jax.Array) -> jax.Array:
    """Sum over the four rolled neighbours of every site (a double bond counts twice)."""
    return (
        jnp.roll(x, 1, axis=0) + jnp.roll(x, -1, axis=0) + jnp.roll(x, 1, axis=1) + jnp.roll(x, -1, axis=1)
    )


def _neighbours_of_site(x: jax.Array, site) -> list[jax.Array]:
    """The four periodic neighbours of the flat site ``site`` of ``x`` (Lx, Ly), in :func:`_neighbour_sum`'s order."""
    lx, ly = x.shape[:2]
    i, j = site // ly, site % ly
    return [x[(i - 1) % lx, j], x[(i + 1) % lx, j], x[i, (j - 1) % ly], x[i, (j + 1) % ly]]


class LatticeModel(Target):
    """A model on a periodic 2-D lattice of spins or categories: what LEAPS and the lattice kernels take.

    Shared shape checks, exact-reference plumbing and ``log_prob = -beta E``.
    ``log_prob(x) = -beta * energy(x)`` takes ONE state of shape ``(Lx, Ly)``.
    ``L`` is the side (an int) for square lattices and ``(Lx, Ly)`` otherwise;
    ``lattice_shape`` is always the pair and ``num_sites = Lx Ly``. A subclass
    gives ``energy``, the single-site moves' log-ratios (``flip_log_ratios`` and
    one site's ``site_log_ratios``), ``exact_log_Z`` with ``_log_Z_is_cheap``,
    ``_states_from_digits``, ``_numpy_energy`` (a batch of states, float64) and
    ``with_beta``. ``nearest_neighbour`` says whether the energy couples only
    the four neighbours of a site (what a checkerboard update needs).
    """

    beta: float
    num_states_per_site: int
    nearest_neighbour: bool = True

    def __init__(self, L, beta: float):
        self.lattice_shape = lattice_shape(L)
        self.beta = _check_beta(beta)
        self.event_shape = self.lattice_shape
        self.num_sites = self.lattice_shape[0] * self.lattice_shape[1]
        lx, ly = self.lattice_shape
        self.L = lx if lx == ly else self.lattice_shape

    def _check(self, x: jax.Array, what: str) -> None:
        chex.assert_shape(
            x,
            self.event_shape,
            custom_message=f"{self.name}.{what} takes one state of shape {self.event_shape}; batch with jax.vmap",
        )

    def _log_prob(self, x):
        e = self.energy(x)
        return -jnp.asarray(self.beta, e.dtype) * e

    @property
    def log_Z0(self) -> float:
        """``N log k``: log of the number of states (the uniform base of :class:`LatticePath`)."""
        return self.num_sites * math.log(self.num_states_per_site)

    # -- exact references (numpy float64, small lattices) -----------------
    @functools.cached_property
    def log_Z(self) -> float | None:
        """Exact ``log Z`` when it is cheap (closed form, or <= 256 transfer-matrix row states); else None."""
        return self.exact_log_Z() if self._log_Z_is_cheap() else None

    def _transfer_states(self) -> int:
        return self.num_states_per_site ** min(self.lattice_shape)

    def enumerate_states(self) -> tuple[np.ndarray, np.ndarray]:
        """All states and their normalised probabilities (at most 2^20 states).

        Returns
        -------
        states : ndarray (k^N, Lx, Ly)
            float32 spins (Ising) or int32 categories (Potts), in lexicographic order.
        probs : ndarray (k^N,) float64
            ``exp(-beta E) / Z``.

        Raises
        ------
        ExactReferenceUnavailable
            (a ValueError) when ``k^N > 2^20``.
        """
        states = self._states_from_digits(lattice_exact.all_states(self.lattice_shape, self.num_states_per_site))
        return states, lattice_exact.normalised(-self.beta * self._numpy_energy(states))

    def describe(self) -> dict:
        return {**super().describe(), "beta": self.beta}


class Ising(LatticeModel):
    """Ising model on an ``Lx x Ly`` torus, ``p(s) ∝ exp(beta (J sum_<ij> s_i s_j + h sum_i s_i))``.

    Parameters
    ----------
    L : int or (int, int)
        Side (square) or ``[Lx, Ly]``; state arrays have shape ``(Lx, Ly)``.
    beta : float
        Inverse temperature, ``>= 0``.
    J, h : float
        Coupling and external field.

    Notes
    -----
    Exact ``log Z`` for ``h = 0`` from Kaufman's (1949) finite-torus formula (as
    written by Beale 1996, "Exact distribution of energies in the
    two-dimensional Ising model", PRL 76, 78); for ``h != 0`` or ``J < 0`` from a
    row-to-row transfer matrix. Onsager's (1944) critical point is
    ``beta_c J = ln(1 + sqrt 2) / 2``.
    """

    domain = SPIN
    num_states_per_site = 2

    def __init__(self, L, beta: float, J: float = 1.0, h: float = 0.0):
        super().__init__(L, beta)
        self.J, self.h = _check_finite("J", J), _check_finite("h", h)
        self.name = "ising"

    def energy(self, x: jax.Array) -> jax.Array:
        """``-J sum_<ij> s_i s_j - h sum_i s_i`` over the ``2 N`` (right, down) periodic bonds."""
        self._check(x, "energy")
        s = x.astype(_float_dtype(x))
        return lattice_exact.ising_energy(s, jnp.asarray(self.J, s.dtype), jnp.asarray(self.h, s.dtype), xp=jnp)

    def flip_log_ratios(self, x: jax.Array) -> jax.Array:
        """``log p(flip_i x) - log p(x)`` for every site ``i``, shape ``(Lx, Ly)``.

        Flipping ``s_i`` changes the energy by ``2 s_i (J sum_{j ~ i} s_j + h)``
        (LEAPS ``ΔU_i``, Holderrieth et al. 2025), so the entry is
        ``-2 beta s_i (J n_i + h)`` with ``n_i`` the sum of the four neighbours.
        """
        self._check(x, "flip_log_ratios")
        s = x.astype(_float_dtype(x))
        beta, J, h = (jnp.asarray(v, s.dtype) for v in (self.beta, self.J, self.h))
        return -2.0 * beta * s * (J * _neighbour_sum(s) + h)

    def site_log_ratios(self, x: jax.Array, site) -> jax.Array:
        """Entry ``site`` (a flat index, int scalar) of :meth:`flip_log_ratios`, shape ``()``, from its four neighbours.

        O(1) instead of O(N): what a random-scan update needs. Summed in the
        same order as :meth:`flip_log_ratios`, so it equals that entry bit for bit.
        """
        self._check(x, "site_log_ratios")
        dtype = _float_dtype(x)  # only the five spins read are converted, not the lattice
        beta, J, h = (jnp.asarray(v, dtype) for v in (self.beta, self.J, self.h))
        up, down, left, right = (v.astype(dtype) for v in _neighbours_of_site(x, site))
        return -2.0 * beta * x.reshape(-1)[site].astype(dtype) * (J * (up + down + left + right) + h)

    def exact_log_Z(self) -> float:
        """Exact ``log Z`` in float64.

        ``N log 2`` at ``beta = 0``; Kaufman's formula when ``h = 0`` and
        ``J > 0`` (:func:`~jaxsamp.targets.lattice_exact.kaufman_log_Z`, any
        size); otherwise the row transfer matrix
        (:func:`~jaxsamp.targets.lattice_exact.ising_transfer_log_Z`), which
        raises ``ExactReferenceUnavailable`` (a ValueError) beyond 4096 row
        states, i.e. ``min(Lx, Ly) > 12``.
        """
        if self.beta == 0:
            return self.log_Z0
        if self.h == 0 and self.J > 0:
            return lattice_exact.kaufman_log_Z(self.lattice_shape, self.beta, self.J)
        return lattice_exact.ising_transfer_log_Z(self.lattice_shape, self.beta, self.J, self.h)

    def _log_Z_is_cheap(self) -> bool:
        return self.beta == 0 or (self.h == 0 and self.J > 0) or self._transfer_states() <= _CHEAP_TRANSFER_STATES

    def exact_magnetization_distribution(self) -> tuple[np.ndarray, np.ndarray]:
        """Exact ``P(m)`` of ``m = (1/N) sum_i s_i`` (transfer matrix; about ``min(Lx, Ly) <= 9``).

        Returns ``(m, p)``: the ``N + 1`` values ``(2k - N)/N`` and their
        probabilities; see :func:`~jaxsamp.targets.lattice_exact.ising_magnetization_distribution`.
        """
        return lattice_exact.ising_magnetization_distribution(self.lattice_shape, self.beta, self.J, self.h)

    def _states_from_digits(self, digits):
        return (2.0 * digits - 1.0).astype(np.float32)

    def _numpy_energy(self, states):
        return lattice_exact.ising_energy(states.astype(np.float64), self.J, self.h)

    def describe(self) -> dict:
        return {**super().describe(), "J": self.J, "h": self.h}

    def with_beta(self, beta: float) -> "Ising":
        """The same model at another inverse temperature."""
        return Ising(self.lattice_shape, beta, self.J, self.h)


class Potts(LatticeModel):
    """q-state Potts model on an ``Lx x Ly`` torus, ``p(x) ∝ exp(beta J sum_<ij> 1[x_i = x_j])``.

    Parameters
    ----------
    L : int or (int, int)
        Side (square) or ``[Lx, Ly]``; states are int arrays ``(Lx, Ly)`` in ``{0..q-1}``.
    beta : float
        Inverse temperature, ``>= 0``.
    q : int
        Number of states per site, ``>= 2``.
    J : float
        Coupling.

    Notes
    -----
    Potts (1952); Wu (1982), Rev. Mod. Phys. 54, 235. Exact ``log Z`` by a
    row-to-row transfer matrix (``q^min(Lx, Ly)`` row states) for small lattices.
    The LEAPS benchmark is ``q = 3``, ``L = 15``, ``beta = 1.0010`` (Holderrieth
    et al. 2025).
    """

    def __init__(self, L, beta: float, q: int = 3, J: float = 1.0):
        if int(q) != q or q < 2:
            raise InputError(f"q must be an int >= 2, got {q!r}")
        super().__init__(L, beta)
        self.J = _check_finite("J", J)
        self.q = int(q)
        self.num_states_per_site = self.q
        self.domain = categorical(self.q)
        self.name = "potts"

    def _check(self, x, what):
        super()._check(x, what)
        chex.assert_type(x, int, custom_message=f"{self.name}.{what} takes integer categories")

    def energy(self, x: jax.Array) -> jax.Array:
        """``-J sum_<ij> 1[x_i = x_j]`` over the ``2 N`` (right, down) periodic bonds."""
        self._check(x, "energy")
        dtype = jnp.result_type(float)
        return lattice_exact.potts_energy(x, jnp.asarray(self.J, dtype), xp=jnp, dtype=dtype)

    def flip_log_ratios(self, x: jax.Array) -> jax.Array:
        """``log p(x^{i<-c}) - log p(x)`` for every site ``i`` and category ``c``, shape ``(Lx, Ly, q)``.

        Equals ``beta J (n_i(c) - n_i(x_i))`` with ``n_i(c)`` the number of the
        four neighbours in category ``c`` (LEAPS ``ΔU_{i,c}``, Holderrieth et
        al. 2025); zero where ``c = x_i``.
        """
        self._check(x, "flip_log_ratios")
        dtype = jnp.result_type(float)
        counts = _neighbour_sum(jax.nn.one_hot(x, self.q, dtype=dtype))
        own = jnp.take_along_axis(counts, x[..., None].astype(jnp.int32), axis=-1)
        return jnp.asarray(self.beta * self.J, dtype) * (counts - own)

    def site_log_ratios(self, x: jax.Array, site) -> jax.Array:
        """Row ``site`` (a flat index, int scalar) of :meth:`flip_log_ratios`, shape ``(q,)``, from its four neighbours.

        O(1) instead of O(N): what a random-scan update needs. Counted in the
        same order as :meth:`flip_log_ratios`, so it equals that row bit for bit.
        """
        self._check(x, "site_log_ratios")
        dtype = jnp.result_type(float)
        up, down, left, right = (jax.nn.one_hot(v, self.q, dtype=dtype) for v in _neighbours_of_site(x, site))
        counts = up + down + left + right
        own = counts[x.reshape(-1)[site].astype(jnp.int32)]
        return jnp.asarray(self.beta * self.J, dtype) * (counts - own)

    def exact_log_Z(self) -> float:
        """Exact ``log Z`` in float64 by the row transfer matrix (``q^min(Lx, Ly) <= 4096`` row states).

        Raises ``ExactReferenceUnavailable`` (a ValueError) for larger lattices;
        see :func:`~jaxsamp.targets.lattice_exact.potts_transfer_log_Z`.
        """
        return lattice_exact.potts_transfer_log_Z(self.lattice_shape, self.beta, self.q, self.J)

    def _log_Z_is_cheap(self) -> bool:
        return self._transfer_states() <= _CHEAP_TRANSFER_STATES

    def exact_magnetization_distribution(self) -> tuple[np.ndarray, np.ndarray]:
        """Exact distribution of ``|M|``, ``M = (1/N) sum_i exp(2 pi i x_i / q)``, by enumeration (``q^N <= 2^20``).

        Returns ``(values, p)``: the distinct values of ``|M|`` (ascending,
        rounded to 12 decimals) and their probabilities.
        """
        states, probs = self.enumerate_states()
        m = np.abs(np.mean(np.exp(2j * np.pi * states / self.q), axis=(1, 2)))
        values, index = np.unique(np.round(m, 12), return_inverse=True)
        return values, np.bincount(index, weights=probs, minlength=values.size)

    def _states_from_digits(self, digits):
        return digits.astype(np.int32)

    def _numpy_energy(self, states):
        return lattice_exact.potts_energy(states, self.J)

    def describe(self) -> dict:
        return {**super().describe(), "J": self.J, "q": self.q}

    def with_beta(self, beta: float) -> "Potts":
        """The same model at another inverse temperature."""
        return Potts(self.lattice_shape, beta, self.q, self.J)


class UniformLattice(Target):
    """The uniform distribution over the states of a lattice model: ``log_prob = 0``, ``log Z = N log k``."""

    def __init__(self, model: LatticeModel):
        self.model = model
        self.name = f"uniform_{model.name}"
        self.event_shape = model.event_shape
        self.domain = model.domain
        self.log_Z = model.log_Z0

    def _log_prob(self, x):
        return jnp.zeros((), _float_dtype(x))

    def sample(self, key: jax.Array, n: int) -> jax.Array:
        """``n`` uniform states: float32 spins ``+-1`` (Ising) or int32 categories (Potts)."""
        shape = (n, *self.event_shape)
        if self.domain.kind == "spin":
            return jax.random.rademacher(key, shape, dtype=jnp.float32)
        return jax.random.randint(key, shape, 0, self.domain.num_categories, dtype=jnp.int32)


class LatticePath(AnnealingPath):
    """The linear-in-beta path of LEAPS: ``U_t = t beta H``, ``pi_t ∝ exp(t log p)``, uniform at t = 0.

    Holderrieth, Albergo & Jaakkola (2025), "LEAPS", ICML: ``rho_t ∝ exp(-U_t)``
    with ``U_t(x) = beta(t) H(x)`` interpolated linearly from 0 to ``beta``.

    Attributes
    ----------
    target : LatticeModel
        Ising, Potts or a :func:`~jaxsamp.targets.lattice_energy` of your own.
    name : str
        The target's (what ``jaxsamp.fit`` reports the path by).
    base : UniformLattice
    log_Z0 : float
        ``N log 2`` (spins) or ``N log q`` (categories).
    """

    def __init__(self, target: LatticeModel):
        if not isinstance(target, LatticeModel):
            raise TypeError(f"LatticePath needs an Ising or Potts target or a lattice_energy, got {type(target).__name__}")
        self.target, self.name = target, target.name
        self.base = UniformLattice(target)
        self.log_Z0 = target.log_Z0

    def log_prob(self, x, t):
        """``t * target.log_prob(x)``."""
        return t * self.target.log_prob(x)

    def dlog_prob_dt(self, x, t):
        """``target.log_prob(x)`` (the path is linear in t)."""
        return self.target.log_prob(x)

    def flip_log_ratios(self, x, t):
        """``t * target.flip_log_ratios(x)``: the single-site log-ratios of ``pi_t``."""
        return t * self.target.flip_log_ratios(x)

    def site_log_ratios(self, x, t, site):
        """``t * target.site_log_ratios(x, site)``: one site's entry of :meth:`flip_log_ratios`."""
        return t * self.target.site_log_ratios(x, site)

    def sample_base(self, key: jax.Array, n: int) -> jax.Array:
        """``n`` exact samples of the uniform base ``pi_0``."""
        return self.base.sample(key, n)

    def exact_log_Z(self, t: float) -> float:
        """Exact ``log Z_t`` of ``pi_t`` (the target at inverse temperature ``t beta``)."""
        return self.target.with_beta(float(t) * self.target.beta).exact_log_Z()


@TARGETS.register("ising")
def ising(L: int | list, beta: NonNegativeFloat, J: FiniteFloat = 1.0, h: FiniteFloat = 0.0) -> Ising:
    """Ising model on an L x L (or [Lx, Ly]) torus; exact log Z (Kaufman / transfer matrix), P(m) for small L."""
    return Ising(L, beta, J, h)


@TARGETS.register("potts")
def potts(L: int | list, beta: NonNegativeFloat, q: Annotated[int, Interval(ge=2)] = 3, J: FiniteFloat = 1.0) -> Potts:
    """q-state Potts model on an L x L (or [Lx, Ly]) torus; exact log Z by transfer matrix for small L."""
    return Potts(L, beta, q, J)
