"""A lattice model of your own: any energy of spins or categorical sites on a periodic 2-D lattice.

:func:`lattice_energy` turns a plain function ``energy(config) -> scalar`` of one
configuration of shape ``(Lx, Ly)`` -- spins ``+-1`` (``num_states = 2``) or
categories ``0..q-1`` (``num_states = q >= 3``) -- into a
:class:`~jaxsamp.targets.lattice.LatticeModel` with ``p(x) ∝ exp(-beta E(x))``:
the same contract as the built-in Ising and Potts models, so LEAPS
(``jaxsamp.fit("leaps", target)``; Holderrieth, Albergo & Jaakkola 2025, ICML),
the single-site Metropolis and Glauber kernels (:mod:`jaxsamp.mcmc.discrete`) and
annealed importance sampling along :class:`~jaxsamp.targets.lattice.LatticePath`
all take it.

What those need beyond ``log_prob`` is the log-probability change of every
single-site move (LEAPS' ``ΔU`` of its Sec. 3; the proposals of a Glauber
update)::

    spins:       flip_log_ratios(x)[i]    = -beta (E(flip_i x) - E(x))
    categories:  flip_log_ratios(x)[i, c] = -beta (E(x^{i<-c}) - E(x))   (0 at c = x_i)

By default they are computed exactly from the energy itself, one energy
evaluation per move (``N`` or ``N q``, vectorised with ``jax.vmap`` over the
sites): generic, and ``O(N)`` times the cost of an energy that is local. A
``local_energy_difference(x)`` function giving the same array of energy
differences from each site's neighbourhood replaces it (what
:meth:`~jaxsamp.targets.lattice.Ising.flip_log_ratios` does in closed form); it
is checked once against the generic one when the target is made.

``log Z`` is exact by enumeration of all ``k^N`` states on a tiny lattice.
"""

from __future__ import annotations

from typing import Callable

import chex
import jax
import jax.numpy as jnp
import numpy as np
from scipy.special import logsumexp

from jaxsamp.core.errors import InputError
from jaxsamp.core.target import SPIN, categorical
from jaxsamp.targets import lattice_exact
from jaxsamp.targets.lattice import LatticeModel, UniformLattice, _check_beta, _float_dtype, lattice_shape

#: ``log_Z`` is filled on access up to this many states (then ``exact_log_Z()`` enumerates up to 2^20)
_CHEAP_ENUMERATION = 2**16
#: states per compiled batch when the energy of every state is computed
_ENUMERATION_BATCH = 2**14
#: random configurations at which ``lattice_energy`` checks that the energy is finite
_CHECKED_CONFIGURATIONS = 8


def single_site_energy_differences(energy: Callable, x: jax.Array, num_states: int) -> jax.Array:
    """``E(y) - E(x)`` for every single-site neighbour ``y`` of ONE configuration ``x``, from ``energy`` alone.

    Exact and generic: one energy evaluation per move, vectorised with
    ``jax.vmap`` over the sites (and the categories).

    Parameters
    ----------
    energy : callable
        ``energy(config) -> scalar`` of one configuration of ``x``'s shape and dtype.
    x : array ``(Lx, Ly)``
        Spins ``+-1`` (``num_states = 2``) or integer categories ``0..q-1``.
    num_states : int
        2 for spins, ``q`` for categories.

    Returns
    -------
    array
        Shape ``(Lx, Ly)`` for spins (the flip of each site), ``(Lx, Ly, q)`` for
        categories (site ``i`` set to ``c``; zero where ``c = x_i``).
    """
    flat = x.reshape(-1)
    sites = jnp.arange(flat.shape[0])
    e0 = energy(x)
    if num_states == 2:
        flipped = jax.vmap(lambda i: energy(jnp.where(sites == i, -flat, flat).reshape(x.shape)))(sites)
        return (flipped - e0).reshape(x.shape)
    categories = jnp.arange(num_states, dtype=flat.dtype)
    moved = jax.vmap(lambda i: jax.vmap(lambda c: energy(jnp.where(sites == i, c, flat).reshape(x.shape)))(categories))
    own = jax.nn.one_hot(flat, num_states, dtype=bool)
    return jnp.where(own, 0.0, moved(sites) - e0).reshape(*x.shape, num_states)


