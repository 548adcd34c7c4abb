"""Exact linear assignment for many small cost matrices at once.

:func:`linear_sum_assignment` solves ``min_sigma sum_i C[i, sigma(i)]`` over
permutations for a whole batch of ``n x n`` cost matrices in one jitted,
vectorised program. It is the shortest-augmenting-path algorithm of Jonker &
Volgenant (1987) in the form of Crouse (2016), which is also what
``scipy.optimize.linear_sum_assignment`` runs, rewritten so that every matrix of
the batch advances in lock step:

* rows are inserted one at a time; inserting row ``k`` is a Dijkstra search
  over columns with reduced costs ``C[i, j] - u_i - v_j`` that stops at the
  first free column. Only ``k`` columns are taken, so every search ends within
  ``k + 1`` column scans; the batch loops until all its searches have ended
  (finished matrices idle);
* the row duals are never stored: an assigned edge is tight, so
  ``u_i = C[i, col(i)] - v_col(i)``; after the search the scanned columns get
  ``v_j += d_j - d_sink`` (those with ``d_j < d_sink``; the rest are unchanged);
* the augmenting path is flipped back from the sink, in at most ``k + 1`` steps.

The total work is ``O(n^3)`` per matrix. Batch state lives in ``(n, B)``
arrays (batch minor) and rows of the cost are fetched as contiguous length-``n``
vectors, which is what makes millions of 13 x 13 problems (geometric W2 on
LJ-13) fast on a CPU.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsamp.core.errors import InputError


def linear_sum_assignment(cost: jax.Array) -> jax.Array:
    """Optimal assignment of rows to columns for a batch of square cost matrices.

    Parameters
    ----------
    cost : array, shape (..., n, n)
        Finite costs. Leading axes are batch axes.

    Returns
    -------
    array of int32, shape (..., n)
        ``col[..., i]`` is the column assigned to row ``i``; it minimises
        ``sum_i cost[..., i, col[..., i]]`` (same convention as the second output
        of ``scipy.optimize.linear_sum_assignment``; ties may be broken differently).

    Notes
    -----
    Costs are shifted by their row minima first (this changes every
    assignment's total by the same constant), so all reduced costs are
    non-negative. Work is ``O(n^3)`` per matrix; the whole batch is vectorised.
    """
    if cost.ndim < 2 or cost.shape[-1] != cost.shape[-2]:
        raise InputError(f"cost must have shape (..., n, n), got {cost.shape}")
    n = cost.shape[-1]
    batch_shape = cost.shape[:-2]
    c = cost.reshape((-1, n, n))
    c = c - jnp.min(c, axis=-1, keepdims=True)
    return _solve(c).reshape(batch_shape + (n,))


def _solve(c: jax.Array) -> jax.Array:
    """Shortest augmenting path on ``c`` (B, n, n) with non-negative rows; -> (B, n)."""
    num, n, _ = c.shape
    rows = c.reshape(num * n, n)  # row i of matrix b is rows[b * n + i]
    flat = c.reshape(-1)  # entry (b, i, j) is flat[(b * n + i) * n + j]
    b = jnp.arange(num, dtype=jnp.int32)
    cols = jnp.arange(n, dtype=jnp.int32)[:, None]
    inf = jnp.asarray(jnp.inf, c.dtype)

    def at(x, idx):
        """``x[idx[b], b]`` for state arrays ``x`` of shape (n, B)."""
        return x.reshape(-1)[idx * num + b]

    def insert_row(k, carry):
        v, col4row, row4col = carry

        def scan_column(s):
            # dist: tentative distance of each column; a scanned column j is stored
            # as -1 - dist_j, so the sign marks the scanned set without another array.
            dist, path, i, offset, last, sink, d_sink, scans = s
            dist = jnp.where(cols == last[None], -1.0 - dist, dist)
            # reduced costs are >= 0 in exact arithmetic; clamping removes round-off
            # that would otherwise read as the scanned mark
            reduced = jnp.maximum(offset[None] + rows[b * n + i].T - v, 0.0)
            better = (dist >= 0) & (reduced < dist)
            path = jnp.where(better, i[None], path)
            dist = jnp.where(better, reduced, dist)
            j = jnp.argmin(jnp.where(dist < 0, inf, dist), axis=0).astype(jnp.int32)
            searching = sink < 0
            d_j = at(dist, j)
            owner = at(row4col, j)
            follow = searching & (owner >= 0)
            sink = jnp.where(searching & (owner < 0), j, sink)
            d_sink = jnp.where(searching, d_j, d_sink)
            i = jnp.where(follow, owner, i)
            # next row's dual u_i = c[i, j] - v_j (its assigned edge is tight);
            # an infinite offset freezes a finished search.
            offset = jnp.where(follow, d_j - flat[(b * n + i) * n + j] + at(v, j), inf)
            last = jnp.where(searching, j, -1)
            return dist, path, i, offset, last, sink, d_sink, scans + 1

        start = (
            jnp.full((n, num), inf, c.dtype),
            jnp.zeros((n, num), jnp.int32),
            jnp.full((num,), k, jnp.int32),
            jnp.zeros((num,), c.dtype),
            jnp.full((num,), -1, jnp.int32),
            jnp.full((num,), -1, jnp.int32),
            jnp.zeros((num,), c.dtype),
            jnp.int32(0),
        )
        # every search ends within k + 1 scans (only k columns are taken): loop until all
        # matrices have their sink, never more than k + 1 times (a guard for non-finite costs)
        dist, path, _, _, last, sink, d_sink, _ = jax.lax.while_loop(
            lambda s: jnp.any(s[5] < 0) & (s[7] <= k), scan_column, start
        )
        dist = jnp.where(cols == last[None], -1.0 - dist, dist)
        dist = jnp.where(dist < 0, -1.0 - dist, dist)
        v = v + jnp.minimum(dist - d_sink[None], 0.0)

        def flip_edge(s):
            j, done, col4row, row4col, steps = s
            i = at(path, j)
            live = ~done
            row4col = jnp.where(live[None] & (cols == j[None]), i[None], row4col)
            previous = at(col4row, i)
            col4row = jnp.where(live[None] & (cols == i[None]), j[None], col4row)
            return jnp.where(live, previous, j), done | (i == k), col4row, row4col, steps + 1

        _, _, col4row, row4col, _ = jax.lax.while_loop(
            lambda s: ~jnp.all(s[1]) & (s[4] <= k), flip_edge, (sink, jnp.zeros((num,), bool), col4row, row4col, jnp.int32(0))
        )
        return v, col4row, row4col

    unassigned = jnp.full((n, num), -1, jnp.int32)
    _, col4row, _ = jax.lax.fori_loop(0, n, insert_row, (jnp.zeros((n, num), c.dtype), unassigned, unassigned))
    return col4row.T
