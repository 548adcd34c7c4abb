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
:mod:`jaxsamp.learned.leaps_training` learns.

Simulation (LEAPS Algorithm 1): Euler steps on a time grid ``t_0 = 0 < ... <
t_K = 1``. At step ``k`` with ``h = t_{k+1} - t_k``:

1. ``A += h K_{t_k}(X_k)`` (the pre-jump state; ``weight_point="post"`` uses the
   state after the jump, at the same time, as the reference code does for Ising,
   and ``"trapezoid"`` averages the integrand at both ends of the step);
2. jump: Ising sites flip independently with probability ``clip(h ReLU(G_i), 0, 1)``
   (several flips per step); a Potts site jumps with probability
   ``1 - exp(-h sum_c ReLU(G_{c,i}))`` to a category drawn ``∝ ReLU(G_{c,i})``;
3. optionally an MCMC correction kernel leaving ``pi_{t_{k+1}}`` invariant
   (:func:`metropolis_correction`), which does not change ``A``;
4. optionally resampling when the ESS of ``A`` drops below a threshold; all
   walkers then carry ``log mean e^A``, so ``log Z`` stays estimated.

With ``G ≡ 0`` and a correction kernel this is exactly annealed importance
sampling (Neal 2001) on the same path; with ``G ≡ 0`` and no kernel it is
importance sampling from the uniform base.
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
WEIGHT_POINTS = ("pre", "post", "trapezoid")

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


def jarzynski_integrand(G: jax.Array, log_ratios: jax.Array, dlog_prob_dt: jax.Array) -> jax.Array:
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

    Returns
    -------
    scalar
        ``dlog_prob_dt - [sum ReLU(-G) exp(log_ratios) - sum ReLU(G)]``.
    """
    chex.assert_equal_shape([G, log_ratios])
    out_rates, in_rates = rates(G)
    return dlog_prob_dt - (jnp.sum(in_rates * jnp.exp(log_ratios)) - jnp.sum(out_rates))


def euler_jump(key: jax.Array, x: jax.Array, G: jax.Array, h: jax.Array) -> jax.Array:
    """One Euler step of the CTMC with out-rates ``ReLU(G)`` over a time ``h``, for ONE state.

    Spins (``G.shape == x.shape``): every site flips independently with
    probability ``clip(h ReLU(G_i), 0, 1)``. Categories (``G.shape == x.shape +
    (q,)``): site ``i`` jumps with probability ``1 - exp(-h sum_c ReLU(G_{c,i}))``
    to ``c`` drawn with probability ``∝ ReLU(G_{c,i})``.
    """
    out_rates = jax.nn.relu(G)
    if G.shape == x.shape:
        flip = jax.random.uniform(key, x.shape) < jnp.clip(h * out_rates, 0.0, 1.0)
        return jnp.where(flip, -x, x)
    key_jump, key_cat = jax.random.split(key)
    total = jnp.sum(out_rates, axis=-1)
    jump = (jax.random.uniform(key_jump, x.shape) < -jnp.expm1(-h * total)) & (total > 0)
    logits = jnp.where(out_rates > 0, jnp.log(jnp.where(out_rates > 0, out_rates, 1.0)), -jnp.inf)
    logits = jnp.where((total > 0)[..., None], logits, 0.0)
    new = jax.random.categorical(key_cat, logits, axis=-1).astype(x.dtype)
    return jnp.where(jump, new, x)


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

    def correction(key, x, t):
        kernel = discrete.random_scan(lambda y: path.flip_log_ratios(y, t), rule, num_categories, num_updates)
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
    x : array (M, *event_shape)
        Final walker states.
    log_w : array (M,)
        Accumulated log-weights ``A`` (after any resampling, each walker carries
        ``log mean e^A`` of the moment it was resampled).
    num_resampled : int32
        How many times the walkers were resampled.
    trajectory : array (K + 1, M, *event_shape) or None
        States at ``t_0 .. t_K`` when ``record=True``.
    """

    x: jax.Array
    log_w: jax.Array
    num_resampled: jax.Array
    trajectory: jax.Array | None