class LatticeEnergy(LatticeModel):
    """``p(x) ∝ exp(-beta E(x))`` for an energy ``E`` of your own on a periodic ``Lx x Ly`` lattice.

    Made by :func:`lattice_energy`, which checks the functions; construct it
    directly only with functions already checked (as :meth:`with_beta` does).

    Attributes
    ----------
    energy_fn, local_energy_difference : callable, callable or None
        The user's functions (see :func:`lattice_energy`).
    num_states_per_site : int
        2 (spins ``+-1``) or ``q`` (categories).
    nearest_neighbour : bool
        False: the energy may couple any sites, so the checkerboard kernel (which
        needs nearest-neighbour couplings) refuses it.
    """

    nearest_neighbour = False

    def __init__(self, energy: Callable, L, num_states: int = 2, *, beta: float = 1.0,
                 local_energy_difference: Callable | None = None, name: str | None = None):
        super().__init__(L, beta)
        self.energy_fn, self.local_energy_difference = energy, local_energy_difference
        self.num_states_per_site = int(num_states)
        self.domain = SPIN if self.num_states_per_site == 2 else categorical(self.num_states_per_site)
        self.name = name or getattr(energy, "__name__", "energy")

    def _state(self, x: jax.Array, what: str) -> jax.Array:
        """``x`` checked for shape and as the energy takes it: float spins, int32 categories."""
        self._check(x, what)
        if self.domain.kind == "spin":
            return x.astype(_float_dtype(x))
        chex.assert_type(x, int, custom_message=f"{self.name}.{what} takes integer categories")
        return x.astype(jnp.int32)

    def energy(self, x: jax.Array) -> jax.Array:
        """``E(x)`` of ONE configuration (float spins or int32 categories are what the function sees)."""
        return jnp.asarray(self.energy_fn(self._state(x, "energy")), jnp.result_type(float))

    def energy_differences(self, x: jax.Array) -> jax.Array:
        """``E(y) - E(x)`` of every single-site move: the local function's, else :func:`single_site_energy_differences`."""
        s = self._state(x, "energy_differences")
        if self.local_energy_difference is not None:
            return jnp.asarray(self.local_energy_difference(s), jnp.result_type(float))
        return single_site_energy_differences(self.energy, s, self.num_states_per_site)

    def flip_log_ratios(self, x: jax.Array) -> jax.Array:
        """``log p(y) - log p(x) = -beta (E(y) - E(x))`` for every single-site move ``y``, shape ``(Lx, Ly)`` or
        ``(Lx, Ly, q)`` (zero at ``c = x_i``)."""
        d = self.energy_differences(x)
        return -jnp.asarray(self.beta, d.dtype) * d

    def site_log_ratios(self, x: jax.Array, site) -> jax.Array:
        """Entry ``site`` (a flat index, int scalar) of :meth:`flip_log_ratios`, shape ``()`` or ``(q,)``.

        From the local function when there is one; else from ``1`` (spins) or
        ``q`` (categories) energy evaluations of the moved configurations, not ``N``.
        Equal to that entry up to float round-off.
        """
        s = self._state(x, "site_log_ratios")
        beta = jnp.asarray(self.beta, jnp.result_type(float))
        if self.local_energy_difference is not None:
            rows = jnp.asarray(self.local_energy_difference(s), beta.dtype)
            return -beta * rows.reshape(self.num_sites, *rows.shape[2:])[site]
        flat = s.reshape(-1)
        sites = jnp.arange(self.num_sites)
        e0 = self.energy(s)
        if self.domain.kind == "spin":
            return -beta * (self.energy(jnp.where(sites == site, -flat, flat).reshape(s.shape)) - e0)
        categories = jnp.arange(self.num_states_per_site, dtype=flat.dtype)
        moved = jax.vmap(lambda c: self.energy(jnp.where(sites == site, c, flat).reshape(s.shape)))(categories)
        return -beta * jnp.where(categories == flat[site], 0.0, moved - e0)

    # -- exact references: enumeration ---------------------------------------------
    def exact_log_Z(self) -> float:
        """Exact ``log Z`` in float64 by enumeration of all ``k^N`` states (at most 2^20).

        Raises ``ExactReferenceUnavailable`` (a ValueError) beyond that.
        """
        states = self._states_from_digits(lattice_exact.all_states(self.lattice_shape, self.num_states_per_site))
        return float(logsumexp(-self.beta * self._numpy_energy(states)))

    def _log_Z_is_cheap(self) -> bool:
        return self.num_states_per_site**self.num_sites <= _CHEAP_ENUMERATION

    def _states_from_digits(self, digits):
        return (2.0 * digits - 1.0).astype(np.float32) if self.domain.kind == "spin" else digits.astype(np.int32)

    def _numpy_energy(self, states):
        """The energy of a batch of states, compiled once, in float64 (from the function's own precision)."""
        energies = jax.jit(jax.vmap(self.energy))
        return np.concatenate([np.asarray(energies(jnp.asarray(states[i:i + _ENUMERATION_BATCH])), np.float64)
                               for i in range(0, len(states), _ENUMERATION_BATCH)])

    def describe(self) -> dict:
        return {**super().describe(), "num_states": self.num_states_per_site,
                "local_energy_difference": self.local_energy_difference is not None}

    def with_beta(self, beta: float) -> "LatticeEnergy":
        """The same energy at another inverse temperature (the functions are not checked again)."""
        return LatticeEnergy(self.energy_fn, self.lattice_shape, self.num_states_per_site, beta=beta,
                             local_energy_difference=self.local_energy_difference, name=self.name)


