"""LEAPS: a discrete neural sampler with a learned CTMC rate matrix and Jarzynski weights.

Holderrieth, Albergo & Jaakkola (2025), "LEAPS: a discrete neural sampler via
locally equivariant networks", ICML. Walkers start from the uniform base of a
lattice annealing path ``pi_t ∝ exp(-U_t)`` (:class:`~jaxsamp.targets.lattice.LatticePath`)
and follow a continuous-time Markov chain whose rates come from a locally
equivariant network ``G(x, t)`` (:mod:`jaxsamp.nets.locally_equivariant`):

* out-rate of the single-site move ``x -> flip_i x`` (or ``x -> x^{i<-c}``): ``ReLU(G_i(x))``;
* in-rate of the reverse move: ``ReLU(-G_i(x))`` -- both from ONE forward pass at ``x``.

Along each walker the log-weight ``A`` integrates the Jarzynski / Radon-Nikodym
integrand (the Jarzynski / Radon-Nikodym estimator of LEAPS)::

    K_t(x) = -d_t U_t(x) - sum_y Q_t(y -> x) pi_t(y) / pi_t(x)
           = d_t log pi_t(x) - [ sum_i ReLU(-G_i(x)) e^{-ΔU_i(x)} - sum_i ReLU(G_i(x)) ],

so that ``E[e^{A_t} phi(X_t)] = (Z_t / Z_0) E_{pi_t}[phi]``; hence
``log Z_1 ≈ log Z_0 + log mean e^{A_1}`` and the self-normalised weights are
``softmax(A_1)``. The weights have zero variance exactly when ``Q_t`` transports
``pi_t`` (the Kolmogorov forward equation holds), which is what the PINN loss of
:mod:`jaxsamp.learned.leaps.training` learns.

Simulation (LEAPS Algorithm 1): Euler steps on a time grid ``t_0 = 0 < ... <
t_K = 1``. At step ``k`` with ``h = t_{k+1} - t_k``:

1. jump: Ising sites flip independently with probability ``clip(h ReLU(G_i), 0, 1)``
   (several flips per step); a Potts site jumps with probability
   ``1 - exp(-h sum_c ReLU(G_{c,i}))`` to a category drawn ``∝ ReLU(G_{c,i})``
   (:func:`jump_probabilities`);
2. weight. The default rule, ``weight_point="exact"``, treats the Euler step as
   a proposal kernel ``F_k(x -> x')`` (the product of the per-site probabilities
   actually used, each mixed with a uniform floor ``epsilon`` so that every move
   has positive probability) and multiplies by the standard AIS / SMC incremental
   weight (Neal 2001; Del Moral, Doucet & Jasra 2006, eq. 31)::

       w_k = pi_{t_{k+1}}(x') B_k(x' -> x) / (pi_{t_k}(x) F_k(x -> x')),

   with the backward kernel ``B_k`` the Euler step of the time-reversed chain,
   whose rates at ``x'`` are ``ReLU(-G(x', t_{k+1})) pi(y) / pi(x')`` (the in-rates
   of local equivariance times the probability ratio), floored alike. Any
   normalised ``B_k`` makes ``E[prod_k w_k] = Z_1 / Z_0`` exactly, at any number of
   steps; this one makes ``w_k -> 1`` when the chain transports ``pi_t``. ``B_k``
   needs ``G`` at ``(x', t_{k+1})``, which the next step computes anyway (one
   network pass per step, plus one at the end; with a correction kernel, ``x'``
   is not the next step's state and the pass is made at once). The labelled
   quadrature rules of the continuous-time integrand are kept as options:
   ``"pre"`` (``A += h K_{t_k}(X_k)``, the state before the jump), ``"post"`` (the
   state after the jump, at the same time, as the reference code does for Ising)
   and ``"trapezoid"`` (both ends of the step); they are biased at finite ``h``
   in opposite directions (and run the jumps without the floor);
3. optionally an MCMC correction kernel leaving ``pi_{t_{k+1}}`` invariant
   (:func:`metropolis_correction`), which does not change ``A``;
4. optionally resampling when the ESS of ``A`` drops below a threshold; all
   walkers then carry ``log mean e^A``, so ``log Z`` stays estimated.

With ``G ≡ 0`` and a correction kernel the ``pre`` rule is exactly annealed
importance sampling (Neal 2001) on the same path, and the ``exact`` rule AIS with
a floor-sized random-flip proposal before each kernel; with ``G ≡ 0`` and no
kernel, ``pre`` is importance sampling from the uniform base.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import blackjax.smc.resampling as resampling
import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core.errors import InputError
from jaxsamp.core.protocols import WeightedSamples
from jaxsamp.mcmc import discrete

RateFn = Callable[[jax.Array, jax.Array], jax.Array]
Correction = Callable[[jax.Array, jax.Array, jax.Array], jax.Array]
WEIGHT_POINTS = ("exact", "pre", "post", "trapezoid")
QUADRATURE_POINTS = ("pre", "post")  # the quadratures the exact rule can carry on its own draws (``quadrature=``)
JUMP_FLOOR = 1e-4  # the exact rule's per-site floor on every move's probability
MAX_LOG_RATIO = 50.0  # backward rates use pi(y) / pi(x') capped at e^50 (the step probability is clipped at 1)

_lse = jax.scipy.special.logsumexp


# --------------------------------------------------------------------------
# rates and the Jarzynski integrand (one state)
# --------------------------------------------------------------------------


def rates(G: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(out_rates, in_rates) = (ReLU(G), ReLU(-G))`` of a locally equivariant ``G``.

    ``out_rates[i]`` is the rate of leaving ``x`` by the move at ``i`` (and
    category ``c`` for Potts); ``in_rates[i]`` the rate of the reverse move into
    ``x``, which local equivariance gives from the same forward pass.
    """
    return jax.nn.relu(G), jax.nn.relu(-G)


