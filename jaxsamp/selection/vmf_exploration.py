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
Given an :class:`~jaxsamp.selection.inverted_file_index.InvertedFileIndex` of the
actions instead of the array, vMF-exp searches only ``nprobe`` of its lists: the
sub-linear search that makes it cheaper than Boltzmann exploration, which must
score every action.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from jaxsamp.core.errors import InputError
from jaxsamp.selection.inverted_file_index import InvertedFileIndex, ivf_argmax
from jaxsamp.targets.sphere import log_vmf_normalizer, sample_vmf

SCORES_PER_CHUNK = 2**24  # approximate search: inner products computed at once (64 MB in float32)
ACTION_BLOCK, DRAW_BLOCK = 8192, 256  # exact search: a 256 x 8192 score block (8 MB) at a time
SEARCHES = ("exact", "approximate")


def _check(query, actions):
    if query.ndim != 1 or actions.ndim != 2 or actions.shape[1] != query.shape[0]:
        raise InputError(f"need a query (d,) and actions (n, d); got {query.shape} and {actions.shape}")


def max_inner_product(directions, actions, search: str, recall: float):
    """``argmax_i <direction, X_i>`` for each row of ``directions`` (m, d).

    Exact search scans the actions in blocks of :data:`ACTION_BLOCK` for
    :data:`DRAW_BLOCK` directions at a time, keeping a running maximum: the score
    matrix never leaves the cache (a full ``(m, n)`` score matrix would be memory
    bound). The approximate search takes ``jax.lax.approx_max_k`` over full score
    rows, a bounded number of rows at a time.
    """
    m, d = directions.shape
    n = actions.shape[0]
    if search == "approximate":
        rows = max(1, min(m, SCORES_PER_CHUNK // n))
        padded = jnp.pad(directions, ((0, (-m) % rows), (0, 0)))

        def approx(chunk):
            return jax.lax.approx_max_k(chunk @ actions.T, 1, recall_target=recall)[1][:, 0]

        return jax.lax.map(approx, padded.reshape(-1, rows, d)).reshape(-1)[:m]

    block = min(ACTION_BLOCK, n)
    padded_actions = jnp.pad(actions, ((0, (-n) % block), (0, 0))).reshape(-1, block, d)
    starts = jnp.arange(padded_actions.shape[0]) * block
    rows = min(DRAW_BLOCK, m)
    padded_dirs = jnp.pad(directions, ((0, (-m) % rows), (0, 0))).reshape(-1, rows, d)

    def best(chunk):
        def scan_block(carry, inputs):
            best_score, best_index = carry
            block_actions, start = inputs
            scores = chunk @ block_actions.T
            scores = jnp.where(start + jnp.arange(block) < n, scores, -jnp.inf)  # padding never wins
            local = jnp.argmax(scores, axis=-1)
            local_score = jnp.take_along_axis(scores, local[:, None], axis=-1)[:, 0]
            better = local_score > best_score
            return (jnp.where(better, local_score, best_score), jnp.where(better, start + local, best_index)), None

        init = (jnp.full((rows,), -jnp.inf, chunk.dtype), jnp.zeros((rows,), jnp.int32))
        (_, index), _ = jax.lax.scan(scan_block, init, (padded_actions, starts))
        return index

    return jax.lax.map(best, padded_dirs).reshape(-1)[:m]


def vmf_exp_select(key, query, actions, kappa: float, num_draws: int, *, search: str = "exact", recall: float = 0.95,
                   nprobe: int = 32):
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
        Lists scanned per draw when ``actions`` is an index.

    Returns
    -------
    (num_draws,) int32 action indices.
    """
    query = jnp.asarray(query)
    if isinstance(actions, InvertedFileIndex):
        _check(query, actions.centroids)
        return ivf_argmax(actions, sample_vmf(key, query, kappa, num_draws), nprobe)
    actions = jnp.asarray(actions)
    _check(query, actions)
    if search == "ivf":
        raise InputError("search 'ivf' needs the actions as an InvertedFileIndex (inverted_file_index.build_ivf_index)")
    if search not in SEARCHES:
        raise InputError(f"search must be one of {SEARCHES}, got {search!r}")
    directions = sample_vmf(key, query, kappa, num_draws)
    return max_inner_product(directions, actions, search, recall)


def boltzmann_select(key, query, actions, kappa: float, num_draws: int):
    """``num_draws`` actions from ``P_B(i) ∝ exp(kappa <V, X_i>)``: all ``n`` scores, then the inverse CDF."""
    query, actions = jnp.asarray(query), jnp.asarray(actions)
    _check(query, actions)
    cdf = jnp.cumsum(boltzmann_probabilities(query, actions, kappa))
    u = jax.random.uniform(key, (num_draws,), cdf.dtype) * cdf[-1]
    return jnp.minimum(jnp.searchsorted(cdf, u, side="right"), actions.shape[0] - 1).astype(jnp.int32)


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
