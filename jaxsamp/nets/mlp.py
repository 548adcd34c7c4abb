"""A small fully connected network and a time embedding, shared by the learned samplers.

:class:`MLP` is the plain ``Linear -> act -> ... -> Linear`` stack (SiLU by
default). :func:`fourier_time_features` and :class:`TimeEmbedding` turn a scalar
time ``t in [0, 1]`` into a feature vector, the usual conditioning of
time-dependent drifts, rates and free-energy networks (e.g. LEAPS' ``F_phi(t)``
and the per-layer time MLPs of its convolutions, Holderrieth, Albergo & Jaakkola 2025).
"""

from __future__ import annotations

from typing import Callable, Sequence

import jax
import jax.numpy as jnp
from flax import nnx


class MLP(nnx.Module):
    """``Linear -> activation -> ... -> Linear`` on the last axis.

    Parameters
    ----------
    in_features, out_features : int
    hidden_features : sequence of int
        Widths of the hidden layers (may be empty: a single affine map).
    activation : callable
        Applied after every hidden layer (default SiLU).
    rngs : nnx.Rngs
    """

    def __init__(
        self,
        in_features: int,
        hidden_features: Sequence[int],
        out_features: int,
        *,
        activation: Callable[[jax.Array], jax.Array] = jax.nn.silu,
        rngs: nnx.Rngs,
    ):
        sizes = [in_features, *hidden_features, out_features]
        self.layers = nnx.List([nnx.Linear(a, b, rngs=rngs) for a, b in zip(sizes[:-1], sizes[1:])])
        self.activation = activation

    def __call__(self, x: jax.Array) -> jax.Array:
        for layer in self.layers[:-1]:
            x = self.activation(layer(x))
        return self.layers[-1](x)


def fourier_time_features(t: jax.Array, num_frequencies: int) -> jax.Array:
    """``[t, sin(pi 2^k t), cos(pi 2^k t)]_{k < num_frequencies}`` of a scalar ``t``.

    Returns an array of shape ``(1 + 2 num_frequencies,)``; ``t`` is kept as the
    first feature so the embedding stays informative outside ``[0, 1]``.
    """
    t = jnp.asarray(t, jnp.result_type(float))
    freqs = jnp.pi * 2.0 ** jnp.arange(num_frequencies, dtype=t.dtype)
    return jnp.concatenate([t[None], jnp.sin(freqs * t), jnp.cos(freqs * t)])


class TimeEmbedding(nnx.Module):
    """An MLP of the Fourier features of a scalar time: ``t -> R^out_features``.

    Parameters
    ----------
    out_features : int
    hidden_features : sequence of int
        Hidden widths of the MLP (default ``(64,)``).
    num_frequencies : int
        Number of sine/cosine pairs in :func:`fourier_time_features`.
    rngs : nnx.Rngs
    """

    def __init__(self, out_features: int, hidden_features: Sequence[int] = (64,), num_frequencies: int = 4, *, rngs: nnx.Rngs):
        self.num_frequencies = num_frequencies
        self.mlp = MLP(1 + 2 * num_frequencies, hidden_features, out_features, rngs=rngs)

    def __call__(self, t: jax.Array) -> jax.Array:
        return self.mlp(fourier_time_features(t, self.num_frequencies))