def jarzynski_integrand(G: jax.Array, log_ratios: jax.Array, dlog_prob_dt: jax.Array, rate_scale=1.0,
                        rate_floor=0.0) -> jax.Array:
    """The Jarzynski integrand ``K_t(x)`` of LEAPS for ONE state.

    Parameters
    ----------
    G : array
        Network output at ``(x, t)``: shape ``(Lx, Ly)`` (spins) or ``(Lx, Ly, q)``.
    log_ratios : array, shape of ``G``
        ``log pi_t(y) - log pi_t(x)`` for every single-site neighbour ``y``
        (``-ΔU``; the path's ``flip_log_ratios(x, t)``).
    dlog_prob_dt : scalar
        ``d/dt log pi_t(x) = -d_t U_t(x)``.
    rate_scale, rate_floor : float
        The chain's move rates are ``rate_scale ReLU(±G) + rate_floor`` (default:
        ``ReLU(±G)``, the network's). A step of length ``h`` whose site laws are
        floored by ``f`` (:func:`jump_probabilities`) moves at the rates
        ``(1 - q f) ReLU(±G) + f / h`` (to first order in ``h``), so that is the
        integrand of the chain the exact rule simulates. (For Potts the own
        category's entry, ``G = 0`` there, adds ``rate_floor (1 - 1) = 0``.)

    Returns
    -------
    scalar
        ``dlog_prob_dt - [sum in_rates exp(log_ratios) - sum out_rates]``.
    """
    chex.assert_equal_shape([G, log_ratios])
    out_rates, in_rates = rates(G)
    out_rates = rate_scale * out_rates + rate_floor
    in_rates = rate_scale * in_rates + rate_floor
    return dlog_prob_dt - (jnp.sum(in_rates * jnp.exp(log_ratios)) - jnp.sum(out_rates))


