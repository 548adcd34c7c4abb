"""Locally equivariant networks on a periodic 2-D lattice (LEAPS, Holderrieth, Albergo & Jaakkola 2025).

A network ``G(x, t)`` over states ``x`` of an ``Lx x Ly`` torus is *locally
equivariant* when changing site ``i`` changes the sign of its own output:

* spins ``x in {-1, +1}^N`` (output shape ``(Lx, Ly)``)::

      G_i(flip_i x) = -G_i(x)

* categories ``x in {0..q-1}^N`` (output shape ``(Lx, Ly, q)``), with
  ``x^{i<-c}`` the state with site ``i`` set to ``c``::

      G_{x_i, i}(x^{i<-c}) = -G_{c, i}(x)

Then ``ReLU(G)`` are the CTMC out-rates of a rate matrix and ``ReLU(-G)`` its
in-rates, all from one forward pass (LEAPS' local-equivariance construction).
Every network here obtains the property the same way: a per-site feature
``h_i`` that does not depend on ``x_i``, then

* spins: ``G_i = x~_i * (w . h_i)`` with ``x~ = (1 + t) x`` (an odd function of ``x_i``);
* categories: ``G_{c,i} = f_{c,i} - f_{x_i,i}`` with ``f_{.,i} = W h_i`` (a difference
  of ``x_i``-invariant scores).

Three constructions of ``h_i``:

* :class:`LocallyEquivariantConv` -- the deep "LEC" of the paper: a masked first
  convolution, then layers that turn the site-``i`` features into a per-site
  kernel applied to the *raw* input at offsets ``delta != 0``. Circular padding
  everywhere (the reference implementation zero-pads its first layer, which
  breaks translation symmetry; not copied).
* :class:`LocallyEquivariantMLP` -- ``g_i(x_{-i}) = [MLP(x with x_i zeroed)]_i``,
  all ``N`` masked inputs in one pass by subtracting site ``i``'s first-layer
  contribution.
* :class:`LocallyEquivariantAttention` -- site ``i`` attends only to tokens of
  ``x_j``, ``j != i`` (masked diagonal); its query is built from ``i``-invariant
  features (time, then the previous layer's ``h_i``), never from ``x_i``;
  relative-position biases keep it translation equivariant.

Each network takes ONE state and a scalar time (batch with ``jax.vmap``).
"""

from __future__ import annotations

import functools
import math
from typing import Sequence

import chex
import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxsamp.core.errors import InputError
from jaxsamp.nets.mlp import MLP, TimeEmbedding


@functools.lru_cache(maxsize=64)
def neighbourhood_index(lattice_shape: tuple[int, int], kernel_size: int) -> np.ndarray:
    """Flat indices of ``p + delta`` (periodic wrap) for every site ``p`` and offset ``delta``.

    Returns an int array of shape ``(N, K^2)``; offsets ``delta = (dy, dx)`` in
    ``[-K//2, K//2]^2`` in row-major order, so column ``K^2 // 2`` is the centre.

    Raises
    ------
    ValueError
        If ``K`` is even or ``K // 2 >= min(Lx, Ly)`` (a non-zero offset would wrap
        onto the site itself and break local equivariance).
    """
    lx, ly = lattice_shape
    if kernel_size % 2 != 1 or kernel_size // 2 >= min(lx, ly):
        raise InputError(
            f"kernel size {kernel_size} must be odd with K // 2 < min(Lx, Ly) = {min(lx, ly)} "
            "so that no non-zero offset wraps onto the centre site"
        )
    r = kernel_size // 2
    off = np.arange(-r, r + 1)
    py, px = np.meshgrid(np.arange(lx), np.arange(ly), indexing="ij")
    dy, dx = np.meshgrid(off, off, indexing="ij")
    rows = (py.reshape(-1, 1) + dy.reshape(1, -1)) % lx
    cols = (px.reshape(-1, 1) + dx.reshape(1, -1)) % ly
    out = rows * ly + cols
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=16)
def relative_position_index(lattice_shape: tuple[int, int]) -> np.ndarray:
    """``rel[i, j]``: flat index of the periodic offset ``j - i`` on the torus, shape ``(N, N)``."""
    lx, ly = lattice_shape
    py, px = np.meshgrid(np.arange(lx), np.arange(ly), indexing="ij")
    py, px = py.ravel(), px.ravel()
    out = ((py[None, :] - py[:, None]) % lx) * ly + (px[None, :] - px[:, None]) % ly
    out.setflags(write=False)
    return out


