"""E(n)-equivariant graph network (EGNN) drift for particle systems, in flax nnx.

The network of Satorras, Hoogeboom & Welling (2021), "E(n) Equivariant Graph
Neural Networks", eqs. 3-6, in the "dynamics" form used by the iDEM and Adjoint
Sampling particle benchmarks (Akhound-Sadegh et al. 2024; Havens et al. 2025;
reference code ``EGNN_dynamics``): a fully connected graph over the particles, node features
initialised from the time ``t`` alone, edge attribute the initial squared
distance, a sigmoid attention gate on the messages, ``tanh``-bounded coordinate
updates, and an output ``x_L - x_0`` with its centre of mass removed.

Because every feature that enters an MLP is invariant (``t``, ``|x_i - x_j|^2``)
and coordinates are only ever updated by sums of ``(x_i - x_j)`` times invariant
scalars, the output is equivariant to rotations and reflections, invariant to
translations, and equivariant to permutations of the particles.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx


def _xavier_uniform(gain: float):
    """Glorot-uniform initialiser with a gain (torch ``xavier_uniform_(w, gain)``)."""
    return jax.nn.initializers.variance_scaling(gain**2, "fan_avg", "uniform")


_TINY = 1e-12  # squared distances below this count as 0 in the coordinate-update norm


def other_particles(n: int) -> np.ndarray:
    """``(n, n - 1)`` indices: row ``i`` lists every particle but ``i``, in increasing order.

    The graph's edges ``i <- j``, ``j != i``, as a dense array: gathering with it
    computes messages only on the ``n (n - 1)`` real edges, where a masked
    ``n x n`` layout would spend a quarter of the edge work on self-edges at n = 4.
    """
    return np.array([[j for j in range(n) if j != i] for i in range(n)], dtype=np.int32).reshape(n, n - 1)


def _dense(layer: nnx.Linear, x):
    """``layer`` on the last axis of ``x`` with the leading axes flattened.

    One 2-D matrix product instead of a many-axis ``dot_general``: XLA's CPU backend
    computes the weight gradient of the latter several times slower.
    """
    return layer(x.reshape(-1, x.shape[-1])).reshape(*x.shape[:-1], -1)


class EquivariantLayer(nnx.Module):
    """One E_GCL layer (Satorras et al. 2021, eqs. 3-6) on a dense, fully connected graph.

    Parameters
    ----------
    hidden : int
        Width of node features and messages.
    coords_range : float
        Bound of each coordinate-update coefficient, ``tanh(.) * coords_range``.
    rngs : nnx.Rngs
    """

    def __init__(self, hidden: int, coords_range: float, *, rngs: nnx.Rngs):
        self.coords_range = coords_range
        # The first edge Linear acts on [h_i, h_j, |x_i - x_j|^2, edge_attr]; it is split into
        # per-node projections so that its cost is O(n H^2) instead of O(n^2 H^2).
        self.edge_source = nnx.Linear(hidden, hidden, rngs=rngs)
        self.edge_target = nnx.Linear(hidden, hidden, use_bias=False, rngs=rngs)
        self.edge_distances = nnx.Linear(2, hidden, use_bias=False, rngs=rngs)
        self.edge_out = nnx.Linear(hidden, hidden, rngs=rngs)
        self.attention = nnx.Linear(hidden, 1, rngs=rngs)
        self.node_in = nnx.Linear(2 * hidden, hidden, rngs=rngs)
        self.node_out = nnx.Linear(hidden, hidden, rngs=rngs)
        self.coord_in = nnx.Linear(hidden, hidden, rngs=rngs)
        # Near-zero initialised coordinate head: the network starts as the zero field.
        self.coord_out = nnx.Linear(hidden, 1, use_bias=False, kernel_init=_xavier_uniform(1e-3), rngs=rngs)

    def __call__(self, h, x, edge_attr, others):
        """Update node features ``h`` (..., n, H) and coordinates ``x`` (..., n, d).

        ``others`` is :func:`other_particles` ``(n)`` and ``edge_attr`` (..., n, n - 1, 1)
        the initial squared distance of each edge in that layout.
        """
        diff = x[..., :, None, :] - x[..., others, :]
        radial = jnp.sum(diff**2, axis=-1, keepdims=True)
        # sqrt has an infinite derivative at 0: coincident particles (every pair at X_t = 0,
        # i.e. t = 0 in the bridge) take |x_i - x_j| = 0 with a zero gradient.
        far = radial > _TINY
        norm = jnp.where(far, jnp.sqrt(jnp.where(far, radial, 1.0)), 0.0) + 1.0
        m = (
            _dense(self.edge_source, h)[..., :, None, :]
            + _dense(self.edge_target, h)[..., others, :]
            + _dense(self.edge_distances, jnp.concatenate([radial, edge_attr], axis=-1))
        )
        m = nnx.silu(_dense(self.edge_out, nnx.silu(m)))
        m = m * nnx.sigmoid(_dense(self.attention, m))
        coef = jnp.tanh(_dense(self.coord_out, nnx.silu(_dense(self.coord_in, m)))) * self.coords_range
        x = x + jnp.sum(diff / norm * coef, axis=-2)
        node_input = jnp.concatenate([h, jnp.sum(m, axis=-2)], axis=-1)
        h = h + _dense(self.node_out, nnx.silu(_dense(self.node_in, node_input)))
        return h, x


class EGNN(nnx.Module):
    """EGNN drift ``u(t, x)`` for ``n_particles`` particles in ``spatial_dim`` dimensions.

    Parameters
    ----------
    n_particles, spatial_dim : int
    hidden : int
        Feature width (paper setting 128).
    num_layers : int
        Number of equivariant layers (paper setting 5).
    coords_range : float
        Total coordinate-update range, split evenly over the layers (iDEM: 15).
    rngs : nnx.Rngs

    Notes
    -----
    ``__call__(t, x)`` takes flattened states ``x`` of shape ``(..., n * d)`` and
    times ``t`` broadcastable to ``x.shape[:-1]``; it returns a drift of the
    shape of ``x`` with zero centre of mass per state. The coordinate heads are
    Xavier-initialised with gain 1e-3, so a fresh network's output is a few percent of
    ``|x|`` (a unit-gain head would saturate the tanh bound): training starts near the
    base process.
    """

    def __init__(
        self,
        n_particles: int,
        spatial_dim: int,
        hidden: int = 128,
        num_layers: int = 5,
        coords_range: float = 15.0,
        *,
        rngs: nnx.Rngs,
    ):
        self.n_particles, self.spatial_dim = n_particles, spatial_dim
        self.embedding = nnx.Linear(1, hidden, rngs=rngs)
        self.layers = nnx.List(
            [EquivariantLayer(hidden, coords_range / num_layers, rngs=rngs) for _ in range(num_layers)]
        )

    def __call__(self, t: jax.Array, x: jax.Array) -> jax.Array:
        n, d = self.n_particles, self.spatial_dim
        chex.assert_axis_dimension(x, -1, n * d)
        batch = x.shape[:-1]
        pos0 = x.reshape(*batch, n, d)
        t = jnp.broadcast_to(jnp.asarray(t, x.dtype), batch)
        h = _dense(self.embedding, jnp.broadcast_to(t[..., None, None], (*batch, n, 1)))
        others = other_particles(n)
        edge_attr = jnp.sum((pos0[..., :, None, :] - pos0[..., others, :]) ** 2, axis=-1, keepdims=True)
        pos = pos0
        for layer in self.layers:
            h, pos = layer(h, pos, edge_attr, others)
        vel = pos - pos0
        vel = vel - jnp.mean(vel, axis=-2, keepdims=True)
        return vel.reshape(x.shape)
