"""Single-site kernels for spin and categorical lattices: Metropolis, heat bath, checkerboard.

blackjax has no discrete samplers (blackjax issue #835). These kernels move one
site at a time (random scan) or a whole colour class of a bipartite lattice at
once (checkerboard). They never evaluate the energy themselves: every update
reads the log-probability change of all single-site moves from ONE call of a
``flip_log_ratios(x)`` function, the contract of the lattice targets
(:mod:`jaxsamp.targets.lattice`):

* spins (Ising, values +-1): ``flip_log_ratios(x)`` has ``x``'s shape and entry
  ``i`` is ``log pi(flip_i x) - log pi(x)``;
* categories (Potts, values ``0..q-1``): it has shape ``x.shape + (q,)`` and entry
  ``(i, c)`` is ``log pi(x with x_i = c) - log pi(x)`` (zero at ``c = x_i``).

A random-scan update needs one site's entry only; given a
``site_log_ratios(x, site)`` function (the lattice targets' method of that name:
entry ``site`` of ``flip_log_ratios(x)``, for a flat site index) it reads that
entry from the site's neighbours, O(1) instead of O(N) per update.

Because the kernels take the function and not a target, the same code samples
any member ``pi_t`` of an annealing path (``lambda x: path.flip_log_ratios(x, t)``),
which is how AIS/SMC (:mod:`jaxsamp.smc`) and LEAPS use them.

States keep the dtype given to ``init``: Ising spins as float32 (the targets'
default) or int8 +-1, Potts categories as any integer dtype (int8 saves memory).
"""

from __future__ import annotations

from typing import Annotated, Callable, NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core.errors import InputError
from jaxsamp.core.compiled import cached_kernel
from jaxsamp.core.protocols import Kernel
from jaxsamp.core.registry import SAMPLERS
from jaxsamp.core.validation import OneOf, PositiveInt

RULES = ("metropolis", "heat_bath")


class DiscreteState(NamedTuple):
    """State of a discrete kernel: the lattice configuration ``position``."""

    position: jax.Array


class DiscreteInfo(NamedTuple):
    """What one kernel step did.

    Attributes
    ----------
    acceptance_rate : float
        Fraction of the site updates in the step that changed the site (for the
        heat bath: that drew a value different from the current one).
    num_flip_attempts : int
        Single-site updates attempted in the step.
    num_target_evals : int
        Calls of ``flip_log_ratios`` in the step (the unit of cost used for
        equal-cost comparisons, as in LEAPS' "energy evaluations").
    """

    acceptance_rate: jax.Array
    num_flip_attempts: jax.Array
    num_target_evals: jax.Array


# --------------------------------------------------------------------------
# the update rules, vectorised over any set of sites
# --------------------------------------------------------------------------


def _check_rule(rule: str) -> None:
    if rule not in RULES:
        raise InputError(f"rule must be one of {RULES}, got {rule!r}")


def propose_sites(key, x, log_ratios, rule: str, num_categories: int | None):
    """Draw new values for every site of ``x`` independently, each by a single-site rule.

    Parameters
    ----------
    key : PRNG key
    x : array
        Current values of the sites (any shape ``S``).
    log_ratios : array
        ``S`` (spins) or ``S + (q,)`` (categories): the single-site log ratios of
        those sites, as returned by ``flip_log_ratios``.
    rule : {"metropolis", "heat_bath"}
        Metropolis (Metropolis et al. 1953): spins propose the flip; categories
        propose one of the ``q - 1`` other values uniformly; accept with
        probability ``min(1, exp(r))``. Heat bath / Glauber (Glauber 1963): draw
        the site from its conditional, ``P(flip) = e^r / (1 + e^r)`` for spins and
        ``P(c) ∝ exp(r_c)`` over all ``q`` values for categories.
    num_categories : int or None
        ``q`` for categorical sites, ``None`` for +-1 spins.

    Returns
    -------
    new : array, shape ``S``, dtype of ``x``
    changed : bool array, shape ``S``

    Notes
    -----
    Each rule leaves the conditional law of one site given the others invariant,
    so applying it to a set of sites that do not interact with one another (one
    site, or one colour of a bipartite lattice) leaves ``pi`` invariant.
    """
    if num_categories is None:
        log_u = jnp.log(jax.random.uniform(key, x.shape, dtype=log_ratios.dtype))
        threshold = log_ratios if rule == "metropolis" else jax.nn.log_sigmoid(log_ratios)
        changed = log_u < threshold
        return jnp.where(changed, -x, x), changed
    q = num_categories
    current = x.astype(jnp.int32)
    if rule == "metropolis":
        key_c, key_u = jax.random.split(key)
        proposal = (current + jax.random.randint(key_c, x.shape, 1, q)) % q
        r = jnp.take_along_axis(log_ratios, proposal[..., None], axis=-1)[..., 0]
        changed = jnp.log(jax.random.uniform(key_u, x.shape, dtype=log_ratios.dtype)) < r
        new = jnp.where(changed, proposal, current)
    else:
        new = jax.random.categorical(key, log_ratios, axis=-1)
        changed = new != current
    return new.astype(x.dtype), changed


