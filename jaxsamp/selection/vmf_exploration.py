"""Action selection over embedded actions: von Mises-Fisher exploration (vMF-exp) and Boltzmann exploration.

Bendada et al. (2025), "Exploring large action sets with hyperspherical embeddings
using von Mises-Fisher sampling" (ICML; arXiv 2507.00518). Given a unit query ``V``
(d,) and unit action embeddings ``X`` (n, d):

* **Boltzmann exploration** plays action ``i`` with probability ``P_B(i) ∝ exp(kappa <V, X_i>)``,
  which needs all ``n`` scores and a softmax over them for every draw;
* **vMF-exp** draws one direction ``V~ ~ vMF(V, kappa)`` (Wood's sampler,
  :func:`jaxsamp.targets.sphere.sample_vmf`) and plays ``argmax_i <V~, X_i>``: a single
  maximum-inner-product search, which an (approximate) nearest-neighbour index
  answers without touching every action. ``kappa = 0`` plays uniformly.

For embeddings drawn uniformly on the sphere the vMF-exp probabilities approach
Boltzmann's as ``n`` grows (the paper's Proposition 4.1), with the first-order
approximation ``P_vMF(i) ~ f_vMF(X_i; V, kappa) |S^{d-1}| / n``
(:func:`first_order_probabilities`).

Selections are batched (``num_draws`` at once) and jittable; vMF-exp's exact
search runs over blocks of draws and of actions with a running maximum, so memory
stays bounded for any number of draws and actions (``n = 10^6`` fits easily), and
Boltzmann draws use the inverse CDF of the ``n`` probabilities (``O(n + m log n)``).
Many queries at once (:func:`vmf_exp_select_batch`, :func:`boltzmann_select_batch`:
one selection per query) share the same blocked matrix products, Boltzmann's by
weighted reservoir sampling over the blocks, so both methods get the same batching.
Given an :class:`~jaxsamp.selection.inverted_file_index.InvertedFileIndex` of the
actions instead of the array, vMF-exp searches only ``nprobe`` of its lists: the
sub-linear search that makes it cheaper than Boltzmann exploration, which must
score every action; :mod:`~jaxsamp.selection.index_fidelity` chooses ``nprobe`` so
that the selection law stays within a stated total variation of exact vMF-exp's.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from jaxsamp.core.errors import InputError
from jaxsamp.selection.row_reductions import categorical_rows, first_argmax
from jaxsamp.selection.inverted_file_index import InvertedFileIndex, ivf_argmax
from jaxsamp.targets.sphere import log_vmf_normalizer, sample_vmf

SCORES_PER_CHUNK = 2**24  # approximate search: inner products computed at once (64 MB in float32)
ACTION_BLOCK, DRAW_BLOCK = 8192, 256  # exact search: a 256 x 8192 score block (8 MB) at a time
SEARCHES = ("exact", "approximate")


def _check(query, actions):
    if query.ndim != 1 or actions.ndim != 2 or actions.shape[1] != query.shape[0]:
        raise InputError(f"need a query (d,) and actions (n, d); got {query.shape} and {actions.shape}")


def _over_action_blocks(rows, actions, init, update):
    """Stream the ``(m, n)`` score matrix ``rows @ actions.T`` block by block, keeping a per-row carry.

    :data:`DRAW_BLOCK` rows at a time scan the actions in blocks of :data:`ACTION_BLOCK`
    (a 256 x 8192 block, 8 MB, stays in cache; the full score matrix would be memory
    bound). ``init(r, dtype)`` makes the carry of ``r`` rows; ``update(carry, scores,
    valid, start, chunk)`` folds in one (r, block) score block whose columns
    ``start + j`` are actions where ``valid``; the carry's first field is returned, (m,).
    """
    m, d = rows.shape
    n = actions.shape[0]
    block = min(ACTION_BLOCK, n)
    padded_actions = jnp.pad(actions, ((0, (-n) % block), (0, 0))).reshape(-1, block, d)
    starts = jnp.arange(padded_actions.shape[0]) * block
    r = min(DRAW_BLOCK, m)
    padded_rows = jnp.pad(rows, ((0, (-m) % r), (0, 0))).reshape(-1, r, d)

    def per_chunk(args):
        chunk, index = args

        def step(carry, inputs):
            block_actions, start = inputs
            valid = start + jnp.arange(block) < n
            return update(carry, chunk @ block_actions.T, valid, start, index), None

        carry, _ = jax.lax.scan(step, init(r, chunk.dtype), (padded_actions, starts))
        return carry[0]

    return jax.lax.map(per_chunk, (padded_rows, jnp.arange(padded_rows.shape[0]))).reshape(-1)[:m]


def _exact_argmax(directions, actions):
    """``argmax_i <direction, X_i>`` by a running maximum over the streamed score blocks."""
    def init(r, dtype):
        return jnp.zeros((r,), jnp.int32), jnp.full((r,), -jnp.inf, dtype)

    def update(carry, scores, valid, start, chunk):
        best_index, best_score = carry
        scores = jnp.where(valid, scores, -jnp.inf)  # padding never wins
        local = first_argmax(scores)
        local_score = jnp.take_along_axis(scores, local[:, None], axis=-1)[:, 0]
        better = local_score > best_score
        return jnp.where(better, start + local, best_index), jnp.where(better, local_score, best_score)

    return _over_action_blocks(directions, actions, init, update)


def max_inner_product(directions, actions, search: str, recall: float):
    """``argmax_i <direction, X_i>`` for each row of ``directions`` (m, d).

    Exact search streams the score matrix in cache-sized blocks with a running
    maximum (:func:`_over_action_blocks`). The approximate search takes
    ``jax.lax.approx_max_k`` over full score rows, a bounded number of rows at a time.
    """
    m, d = directions.shape
    n = actions.shape[0]
    if search == "approximate":
        rows = max(1, min(m, SCORES_PER_CHUNK // n))
        padded = jnp.pad(directions, ((0, (-m) % rows), (0, 0)))

        def approx(chunk):
            return jax.lax.approx_max_k(chunk @ actions.T, 1, recall_target=recall)[1][:, 0]

        return jax.lax.map(approx, padded.reshape(-1, rows, d)).reshape(-1)[:m]
    return _exact_argmax(directions, actions)


def _search(directions, actions, search: str, recall: float, nprobe: int, batch_size: int):
    """vMF-exp's search for ``directions`` (m, d) over an array of actions or their inverted-file index."""
    if isinstance(actions, InvertedFileIndex):
        return ivf_argmax(actions, directions, nprobe, batch_size=batch_size)
    if search == "ivf":
        raise InputError("search 'ivf' needs the actions as an InvertedFileIndex (inverted_file_index.build_ivf_index)")
    if search not in SEARCHES:
        raise InputError(f"search must be one of {SEARCHES}, got {search!r}")
    return max_inner_product(directions, actions, search, recall)