def jump_probabilities(x: jax.Array, rates: jax.Array, h, floor=0.0) -> jax.Array:
    """Per-site probabilities of one Euler step over a time ``h`` with the given move rates, for ONE state.

    Spins (``rates.shape == x.shape``): the flip probability of each site,
    ``clip(h rate_i, 0, 1)``. Categories (``rates.shape == x.shape + (q,)``): the
    law of each site's new category, staying with ``exp(-h sum_c rate_{c,i})`` and
    moving to ``c`` with the rest in proportion to ``rate_{c,i}`` (the own
    category's rate is ignored). With ``floor > 0`` every outcome of a site gets at
    least ``floor``: the law is mixed with the uniform one, ``(1 - q floor) p + floor``
    (``q = 2`` for spins).
    """
    if rates.shape == x.shape:
        return (1.0 - 2.0 * floor) * jnp.clip(h * rates, 0.0, 1.0) + floor
    q = rates.shape[-1]
    own = jax.nn.one_hot(x, q, dtype=rates.dtype)
    rates = rates * (1.0 - own)
    total = jnp.sum(rates, axis=-1, keepdims=True)
    leave = -jnp.expm1(-h * total)
    moving = jnp.where(total > 0, leave * rates / jnp.where(total > 0, total, 1.0), 0.0)
    return (1.0 - q * floor) * (moving + own * (1.0 - leave)) + floor


def draw_jump(key: jax.Array, x: jax.Array, probs: jax.Array) -> jax.Array:
    """The next state of ONE state ``x`` given its :func:`jump_probabilities`."""
    if probs.shape == x.shape:
        return jnp.where(jax.random.uniform(key, x.shape) < probs, -x, x)
    return jax.random.categorical(key, jnp.log(probs), axis=-1).astype(x.dtype)


def log_jump_probability(x: jax.Array, y: jax.Array, probs: jax.Array) -> jax.Array:
    """``log`` of the probability that the step with per-site ``probs`` (at ``x``) lands on ``y``."""
    if probs.shape == x.shape:
        return jnp.sum(jnp.where(y != x, jnp.log(probs), jnp.log1p(-probs)))
    return jnp.sum(jnp.log(jnp.take_along_axis(probs, y[..., None].astype(jnp.int32), axis=-1)))


def euler_jump(key: jax.Array, x: jax.Array, G: jax.Array, h: jax.Array, floor=0.0) -> jax.Array:
    """One Euler step of the CTMC with out-rates ``ReLU(G)`` over a time ``h``, for ONE state.

    Spins (``G.shape == x.shape``): every site flips independently with
    probability ``clip(h ReLU(G_i), 0, 1)``. Categories (``G.shape == x.shape +
    (q,)``): site ``i`` jumps with probability ``1 - exp(-h sum_c ReLU(G_{c,i}))``
    to ``c`` drawn with probability ``∝ ReLU(G_{c,i})``. ``floor``: see
    :func:`jump_probabilities`.
    """
    return draw_jump(key, x, jump_probabilities(x, jax.nn.relu(G), h, floor))


def backward_rates(G: jax.Array, log_ratios: jax.Array) -> jax.Array:
    """Rates of the time-reversed chain at ``x``: ``ReLU(-G(x)) pi(y) / pi(x)`` for every neighbour ``y``.

    ``ReLU(-G_i(x))`` is the rate of the move ``y -> x`` (local equivariance), so
    this is the reversal ``Q(y -> x) pi(y) / pi(x)`` of the forward chain.
    """
    return jax.nn.relu(-G) * jnp.exp(jnp.minimum(log_ratios, MAX_LOG_RATIO))


def restrict_to_sites(x: jax.Array, probs: jax.Array, mask: jax.Array | None) -> jax.Array:
    """The site laws ``probs`` of ONE state with the sites outside ``mask`` held still (``mask=None``: unchanged).

    A held spin flips with probability 0; a held category stays with probability 1
    (the checkerboard sub-steps of :func:`simulate` move one colour class each).
    """
    if mask is None:
        return probs
    if probs.shape == x.shape:
        return jnp.where(mask, probs, 0.0)
    return jnp.where(mask[..., None], probs, jax.nn.one_hot(x, probs.shape[-1], dtype=probs.dtype))