def _ratio_shape(x, num_categories):
    return x.shape if num_categories is None else (*x.shape, num_categories)


def _log_ratios(flip_log_ratios, x, num_categories):
    r = flip_log_ratios(x)
    chex.assert_shape(
        r,
        _ratio_shape(x, num_categories),
        custom_message="flip_log_ratios(x) must have shape x.shape (spins) or x.shape + (q,) (categories)",
    )
    return r


# --------------------------------------------------------------------------
# random scan
# --------------------------------------------------------------------------


def random_scan(
    flip_log_ratios: Callable[[jax.Array], jax.Array],
    rule: str = "heat_bath",
    num_categories: int | None = None,
    num_updates: int = 1,
    site_log_ratios: Callable[[jax.Array, jax.Array], jax.Array] | None = None,
) -> Kernel:
    """Random-scan single-site kernel: ``num_updates`` times, pick a site uniformly and update it.

    Parameters
    ----------
    flip_log_ratios : callable
        ``x -> log ratios`` of every single-site move (module docstring).
    rule : {"metropolis", "heat_bath"}
        The single-site rule (:func:`propose_sites`); ``heat_bath`` is Glauber dynamics.
    num_categories : int or None
        ``q`` for Potts-type states, ``None`` for +-1 spins.
    num_updates : int
        Site updates per step (``x.size`` is one sweep). Each costs one call of
        ``flip_log_ratios``, so a random scan costs O(L^2) per flip on an L x L
        lattice (:func:`checkerboard` amortises the call over half the lattice),
        unless ``site_log_ratios`` is given.
    site_log_ratios : callable, optional
        ``(x, site) -> `` entry ``site`` (a flat index) of ``flip_log_ratios(x)``:
        shape ``()`` for spins, ``(q,)`` for categories. When given, each update
        calls it instead of ``flip_log_ratios`` (O(1) per flip for a
        nearest-neighbour lattice); the chain is the same draw for draw.

    Returns
    -------
    Kernel
        ``init(x) -> DiscreteState``; ``step(key, state) -> (state, DiscreteInfo)``.
    """
    _check_rule(rule)
    if num_updates < 1:
        raise InputError(f"num_updates must be >= 1, got {num_updates}")

    def init(position, rng_key=None):
        return DiscreteState(jnp.asarray(position))

    def update(x, key):
        key_site, key_rule = jax.random.split(key)
        site = jax.random.randint(key_site, (), 0, x.size)
        if site_log_ratios is None:
            r = _log_ratios(flip_log_ratios, x, num_categories)
            r_site = r.reshape(x.size, *r.shape[x.ndim :])[site]
        else:
            r_site = site_log_ratios(x, site)
            chex.assert_shape(
                r_site,
                () if num_categories is None else (num_categories,),
                custom_message="site_log_ratios(x, site) must have shape () (spins) or (q,) (categories)",
            )
        x_flat = x.reshape(-1)
        new, changed = propose_sites(key_rule, x_flat[site], r_site, rule, num_categories)
        return x_flat.at[site].set(new).reshape(x.shape), changed

    def step(rng_key, state):
        keys = jax.random.split(rng_key, num_updates)
        x, changed = jax.lax.scan(update, state.position, keys)
        info = DiscreteInfo(
            jnp.mean(changed.astype(jnp.float32)), jnp.int32(num_updates), jnp.int32(num_updates)
        )
        return DiscreteState(x), info

    return Kernel(init, step)


def metropolis(flip_log_ratios, num_categories: int | None = None, num_updates: int = 1) -> Kernel:
    """Random-scan single-site Metropolis (:func:`random_scan` with ``rule="metropolis"``)."""
    return random_scan(flip_log_ratios, "metropolis", num_categories, num_updates)


def heat_bath(flip_log_ratios, num_categories: int | None = None, num_updates: int = 1) -> Kernel:
    """Random-scan heat bath, i.e. Glauber dynamics (:func:`random_scan` with ``rule="heat_bath"``)."""
    return random_scan(flip_log_ratios, "heat_bath", num_categories, num_updates)


# --------------------------------------------------------------------------
# checkerboard
# --------------------------------------------------------------------------


def checkerboard_colours(shape: tuple[int, ...]) -> np.ndarray:
    """A proper colouring of the periodic nearest-neighbour lattice ``shape``: neighbours never share a colour.

    With every side even it is the checkerboard, ``(sum of indices) mod 2``. An
    odd side makes the lattice non-bipartite; then each axis of length ``n`` is
    coloured as a cycle (``i mod 2``, with the last site of an odd cycle given
    colour 2) and a site's colour is the sum of its axes' colours mod 3. Two
    neighbours differ along one axis by a non-zero amount (1 or 2) mod 3, so they
    differ in colour: three colours.

    Raises
    ------
    InputError
        If a side is 1 (a site would be its own neighbour).
    """
    if any(n < 2 for n in shape):
        raise InputError(f"a checkerboard update needs every side of the periodic lattice >= 2, got {shape}")
    if not any(n % 2 for n in shape):
        return (np.indices(shape).sum(axis=0) % 2).astype(np.int8)
    axis_colours = []
    for n in shape:
        c = np.arange(n) % 2
        if n % 2:
            c[-1] = 2
        axis_colours.append(c)
    grids = np.meshgrid(*axis_colours, indexing="ij")
    return (np.sum(grids, axis=0) % 3).astype(np.int8)