def _checked(query, actions):
    """The query as an array and the actions as an array or index, their shapes checked."""
    query = jnp.asarray(query)
    if not isinstance(actions, InvertedFileIndex):
        actions = jnp.asarray(actions)
    _check(query, actions.centroids if isinstance(actions, InvertedFileIndex) else actions)
    return query, actions


def vmf_exp_select(key, query, actions, kappa: float, num_draws: int, *, search: str = "exact", recall: float = 0.95,
                   nprobe: int = 32, batch_size: int = 256):
    """``num_draws`` actions chosen by vMF-exp: ``argmax_i <V~, X_i>`` with ``V~ ~ vMF(query, kappa)``.

    Parameters
    ----------
    key : PRNG key
    query : (d,) unit vector ``V``.
    actions : (n, d) unit action embeddings ``X``, or an ``InvertedFileIndex`` of them
        (:func:`~jaxsamp.selection.inverted_file_index.build_ivf_index`), searched in
        ``nprobe`` lists (``search`` and ``recall`` are then unused).
    kappa : float
        Concentration (``0``: uniform choice).
    num_draws : int
    search : {"exact", "approximate"}
        Exact maximum inner product, or ``jax.lax.approx_max_k`` (an approximate
        top-1 that is fast on TPU and exact on CPU) with ``recall``.
    nprobe : int
        Lists scanned per draw when ``actions`` is an index (choose it with
        :func:`~jaxsamp.selection.index_fidelity.choose_nprobe`).
    batch_size : int
        Draws searched together through an index (they share the lists they probe).

    Returns
    -------
    (num_draws,) int32 action indices.
    """
    query, actions = _checked(query, actions)
    return _search(sample_vmf(key, query, kappa, num_draws), actions, search, recall, nprobe, batch_size)