def log_backward_probability(path, x_from: jax.Array, x_to: jax.Array, G_from: jax.Array, t_from, h, floor=0.0,
                             mask: jax.Array | None = None) -> jax.Array:
    """``log B(x_from -> x_to)`` for ONE state: an Euler step of the time-reversed chain over a time ``h``.

    The backward kernel of the exact weights (module docstring): rates
    :func:`backward_rates` from ``G`` at ``(x_from, t_from)`` and the target's
    single-site ratios at ``t_from``, site laws :func:`jump_probabilities` with
    ``floor``, the sites outside ``mask`` held still (:func:`restrict_to_sites`).
    """
    probs = jump_probabilities(x_from, backward_rates(G_from, path.flip_log_ratios(x_from, t_from)), h, floor)
    return log_jump_probability(x_from, x_to, restrict_to_sites(x_from, probs, mask))


def exact_step(key: jax.Array, rate_fn: RateFn, path, x: jax.Array, t, t_next, h, floor,
               mask: jax.Array | None = None) -> tuple[jax.Array, jax.Array]:
    """One Euler step of ONE walker from ``t`` to ``t_next`` with its exact incremental log weight.

    The step of the exact rule (module docstring; LEAPS Algorithm 1's jump with the
    AIS / SMC weight of Del Moral, Doucet & Jasra 2006, eq. 31): ``x' ~ F(x -> .)``,
    the floored site laws of the rates ``ReLU(G(x, t))`` over the jump time ``h``,
    and::

        log w = log pi_{t'}(x') + log B(x' -> x) - log pi_t(x) - log F(x -> x'),

    with ``B`` the reversed chain's step at ``(x', t')`` (:func:`log_backward_probability`;
    two network passes, at ``(x, t)`` and ``(x', t')``). ``mask``: only those sites
    move, in both kernels (a checkerboard sub-step). Over a grid the increments sum
    to :func:`simulate`'s exact log-weight, which computes the same terms with one
    pass per step by deferring each ``B`` to the next step's pass.

    Returns
    -------
    x_next : array, the shape of ``x``
    log_increment : scalar
    """
    probs = restrict_to_sites(x, jump_probabilities(x, jax.nn.relu(rate_fn(x, t)), h, floor), mask)
    x_next = draw_jump(key, x, probs)
    log_backward = log_backward_probability(path, x_next, x, rate_fn(x_next, t_next), t_next, h, floor, mask)
    log_increment = (path.log_prob(x_next, t_next) - path.log_prob(x, t) - log_jump_probability(x, x_next, probs)
                     + log_backward)
    return x_next, log_increment


# --------------------------------------------------------------------------
# time grids
# --------------------------------------------------------------------------


def uniform_grid(num_steps: int) -> jax.Array:
    """``t_k = k / num_steps``, ``k = 0..num_steps`` (LEAPS' Ising evaluation grid)."""
    return jnp.linspace(0.0, 1.0, num_steps + 1)


def cubic_exponential_grid(num_steps: int, rate: float = 5.0) -> jax.Array:
    """``t(s) = [(1 - e^{-rate s}) / (1 - e^{-rate})]^3`` on ``s = k / num_steps`` (LEAPS' Potts grid)."""
    s = jnp.linspace(0.0, 1.0, num_steps + 1)
    return (jnp.expm1(-rate * s) / np.expm1(-rate)) ** 3


TIME_GRIDS = {"uniform": uniform_grid, "cubic_exponential": cubic_exponential_grid}


# --------------------------------------------------------------------------
# MCMC correction
# --------------------------------------------------------------------------


def metropolis_correction(path, num_updates: int, rule: str = "metropolis") -> Correction:
    """A random-scan single-site kernel at ``pi_t`` (``jaxsamp.mcmc.discrete``) as a LEAPS correction.

    Returns ``correction(key, x, t) -> x`` for a batch ``x`` of walkers: each
    walker makes ``num_updates`` single-site updates (its own random sites)
    leaving ``pi_t`` invariant. LEAPS' training rollouts use 200 (Ising) and 1000
    (Potts) Metropolis updates per step.
    """
    num_categories = discrete.lattice_categories(path.target)
    local = getattr(path, "site_log_ratios", None)  # one site's ratios from its neighbours: O(1) per update

    def correction(key, x, t):
        kernel = discrete.random_scan(
            lambda y: path.flip_log_ratios(y, t), rule, num_categories, num_updates,
            site_log_ratios=None if local is None else lambda y, site: local(y, t, site),
        )
        keys = jax.random.split(key, x.shape[0])
        state, _ = jax.vmap(kernel.step)(keys, discrete.DiscreteState(x))
        return state.position

    return correction