#: The LE-conv kernel sizes of LEAPS at L = 15 (Holderrieth, Albergo & Jaakkola 2025; ``malbergo/leaps`` configs).
PAPER_KERNEL_SIZES = (3, 5, 7, 9, 15)


def default_kernel_sizes(lattice_shape: tuple[int, int]) -> tuple[int, ...]:
    """The LE-conv's default kernel sizes on ``lattice_shape``: the paper's that fit it.

    Those of :data:`PAPER_KERNEL_SIZES` with ``K // 2 < min(Lx, Ly)`` (no non-zero offset
    wraps onto its own site): all five from 8 x 8 up, so the paper's network at 15 x 15;
    ``(3, 5, 7, 9)`` at 5 to 7, ``(3, 5, 7)`` at 4, ``(3, 5)`` at 3 and ``(3,)`` at 2.
    The network gets shallower with the lattice, as its receptive field need not
    exceed the lattice.
    """
    return tuple(k for k in PAPER_KERNEL_SIZES if k // 2 < min(lattice_shape))


def _uniform(scale: float):
    def init(key, shape, dtype=jnp.float32):
        return scale * jax.random.uniform(key, shape, dtype)

    return init


def spin_output(s: jax.Array, g: jax.Array, t: jax.Array) -> jax.Array:
    """``G_i = (1 + t) s_i g_i``: odd in ``s_i`` when ``g_i`` does not depend on ``s_i``."""
    return (1.0 + t) * s * g


def score_differences(f: jax.Array, x: jax.Array) -> jax.Array:
    """``G_{c,i} = f_{c,i} - f_{x_i,i}`` for scores ``f`` of shape (N, q) and categories ``x`` (N,)."""
    return f - jnp.take_along_axis(f, x.reshape(-1, 1).astype(jnp.int32), axis=1)


class _LatticeNetwork(nnx.Module):
    """Input checks and the shared read-out ``h -> G`` of the feature networks."""

    def __init__(self, lattice_shape, num_categories: int | None):
        self.lattice_shape = tuple(int(v) for v in lattice_shape)
        if len(self.lattice_shape) != 2:
            raise InputError(f"lattice_shape must be (Lx, Ly), got {lattice_shape!r}")
        self.num_sites = self.lattice_shape[0] * self.lattice_shape[1]
        self.num_categories = None if num_categories is None else int(num_categories)

    @property
    def output_shape(self) -> tuple[int, ...]:
        """``(Lx, Ly)`` for spins, ``(Lx, Ly, q)`` for categories."""
        return self.lattice_shape if self.num_categories is None else (*self.lattice_shape, self.num_categories)

    def _check(self, x, t):
        chex.assert_shape(x, self.lattice_shape, custom_message="one lattice state per call; batch with jax.vmap")
        chex.assert_rank(t, 0)
        if self.num_categories is not None:
            chex.assert_type(x, int)

    def _spins(self, x):
        return x.reshape(-1).astype(jnp.float32)

    def _init_readout(self, features: int, rngs: nnx.Rngs) -> None:
        if self.num_categories is None:
            self.readout = nnx.Param(jax.random.normal(rngs.params(), (features,)) / math.sqrt(features))
        else:
            self.readout = nnx.Linear(features, self.num_categories, rngs=rngs)

    def _output(self, h: jax.Array, x: jax.Array, t: jax.Array) -> jax.Array:
        """The locally equivariant read-out from ``x_i``-invariant features ``h`` of shape ``(N, F)``."""
        if self.num_categories is None:
            return spin_output(self._spins(x), h @ self.readout[...], t).reshape(self.lattice_shape)
        return score_differences(self.readout(h), x).reshape(self.output_shape)


class _StateDependentConv(nnx.Module):
    """One LEC layer: a per-site kernel generated from ``x_i``-invariant features, applied to the raw input.

    ``k_{c,o}(p) = SiLU(sum_c' A_{c,o,c'} a_c'(p) + b1_{c,o}) + b2_{c,o} + tau(t)_o`` with the
    centre offset zeroed, then ``h_c(p) = sum_o k_{c,o}(p) u_c(p + delta_o)`` (LEAPS, deep LEC layers).
    """

    def __init__(self, kernel_size: int, channels: int, time_hidden: int, *, rngs: nnx.Rngs):
        k2 = kernel_size * kernel_size
        self.kernel_size = kernel_size
        self.A = nnx.Param(_uniform(0.002 / kernel_size)(rngs.params(), (channels, k2, channels)))
        self.b1 = nnx.Param(_uniform(0.002)(rngs.params(), (channels, k2)))
        self.b2 = nnx.Param(_uniform(0.002)(rngs.params(), (channels, k2)))
        self.tau = MLP(1, (time_hidden, time_hidden), k2, rngs=rngs)

    def __call__(self, a: jax.Array, patches: jax.Array, t: jax.Array) -> jax.Array:
        """``a``: (N, C) activated features; ``patches``: (N, K^2) or (N, K^2, C) raw inputs.

        The kernel's state-independent part ``b2 + tau(t)`` is one contraction with the
        patches. Its SiLU part is summed offset by offset in a rematerialised scan, so
        the ``(N, C, K^2)`` kernel is never stored (at L = 15 its writes and reads, not
        the SiLUs, dominated the layer). The centre offset is left out.
        """
        k2 = self.kernel_size * self.kernel_size
        offsets = np.array([o for o in range(k2) if o != k2 // 2])
        shift = (self.b2[...] + self.tau(t[None]))[:, offsets]  # (C, K^2 - 1)
        patches = patches[:, offsets]
        spins = patches.ndim == 2
        h = patches @ shift.T if spins else jnp.einsum("noc,co->nc", patches, shift)

        @jax.checkpoint
        def add_offset(h, inputs):
            weights, bias, inputs_o = inputs  # (C, C), (C,), (N,) or (N, C)
            kernel_o = jax.nn.silu(a @ weights.T + bias)  # k_{., o}(p) for every site p
            return h + kernel_o * (inputs_o[:, None] if spins else inputs_o), None

        scanned = (jnp.swapaxes(self.A[...], 0, 1)[offsets], self.b1[...].T[offsets], jnp.moveaxis(patches, 1, 0))
        h, _ = jax.lax.scan(add_offset, h, scanned)
        return h


class LocallyEquivariantConv(_LatticeNetwork):
    """Deep locally equivariant convolution ("LEC" of LEAPS), circular padding everywhere.

    Parameters
    ----------
    lattice_shape : (int, int)
    num_categories : int or None
        ``None`` for spins ``+-1``; ``q`` for categorical sites (an embedding of
        width ``channels`` with max-norm 1 replaces ``x``, and layers act depthwise).
    kernel_sizes : sequence of odd int, optional
        First the masked convolution's, then one per state-dependent layer; each
        needs ``K // 2 < min(Lx, Ly)``. Default: sized to the lattice
        (:func:`default_kernel_sizes`), the paper's ``(3, 5, 7, 9, 15)`` from 8 x 8 up.
    channels : int
        ``C``, the width of ``h`` (paper: 20).
    time_hidden : int
        Width of each layer's time MLP ``tau: 1 -> h -> h -> K^2`` (paper: 64).
    rngs : nnx.Rngs
    """

    def __init__(
        self,
        lattice_shape,
        num_categories: int | None = None,
        kernel_sizes: Sequence[int] | None = None,
        channels: int = 20,
        time_hidden: int = 64,
        *,
        rngs: nnx.Rngs,
    ):
        super().__init__(lattice_shape, num_categories)
        self._init_readout(channels, rngs)
        if kernel_sizes is None:
            kernel_sizes = default_kernel_sizes(self.lattice_shape)
        self.kernel_sizes = tuple(int(k) for k in kernel_sizes)
        if not self.kernel_sizes:
            raise InputError("kernel_sizes must not be empty")
        for k in self.kernel_sizes:
            neighbourhood_index(self.lattice_shape, k)  # validates K
        in_ch = 1 if num_categories is None else channels
        if num_categories is not None:
            self.embedding = nnx.Param(jax.random.normal(rngs.params(), (num_categories, channels)) / math.sqrt(channels))
        k0 = self.kernel_sizes[0]
        bound = 1.0 / math.sqrt(in_ch * k0 * k0)
        self.first = nnx.Param(jax.random.uniform(rngs.params(), (k0 * k0, in_ch, channels), minval=-bound, maxval=bound))
        self.layers = nnx.List([_StateDependentConv(k, channels, time_hidden, rngs=rngs) for k in self.kernel_sizes[1:]])

    def _inputs(self, x):
        """Per-site raw inputs ``u``, shape (N, 1) for spins or (N, C) embeddings (max-norm 1)."""
        if self.num_categories is None:
            return self._spins(x)[:, None]
        e = self.embedding[...][x.reshape(-1)]
        return e / jnp.maximum(1.0, jnp.linalg.norm(e, axis=-1, keepdims=True))

    def __call__(self, x: jax.Array, t: jax.Array) -> jax.Array:
        t = jnp.asarray(t, jnp.float32)
        self._check(x, t)
        u = self._inputs(x)
        k0 = self.kernel_sizes[0]
        mask = (jnp.arange(k0 * k0) != (k0 * k0) // 2)[:, None, None]
        patches0 = ((1.0 + t) * u)[neighbourhood_index(self.lattice_shape, k0)]  # (N, K0^2, in)
        h = jnp.einsum("noi,oic->nc", patches0, self.first[...] * mask)
        for layer in self.layers:
            patches = u[neighbourhood_index(self.lattice_shape, layer.kernel_size)]
            if self.num_categories is None:
                patches = patches[..., 0]
            h = layer(jax.nn.silu(h), patches, t)
        return self._output(h, x, t)


class LocallyEquivariantMLP(_LatticeNetwork):
    """``G_i = x_i g_i(x_{-i}, t)`` with ``g_i = [MLP(x with x_i zeroed, t)]_i`` (LEAPS' "LE-MLP").

    The first layer's pre-activation for every masked input is the full one minus
    site ``i``'s own contribution, so all ``N`` masked passes share one
    ``(N, hidden)`` computation; the read-out of site ``i`` is the MLP's ``i``-th
    output unit. For categories the input is one-hot and the read-out gives
    ``q`` scores per site, ``G_{c,i} = f_{c,i} - f_{x_i,i}``.

    Parameters
    ----------
    lattice_shape : (int, int)
    num_categories : int or None
    hidden : sequence of int
        Hidden widths (at least one layer).
    rngs : nnx.Rngs
    """

    def __init__(self, lattice_shape, num_categories: int | None = None, hidden: Sequence[int] = (256, 256), *, rngs: nnx.Rngs):
        hidden = tuple(int(h) for h in hidden)
        if not hidden:
            raise InputError("hidden must have at least one layer")
        super().__init__(lattice_shape, num_categories)
        n, k = self.num_sites, (1 if num_categories is None else num_categories)
        out = 1 if num_categories is None else num_categories
        self.W_in = nnx.Param(jax.random.normal(rngs.params(), (n, k, hidden[0])) / math.sqrt(n * k))
        self.b_in = nnx.Param(jnp.zeros((hidden[0],)))
        self.time = TimeEmbedding(hidden[0], rngs=rngs)
        self.hidden_layers = nnx.List([nnx.Linear(a, b, rngs=rngs) for a, b in zip(hidden[:-1], hidden[1:])])
        self.W_out = nnx.Param(jax.random.normal(rngs.params(), (n, hidden[-1], out)) / math.sqrt(hidden[-1]))
        self.b_out = nnx.Param(jnp.zeros((n, out)))

    def __call__(self, x: jax.Array, t: jax.Array) -> jax.Array:
        t = jnp.asarray(t, jnp.float32)
        self._check(x, t)
        if self.num_categories is None:
            u = self._spins(x)[:, None]
        else:
            u = jax.nn.one_hot(x.reshape(-1), self.num_categories, dtype=jnp.float32)
        own = jnp.einsum("nk,nkh->nh", u, self.W_in[...])
        pre = own.sum(0) - own + self.b_in[...] + self.time(t)
        h = jax.nn.silu(pre)
        for layer in self.hidden_layers:
            h = jax.nn.silu(layer(h))
        g = jnp.einsum("nh,nho->no", h, self.W_out[...]) + self.b_out[...]
        if self.num_categories is None:
            return spin_output(u[:, 0], g[:, 0], t).reshape(self.lattice_shape)
        return score_differences(g, x).reshape(self.output_shape)


class _MaskedAttentionLayer(nnx.Module):
    """Queries from ``x_i``-invariant features ``h_i``; keys/values from the raw tokens of ``x_j``, ``j != i``."""

    def __init__(self, features: int, num_heads: int, num_sites: int, *, rngs: nnx.Rngs):
        if features % num_heads:
            raise InputError(f"features {features} must be divisible by num_heads {num_heads}")
        self.num_heads = num_heads
        self.norm_q = nnx.LayerNorm(features, rngs=rngs)
        self.query = nnx.Linear(features, features, rngs=rngs)
        self.key = nnx.Linear(features, features, rngs=rngs)
        self.value = nnx.Linear(features, features, rngs=rngs)
        self.out = nnx.Linear(features, features, rngs=rngs)
        self.rel_bias = nnx.Param(jnp.zeros((num_heads, num_sites)))
        self.norm_mlp = nnx.LayerNorm(features, rngs=rngs)
        self.mlp = MLP(features, (2 * features,), features, rngs=rngs)

    def __call__(self, h: jax.Array, tokens: jax.Array, rel: np.ndarray) -> jax.Array:
        n, d = h.shape
        dh = d // self.num_heads
        q = self.query(self.norm_q(h)).reshape(n, self.num_heads, dh)
        k = self.key(tokens).reshape(n, self.num_heads, dh)
        v = self.value(tokens).reshape(n, self.num_heads, dh)
        logits = jnp.einsum("ihd,jhd->hij", q, k) / math.sqrt(dh) + self.rel_bias[...][:, rel]
        logits = jnp.where(jnp.eye(n, dtype=bool), -jnp.inf, logits)
        att = jax.nn.softmax(logits, axis=-1)
        h = h + self.out(jnp.einsum("hij,jhd->ihd", att, v).reshape(n, d))
        return h + self.mlp(self.norm_mlp(h))


class LocallyEquivariantAttention(_LatticeNetwork):
    """Locally equivariant attention ("LEA" of LEAPS) with a masked diagonal.

    Tokens ``e_j`` embed the raw ``x_j`` (a linear map of the spin, or a
    categorical embedding). The features ``h_i`` start from a time embedding
    (the same for every site) and each layer lets site ``i`` attend to the
    tokens ``e_j``, ``j != i``, with a query made from ``h_i`` and a learned
    relative-position bias ``b[(j - i) mod L]``; keys and values never come
    from other sites' ``h_j`` (which depend on ``x_i``). So ``h_i`` never sees
    ``x_i``, and the read-out of :class:`_LatticeNetwork` makes ``G`` locally
    equivariant.

    Parameters
    ----------
    lattice_shape : (int, int)
    num_categories : int or None
    features : int
        Token / feature width ``D``.
    num_heads : int
    num_layers : int
    rngs : nnx.Rngs
    """

    def __init__(
        self,
        lattice_shape,
        num_categories: int | None = None,
        features: int = 32,
        num_heads: int = 4,
        num_layers: int = 2,
        *,
        rngs: nnx.Rngs,
    ):
        super().__init__(lattice_shape, num_categories)
        self._init_readout(features, rngs)
        self.token = nnx.Linear(1, features, rngs=rngs) if num_categories is None else nnx.Embed(num_categories, features, rngs=rngs)
        self.time = TimeEmbedding(features, rngs=rngs)
        self.layers = nnx.List([_MaskedAttentionLayer(features, num_heads, self.num_sites, rngs=rngs) for _ in range(num_layers)])
        self.norm_out = nnx.LayerNorm(features, rngs=rngs)

    def __call__(self, x: jax.Array, t: jax.Array) -> jax.Array:
        t = jnp.asarray(t, jnp.float32)
        self._check(x, t)
        if self.num_categories is None:
            tokens = self.token(self._spins(x)[:, None])
        else:
            tokens = self.token(x.reshape(-1))
        rel = relative_position_index(self.lattice_shape)
        h = jnp.broadcast_to(self.time(t), tokens.shape)
        for layer in self.layers:
            h = layer(h, tokens, rel)
        return self._output(self.norm_out(h), x, t)


NETWORKS = {
    "conv": LocallyEquivariantConv,
    "mlp": LocallyEquivariantMLP,
    "attention": LocallyEquivariantAttention,
}
