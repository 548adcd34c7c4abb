"""An inverted-file (IVF) index for approximate maximum-inner-product search over unit vectors.

The coarse quantiser of Jégou, Douze & Schmid (2011), "Product quantization for
nearest neighbor search" (IEEE TPAMI 33(1), §III-A), as FAISS's ``IndexIVFFlat``
runs it: spherical k-means (Lloyd's iterations with unit centroids, on a random
training subset) partitions the ``n`` vectors into ``L`` lists; a query scores the
``L`` centroids, scans the ``nprobe`` lists whose centroids score highest, and
returns the best vector it saw. A query costs about ``(L + nprobe n / L) d``
multiply-adds instead of ``n d``; ``nprobe = L`` is an exact search.

Storage is paged: the vectors are sorted by list and each list is padded with zero
rows to a whole number of fixed-size pages, so list ``l`` is pages
``first_page[l] .. first_page[l] + num_pages[l] - 1``. A search reads only the pages
of the lists it probes, one page at a time inside a loop whose trip count is the
number of probed pages (nothing is gathered into a buffer first), and keeps a running
best. A batch of queries is grouped by list, as FAISS's GPU IVF search does: each
probed page is scored against the queries that probe its list, ``query_tile`` of
them at a time, as one (page x d) @ (d x query_tile) matrix product, so queries that
share a list share its reads. Every query still sees exactly its own ``nprobe`` lists,
so the result does not depend on the batch. Building is not jittable (the page count
is data-dependent); searching is.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core.errors import InputError
from jaxsamp.core.validation import check_array
from jaxsamp.selection.row_reductions import first_argmax

ASSIGN_BLOCK = 8192  # vectors assigned to their nearest centroid at a time
MAX_PAGE_SIZE = 512  # rows per page at most: one page's product already outweighs the loop's per-step cost on CPU


@dataclasses.dataclass(frozen=True)
class InvertedFileIndex:
    """Unit vectors grouped by nearest centroid, in pages (a PyTree; ``page_size`` is static).

    Attributes
    ----------
    centroids : (L, d) unit centroids.
    pages : (P, page_size, d) the vectors sorted by list, each list padded with zero rows to whole pages.
    page_ids : (P, page_size) int32 position of each stored vector in the original array (``-1`` in the padding).
    first_page, num_pages : (L,) int32 each list's first page and its number of pages.
    sizes : (L,) int32 each list's number of vectors.
    page_size : int
        Rows per page.
    """

    centroids: jax.Array
    pages: jax.Array
    page_ids: jax.Array
    first_page: jax.Array
    num_pages: jax.Array
    sizes: jax.Array
    page_size: int

    @property
    def num_vectors(self) -> int:
        return int(self.sizes.sum())


jax.tree_util.register_dataclass(
    InvertedFileIndex, data_fields=["centroids", "pages", "page_ids", "first_page", "num_pages", "sizes"],
    meta_fields=["page_size"],
)


def _nearest_centroid(vectors, centroids):
    """Index of the highest-scoring centroid for every vector, ``ASSIGN_BLOCK`` rows at a time."""
    n, d = vectors.shape
    rows = min(ASSIGN_BLOCK, n)
    padded = jnp.pad(vectors, ((0, (-n) % rows), (0, 0))).reshape(-1, rows, d)
    return jax.lax.map(lambda block: first_argmax(block @ centroids.T), padded).reshape(-1)[:n]


@jax.jit
def _lloyd_step(centroids, train):
    """One spherical k-means iteration; a list that lost every training vector keeps its centroid."""
    owner = _nearest_centroid(train, centroids)
    sums = jax.ops.segment_sum(train, owner, num_segments=centroids.shape[0])
    norms = jnp.linalg.norm(sums, axis=-1, keepdims=True)
    return jnp.where(norms > 0, sums / jnp.where(norms > 0, norms, 1.0), centroids)


def build_ivf_index(key, vectors, num_lists: int, *, iterations: int = 10, train_size: int | None = None,
                    page_size: int | None = None) -> InvertedFileIndex:
    """Partition unit ``vectors`` (n, d) into ``num_lists`` lists by spherical k-means, stored in pages.

    Parameters
    ----------
    key : PRNG key
        Chooses the training subset and the initial centroids (training vectors).
    vectors : (n, d) unit vectors.
    num_lists : int
        ``L``; about ``sqrt(n)`` balances the centroid scan against the list scans.
    iterations : int
        Lloyd iterations.
    train_size : int, optional
        Training vectors for k-means (default ``min(n, 64 L)``, FAISS's rule of thumb).
    page_size : int, optional
        Rows per page (the unit a search reads). Padding costs on average half a page per
        list, so the default is the power of two nearest below half the mean list length
        (at least 8, at most :data:`MAX_PAGE_SIZE`): about a quarter more rows than stored.
    """
    vectors = jnp.asarray(check_array("vectors", vectors, ndim=2))
    n, d = vectors.shape
    if not 1 <= num_lists <= n:
        raise InputError(f"num_lists must be between 1 and the number of vectors ({n}), got {num_lists}")
    if iterations < 0:
        raise InputError(f"iterations must be >= 0, got {iterations}")
    if page_size is None:
        page_size = int(min(MAX_PAGE_SIZE, max(8, 2 ** np.floor(np.log2(max(n / num_lists / 2, 1.0))))))
    if page_size < 1:
        raise InputError(f"page_size must be >= 1, got {page_size}")
    train_size = min(n, 64 * num_lists) if train_size is None else train_size
    if not num_lists <= train_size <= n:
        raise InputError(f"train_size must be between num_lists ({num_lists}) and n ({n}), got {train_size}")
    train = vectors[jax.random.choice(key, n, (train_size,), replace=False)]
    centroids = train[:num_lists]
    for _ in range(iterations):
        centroids = _lloyd_step(centroids, train)
    owner = np.asarray(jax.jit(_nearest_centroid)(vectors, centroids))
    order = np.argsort(owner, kind="stable")
    sizes = np.bincount(owner, minlength=num_lists)
    num_pages = -(-sizes // page_size)
    first_page = np.cumsum(num_pages) - num_pages
    # stored row of each sorted vector: its list's first row plus its rank inside the list
    rank = np.arange(n) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    rows = np.repeat(first_page * page_size, sizes) + rank
    total_rows = int(num_pages.sum()) * page_size
    page_ids = np.full(total_rows, -1, np.int64)
    page_ids[rows] = order
    pages = jnp.zeros((total_rows, d), vectors.dtype).at[jnp.asarray(rows)].set(vectors[order])
    return InvertedFileIndex(
        centroids=centroids,
        pages=pages.reshape(-1, page_size, d),
        page_ids=jnp.asarray(page_ids.reshape(-1, page_size), jnp.int32),
        first_page=jnp.asarray(first_page, jnp.int32),
        num_pages=jnp.asarray(num_pages, jnp.int32),
        sizes=jnp.asarray(sizes, jnp.int32),
        page_size=page_size,
    )


def _query_tile(batch: int, nprobe: int, num_lists: int) -> int:
    """Queries scored against a page at once: about the mean number of the batch's queries probing a list."""
    mean_sharing = batch * nprobe / num_lists
    return int(min(batch, max(1, 2 ** round(np.log2(max(mean_sharing, 1.0))))))


def _search_batch(index: InvertedFileIndex, directions, nprobe: int):
    """Best stored vector in each direction's ``nprobe`` lists, for one batch (B, d): (B,) int32 original indices.

    The (direction, list) pairs are sorted by list; the work items are (page, tile of the
    directions probing its list), enumerated list by list and, within a list, page by
    page, so a page is read once per tile while it is still in cache.
    """
    batch = directions.shape[0]
    num_lists = index.centroids.shape[0]
    tile = _query_tile(batch, nprobe, num_lists)
    probed = jax.lax.top_k(directions @ index.centroids.T, nprobe)[1].reshape(-1)
    order = jnp.argsort(probed, stable=True)
    pair_direction = (jnp.arange(batch * nprobe, dtype=jnp.int32) // nprobe)[order]
    sharing = jnp.bincount(probed, length=num_lists)  # directions probing each list
    first_pair = jnp.cumsum(sharing) - sharing
    tiles = -(-sharing // tile)
    items = tiles * index.num_pages
    items_end = jnp.cumsum(items)
    # one extra slot (index `batch`) absorbs the unused places of a partly filled tile
    padded = jnp.concatenate([directions, jnp.zeros((1, directions.shape[1]), directions.dtype)])
    slots = jnp.arange(tile)

    def scan_item(item, carry):
        best_score, best_id = carry
        lst = jnp.searchsorted(items_end, item, side="right")
        local = item - (items_end[lst] - items[lst])
        page = index.first_page[lst] + local // tiles[lst]
        place = (local % tiles[lst]) * tile + slots
        who = jnp.where(place < sharing[lst], pair_direction[jnp.minimum(first_pair[lst] + place, batch * nprobe - 1)],
                        batch)
        ids = index.page_ids[page]
        scores = jnp.where(ids[:, None] >= 0, index.pages[page] @ padded[who].T, -jnp.inf)  # (page_size, tile)
        row = first_argmax(scores, axis=0)
        score = scores[row, slots]
        better = score > best_score[who]
        return (best_score.at[who].set(jnp.where(better, score, best_score[who])),
                best_id.at[who].set(jnp.where(better, ids[row], best_id[who])))

    init = (jnp.full((batch + 1,), -jnp.inf, index.pages.dtype), jnp.full((batch + 1,), -1, jnp.int32))
    _, best_id = jax.lax.fori_loop(0, items_end[-1], scan_item, init)
    return best_id[:batch]


def scanned_rows(index: InvertedFileIndex, directions, nprobe: int):
    """Rows (stored vectors and page padding) the search reads for each of ``directions`` (m, d): (m,) int32."""
    probed = jax.lax.top_k(jnp.asarray(directions) @ index.centroids.T, nprobe)[1]
    return index.num_pages[probed].sum(axis=-1) * index.page_size


def ivf_argmax(index: InvertedFileIndex, directions, nprobe: int, *, batch_size: int = 256):
    """Approximate ``argmax_i <direction, x_i>`` for each row of ``directions`` (m, d): (m,) int32 original indices.

    Scans the pages of each direction's ``nprobe`` best-scoring lists, ``batch_size``
    directions at a time; the directions of a batch that probe the same list share
    its pages through matrix products. The result is the same for every
    ``batch_size`` (``1`` is one direction at a time).
    """
    num_lists = index.centroids.shape[0]
    if not 1 <= nprobe <= num_lists:
        raise InputError(f"nprobe must be between 1 and the number of lists ({num_lists}), got {nprobe}")
    if batch_size < 1:
        raise InputError(f"batch_size must be >= 1, got {batch_size}")
    directions = jnp.asarray(directions)
    m, d = directions.shape
    rows = min(batch_size, m)
    batches = jnp.pad(directions, ((0, (-m) % rows), (0, 0))).reshape(-1, rows, d)
    return jax.lax.map(lambda batch: _search_batch(index, batch, nprobe), batches).reshape(-1)[:m]
