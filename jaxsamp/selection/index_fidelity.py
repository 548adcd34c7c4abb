"""How faithfully an inverted-file index reproduces exact vMF-exp's selection law, and the ``nprobe`` that keeps it so.

vMF-exp plays ``argmax_i <V~, X_i>`` with ``V~ ~ vMF(V, kappa)`` (Bendada et al.
2025, ICML); through an index it plays the best action in ``V~``'s ``nprobe``
probed lists instead. What exploration needs is that the law of the played action
stays close to exact vMF-exp's, so ``nprobe`` is chosen by a bound on the total
variation between the two selection laws, with recall@1 reported beside it.

The estimator is a coupling bound. Draw the perturbed directions once and send the
*same* draws through both searches: this couples the two selection laws, and for any
coupling ``(A, B)`` of laws ``P`` and ``Q``, ``TV(P, Q) <= P(A != B)`` (the coupling inequality; Levin,
Peres & Wilmer, *Markov Chains and Mixing Times*, Proposition 4.7). So the per-draw disagreement rate
``P(index argmax != exact argmax)`` bounds the total variation, for each query and
hence for its average over queries; its estimate from ``m`` draws has standard error
``sqrt(p (1 - p) / m)``. On the same draws it is ``1 - recall@1``, so the rule
"TV bound <= 0.02" is "recall@1 >= 0.98 on perturbed directions". The bound is cheap
(one exact search per draw, reused for every candidate ``nprobe``) and never
optimistic; it can be loose, since a missed maximiser is replaced by a near-best
action that exact vMF-exp also plays for other draws. Estimating the TV itself needs
per-action frequencies, far more draws than actions (10^6 here).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core.errors import InputError
from jaxsamp.selection.inverted_file_index import InvertedFileIndex, ivf_argmax
from jaxsamp.selection.vmf_exploration import max_inner_product
from jaxsamp.targets.sphere import sample_vmf

TV_THRESHOLD = 0.02  # the default fidelity rule: total variation to exact vMF-exp at most 0.02


class NprobeChoice(NamedTuple):
    """The chosen ``nprobe`` and its fidelity on the draws it was chosen on.

    Attributes
    ----------
    nprobe : int
        The smallest candidate whose TV bound is at most the threshold (the largest candidate if none is).
    tv_bound, tv_bound_se : float
        Disagreement rate with exact vMF-exp (an upper bound on the total variation) and its standard error.
    recall_at_1 : float
        Share of draws whose index search found the exact maximiser (``1 - tv_bound``).
    tv_bounds : dict
        The TV bound of every candidate tried, ``{nprobe: bound}``.
    """

    nprobe: int
    tv_bound: float
    tv_bound_se: float
    recall_at_1: float
    tv_bounds: dict


def perturbed_directions(key, queries, kappa: float, draws_per_query: int):
    """``draws_per_query`` draws of ``vMF(query, kappa)`` for each of ``queries`` (B, d): (B * draws_per_query, d)."""
    queries = jnp.asarray(queries)
    keys = jax.random.split(key, queries.shape[0])
    return jax.vmap(lambda k, q: sample_vmf(k, q, kappa, draws_per_query))(keys, queries).reshape(-1, queries.shape[1])


def selection_tv_bound(index: InvertedFileIndex, directions, exact_choice, nprobe: int) -> tuple[float, float]:
    """Upper bound on the total variation between index and exact vMF-exp selections, and its standard error.

    Parameters
    ----------
    index : the actions' inverted-file index.
    directions : (m, d) perturbed directions (:func:`perturbed_directions`), the coupling's common draws.
    exact_choice : (m,) the exact maximiser for each direction (``max_inner_product(..., "exact", ...)``).
    nprobe : int
        Lists the index scans per draw.

    Returns
    -------
    (bound, standard error): the disagreement rate ``P(index argmax != exact argmax)``, which bounds
    the total variation under this coupling (module docstring), and ``sqrt(p (1 - p) / m)``.
    """
    found = ivf_argmax(index, directions, nprobe)
    p = float(jnp.mean(found != jnp.asarray(exact_choice)))
    return p, float(np.sqrt(p * (1.0 - p) / directions.shape[0]))


def choose_nprobe(key, index: InvertedFileIndex, actions, queries, kappa: float, *, threshold: float = TV_THRESHOLD,
                  draws_per_query: int = 16, candidates=None) -> NprobeChoice:
    """The smallest ``nprobe`` whose selection-law TV bound to exact vMF-exp is at most ``threshold``.

    Parameters
    ----------
    key : PRNG key
        The perturbed directions' draws (fixed: every candidate sees the same draws).
    index : the inverted-file index of ``actions``.
    actions : (n, d) the unit action embeddings, for the exact search.
    queries : (B, d) unit queries representative of those the index will serve (not the scored ones).
    kappa : float
        vMF-exp's concentration.
    threshold : float
        The largest acceptable TV bound (default :data:`TV_THRESHOLD`).
    draws_per_query : int
        Perturbed directions per query.
    candidates : sequence of int, optional
        ``nprobe`` values to try in increasing order (default powers of two up to the
        number of lists, and the number of lists, which is exact).

    Returns
    -------
    :class:`NprobeChoice`; candidates are tried in order and the search stops at the first that passes.
    """
    num_lists = index.centroids.shape[0]
    if not 0.0 <= threshold <= 1.0:
        raise InputError(f"threshold must be in [0, 1], got {threshold}")
    if draws_per_query < 1:
        raise InputError(f"draws_per_query must be >= 1, got {draws_per_query}")
    if candidates is None:
        candidates = [*(2**k for k in range(int(np.log2(num_lists)) + 1) if 2**k < num_lists), num_lists]
    candidates = [int(c) for c in candidates]
    if not candidates or candidates != sorted(candidates) or not all(1 <= c <= num_lists for c in candidates):
        raise InputError(f"candidates must be increasing nprobe values in [1, {num_lists}], got {candidates}")
    directions = perturbed_directions(key, queries, kappa, draws_per_query)
    exact = max_inner_product(directions, jnp.asarray(actions), "exact", 0.0)
    bounds = {}
    for nprobe in candidates:
        bound, se = selection_tv_bound(index, directions, exact, nprobe)
        bounds[nprobe] = bound
        if bound <= threshold:
            break
    return NprobeChoice(nprobe, bound, se, 1.0 - bound, bounds)
