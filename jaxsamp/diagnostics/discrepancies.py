"""Distances between two sample sets: MMD, Sinkhorn, exact W2 and 1-D (energy) W2.

These are the sample-quality metrics of the learned-sampler benchmarks
(Blessing et al. 2024, "Beyond ELBOs", ``eval_methods``: MMD and Sinkhorn against
2000 target samples; iDEM / Adjoint Sampling: exact W2 and energy-W2 against 2000
reference samples). Exact transport runs on the host through POT (``ot.emd2``,
``ot.emd2_1d``); entropic transport through ott-jax. Both are imported by the
functions that use them (together about 3 s of start-up), so that a process which
only needs MMD -- every training run's evaluation, every CLI call -- does not pay for them.
"""

from __future__ import annotations

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np


def _squared_distances(x: jax.Array, y: jax.Array) -> jax.Array:
    """``||x_i - y_j||^2`` for all pairs, shape (n, m), clipped at 0."""
    sq = jnp.sum(x**2, -1)[:, None] + jnp.sum(y**2, -1)[None, :] - 2.0 * x @ y.T
    return jnp.maximum(sq, 0.0)


def median_bandwidth(x: jax.Array, y: jax.Array) -> jax.Array:
    """Median heuristic: ``h^2 = median{ ||z_i - z_j||^2 : i < j }`` over the pooled set ``z = [x; y]``.

    Parameters
    ----------
    x : array (n, d)
    y : array (m, d)

    Returns
    -------
    scalar
        The bandwidth ``h`` (Gretton et al. 2012, Sec. 8), so that the Gaussian kernel
        is ``exp(-||a - b||^2 / (2 h^2))``.
    """
    z = jnp.concatenate([x, y])
    iu = np.triu_indices(z.shape[0], k=1)
    return jnp.sqrt(jnp.median(_squared_distances(z, z)[iu]))


def mmd(x: jax.Array, y: jax.Array, bandwidth: float | jax.Array | None = None, unbiased: bool = False) -> jax.Array:
    """Maximum mean discrepancy with a Gaussian kernel.

    ``MMD^2 = E k(x, x') + E k(y, y') - 2 E k(x, y)``, ``k(a, b) = exp(-||a - b||^2 / (2 h^2))``
    (Gretton et al. 2012, Eq. 3). The V-statistic (default) averages over all pairs,
    including ``i = j``, and is exactly 0 for identical sets; ``unbiased=True`` gives
    the U-statistic (Eq. 3 of the same paper, ``i != j`` in the within-set terms).

    Parameters
    ----------
    x : array (n, d)
    y : array (m, d)
    bandwidth : float, optional
        ``h``; the median heuristic :func:`median_bandwidth` when omitted.
    unbiased : bool
        U- instead of V-statistic.

    Returns
    -------
    scalar
        ``sqrt(max(MMD^2, 0))``. Memory is ``O((n + m)^2)``.
    """
    chex.assert_rank([x, y], 2)
    chex.assert_equal_shape_suffix([x, y], 1)
    h = median_bandwidth(x, y) if bandwidth is None else jnp.asarray(bandwidth, x.dtype)
    gamma = 0.5 / h**2
    n, m = x.shape[0], y.shape[0]
    kxx = jnp.exp(-gamma * _squared_distances(x, x))
    kyy = jnp.exp(-gamma * _squared_distances(y, y))
    kxy = jnp.exp(-gamma * _squared_distances(x, y))
    if unbiased:
        within = (jnp.sum(kxx) - n) / (n * (n - 1)) + (jnp.sum(kyy) - m) / (m * (m - 1))
    else:
        within = jnp.mean(kxx) + jnp.mean(kyy)
    return jnp.sqrt(jnp.maximum(within - 2.0 * jnp.mean(kxy), 0.0))


def sinkhorn_divergence(x: jax.Array, y: jax.Array, epsilon: float | None = 1e-3) -> jax.Array:
    """Debiased Sinkhorn divergence with squared-Euclidean cost, through ott-jax.

    ``S_eps(x, y) = OT_eps(x, y) - (OT_eps(x, x) + OT_eps(y, y)) / 2`` with uniform
    weights (Feydy et al. 2019, Eq. 6), where ``OT_eps`` is the entropic transport cost
    :func:`entropic_ot_cost`.

    Parameters
    ----------
    x : array (n, d)
    y : array (m, d)
    epsilon : float or None
        Entropic regularisation; ``None`` is ott's default, 0.05 times the standard
        deviation of the ``x``-``y`` cost matrix, shared by the three terms. The
        evaluation code of Beyond ELBOs and of SCLD (``ipm_eval/optimal_transport.py``)
        builds its point cloud with ``epsilon=1e-3`` but passes only its points to
        ott's ``sinkhorn_divergence``, so its figures are at ott's default.

    Returns
    -------
    scalar
    """
    from ott.geometry import pointcloud
    from ott.tools import sinkhorn_divergence as _sinkhorn_divergence

    chex.assert_rank([x, y], 2)
    value, _ = _sinkhorn_divergence.sinkhorn_divergence(pointcloud.PointCloud, x, y, epsilon=epsilon)
    return value


