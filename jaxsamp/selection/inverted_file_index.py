"""An inverted-file (IVF) index for approximate maximum-inner-product search over unit vectors.

The coarse quantiser of Jégou, Douze & Schmid (2011), "Product quantization for
nearest neighbor search" (IEEE TPAMI 33(1), §III-A), as FAISS's ``IndexIVFFlat``
runs it: spherical k-means (Lloyd's iterations with unit centroids, on a random
training subset) partitions the ``n`` vectors into ``L`` lists; a query scores the
``L`` centroids, scans the ``nprobe`` lists whose centroids score highest, and
returns the best vector it saw. A query costs about ``(L + nprobe n / L) d``
multiply-adds instead of ``n d``; ``nprobe = L`` is an exact search.

The vectors are stored sorted by list, so list ``l`` is the slice
``[starts[l], starts[l] + sizes[l])``; every scan reads a fixed ``window`` (the
longest list) and masks what lies past its own list, so the search is jittable
with static shapes. Building is not jittable (the window is data-dependent).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core.errors import InputError
from jaxsamp.core.validation import check_array

ASSIGN_BLOCK = 8192  # vectors assigned to their nearest centroid at a time


@dataclasses.dataclass(frozen=True)
class InvertedFileIndex:
    """Unit vectors grouped by nearest centroid (a PyTree; ``window`` is static).

    Attributes
    ----------
    centroids : (L, d) unit centroids.
    vectors : (n + window, d) the vectors sorted by list, then ``window`` rows of zeros.
    ids : (n + window,) int32 position of each sorted vector in the original array (``-1`` in the padding).
    starts, sizes : (L,) int32 first row and length of each list.
    window : int
        The longest list's length.
    """

    centroids: jax.Array
    vectors: jax.Array
    ids: jax.Array
    starts: jax.Array
    sizes: jax.Array
    window: int

    @property
    def num_vectors(self) -> int:
        return self.vectors.shape[0] - self.window


jax.tree_util.register_dataclass(
    InvertedFileIndex, data_fields=["centroids", "vectors", "ids", "starts", "sizes"], meta_fields=["window"]
)


def _nearest_centroid(vectors, centroids):
    """Index of the highest-scoring centroid for every vector, ``ASSIGN_BLOCK`` rows at a time."""
    n, d = vectors.shape
    rows = min(ASSIGN_BLOCK, n)
    padded = jnp.pad(vectors, ((0, (-n) % rows), (0, 0))).reshape(-1, rows, d)
    return jax.lax.map(lambda block: jnp.argmax(block @ centroids.T, axis=-1), padded).reshape(-1)[:n]


@jax.jit
def _lloyd_step(centroids, train):
    """One spherical k-means iteration; a list that lost every training vector keeps its centroid."""
    owner = _nearest_centroid(train, centroids)
    sums = jax.ops.segment_sum(train, owner, num_segments=centroids.shape[0])
    norms = jnp.linalg.norm(sums, axis=-1, keepdims=True)
    return jnp.where(norms > 0, sums / jnp.where(norms > 0, norms, 1.0), centroids)


def build_ivf_index(key, vectors, num_lists: int, *, iterations: int = 10, train_size: int | None = None) -> InvertedFileIndex:
    """Partition unit ``vectors`` (n, d) into ``num_lists`` lists by spherical k-means.

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
    """
    vectors = jnp.asarray(check_array("vectors", vectors, ndim=2))
    n = vectors.shape[0]
    if not 1 <= num_lists <= n:
        raise InputError(f"num_lists must be between 1 and the number of vectors ({n}), got {num_lists}")
    if iterations < 0:
        raise InputError(f"iterations must be >= 0, got {iterations}")
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
    window = int(sizes.max())
    return InvertedFileIndex(
        centroids=centroids,
        vectors=jnp.concatenate([vectors[order], jnp.zeros((window, vectors.shape[1]), vectors.dtype)]),
        ids=jnp.asarray(np.concatenate([order, np.full(window, -1)]), jnp.int32),
        starts=jnp.asarray(np.cumsum(sizes) - sizes, jnp.int32),
        sizes=jnp.asarray(sizes, jnp.int32),
        window=window,
    )


def ivf_argmax(index: InvertedFileIndex, directions, nprobe: int, *, batch_size: int = 8):
    """Approximate ``argmax_i <direction, x_i>`` for each row of ``directions`` (m, d): (m,) int32 original indices.

    Scans the ``nprobe`` best-scoring lists of each direction (all of a direction's
    lists at once; ``batch_size`` directions at a time, which bounds memory at about
    ``batch_size * nprobe * window * d`` scores).
    """
    num_lists = index.centroids.shape[0]
    if not 1 <= nprobe <= num_lists:
        raise InputError(f"nprobe must be between 1 and the number of lists ({num_lists}), got {nprobe}")
    directions = jnp.asarray(directions)
    lists = jax.lax.top_k(directions @ index.centroids.T, nprobe)[1]
    offsets = jnp.arange(index.window)

    def search(args):
        direction, probed = args

        def best_in_list(list_id):
            rows = jax.lax.dynamic_slice_in_dim(index.vectors, index.starts[list_id], index.window)
            scores = jnp.where(offsets < index.sizes[list_id], rows @ direction, -jnp.inf)
            j = jnp.argmax(scores)
            return scores[j], index.starts[list_id] + j

        scores, rows = jax.vmap(best_in_list)(probed)
        return index.ids[rows[jnp.argmax(scores)]]

    return jax.lax.map(search, (directions, lists), batch_size=batch_size)
