"""The Langevin-preconditioned control network of PIS and DDS.

Zhang & Chen (2022), "Path Integral Sampler: a stochastic control approach for
sampling" (ICLR), Sec. 4: the control is a state network plus a time-dependent
gain on the target's score,

    u(t, x) = f_1(x, t) + f_2(t) * clip(score(x)),

where ``score`` is ``grad log rho`` (times the sampler's annealing factor), so
that at initialisation the sampler already follows (a scaled) Langevin drift.
The layout follows the Beyond-ELBOs benchmark's ``PISGRADNet`` (Blessing et al.
2024): a learnable-phase sinusoidal time embedding with frequencies from 0.1 to
100, GELU layers of width ``hidden``, the state network's last layer at (near)
zero, and the gain network's last layer at weight ``weight_init`` and bias
``bias_init`` (1: the gain starts at one).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx


class LangevinNet(nnx.Module):
    """``u(t, x, score) = clip(f_1([x, emb_1(t)])) + f_2(emb_2(t)) * clip(score)``.

    Parameters
    ----------
    dim : int
        State dimension.
    hidden : int
        Width of every hidden layer and of the time embedding.
    num_layers : int
        Hidden layers of the state network and of the gain network.
    score_clip, output_clip : float
        Clip of the score input and of the state network's output (the reference's
        ``inner_clip`` and ``outer_clip``).
    weight_init, bias_init : float
        Constant initial weight and bias of the gain network's last layer.
    rngs : nnx.Rngs
    """

    def __init__(
        self,
        dim: int,
        hidden: int = 64,
        num_layers: int = 2,
        score_clip: float = 1e2,
        output_clip: float = 1e4,
        weight_init: float = 1e-8,
        bias_init: float = 1.0,
        *,
        rngs: nnx.Rngs,
    ):
        self.score_clip, self.output_clip, self.hidden = score_clip, output_clip, hidden
        self.phase = nnx.Param(jnp.zeros((hidden,)))
        self.time_state = nnx.List([nnx.Linear(2 * hidden, hidden, rngs=rngs), nnx.Linear(hidden, hidden, rngs=rngs)])
        self.time_gain = nnx.List(
            [nnx.Linear(2 * hidden, hidden, rngs=rngs)] + [nnx.Linear(hidden, hidden, rngs=rngs) for _ in range(num_layers)]
        )
        self.gain_out = nnx.Linear(
            hidden, dim, kernel_init=nnx.initializers.constant(weight_init),
            bias_init=nnx.initializers.constant(bias_init), rngs=rngs,
        )
        sizes = [dim + hidden] + [hidden] * num_layers
        self.state = nnx.List([nnx.Linear(a, b, rngs=rngs) for a, b in zip(sizes[:-1], sizes[1:])])
        self.state_out = nnx.Linear(
            hidden, dim, kernel_init=nnx.initializers.constant(1e-8), bias_init=nnx.initializers.zeros, rngs=rngs
        )

    def embed(self, t: jax.Array) -> jax.Array:
        """``[sin(w t + phase), cos(w t + phase)]`` for times ``t`` (B,) -> (B, 2 hidden)."""
        angle = t[..., None] * jnp.linspace(0.1, 100.0, self.hidden) + self.phase.value
        return jnp.concatenate([jnp.sin(angle), jnp.cos(angle)], axis=-1)

    def __call__(self, t: jax.Array, x: jax.Array, score: jax.Array) -> jax.Array:
        """Control at times ``t`` (B,), states ``x`` (B, D) and target scores ``score`` (B, D)."""
        emb = self.embed(t)
        h = self.time_state[1](jax.nn.gelu(self.time_state[0](emb)))
        h = jnp.concatenate([x, h], axis=-1)
        for layer in self.state:
            h = jax.nn.gelu(layer(h))
        out = jnp.clip(self.state_out(h), -self.output_clip, self.output_clip)
        g = self.time_gain[0](emb)
        for layer in self.time_gain[1:]:
            g = layer(jax.nn.gelu(g))
        gain = self.gain_out(g)
        return out + gain * jnp.clip(score, -self.score_clip, self.score_clip)