def entropic_ot_cost(x: jax.Array, y: jax.Array, epsilon: float = 1e-3) -> jax.Array:
    """Entropy-regularised OT cost with squared-Euclidean cost, through ott-jax.

    ``OT_eps(x, y) = min_{P in U(a, b)} <P, C> - eps H(P)`` with ``C_ij = ||x_i - y_j||^2``
    and uniform marginals (Cuturi 2013); ott's ``reg_ot_cost`` of the Sinkhorn solution.

    Parameters
    ----------
    x : array (n, d)
    y : array (m, d)
    epsilon : float

    Returns
    -------
    scalar
    """
    from ott.geometry import pointcloud
    from ott.solvers import linear

    chex.assert_rank([x, y], 2)
    return linear.solve(pointcloud.PointCloud(x, y, epsilon=epsilon)).reg_ot_cost


def w2_from_costs(squared_costs) -> float:
    """Exact 2-Wasserstein distance between two uniform sample sets from their pair costs.

    ``W2 = sqrt( min_{P in U(1/n, 1/m)} sum_ij P_ij M_ij )`` with ``M_ij`` the squared
    ground distance, solved exactly by the network simplex (POT ``ot.emd2``) in float64.

    Parameters
    ----------
    squared_costs : array (n, m)

    Returns
    -------
    float
    """
    import ot

    cost = np.asarray(squared_costs, dtype=np.float64)
    n, m = cost.shape
    value = ot.emd2(np.full(n, 1.0 / n), np.full(m, 1.0 / m), cost, numItermax=10_000_000)
    return float(np.sqrt(max(value, 0.0)))


def wasserstein2(x: jax.Array, y: jax.Array) -> float:
    """Exact 2-Wasserstein distance between two sample sets (uniform weights), through POT.

    ``W2(x, y)^2 = min_P sum_ij P_ij ||x_i - y_j||^2`` over couplings of the two
    empirical measures, with the costs in float64 on the host; see :func:`w2_from_costs`.

    Parameters
    ----------
    x : array (n, d)
    y : array (m, d)

    Returns
    -------
    float
    """
    import ot

    chex.assert_rank([x, y], 2)
    chex.assert_equal_shape_suffix([x, y], 1)
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    return w2_from_costs(ot.dist(x, y, metric="sqeuclidean"))


def wasserstein2_1d(a, b) -> float:
    """Exact 1-D 2-Wasserstein distance, ``sqrt(emd2_1d(a, b))`` (POT, squared-Euclidean ground cost).

    In one dimension the optimal coupling is monotone, so for equal sizes
    ``W2^2 = mean((sort a - sort b)^2)``.

    Parameters
    ----------
    a : array (n,)
    b : array (m,)

    Returns
    -------
    float
    """
    import ot

    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    return float(np.sqrt(max(ot.emd2_1d(a, b, metric="sqeuclidean"), 0.0)))


def energy_w2(energy_fn, x: jax.Array, y: jax.Array) -> float:
    """Energy-W2 of iDEM / Adjoint Sampling: the 1-D W2 between the energies of two sets.

    ``E-W2 = sqrt(emd2_1d(E(x), E(y)))`` (Havens et al. 2025, App.; DEM
    ``eval_utils``), see :func:`wasserstein2_1d`.

    Parameters
    ----------
    energy_fn : callable
        Energy of ONE sample (e.g. ``target.energy``); it is vmapped.
    x : array (n, ...)
    y : array (m, ...)

    Returns
    -------
    float
    """
    energies = _batched(energy_fn)
    return wasserstein2_1d(energies(jnp.asarray(x)), energies(jnp.asarray(y)))


@functools.lru_cache(maxsize=32)
def _batched(fn):
    """``jit(vmap(fn))``, compiled once per function (bound methods of one target compare equal)."""
    return jax.jit(jax.vmap(fn))
