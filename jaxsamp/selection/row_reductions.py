"""Row reductions that XLA's CPU backend runs slowly in their plain form: the first argmax, a categorical draw.

``jnp.argmax`` lowers to a variadic (value, index) reduction that XLA's CPU backend
does not vectorise: on a (256, 8192) block it measured about 8x the cost of a ``max``
followed by a ``min`` over the positions holding it, which is what
:func:`first_argmax` does (same result, the first maximiser). A categorical draw by
inverse CDF over a row of ``k`` weights needs a cumulative sum of the row, also slow;
:func:`categorical_rows` draws in two levels (a group of ``GROUP`` weights by its
sum, then a weight inside the group), the same law with ``k / GROUP + GROUP``
sequential additions instead of ``k``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

GROUP = 128  # weights per group in the two-level draw


def first_argmax(scores, axis: int = -1):
    """``jnp.argmax(scores, axis)`` (int32, the first maximiser) as a max and a min; NaN-free scores assumed."""
    size = scores.shape[axis]
    top = jnp.max(scores, axis=axis, keepdims=True)
    shape = [1] * scores.ndim
    shape[axis] = size
    positions = jnp.arange(size, dtype=jnp.int32).reshape(shape)
    return jnp.minimum(jnp.min(jnp.where(scores == top, positions, size), axis=axis), size - 1)


def _inverse_cdf(u, weights):
    """For each row of ``weights`` (r, k), the index where ``u * row sum`` falls in the row's cumulative sum."""
    cdf = jnp.cumsum(weights, axis=-1)
    return jnp.minimum(jnp.sum(cdf <= (u * cdf[:, -1])[:, None], axis=-1), weights.shape[-1] - 1)


def categorical_rows(key, weights):
    """One draw per row of non-negative ``weights`` (r, k), ``P(j) ∝ weights[j]``: (r,) int32.

    Two levels, each an inverse CDF with its own uniform: the group of :data:`GROUP`
    weights by the group sums, then the weight inside the chosen group.
    """
    r, k = weights.shape
    weights = jnp.pad(weights, ((0, 0), (0, (-k) % GROUP))).reshape(r, -1, GROUP)
    u_group, u_inside = jax.random.uniform(key, (2, r), weights.dtype)
    group = _inverse_cdf(u_group, weights.sum(axis=-1))
    inside = _inverse_cdf(u_inside, jnp.take_along_axis(weights, group[:, None, None], axis=1)[:, 0])
    return jnp.minimum(group * GROUP + inside, k - 1).astype(jnp.int32)