# --------------------------------------------------------------------------
# simulation
# --------------------------------------------------------------------------


class Rollout(NamedTuple):
    """The result of :func:`simulate`.

    Attributes
    ----------
    x : array ``(M, *event_shape)``
        Final walker states.
    log_w : array (M,)
        Accumulated log-weights ``A`` (after any resampling, each walker carries
        ``log mean e^A`` of the moment it was resampled).
    num_resampled : int32
        How many times the walkers were resampled.
    trajectory : array ``(K + 1, M, *event_shape)`` or None
        States at ``t_0 .. t_K`` when ``record=True``.
    log_w_quadrature : array (M,) or None
        With ``quadrature=`` (exact rule only): the Jarzynski quadrature's
        log-weights of the SAME walkers and jumps as ``log_w``.
    """

    x: jax.Array
    log_w: jax.Array
    num_resampled: jax.Array
    trajectory: jax.Array | None
    log_w_quadrature: jax.Array | None = None


def simulate(
    key: jax.Array,
    rate_fn: RateFn,
    path,
    x0: jax.Array,
    ts: jax.Array,
    *,
    weight_point: str = "exact",
    correction: Correction | None = None,
    resample_threshold: float | None = None,
    num_active: jax.Array | int | None = None,
    record: bool = False,
    jump_floor: float = JUMP_FLOOR,
    jump_floor_rate: float | None = None,
    quadrature: str | None = None,
    checkerboard: bool = False,
) -> Rollout:
    """Run the LEAPS CTMC with importance weights from ``x0`` along the time grid ``ts``.

    Parameters
    ----------
    key : PRNG key
    rate_fn : callable
        ``rate_fn(x, t) -> G`` for ONE state (a locally equivariant network).
    path : LatticePath
        Gives ``log_prob(x, t)``, ``flip_log_ratios(x, t)`` and ``dlog_prob_dt(x, t)`` for one state.
    x0 : array ``(M, *event_shape)``
        Initial walkers, samples of ``pi_0`` (uniform).
    ts : array (K + 1,)
        Non-decreasing time grid with ``ts[0] = 0``.
    weight_point : {"exact", "pre", "post", "trapezoid"}
        ``exact`` (default): the discrete-time AIS / SMC weight of each Euler step
        (module docstring), unbiased for ``Z_1 / Z_0`` at any number of steps.
        ``pre``: ``A += h K_{t_k}(X_k)``, the state before the jump.
        ``post``: ``A += h K_{t_k}(X')`` at the state ``X'`` after the jump (the
        reference code's Ising convention; one more network pass per step).
        ``trapezoid``: ``A += h/2 [K_{t_k}(X_k) + K_{t_{k+1}}(X_{k+1})]``, which
        re-uses each step's forward pass (one extra pass at the end).
    correction : callable, optional
        ``correction(key, x, t) -> x`` leaving ``pi_t`` invariant, applied after
        every jump at ``t = t_{k+1}`` (:func:`metropolis_correction`); it leaves
        the weights unchanged.
    resample_threshold : float, optional
        Resample (systematic) whenever the normalised ESS of ``A`` falls below it.
    num_active : int, optional
        Only steps ``k < num_active`` run; later ones are skipped (the curriculum
        pads its grids to a fixed length). Default: all ``K`` steps.
    record : bool
        Also return the states at every grid point.
    jump_floor : float
        The ``exact`` rule's floor on each site's move probabilities, in
        ``(0, 1 / q)`` (the other rules jump without one). It applies at every
        step, so the expected number of floor-made moves per path grows with the
        number of steps.
    jump_floor_rate : float, optional
        A floor per unit time instead of ``jump_floor``: a step of length ``h``
        gets the floor ``jump_floor_rate * h``, so the expected number of
        floor-made moves per site and path is ``jump_floor_rate`` at any number
        of steps. In ``(0, 1 / q)``; the grid lies in ``[0, 1]``, so every step's
        floor does too. The weights stay unbiased either way.
    quadrature : {"pre", "post"}, optional
        With the exact rule only, and without resampling: also accumulate LEAPS'
        Jarzynski quadrature on the SAME walkers and jumps
        (``Rollout.log_w_quadrature``): ``A_q += h K_{t_k}(X_k)`` (``pre``, the
        reference code's Potts convention; no extra network pass) or
        ``h K_{t_k}(X')`` at the state after the jump (``post``, its Ising
        convention; one more pass per step). ``K`` is the integrand of the chain
        actually simulated, whose rates include the floor
        (:func:`jarzynski_integrand` with ``rate_scale = 1 - q f``,
        ``rate_floor = f / h``); with the floor at 0 it is the paper's. Biased at
        finite ``h``, unlike ``log_w``: the pair shows the paper's figure beside
        the unbiased one.
    checkerboard : bool
        With the exact rule only (no ``quadrature``, no ``correction``): split
        every Euler step into one sub-step per colour class of
        :func:`jaxsamp.mcmc.discrete.checkerboard_colours` (2 on even sides, 3
        when a side is odd), so that no step moves two interacting sites. Sub-step
        ``c`` of step ``k`` moves only the sites of colour ``c``, each with the
        probabilities of the full step ``h`` (and its floor), from the rates at
        its own state and at the time ``t_k + c h / C``; it is an exact AIS move
        from ``pi_{t_k + c h / C}`` to ``pi_{t_k + (c + 1) h / C}`` with its own
        reverse kernel (the same colour, rates at the state it lands in), so the
        weights stay unbiased. The target ratio of the moved sites then factorises
        site by site as the reverse kernel assumes; the network's rates still see
        the other moved sites. ``C`` network passes per step instead of one;
        ``record`` returns the ``K C + 1`` sub-step states.

    Returns
    -------
    Rollout
    """
    if weight_point not in WEIGHT_POINTS:
        raise InputError(f"weight_point must be one of {WEIGHT_POINTS}, got {weight_point!r}")
    chex.assert_rank(ts, 1)
    num_walkers = x0.shape[0]
    num_steps = ts.shape[0] - 1
    active = num_steps if num_active is None else num_active
    batch_g = jax.vmap(rate_fn, in_axes=(0, None))
    exact = weight_point == "exact"
    deferred = exact and correction is None  # B_k from the next step's forward pass at x' = X_{k+1}
    if quadrature is not None:
        if quadrature not in QUADRATURE_POINTS:
            raise InputError(f"quadrature must be one of {QUADRATURE_POINTS} or None, got {quadrature!r}")
        if not exact:
            raise InputError(f"quadrature= rides on the exact rule's draws: needs weight_point='exact', got {weight_point!r}")
        if resample_threshold is not None:
            raise InputError("quadrature= cannot be combined with resample_threshold (resampling follows one weight only)")
    if checkerboard and (not exact or quadrature is not None or correction is not None):
        raise InputError("checkerboard=True needs weight_point='exact' without quadrature= or correction= "
                         f"(got weight_point={weight_point!r}, quadrature={quadrature!r}, "
                         f"correction={'set' if correction is not None else None})")
    q = discrete.lattice_categories(path.target) or 2
    if exact:
        if not 0.0 < jump_floor < 1.0 / q:
            raise InputError(f"jump_floor must lie in (0, 1/{q}) for the exact weights, got {jump_floor}")
        if jump_floor_rate is not None and not 0.0 < jump_floor_rate < 1.0 / q:
            raise InputError(f"jump_floor_rate must lie in (0, 1/{q}) for the exact weights, got {jump_floor_rate}")

    jump_h = jnp.diff(ts)  # the time each step's jump probabilities cover
    masks = None
    if checkerboard:  # sub-step j of step j // C moves the sites of colour j % C over the whole step's jump time
        colours = discrete.checkerboard_colours(tuple(x0.shape[1:]))
        num_colours = int(colours.max()) + 1
        masks = jnp.asarray(colours[None] == np.arange(num_colours).reshape(-1, *(1,) * colours.ndim))
        fractions = jnp.arange(num_colours, dtype=ts.dtype) / num_colours
        ts = jnp.concatenate([(ts[:-1, None] + jump_h[:, None] * fractions).ravel(), ts[-1:]])
        jump_h = jnp.repeat(jump_h, num_colours)
        num_steps, active = num_steps * num_colours, active * num_colours

    def colour_mask(k):
        """The sites step ``k`` moves: its colour class with ``checkerboard``, else all (None)."""
        return None if masks is None else masks[k % masks.shape[0]]

    def floor_of(h):
        """The floor of a step of length ``h``: none for the quadratures, else per step or per unit time."""
        if not exact:
            return 0.0
        return jump_floor if jump_floor_rate is None else jump_floor_rate * h

    def integrand(x, t, G, rate_scale=1.0, rate_floor=0.0):
        return jax.vmap(
            lambda xi, Gi: jarzynski_integrand(Gi, path.flip_log_ratios(xi, t), path.dlog_prob_dt(xi, t),
                                               rate_scale, rate_floor)
        )(x, G)

    def log_backward(x_from, x_to, G_from, t_from, k):
        """``log B(x_from -> x_to)`` of step ``k``: an Euler step of the reversed chain over step ``k``'s jump time,
        rates from ``G`` at ``(x_from, t_from)``, on step ``k``'s colour class with ``checkerboard``."""
        h = jump_h[k]
        return jax.vmap(lambda xf, xt, Gf: log_backward_probability(path, xf, xt, Gf, t_from, h, floor_of(h),
                                                                    colour_mask(k)))(x_from, x_to, G_from)

    def log_prob(x, t):
        return jax.vmap(path.log_prob, in_axes=(0, None))(x, t)

    def move(carry, k):
        x, log_w, n_res, x_prev, lp, log_wq = carry  # lp = log pi_t(x), carried by the exact weights (else unused)
        t, t_next = ts[k], ts[k + 1]
        h = jump_h[k]  # t_next - t, or the whole step's with checkerboard (whose sub-steps only the exact rule has)
        key_k = jax.random.fold_in(key, k)
        key_jump, key_mcmc, key_res = jax.random.split(key_k, 3)
        G = batch_g(x, t)
        probs = jax.vmap(jump_probabilities, in_axes=(0, 0, None, None))(x, jax.nn.relu(G), h, floor_of(h))
        probs = jax.vmap(restrict_to_sites, in_axes=(0, 0, None))(x, probs, colour_mask(k))
        x_new = jax.vmap(draw_jump)(jax.random.split(key_jump, num_walkers), x, probs)
        if exact:
            log_forward = jax.vmap(log_jump_probability)(x, x_new, probs)
            lp_new = log_prob(x_new, t_next)
            log_w = log_w + lp_new - lp - log_forward
            if deferred:  # complete the previous step's weight with its backward kernel at x = its x'
                log_w = log_w + jnp.where(k > 0, log_backward(x, x_prev, G, t, jnp.maximum(k - 1, 0)), 0.0)
            else:
                log_w = log_w + log_backward(x_new, x, batch_g(x_new, t_next), t_next, k)
            if quadrature is not None:  # the floored chain's integrand, on these very jumps
                f = floor_of(h)
                scale, floor_rate = 1.0 - q * f, jnp.where(h > 0, f / jnp.where(h > 0, h, 1.0), 0.0)
                x_q, G_q = (x, G) if quadrature == "pre" else (x_new, batch_g(x_new, t))
                log_wq = log_wq + h * integrand(x_q, t, G_q, scale, floor_rate)
        elif weight_point == "pre":
            log_w = log_w + h * integrand(x, t, G)
        elif weight_point == "trapezoid":
            h_prev = jnp.where(k > 0, t - ts[jnp.maximum(k - 1, 0)], 0.0)
            log_w = log_w + 0.5 * (h_prev + h) * integrand(x, t, G)
        else:
            log_w = log_w + h * integrand(x_new, t, batch_g(x_new, t))
        if not exact:
            lp_new = lp
        x_prev = x
        if correction is not None:
            x_new = correction(key_mcmc, x_new, t_next)
            if exact:
                lp_new = log_prob(x_new, t_next)
        if resample_threshold is not None:

            def resample(operand):
                xs, lw, prev, lps = operand
                idx = resampling.systematic(key_res, jax.nn.softmax(lw), num_walkers)
                return xs[idx], jnp.full_like(lw, _lse(lw) - jnp.log(num_walkers)), prev[idx], lps[idx]

            low = WeightedSamples(x_new, log_w).ess < resample_threshold
            x_new, log_w, x_prev, lp_new = jax.lax.cond(low, resample, lambda o: o, (x_new, log_w, x_prev, lp_new))
            n_res = n_res + low.astype(jnp.int32)
        return x_new, log_w, n_res, x_prev, lp_new, log_wq

    def body(carry, k):
        new = jax.lax.cond(k < active, move, lambda c, _: c, carry, k)
        return new, (carry[0] if record else None)

    lp0 = log_prob(x0, ts[0]) if exact else jnp.zeros((num_walkers,), jnp.float32)
    zeros = jnp.zeros((num_walkers,), jnp.float32)
    init = (x0, zeros, jnp.zeros((), jnp.int32), x0, lp0, zeros)
    (x, log_w, n_res, x_prev, _, log_wq), traj = jax.lax.scan(body, init, jnp.arange(num_steps))
    last = jnp.asarray(active)
    t_end = ts[last]
    if weight_point == "trapezoid":
        log_w = log_w + 0.5 * (t_end - ts[last - 1]) * integrand(x, t_end, batch_g(x, t_end))
    elif deferred:
        log_w = log_w + log_backward(x, x_prev, batch_g(x, t_end), t_end, last - 1)
    if record:
        traj = jnp.concatenate([traj, x[None]], axis=0)
    return Rollout(x, log_w, n_res, traj, log_wq if quadrature is not None else None)