def lattice_energy(energy: Callable, shape, num_states: int = 2, *, beta: float = 1.0,
                   local_energy_difference: Callable | None = None, name: str | None = None) -> LatticeEnergy:
    """A lattice target ``p(x) ∝ exp(-beta E(x))`` from your own energy function, checked once.

    Parameters
    ----------
    energy : callable
        ``energy(config) -> scalar``: the energy of ONE configuration of shape
        ``shape``, written with ``jax.numpy`` (it is traced, vmapped and
        differenced). It receives float spins ``+-1`` when ``num_states = 2`` and
        int32 categories ``0..q-1`` otherwise.
    shape : int or (int, int)
        The lattice ``(Lx, Ly)`` (an int: square), each side ``>= 2``.
    num_states : int
        2 for spins ``+-1``; ``q >= 3`` for categorical sites ``0..q-1``. (A
        ``{0, 1}`` model is a spin model in ``s = 2 x - 1``.)
    beta : float
        Inverse temperature multiplying the energy, ``>= 0`` (default 1: the
        energy is ``-log p`` up to a constant).
    local_energy_difference : callable, optional
        ``local_energy_difference(config) -> ΔE``: ``E(y) - E(x)`` of every
        single-site move at once, shape ``shape`` (spins: flip site ``i``) or
        ``shape + (q,)`` (categories: site ``i`` set to ``c``, zero at
        ``c = x_i``). Faster than the default, which evaluates the energy once
        per move (:func:`single_site_energy_differences`).
    name : str, optional
        Default: the energy function's name.

    Returns
    -------
    LatticeEnergy
        ``log_prob``, ``energy``, ``flip_log_ratios``, ``site_log_ratios``;
        ``log_Z`` by enumeration on a tiny lattice (up to ``2^16`` states on
        access, ``exact_log_Z()`` and ``enumerate_states()`` up to ``2^20``).

    Raises
    ------
    InputError
        One line naming the culprit: a parameter out of range; an ``energy`` that
        cannot be called on one configuration, does not return one real scalar,
        or is not finite at a random configuration (8 are tried); a
        ``local_energy_difference`` of the wrong shape, or one that disagrees
        with the energy's own differences at a random configuration (relative
        and absolute tolerance ``1e-4`` times the energy's scale).
    """
    for what, fn in (("energy", energy), ("local_energy_difference", local_energy_difference)):
        if fn is not None and not callable(fn):
            raise InputError(f"{what} must be a function of one configuration, got {type(fn).__name__}")
    if energy is None:
        raise InputError("energy must be a function of one configuration, got None")
    side = lattice_shape(shape)
    if isinstance(num_states, bool) or not isinstance(num_states, (int, np.integer)) or num_states < 2:
        raise InputError(f"num_states must be an int >= 2 (2: spins +-1, q: categories 0..q-1), got {num_states!r}")
    target = LatticeEnergy(energy, side, int(num_states), beta=_check_beta(beta),
                           local_energy_difference=local_energy_difference, name=name)
    _check_functions(target)
    return target