def checkerboard(
    flip_log_ratios: Callable[[jax.Array], jax.Array],
    rule: str = "heat_bath",
    num_categories: int | None = None,
) -> Kernel:
    """Checkerboard kernel: update all sites of one colour in parallel, then the next colour.

    With a nearest-neighbour interaction the sites of one colour of
    :func:`checkerboard_colours` are conditionally independent given the others,
    so one parallel sweep of single-site rules over a colour leaves ``pi``
    invariant; a step does the colours in turn (one full sweep, ``x.size`` flip
    attempts) with one call of ``flip_log_ratios`` per colour: two on lattices with
    even sides, three when a side is odd.

    With the Metropolis rule the sweep can be nearly periodic at high
    temperature (at ``beta = 0`` it flips every spin every sweep), so it is
    pi-invariant but may converge slowly from a bad start; the heat-bath rule
    does not have this problem.

    Parameters
    ----------
    flip_log_ratios : callable
        ``x -> log ratios`` of every single-site move. The interaction must be
        nearest-neighbour on a periodic lattice (sides of at least 2).
    rule : {"metropolis", "heat_bath"}
    num_categories : int or None
        ``q`` for Potts-type states, ``None`` for +-1 spins.

    Returns
    -------
    Kernel
        ``init(x) -> DiscreteState``; ``step(key, state) -> (state, DiscreteInfo)``.
    """
    _check_rule(rule)

    def init(position, rng_key=None):
        position = jnp.asarray(position)
        checkerboard_colours(position.shape)
        return DiscreteState(position)

    def step(rng_key, state):
        x = state.position
        colouring = checkerboard_colours(x.shape)
        num_colours = int(colouring.max()) + 1
        colours = jnp.asarray(colouring)
        num_changed = jnp.int32(0)
        for colour in range(num_colours):
            r = _log_ratios(flip_log_ratios, x, num_categories)
            new, changed = propose_sites(jax.random.fold_in(rng_key, colour), x, r, rule, num_categories)
            mask = colours == colour
            x = jnp.where(mask, new, x)
            num_changed = num_changed + jnp.sum(changed & mask, dtype=jnp.int32)
        info = DiscreteInfo(num_changed / x.size, jnp.int32(x.size), jnp.int32(num_colours))
        return DiscreteState(x), info

    return Kernel(init, step)


# --------------------------------------------------------------------------
# registry: kernels on a lattice target
# --------------------------------------------------------------------------


def lattice_categories(target) -> int | None:
    """``None`` for a spin target, ``q`` for a categorical one (from ``target.domain``)."""
    kind = target.domain.kind
    if kind == "spin":
        return None
    if kind == "categorical":
        return target.domain.num_categories
    raise InputError(f"discrete kernels need a spin or categorical target, got domain {kind!r} of {target.name!r}")


def _sweep(target, num_updates):
    return int(np.prod(target.event_shape)) if num_updates is None else num_updates


@SAMPLERS.register("metropolis_site", metropolis=True)
def metropolis_site_sampler(target, num_updates: PositiveInt | None = None) -> Kernel:
    """Random-scan single-site Metropolis on a lattice; num_updates sites per step (default one sweep)."""
    q = lattice_categories(target)
    return cached_kernel(metropolis, target.flip_log_ratios, num_categories=q, num_updates=_sweep(target, num_updates))


@SAMPLERS.register("glauber")
def glauber_sampler(target, num_updates: PositiveInt | None = None) -> Kernel:
    """Random-scan heat bath (Glauber) on a lattice; num_updates sites per step (default one sweep)."""
    q = lattice_categories(target)
    return cached_kernel(heat_bath, target.flip_log_ratios, num_categories=q, num_updates=_sweep(target, num_updates))


@SAMPLERS.register("checkerboard")
def checkerboard_sampler(target, rule: Annotated[str, OneOf(RULES)] = "heat_bath") -> Kernel:
    """Checkerboard sweep (half the lattice in parallel) with the heat-bath or Metropolis rule (nearest-neighbour models)."""
    if getattr(target, "nearest_neighbour", True) is False:
        raise InputError(
            f"the checkerboard kernel needs nearest-neighbour couplings; {target.name!r} is an energy of your own "
            "that may couple any sites",
            "use 'glauber' or 'metropolis_site' (one site at a time)")
    q = lattice_categories(target)
    return cached_kernel(checkerboard, target.flip_log_ratios, rule=rule, num_categories=q)