def vmf_exp_select_batch(key, queries, actions, kappa: float, *, search: str = "exact", recall: float = 0.95,
                         nprobe: int = 32, batch_size: int = 256):
    """One vMF-exp selection for each of ``queries`` (B, d): (B,) int32 action indices.

    Each query draws its own ``V~ ~ vMF(query, kappa)`` (one key per query, split from
    ``key``); the ``B`` directions are then searched together, as one blocked matrix
    product (exact) or sharing the lists they probe (index). Arguments as in
    :func:`vmf_exp_select`.
    """
    queries = jnp.asarray(queries)
    if queries.ndim != 2:
        raise InputError(f"queries must be (B, d), got shape {queries.shape}")
    _, actions = _checked(queries[0], actions)
    keys = jax.random.split(key, queries.shape[0])
    directions = jax.vmap(lambda k, q: sample_vmf(k, q, kappa, 1)[0])(keys, queries)
    return _search(directions, actions, search, recall, nprobe, batch_size)


def boltzmann_select(key, query, actions, kappa: float, num_draws: int):
    """``num_draws`` actions from ``P_B(i) ∝ exp(kappa <V, X_i>)``: all ``n`` scores, then the inverse CDF."""
    query, actions = jnp.asarray(query), jnp.asarray(actions)
    _check(query, actions)
    cdf = jnp.cumsum(boltzmann_probabilities(query, actions, kappa))
    u = jax.random.uniform(key, (num_draws,), cdf.dtype) * cdf[-1]
    return jnp.minimum(jnp.searchsorted(cdf, u, side="right"), actions.shape[0] - 1).astype(jnp.int32)


def boltzmann_select_batch(key, queries, actions, kappa: float):
    """One Boltzmann selection for each of ``queries`` (B, d): (B,) int32 action indices, exact.

    The same blocked matrix product as vMF-exp's exact batched search
    (:func:`_over_action_blocks`), so the two are compared like for like: each score
    block gets its own softmax, one candidate drawn from it (two-level inverse CDF,
    :func:`~jaxsamp.selection.row_reductions.categorical_rows`), and the
    running pick is replaced by the block's candidate with probability (block mass) /
    (mass so far), weighted reservoir sampling, which draws exactly from
    ``P_B(i) ∝ exp(kappa <V, X_i>)`` in one pass, without the (B, n) probabilities.
    """
    queries, actions = jnp.asarray(queries), jnp.asarray(actions)
    if queries.ndim != 2:
        raise InputError(f"queries must be (B, d), got shape {queries.shape}")
    _check(queries[0], actions)

    def init(r, dtype):
        return jnp.zeros((r,), jnp.int32), jnp.full((r,), -jnp.inf, dtype)

    def update(carry, scores, valid, start, chunk):
        pick, log_mass = carry
        logits = jnp.where(valid, kappa * scores, -jnp.inf)
        top = jnp.max(logits, axis=-1)
        weights = jnp.exp(logits - top[:, None])
        k_in, k_swap = jax.random.split(jax.random.fold_in(jax.random.fold_in(key, chunk), start))
        candidate = categorical_rows(k_in, weights)
        block_mass = top + jnp.log(jnp.sum(weights, axis=-1))
        total = jnp.logaddexp(log_mass, block_mass)
        swap = jax.random.uniform(k_swap, top.shape, weights.dtype) < jnp.exp(block_mass - total)
        return jnp.where(swap, start + candidate, pick), total

    return _over_action_blocks(queries, actions, init, update)


def boltzmann_probabilities(query, actions, kappa: float):
    """``P_B(i)`` for every action (n,)."""
    return jax.nn.softmax(kappa * (jnp.asarray(actions) @ jnp.asarray(query)))


def first_order_probabilities(query, actions, kappa: float):
    """The paper's approximation ``P_vMF(i) ~ f_vMF(X_i; V, kappa) |S^{d-1}| / n`` for every action (n,).

    Exact in the limit of many actions spread uniformly over the sphere (each
    action's Voronoi cell then has area ``|S^{d-1}| / n``).
    """
    query, actions = jnp.asarray(query), jnp.asarray(actions)
    n, d = actions.shape
    log_area = math.log(2.0) + 0.5 * d * math.log(math.pi) - math.lgamma(0.5 * d)
    return jnp.exp(log_vmf_normalizer(d, kappa) + kappa * (actions @ query) + log_area - math.log(n))


def uniform_actions(key, n: int, d: int):
    """``n`` action embeddings drawn uniformly on ``S^{d-1}`` (the paper's simulation setting)."""
    x = jax.random.normal(key, (n, d))
    return x / jnp.linalg.norm(x, axis=-1, keepdims=True)