def simulate(
    key: jax.Array,
    rate_fn: RateFn,
    path,
    x0: jax.Array,
    ts: jax.Array,
    *,
    weight_point: str = "pre",
    correction: Correction | None = None,
    resample_threshold: float | None = None,
    num_active: jax.Array | int | None = None,
    record: bool = False,
) -> Rollout:
    """Run the LEAPS CTMC with Jarzynski weights from ``x0`` along the time grid ``ts``.

    Parameters
    ----------
    key : PRNG key
    rate_fn : callable
        ``rate_fn(x, t) -> G`` for ONE state (a locally equivariant network).
    path : LatticePath
        Gives ``flip_log_ratios(x, t)`` and ``dlog_prob_dt(x, t)`` for one state.
    x0 : array (M, *event_shape)
        Initial walkers, samples of ``pi_0`` (uniform).
    ts : array (K + 1,)
        Non-decreasing time grid with ``ts[0] = 0``.
    weight_point : {"pre", "post", "trapezoid"}
        ``pre`` (default): ``A += h K_{t_k}(X_k)``, the state before the jump.
        ``post``: ``A += h K_{t_k}(X')`` at the state ``X'`` after the jump (the
        reference code's Ising convention; one more network pass per step).
        ``trapezoid``: ``A += h/2 [K_{t_k}(X_k) + K_{t_{k+1}}(X_{k+1})]``, which
        re-uses each step's forward pass (one extra pass at the end) and removes
        the O(h) quadrature bias of the left-point rule in ``log Z`` (the mean of
        ``K_t`` is ``d_t log Z_t``, which grows along the path).
    correction : callable, optional
        ``correction(key, x, t) -> x`` leaving ``pi_t`` invariant, applied after
        every jump at ``t = t_{k+1}`` (:func:`metropolis_correction`).
    resample_threshold : float, optional
        Resample (systematic) whenever the normalised ESS of ``A`` falls below it.
    num_active : int, optional
        Only steps ``k < num_active`` run; later ones are skipped (the curriculum
        pads its grids to a fixed length). Default: all ``K`` steps.
    record : bool
        Also return the states at every grid point.

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

    def integrand(x, t, G):
        return jax.vmap(
            lambda xi, Gi: jarzynski_integrand(Gi, path.flip_log_ratios(xi, t), path.dlog_prob_dt(xi, t))
        )(x, G)

    def move(carry, k):
        x, log_w, n_res = carry
        t, t_next = ts[k], ts[k + 1]
        h = t_next - t
        key_k = jax.random.fold_in(key, k)
        key_jump, key_mcmc, key_res = jax.random.split(key_k, 3)
        G = batch_g(x, t)
        x_new = jax.vmap(euler_jump, in_axes=(0, 0, 0, None))(jax.random.split(key_jump, num_walkers), x, G, h)
        if weight_point == "pre":
            log_w = log_w + h * integrand(x, t, G)
        elif weight_point == "trapezoid":
            h_prev = jnp.where(k > 0, t - ts[jnp.maximum(k - 1, 0)], 0.0)
            log_w = log_w + 0.5 * (h_prev + h) * integrand(x, t, G)
        else:
            log_w = log_w + h * integrand(x_new, t, batch_g(x_new, t))
        if correction is not None:
            x_new = correction(key_mcmc, x_new, t_next)
        if resample_threshold is not None:

            def resample(operand):
                xs, lw = operand
                idx = resampling.systematic(key_res, jax.nn.softmax(lw), num_walkers)
                return xs[idx], jnp.full_like(lw, _lse(lw) - jnp.log(num_walkers))

            low = WeightedSamples(x_new, log_w).ess < resample_threshold
            x_new, log_w = jax.lax.cond(low, resample, lambda o: o, (x_new, log_w))
            n_res = n_res + low.astype(jnp.int32)
        return x_new, log_w, n_res

    def body(carry, k):
        new = jax.lax.cond(k < active, move, lambda c, _: c, carry, k)
        return new, (carry[0] if record else None)

    init = (x0, jnp.zeros((num_walkers,), jnp.float32), jnp.zeros((), jnp.int32))
    (x, log_w, n_res), traj = jax.lax.scan(body, init, jnp.arange(num_steps))
    if weight_point == "trapezoid":
        last = jnp.asarray(active)
        t_end = ts[last]
        log_w = log_w + 0.5 * (t_end - ts[last - 1]) * integrand(x, t_end, batch_g(x, t_end))
    if record:
        traj = jnp.concatenate([traj, x[None]], axis=0)
    return Rollout(x, log_w, n_res, traj)


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