def _check_functions(target: LatticeEnergy) -> None:
    """The checks of :func:`lattice_energy`: the output's shape and dtype, finite energies, the local differences."""
    spins = target.domain.kind == "spin"
    example = jax.ShapeDtypeStruct(target.event_shape, jnp.float32 if spins else jnp.int32)
    values = "float spins +-1" if spins else f"int32 categories 0..{target.num_states_per_site - 1}"

    def output(fn, what):
        try:
            return jax.eval_shape(fn, example)
        except Exception as err:  # the user's function: any failure to trace is reported in one line
            raise InputError(f"{what} cannot be called on one configuration of shape {target.event_shape} ({values}): "
                             f"{type(err).__name__}: {' '.join(str(err).split())}",
                             "it takes ONE configuration (batch with jax.vmap outside it)") from None

    out = output(target.energy_fn, f"energy {getattr(target.energy_fn, '__name__', '')}".strip())
    dtype = np.dtype(getattr(out, "dtype", np.object_))
    if getattr(out, "shape", None) != () or dtype.kind not in "fiu":
        raise InputError(f"energy must return one real scalar for a configuration of shape {target.event_shape}, "
                         f"got shape {getattr(out, 'shape', type(out).__name__)} of dtype {dtype}",
                         "sum the energy over the lattice; batch with jax.vmap outside the function")
    configs = UniformLattice(target).sample(jax.random.key(0), _CHECKED_CONFIGURATIONS)
    energies = np.asarray(jax.vmap(target.energy)(configs), np.float64)
    bad = np.flatnonzero(~np.isfinite(energies))
    if bad.size:
        raise InputError(f"energy is {energies[bad[0]]} at a random configuration ({bad.size} of "
                         f"{_CHECKED_CONFIGURATIONS} tried): energies must be finite everywhere")
    if target.local_energy_difference is None:
        return
    expected = (*target.event_shape, *(() if spins else (target.num_states_per_site,)))
    got = output(target.local_energy_difference, "local_energy_difference")
    got_dtype = np.dtype(getattr(got, "dtype", np.object_))
    if getattr(got, "shape", None) != expected or got_dtype.kind not in "fiu":
        raise InputError(f"local_energy_difference must return E(y) - E(x) of every single-site move, shape "
                         f"{expected}, got shape {getattr(got, 'shape', type(got).__name__)} of dtype {got_dtype}")
    x = configs[0]
    fast = np.asarray(target.energy_differences(x), np.float64)
    exact = np.asarray(single_site_energy_differences(target.energy, target._state(x, "energy"),
                                                      target.num_states_per_site), np.float64)
    scale = 1.0 + float(np.max(np.abs(energies)))
    wrong = ~np.isclose(fast, exact, rtol=1e-4, atol=1e-4 * scale)
    if np.any(wrong):
        where = tuple(int(i) for i in np.argwhere(wrong)[0])
        move = f"site {where[:2]}" + ("" if spins else f" set to {where[2]}")
        raise InputError(f"local_energy_difference disagrees with the energy at a random configuration: at {move} it "
                         f"gives {fast[where]:.6g}, energy(moved) - energy(x) = {exact[where]:.6g} "
                         f"({int(wrong.sum())} of {wrong.size} entries differ)",
                         "it must return E(y) - E(x) of each single-site move y (spins: flip; categories: set to c)")