def sample(
    key: jax.Array,
    rate_fn: RateFn,
    path,
    num_walkers: int,
    ts: jax.Array,
    **kwargs,
) -> WeightedSamples:
    """Draw ``num_walkers`` LEAPS samples: uniform base, :func:`simulate` along ``ts``.

    Keyword arguments go to :func:`simulate` (``weight_point``, ``correction``,
    ``resample_threshold``). Returns ``WeightedSamples(x, A, log Z_0)``, whose
    ``.log_Z = log Z_0 + log mean e^A`` estimates the target's ``log Z`` and whose
    ``.ess`` is LEAPS' normalised ESS.
    """
    key_x0, key_sim = jax.random.split(key)
    x0 = path.sample_base(key_x0, num_walkers)
    out = simulate(key_sim, rate_fn, path, x0, ts, **kwargs)
    return WeightedSamples(out.x, out.log_w, jnp.asarray(path.log_Z0, jnp.float32))


def sample_paired(
    key: jax.Array,
    rate_fn: RateFn,
    path,
    num_walkers: int,
    ts: jax.Array,
    quadrature: str,
    **kwargs,
) -> tuple[WeightedSamples, WeightedSamples]:
    """:func:`sample` with the exact rule, returning both estimators on the SAME walkers.

    Returns ``(exact, quadrature)``: two :class:`WeightedSamples` with the same
    ``x``, the exact discrete-time log-weights and LEAPS' Jarzynski quadrature
    at ``quadrature`` (``"pre"`` or ``"post"``; :func:`simulate`'s
    ``quadrature=``). Keyword arguments go to :func:`simulate` (not
    ``weight_point`` nor ``resample_threshold``).
    """
    key_x0, key_sim = jax.random.split(key)
    x0 = path.sample_base(key_x0, num_walkers)
    out = simulate(key_sim, rate_fn, path, x0, ts, weight_point="exact", quadrature=quadrature, **kwargs)
    log_Z0 = jnp.asarray(path.log_Z0, jnp.float32)
    return WeightedSamples(out.x, out.log_w, log_Z0), WeightedSamples(out.x, out.log_w_quadrature, log_Z0)
