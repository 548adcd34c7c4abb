"""Divergences between two low-dimensional densities by quadrature on a grid.

The toy benchmarks of semi-implicit VI (SIVI, KSIVI, AISIVI) score a fitted
``q`` by the forward KL ``KL(p || q) = E_p[log p - log q]`` against an exactly
normalised target ``p``; in two dimensions a midpoint rule on a fine grid gives
it without the Monte Carlo noise of target samples.
"""

from __future__ import annotations

from collections.abc import Callable

import jax.numpy as jnp
import numpy as np

from jaxsamp.core.errors import InputError
from jaxsamp.core.validation import check_int


def grid_points(extent, num_points: int) -> tuple[np.ndarray, float]:
    """Midpoints of a ``num_points x num_points`` grid on ``extent = (x0, x1, y0, y1)`` and the cell area.

    Returns
    -------
    points : ndarray (num_points**2, 2)
    cell_area : float
    """
    num_points = check_int("num_points", num_points, ge=2)
    x0, x1, y0, y1 = (float(v) for v in extent)
    if not (x1 > x0 and y1 > y0):
        raise InputError(f"extent must be (x0, x1, y0, y1) with x1 > x0 and y1 > y0, got {tuple(extent)}")
    dx, dy = (x1 - x0) / num_points, (y1 - y0) / num_points
    xs = x0 + dx * (np.arange(num_points) + 0.5)
    ys = y0 + dy * (np.arange(num_points) + 0.5)
    X, Y = np.meshgrid(xs, ys)
    return np.stack([X.ravel(), Y.ravel()], axis=1).astype(np.float32), dx * dy


def forward_kl_on_grid(log_p: Callable, log_q: Callable, extent, num_points: int = 400) -> dict:
    """``KL(p || q)`` of two 2-D densities by the midpoint rule on a grid.

    Parameters
    ----------
    log_p, log_q : callable
        Batched log densities ``(n, 2) -> (n,)``; ``p`` normalised (``log Z = 0``),
        ``q`` any normalised density (a fitted variational family).
    extent : (x0, x1, y0, y1)
        The box; it should hold all but a negligible part of ``p``'s mass
        (``p_mass`` reports it).
    num_points : int
        Grid points per axis.

    Returns
    -------
    dict
        ``forward_kl``: ``sum_cells p (log p - log q) dA`` over cells with ``p > 0``;
        ``p_mass`` and ``q_mass``: each density's mass inside the box.
    """
    points, area = grid_points(extent, num_points)
    lp, lq = np.asarray(log_p(jnp.asarray(points)), np.float64), np.asarray(log_q(jnp.asarray(points)), np.float64)
    if lp.shape != (len(points),) or lq.shape != (len(points),):
        raise InputError(f"log_p and log_q must map (n, 2) points to (n,) values, got {lp.shape} and {lq.shape}")
    p = np.exp(lp)
    inside = p > 0
    return {
        "forward_kl": float(np.sum(p[inside] * (lp[inside] - lq[inside])) * area),
        "p_mass": float(np.sum(p) * area),
        "q_mass": float(np.sum(np.exp(lq)) * area),
    }

