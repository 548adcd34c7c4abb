"""MCMC convergence diagnostics equal to ArviZ's, jitted, a numpyro-style summary, and ArviZ export.

The diagnostics are those of Vehtari, Gelman, Simpson, Carpenter & Bürkner (2021),
"Rank-normalization, folding, and localization: an improved R-hat for assessing
convergence of MCMC", *Bayesian Analysis* 16(2), 667-718 (arXiv:1903.08008), as
``arviz.summary`` (ArviZ 0.23, ``_multichain_statistics``) computes them: bulk ESS,
tail ESS, rank-normalised split R-hat (the larger of the bulk and folded values,
Sec. 4) and the Monte Carlo standard errors of the mean and of the sd.

What comes from blackjax and what is written here:

* R-hat is blackjax's ``potential_scale_reduction`` (Gelman-Rubin, identical to
  ArviZ's ``_rhat``), applied to draws prepared the way ArviZ prepares them.
  blackjax's own ``rhat`` differs from ArviZ's for an odd number of draws (it drops
  the last draw when splitting chains, ArviZ drops the middle one; it folds about
  the median of the split draws, ``arviz.summary`` about the median of all draws).
* The ESS estimator (Geyer's initial positive and monotone sequences, Vehtari et
  al. 2021 Sec. 3.2 / Stan) is written here, vectorised, following ArviZ's
  ``_ess``: blackjax's ``effective_sample_size`` runs the positive sequence to the
  last lag when no autocorrelation pair turns negative, where ArviZ stops at lag
  ``n - 3``. That happens precisely for the chains the diagnostic must flag: on 4
  chains of 1000 draws at different means blackjax's bulk ESS is 0.3-0.9% off
  ArviZ's, on chains of 8 draws up to 70%. blackjax's ``ess_tail`` also uses
  ``x >= q_95`` for the upper tail, not ArviZ's ``x <= q_95``, which differs on tied
  (discrete) draws (0.4% on Poisson counts), and its ESS is 0 for a constant series
  where ArviZ's is the number of draws.

Draws are laid out ``(num_chains, num_draws, *event)`` (ArviZ's layout) in
:func:`convergence_diagnostics` and :func:`posterior_summary`; :func:`chain_ess` and
:func:`chain_rhat` take the driver's ``(num_steps, num_chains, ...)`` trace. Every
leaf of a PyTree is diagnosed in one jitted computation, batched over all
coordinates of all leaves: one compilation per tree structure and shape.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from typing import Any, NamedTuple

import blackjax.diagnostics as bjd
import jax
import jax.numpy as jnp
import numpy as np
from scipy.fft import next_fast_len

from jaxsamp.core.errors import InputError

_TAIL_ESS_PROBS = (0.05, 0.95)  # arviz.summary's tail-ESS quantiles, whatever the table's `prob`
_STATISTICS = ("mean", "std", "median", "lower", "upper", "ess_bulk", "ess_tail", "r_hat", "mcse_mean", "mcse_sd")
_CONSTANT_RANGE = 1e-15  # ArviZ's `np.finfo(float).resolution`: a series this flat has ESS = its size


class ConvergenceDiagnostics(NamedTuple):
    """Per-coordinate convergence diagnostics; each field has the structure of the draws.

    Each leaf has the event shape of the corresponding draws leaf (chain and draw axes removed).

    Attributes
    ----------
    ess_bulk : PyTree
        Bulk ESS: the ESS of the rank-normalised split chains (Vehtari et al. 2021, Sec. 4).
    ess_tail : PyTree
        Tail ESS: the smaller ESS of the split indicator series ``x <= q_5%`` and ``x <= q_95%``.
    r_hat : PyTree
        ``max(R_bulk, R_folded)`` of the rank-normalised split chains (Sec. 4); NaN for one chain,
        NaN for constant draws, inf for split chains each constant but not all equal.
    mcse_mean : PyTree
        ``sd / sqrt(ESS_mean)``, ``ESS_mean`` the ESS of the split (not rank-normalised) chains.
    mcse_sd : PyTree
        The delta-method MCSE of the sd (ArviZ's ``mcse_sd``).
    """

    ess_bulk: Any
    ess_tail: Any
    r_hat: Any
    mcse_mean: Any
    mcse_sd: Any


def _split_chains(x: jax.Array) -> jax.Array:
    """``(chains, draws, k) -> (2 chains, draws // 2, k)``: first, last halves; an odd middle draw dropped (ArviZ)."""
    half = x.shape[1] // 2
    return jnp.concatenate([x[:, :half], x[:, x.shape[1] - half :]], axis=0)


def _sort_rows(x: jax.Array) -> jax.Array:
    """Each row of ``x`` ``(k, n)`` sorted ascending, NaN last (on a CPU backend in NumPy, see :func:`_twice_average_ranks`)."""
    if _host_sorts():
        return jax.pure_callback(lambda v: np.sort(np.asarray(v), axis=-1), jax.ShapeDtypeStruct(x.shape, x.dtype), x,
                                 vmap_method="expand_dims")
    return jnp.sort(x, axis=-1)


def _host_sorts() -> bool:
    """Whether sorts run in NumPy: on a CPU backend, where XLA's sort is 10-40x slower (see :func:`_twice_average_ranks`)."""
    return jax.default_backend() == "cpu"


def _tie_group_ends(differs, position, n: int, cummax, cummin_reversed, concatenate, where):
    """First and last sorted position of each element's tie group, from ``differs`` (sorted neighbours differ).

    Written once for both array libraries: the functions are NumPy's or JAX's.
    """
    edge = differs[:, :1] | True
    first = cummax(where(concatenate([edge, differs], axis=1), position, 0))
    last = cummin_reversed(where(concatenate([differs, edge], axis=1), position, n - 1))
    return first, last


def _twice_average_ranks_numpy(v: np.ndarray) -> np.ndarray:
    """:func:`_twice_average_ranks` in NumPy (the host side of its CPU path)."""
    v = np.asarray(v)  # the callback may be handed a jax.Array, whose argsort would be XLA's
    k, n = v.shape
    order = np.argsort(v, axis=-1)
    ordered = np.take_along_axis(v, order, axis=-1)
    position = np.broadcast_to(np.arange(n, dtype=np.int32), (k, n))
    first, last = _tie_group_ends(
        ordered[:, 1:] != ordered[:, :-1], position, n,
        lambda a: np.maximum.accumulate(a, axis=1), lambda a: np.minimum.accumulate(a[:, ::-1], axis=1)[:, ::-1],
        np.concatenate, np.where,
    )
    ranks = np.empty((k, n), np.int32)
    np.put_along_axis(ranks, order, (first + last + 2).astype(np.int32), axis=-1)
    return ranks


def _twice_average_ranks(x: jax.Array) -> jax.Array:
    """Twice the 1-based ranks along the last axis of ``x`` ``(k, n)``, ties given their average rank, as int32.

    ``scipy.stats.rankdata`` times 2, exact: in sorted order a tie group runs from its
    first position ``f`` to its last ``l`` (0-based), and twice its average 1-based rank is
    ``f + l + 2``. One sort carrying the positions, the groups' ends by a running max and
    a reversed running min over the sorted values, and the inverse permutation by a
    scatter (half the cost of sorting ``x`` and ``x`` reversed at 2**24 draws). Integers,
    because a float32 rank is rounded once ``n > 2**24``.

    On a CPU backend this runs in NumPy through a ``pure_callback``: XLA's CPU sort
    calls its compiled comparator once per comparison and its running max is a
    windowed reduction; at 64 x 4000 float32 draws they measured about 13 ms (43 ms
    when compiled for a quick compile) against about 3 ms in NumPy, most of the cost
    of the health check that ends every :func:`jaxsamp.sample` call. Elsewhere (GPU,
    TPU) it is ``lax.sort`` and ``lax.cummax``; both paths give the same integers.
    """
    k, n = x.shape
    if _host_sorts():
        return jax.pure_callback(_twice_average_ranks_numpy, jax.ShapeDtypeStruct((k, n), jnp.int32), x,
                                 vmap_method="sequential")
    position = jax.lax.broadcasted_iota(jnp.int32, (k, n), 1)
    ordered, permutation = jax.lax.sort((x, position), dimension=1, num_keys=1, is_stable=True)
    first, last = _tie_group_ends(
        ordered[:, 1:] != ordered[:, :-1], position, n,
        lambda a: jax.lax.cummax(a, axis=1), lambda a: jax.lax.cummin(a, axis=1, reverse=True),
        jnp.concatenate, jnp.where,
    )
    row = jax.lax.broadcasted_iota(jnp.int32, (k, n), 0)
    return jnp.zeros((k, n), jnp.int32).at[row, permutation].set(first + last + 2, unique_indices=True)


def _rank_normalize(x: jax.Array) -> jax.Array:
    """Blom's normal scores ``Phi^-1((r - 3/8) / (n + 1/4))`` of the average ranks over chains and draws (Sec. 4).

    ``Phi^-1(p) = sqrt(2) erfinv(2p - 1)`` with ``2p - 1 = (2r - n - 1) / (n + 1/4)``: the
    numerator is an exact integer, the quotient rounded once (one XLA op: ndtri's
    piecewise rational approximations compile to several large kernels). In float32 the
    quotient of the extreme ranks rounds to +-1 once ``n`` exceeds ``2**24`` (e.g. 1e6
    chains of 300 draws), where erfinv is infinite; it is capped at the largest float
    below 1, which caps those few scores at about +-5.4 (float32) instead of +-5.8 and
    leaves R-hat and ESS, statistics of all ``n`` scores, finite and otherwise unchanged.
    """
    chains, draws, k = x.shape
    n = chains * draws
    if 2 * n + 2 > np.iinfo(np.int32).max:
        raise InputError(f"the diagnostics rank at most 2**30 draws per coordinate, got {chains} x {draws} = {n}")
    centred = (_twice_average_ranks(x.reshape(n, k).T).T - (n + 1)).astype(x.dtype)
    below_one = np.nextafter(np.array(1.0, x.dtype), np.array(0.0, x.dtype))
    quotient = jnp.clip(centred / np.array(n + 0.25, x.dtype), -below_one, below_one)
    return (np.sqrt(2.0).astype(x.dtype) * jax.lax.erf_inv(quotient)).reshape(x.shape)


def _type7_position(n: int, p: float) -> tuple[int, float]:
    """0-based lower order statistic and weight of the type-7 quantile (ArviZ's ``mquantiles(alphap=1, betap=1)``)."""
    aleph = n * p + (1.0 - p)
    k = math.floor(min(max(aleph, 1.0), n - 1.0))
    return k - 1, min(max(aleph - k, 0.0), 1.0)


def _type7_quantile(pooled_sorted: jax.Array, p: float) -> jax.Array:
    """Type-7 (numpy's default, linear) quantile of each column of sorted draws."""
    lower, weight = _type7_position(pooled_sorted.shape[0], p)
    return (1.0 - weight) * pooled_sorted[lower] + weight * pooled_sorted[lower + 1]


def _geyer_ess(x: jax.Array) -> jax.Array:
    """ESS of each column of split chains ``x`` ``(chains >= 2, draws, k)``: ArviZ's ``_ess``, vectorised.

    ``ESS = M N / tau``, ``tau = -1 + 2 sum_t rho_t`` over Geyer's initial positive
    sequence of pair sums ``rho_2j + rho_2j+1`` (truncated at the first non-positive
    pair, or at lag ``N - 3``), made monotone by a running minimum, with the
    multi-chain autocorrelation ``rho_t = 1 - (W - mean_m acov_m(t)) / var+`` (Vehtari
    et al. 2021, Sec. 3.2). ``tau >= 1 / log10(MN)``; a constant column has ESS ``MN``.
    """
    chains, draws = x.shape[:2]
    size = chains * draws
    chain_mean = x.mean(axis=1)
    fft_len = next_fast_len(2 * draws)
    spectrum = jnp.fft.rfft(x - chain_mean[:, None], n=fft_len, axis=1)
    autocov = jnp.fft.irfft(spectrum * jnp.conj(spectrum), n=fft_len, axis=1)[:, :draws] / draws
    mean_autocov = autocov.mean(axis=0)
    within_var = mean_autocov[0] * draws / (draws - 1.0)
    var_plus = within_var * (draws - 1.0) / draws + chain_mean.var(axis=0, ddof=1)
    rho = (1.0 - (within_var - mean_autocov) / var_plus).at[0].set(1.0)

    last_pair = max((draws - 1) // 2 - 1, 0)  # ArviZ's loop bound `t < n_draw - 3`
    rho_even, rho_odd = rho[0 : 2 * last_pair + 2 : 2], rho[1 : 2 * last_pair + 2 : 2]
    pair_sums = rho_even + rho_odd
    pair_index = jnp.arange(last_pair + 1)[:, None]
    stop = jnp.min(jnp.where(pair_sums <= 0.0, pair_index, last_pair), axis=0)  # the last pair ArviZ computes
    monotone = jax.lax.cummin(pair_sums, axis=0)
    even_at_stop = jnp.sum(jnp.where(pair_index == stop, rho_even, 0.0), axis=0)
    pair_at_stop = jnp.sum(jnp.where(pair_index == stop, pair_sums, 0.0), axis=0)
    last_term = jnp.where((even_at_stop > 0.0) | (pair_at_stop >= 0.0), even_at_stop, 0.0)
    tau = -1.0 + 2.0 * jnp.sum(jnp.where(pair_index < stop, monotone, 0.0), axis=0) + last_term
    ess = size / jnp.maximum(tau, 1.0 / np.log10(size))
    is_constant = x.max(axis=(0, 1)) - x.min(axis=(0, 1)) < _CONSTANT_RANGE
    return jnp.where(is_constant, float(size), ess)


def _rank_r_hat(x: jax.Array, split: jax.Array, pooled_sorted: jax.Array, median: jax.Array):
    """Normal scores of the split and folded draws ``(2 chains, draws // 2, 2k)`` and the rank R-hat ``(k,)``.

    R-hat is ``max(R(z), R(z_fold))`` (Vehtari et al. 2021, Sec. 4), ``z_fold`` folded
    about ``median``, the median of all draws (``arviz.summary``'s convention).
    """
    chains, _, k = x.shape
    normal_scores = _rank_normalize(jnp.concatenate([split, jnp.abs(_split_chains(x - median))], axis=-1))
    if chains == 1:
        return normal_scores, jnp.full((k,), jnp.nan, x.dtype)  # ArviZ: R-hat needs two chains
    bulk_and_folded = bjd.potential_scale_reduction(normal_scores, chain_axis=0, sample_axis=1)
    # Exact where round-off would blur ArviZ's 0/0 and B/0: constant draws have no R-hat,
    # split chains that are each constant (but differ) have an infinite one.
    is_constant = pooled_sorted[-1] == pooled_sorted[0]
    split_chains_constant = jnp.all(split == split[:, :1], axis=(0, 1))
    r_hat = jnp.where(split_chains_constant, jnp.inf, jnp.max(bulk_and_folded.reshape(2, k), axis=0))
    return normal_scores, jnp.where(is_constant, jnp.nan, r_hat)


@jax.jit
def r_hat_and_ess_bulk(positions: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The rank R-hat and bulk ESS of each coordinate of ``positions`` ``(chains, draws, *event)``, flattened to ``(d,)``.

    What a run's health check needs (:func:`jaxsamp.diagnostics.health.convergence_warnings`),
    at about a third of :func:`convergence_diagnostics`' cost, with its values (to float32 round-off): the
    check that ends every :func:`jaxsamp.sample` call. A coordinate with a NaN draw is NaN.
    """
    chains, draws = positions.shape[:2]
    x = positions.reshape(chains, draws, -1).astype(jnp.result_type(positions, jnp.float32))
    d = x.shape[-1]
    pooled_sorted = _sort_rows(x.reshape(chains * draws, d).T).T
    split = _split_chains(x)
    normal_scores, r_hat = _rank_r_hat(x, split, pooled_sorted, _type7_quantile(pooled_sorted, 0.5))
    nan = jnp.isnan(x.mean(axis=(0, 1)))
    return jnp.where(nan, jnp.nan, r_hat), jnp.where(nan, jnp.nan, _geyer_ess(normal_scores[..., :d]))


def _column_statistics(x: jax.Array, prob: float) -> jax.Array:
    """The ``_STATISTICS`` ``(10, k)`` of each column of ``x`` ``(chains, draws, k)``, as ``arviz.summary`` has them."""
    chains, draws, k = x.shape
    n = chains * draws
    pooled_sorted = _sort_rows(x.reshape(n, k).T).T
    mean = x.mean(axis=(0, 1))
    squared_deviation = (x - mean) ** 2
    sum_squared_deviation = squared_deviation.sum(axis=(0, 1))
    variance = sum_squared_deviation / (n - 1)
    median = _type7_quantile(pooled_sorted, 0.5)

    # Tail indicators x <= q_p: for the type-7 quantile between consecutive order statistics
    # x_(j) <= q < x_(j+1) this is exactly x <= x_(j), robust to the rounding of q on ties.
    indicators = []
    for p in _TAIL_ESS_PROBS:
        lower, weight = _type7_position(n, p)
        indicators.append((x <= pooled_sorted[lower + (weight >= 1.0)]).astype(x.dtype))

    split = _split_chains(x)
    normal_scores, r_hat = _rank_r_hat(x, split, pooled_sorted, median)
    series = [normal_scores[..., :k], *map(_split_chains, indicators), split, _split_chains(squared_deviation)]
    ess_bulk, ess_lower, ess_upper, ess_mean, ess_squared_deviation = _geyer_ess(
        jnp.concatenate(series, axis=-1)
    ).reshape(5, k)
    mean_variance = sum_squared_deviation / n
    variance_of_variance = (jnp.mean(squared_deviation**2, axis=(0, 1)) - mean_variance**2) / ess_squared_deviation
    statistics = jnp.stack(
        [
            mean,
            jnp.sqrt(variance),
            median,
            _type7_quantile(pooled_sorted, (1.0 - prob) / 2.0),
            _type7_quantile(pooled_sorted, (1.0 + prob) / 2.0),
            ess_bulk,
            jnp.minimum(ess_lower, ess_upper),
            r_hat,
            jnp.sqrt(variance / ess_mean),
            jnp.sqrt(variance_of_variance / mean_variance / 4.0),
        ]
    )
    # ArviZ: a coordinate with a NaN draw is NaN throughout (the mean is NaN exactly then, or with draws +inf and -inf)
    return jnp.where(jnp.isnan(mean), jnp.nan, statistics)


def _tree_statistics_unjitted(draws: Any, *, chain_axis: int, sample_axis: int, prob: float) -> dict[str, Any]:
    """:func:`_column_statistics` of all coordinates of all leaves in one batch; per statistic, a PyTree."""
    leaves, treedef = jax.tree.flatten(draws)
    if not leaves:
        raise InputError("the draws have no leaves")
    leaves = [jnp.moveaxis(jnp.asarray(leaf), (chain_axis, sample_axis), (0, 1)) for leaf in leaves]
    chains, num_draws = leaves[0].shape[:2]
    for leaf in leaves:
        if leaf.shape[:2] != (chains, num_draws):
            raise InputError(
                f"every leaf needs the same (chains, draws) = {(chains, num_draws)}; "
                f"got a leaf of shape {leaf.shape[:2]} "
                f"(after moving chain_axis={chain_axis}, sample_axis={sample_axis} to the front)"
            )
    if num_draws < 4:
        raise InputError(f"the diagnostics need at least 4 draws per chain, got {num_draws}")
    dtype = jnp.result_type(*leaves, jnp.float32)
    columns = jnp.concatenate([leaf.reshape(chains, num_draws, -1).astype(dtype) for leaf in leaves], axis=-1)
    statistics = _column_statistics(columns, prob)
    offsets = np.cumsum([0] + [math.prod(leaf.shape[2:]) for leaf in leaves])
    per_leaf = [
        statistics[:, start:stop].reshape(-1, *leaf.shape[2:])
        for start, stop, leaf in zip(offsets[:-1], offsets[1:], leaves)
    ]
    return {name: treedef.unflatten([block[i] for block in per_leaf]) for i, name in enumerate(_STATISTICS)}


# Compiling is most of the cost of diagnosing a small trace and little of a large one's. For traces
# of up to _QUICK_COMPILE_MAX_SIZE numbers, XLA's CPU legacy emitters and LLVM at -O0 cut the compile
# (4 chains x 1000 draws x 10 on 2 CPU cores: ~1.0 s -> ~0.3 s) for a ~2x slower run (~45 -> ~100 ms);
# larger traces, whose -O0 run would be ~2x slower (4 x 2000 x 500: 5 s -> 11 s), compile normally.
_QUICK_COMPILE_MAX_SIZE = 2**18
_QUICK_COMPILE_OPTIONS = {"xla_backend_optimization_level": 0, "xla_cpu_use_fusion_emitters": False}
_STATIC_ARGNAMES = ("chain_axis", "sample_axis", "prob")
_tree_statistics_quick_compile = jax.jit(
    _tree_statistics_unjitted, static_argnames=_STATIC_ARGNAMES, compiler_options=_QUICK_COMPILE_OPTIONS
)
_tree_statistics_optimized = jax.jit(_tree_statistics_unjitted, static_argnames=_STATIC_ARGNAMES)


def _tree_statistics(draws: Any, *, chain_axis: int, sample_axis: int, prob: float) -> dict[str, Any]:
    """Jitted :func:`_tree_statistics_unjitted`, compiled for speed of compiling or of running by the trace's size."""
    static = {"chain_axis": chain_axis, "sample_axis": sample_axis, "prob": prob}
    leaves = jax.tree.leaves(draws)
    if any(isinstance(leaf, jax.core.Tracer) for leaf in leaves):  # inside the caller's jit / vmap: theirs compiles
        return _tree_statistics_unjitted(draws, **static)
    if sum(math.prod(np.shape(leaf)) for leaf in leaves) <= _QUICK_COMPILE_MAX_SIZE:
        try:
            return _tree_statistics_quick_compile(draws, **static)
        except jax.errors.JaxRuntimeError as error:  # an XLA that no longer has one of the options
            if "compile option" not in str(error):
                raise
    return _tree_statistics_optimized(draws, **static)


def convergence_diagnostics(draws: Any) -> ConvergenceDiagnostics:
    """Bulk / tail ESS, rank-normalised split R-hat and MCSEs of every coordinate, equal to ``arviz.summary``.

    Vehtari, Gelman, Simpson, Carpenter & Bürkner (2021), Bayesian Analysis 16(2):
    R-hat is ``max(R(z), R(z_fold))`` (Sec. 4) with ``z`` the rank-normalised
    (Blom) split chains and ``z_fold`` those of ``|x - median(x)|``, R computed
    by blackjax's ``potential_scale_reduction``; bulk ESS is the ESS of ``z``, tail ESS
    the smaller ESS of the 5% and 95% quantile indicators (Sec. 4); the ESS is
    ArviZ's Geyer estimator, written here in JAX (see the module docstring for why
    not blackjax's). Jitted; one compilation per tree structure and shape.

    Parameters
    ----------
    draws : PyTree of arrays
        Leaves ``(num_chains, num_draws, *event)`` with the same chains and draws (at
        least 4 draws; R-hat needs at least 2 chains and is NaN otherwise).

    Returns
    -------
    ConvergenceDiagnostics
        Each field a PyTree like ``draws`` with event-shaped float leaves. A coordinate
        with a NaN draw is NaN throughout (as in ArviZ).

    Notes
    -----
    Computed in the draws' float dtype (float32 unless x64 is enabled). Against
    ArviZ in float64 on the same float32 draws (14 cases: well and poorly mixing,
    Cauchy, counts, 8-draw chains, constant, one chain, NaN) the relative differences
    were at most ``3e-6`` for the ESS and MCSE and ``1e-5`` for R-hat (ranks of folded
    draws tied within float32 round-off); with x64 enabled, at most ``1e-14``. The
    Geyer truncation compares a sum with zero, so a pair sum within round-off of
    zero could, rarely, move an ESS further.
    """
    statistics = _tree_statistics(draws, chain_axis=0, sample_axis=1, prob=0.9)
    return ConvergenceDiagnostics(**{field: statistics[field] for field in ConvergenceDiagnostics._fields})


def chain_ess(trace: Any, *, chain_axis: int = 1, sample_axis: int = 0) -> Any:
    """Bulk effective sample size of every leaf of a multi-chain trace (``arviz.ess(method="bulk")``).

    The ESS of the rank-normalised split chains (Vehtari et al. 2021, Sec. 4),
    the ``ess_bulk`` of :func:`convergence_diagnostics`; for near-Gaussian draws it is
    the ESS of the mean, ``M N / tau`` with ``tau = 1 + 2 sum_t rho_t``.

    Parameters
    ----------
    trace : PyTree of arrays
        Leaves with a chain axis and a sample axis (at least 4 samples).
    chain_axis, sample_axis : int
        Default: the driver's ``(num_steps, num_chains, ...)`` layout.

    Returns
    -------
    PyTree
        Same structure, each leaf with the two axes removed.
    """
    return _tree_statistics(trace, chain_axis=chain_axis, sample_axis=sample_axis, prob=0.9)["ess_bulk"]


def chain_rhat(trace: Any, *, chain_axis: int = 1, sample_axis: int = 0) -> Any:
    """Rank-normalised split R-hat of every leaf (``arviz.rhat(method="rank")``, Vehtari et al. 2021, Sec. 4).

    ``max(R_bulk, R_folded)`` of the split, rank-normalised (and folded about the
    median) draws; values above 1.01 flag non-convergence. The ``r_hat`` of
    :func:`convergence_diagnostics`, which folds about the median of all draws as
    ``arviz.summary`` does (``arviz.rhat`` folds about the median of the split draws,
    which can differ slightly for an odd number of draws).

    Parameters
    ----------
    trace : PyTree of arrays
        Leaves with a chain axis (at least 2 chains) and a sample axis (at least 4 samples).
    chain_axis, sample_axis : int
        Default: the driver's ``(num_steps, num_chains, ...)`` layout.

    Returns
    -------
    PyTree
    """
    return _tree_statistics(trace, chain_axis=chain_axis, sample_axis=sample_axis, prob=0.9)["r_hat"]


def _leaf_name(path: tuple) -> str:
    """A leaf's PyTree path as a variable name (``theta``, ``params.scale``), ``x`` for a bare array."""
    return jax.tree_util.keystr(path, simple=True, separator=".") or "x"


def _row_names(draws: Any) -> list[str]:
    """``name`` for a scalar leaf, ``name[i]`` / ``name[i, j]`` per coordinate otherwise (ArviZ's labels)."""
    names = []
    for path, leaf in jax.tree_util.tree_flatten_with_path(draws)[0]:
        name = _leaf_name(path)
        event_shape = np.shape(leaf)[2:]
        indices = itertools.product(*map(range, event_shape))
        names += [f"{name}[{', '.join(map(str, index))}]" if index else name for index in indices]
    return names


@dataclasses.dataclass(frozen=True, eq=False)
class PosteriorSummary:
    """Per-coordinate posterior statistics and convergence diagnostics, printed like numpyro's ``print_summary``.

    Every array has one entry per row. ``str(summary)`` (or :meth:`table`) is the table.

    Attributes
    ----------
    rows : tuple of str
        ``mu``, ``theta[0]``, ``theta[1]``, ... (ArviZ's row labels).
    mean, std, median, lower, upper : numpy.ndarray
        Posterior mean, sample standard deviation with ``ddof=1`` (as ``arviz.summary``'s
        ``sd``; numpyro's ``std`` too), median, and the ``(1-prob)/2`` and ``(1+prob)/2``
        type-7 (numpy's default) quantiles, pooled over chains and draws.
    ess_bulk, ess_tail, r_hat, mcse_mean, mcse_sd : numpy.ndarray
        As in :class:`ConvergenceDiagnostics`.
    prob : float
        The central-interval probability of ``lower`` / ``upper``.
    num_divergences : int or None
        Total divergent transitions, when given.
    """

    rows: tuple[str, ...]
    mean: np.ndarray
    std: np.ndarray
    median: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    ess_bulk: np.ndarray
    ess_tail: np.ndarray
    r_hat: np.ndarray
    mcse_mean: np.ndarray
    mcse_sd: np.ndarray
    prob: float
    num_divergences: int | None = None

    def _columns(self) -> dict[str, np.ndarray]:
        return {
            "mean": self.mean,
            "std": self.std,
            "median": self.median,
            f"{50 * (1 - self.prob):.1f}%": self.lower,
            f"{50 * (1 + self.prob):.1f}%": self.upper,
            "ess_bulk": self.ess_bulk,
            "ess_tail": self.ess_tail,
            "r_hat": self.r_hat,
        }

    def table(self) -> str:
        """numpyro's ``print_summary`` layout, ``n_eff`` replaced by ``ess_bulk`` and ``ess_tail``; then divergences."""
        columns = self._columns()
        name_format = "{:>" + str(max(max(map(len, self.rows)), 10)) + "}"
        lines = [(name_format + " {:>9}" * len(columns)).format("", *columns)]
        row_format = name_format + " {:>9.2f}" * len(columns)
        for i, row in enumerate(self.rows):
            lines.append(row_format.format(row, *(values[i] for values in columns.values())))
        if self.num_divergences is not None:
            lines.append(f"Number of divergences: {self.num_divergences}")
        return "\n".join(lines)

    __str__ = table

    def to_dict(self) -> dict[str, dict[str, float]]:
        """``{row: {column: float}}`` with the table's columns plus ``mcse_mean`` and ``mcse_sd``."""
        columns = {**self._columns(), "mcse_mean": self.mcse_mean, "mcse_sd": self.mcse_sd}
        return {row: {name: float(values[i]) for name, values in columns.items()} for i, row in enumerate(self.rows)}

    @property
    def max_rhat(self) -> float:
        """Largest R-hat over the rows where it is defined (not constant, no NaN draw); NaN if none is (one chain)."""
        defined = self.r_hat[~np.isnan(self.r_hat)]
        return float(defined.max()) if defined.size else float("nan")

    @property
    def min_ess_bulk(self) -> float:
        """Smallest bulk ESS over the rows without a NaN draw; NaN if none."""
        defined = self.ess_bulk[~np.isnan(self.ess_bulk)]
        return float(defined.min()) if defined.size else float("nan")


def posterior_summary(draws: Any, *, divergences: Any = None, prob: float = 0.9) -> PosteriorSummary:
    """Summary table of draws ``(chains, draws, *event)``: numpyro's ``print_summary`` columns, ArviZ's numbers.

    Mean, std (``ddof=1``), ``ess_bulk``, ``ess_tail``, ``r_hat``, ``mcse_mean`` and
    ``mcse_sd`` equal ``arviz.summary(..., kind="all")`` on the same draws, up to
    float32 round-off (see :func:`convergence_diagnostics`, whose diagnostics these
    are: Vehtari et al. 2021). The interval columns are the ``(1-prob)/2`` and
    ``(1+prob)/2`` quantiles (numpyro labels the same columns ``5.0%`` / ``95.0%`` but
    fills them with the HPDI bounds; ArviZ reports an HDI instead). One jitted pass
    over all coordinates.

    Parameters
    ----------
    draws : PyTree of arrays, or one array
        Leaves ``(num_chains, num_draws, *event)``, at least 4 draws.
    divergences : array of int or bool, optional
        Divergent transitions, any shape (per draw, or counts per chain); their sum is reported.
    prob : float
        Central probability of the quantile interval (0.9: the 5% and 95% quantiles).

    Returns
    -------
    PosteriorSummary
    """
    if not 0.0 < prob < 1.0:
        raise InputError(f"prob must lie in (0, 1), got {prob}")
    statistics = jax.device_get(_tree_statistics(draws, chain_axis=0, sample_axis=1, prob=float(prob)))
    flat = {name: np.concatenate([np.ravel(v) for v in jax.tree.leaves(tree)]) for name, tree in statistics.items()}
    num_divergences = None if divergences is None else int(np.sum(np.asarray(divergences, dtype=np.int64)))
    return PosteriorSummary(rows=tuple(_row_names(draws)), prob=float(prob), num_divergences=num_divergences, **flat)


def to_inference_data(trace: Any, *, chain_axis: int = 1, sample_axis: int = 0):
    """Export a multi-chain trace to an ``arviz.InferenceData`` posterior group.

    Leaves become variables named by their PyTree path (``"x"`` for a bare array),
    transposed to ArviZ's ``(chain, draw, ...)``. ArviZ is optional (the ``arviz``
    extra) and imported here.

    Parameters
    ----------
    trace : PyTree of arrays
    chain_axis, sample_axis : int

    Returns
    -------
    arviz.InferenceData
    """
    import arviz

    leaves = jax.tree_util.tree_flatten_with_path(trace)[0]
    posterior = {}
    for path, leaf in leaves:
        posterior[_leaf_name(path)] = np.moveaxis(np.asarray(leaf), (chain_axis, sample_axis), (0, 1))
    return arviz.from_dict(posterior=posterior)
