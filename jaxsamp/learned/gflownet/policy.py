"""GFlowNet policies: the shared-trunk network, vectorised rollouts, and per-transition log-probabilities.

The network follows the TLM paper's hypergrid code (Gritsaev et al. 2025, ICLR;
``tgritsaev/gflownet-tlm``, torchgfn's ``NeuralNet`` with ``tied=True``): one
trunk (an MLP with ReLU, 2 x 256 by default) shared by three heads -- forward
logits (``P_F``, or ``Q`` for soft DQN), backward logits (``P_B``) and a scalar
``log F(s)`` (DB, SubTB). The backward head starts at zero, so ``P_B`` starts
uniform. Every layer is initialised as PyTorch's ``nn.Linear``
(``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` weights and biases). The first layer acts
on the state's k-hot encoding as a sum of embedding rows
(:meth:`~jaxsamp.targets.dag_environment.DagEnvironment.tokens`), the same map as
a linear layer on the one-hot vector without its matrix product.

:func:`rollout` runs ``B`` environments for ``T = max_trajectory_length``
steps in one ``lax.scan``; finished trajectories are padded with the exit
action and their terminal state.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
from flax import nnx

from jaxsamp.core.data_parallel import batch_constraint
from jaxsamp.learned.gflownet.losses import MASKED
from jaxsamp.targets.dag_environment import DagEnvironment


def _torch_uniform(key, shape, fan_in):
    bound = 1.0 / math.sqrt(fan_in)
    return jax.random.uniform(key, shape, jnp.float32, -bound, bound)


class _Linear(nnx.Module):
    """``x W + b`` initialised as PyTorch's ``nn.Linear`` (or at zero)."""

    def __init__(self, key, fan_in: int, fan_out: int, zero: bool = False):
        k_w, k_b = jax.random.split(key)
        w = jnp.zeros((fan_in, fan_out)) if zero else _torch_uniform(k_w, (fan_in, fan_out), fan_in)
        b = jnp.zeros((fan_out,)) if zero else _torch_uniform(k_b, (fan_out,), fan_in)
        self.kernel, self.bias = nnx.Param(w), nnx.Param(b)

    def __call__(self, x):
        return x @ self.kernel[...] + self.bias[...]


class PolicyNetwork(nnx.Module):
    """Shared trunk with forward, backward and log-flow heads.

    Parameters
    ----------
    num_tokens : int
        Size of the environment's k-hot vocabulary.
    num_actions, num_backward_actions : int
        Output sizes of the forward and backward heads.
    hidden : sequence of int
        Trunk widths (the first is the embedding width).
    rngs : nnx.Rngs
    """

    def __init__(
        self, num_tokens: int, num_actions: int, num_backward_actions: int, hidden: Sequence[int], *, rngs: nnx.Rngs
    ):
        key = rngs.params()
        keys = jax.random.split(key, len(hidden) + 3)
        self.embedding = nnx.Param(_torch_uniform(keys[0], (num_tokens, hidden[0]), num_tokens))
        self.embedding_bias = nnx.Param(_torch_uniform(jax.random.fold_in(keys[0], 1), (hidden[0],), num_tokens))
        self.layers = nnx.List([_Linear(k, a, b) for k, a, b in zip(keys[1:], hidden[:-1], hidden[1:])])
        self.forward_head = _Linear(keys[-3], hidden[-1], num_actions)
        self.backward_head = _Linear(keys[-2], hidden[-1], num_backward_actions, zero=True)
        self.flow_head = _Linear(keys[-1], hidden[-1], 1)

    def trunk(self, tokens: jax.Array) -> jax.Array:
        """Features of states given by their tokens ``(..., K)`` -> ``(..., hidden[-1])``."""
        h = jax.nn.relu(jnp.sum(jnp.take(self.embedding[...], tokens, axis=0), axis=-2) + self.embedding_bias[...])
        for layer in self.layers:
            h = jax.nn.relu(layer(h))
        return h


class Trajectories(NamedTuple):
    """``B`` trajectories padded to ``T`` transitions.

    Attributes
    ----------
    states : ``(B, T + 1, *state_shape)`` int32
        ``s_0 .. s_T``; after the exit every state is the terminal ``x``.
    actions : (B, T) int32
        Forward actions; the exit at ``t = n - 1`` and as padding after it.
    lengths : (B,) int32
        ``n``, transitions including the exit.
    log_rewards : (B,) float32
        ``log R(x)``.
    """

    states: jax.Array
    actions: jax.Array
    lengths: jax.Array
    log_rewards: jax.Array

    @property
    def terminal(self) -> jax.Array:
        """The objects ``x`` ``(B, *state_shape)``."""
        return self.states[:, -1]


class PolicyModel:
    """A :class:`PolicyNetwork` for an environment, used through pure functions of its ``nnx.split`` state."""

    def __init__(self, env: DagEnvironment, hidden: Sequence[int]):
        self.env, self.hidden = env, tuple(hidden)
        self.graphdef = nnx.graphdef(nnx.eval_shape(lambda: self._network(jax.random.key(0))))

    def _network(self, key) -> PolicyNetwork:
        env = self.env
        return PolicyNetwork(env.num_tokens, env.num_actions, env.num_backward_actions, self.hidden, rngs=nnx.Rngs(key))

    def init(self, key) -> nnx.State:
        """Fresh parameters (``P_B`` uniform)."""
        return nnx.state(self._network(key))

    def features(self, params: nnx.State, states: jax.Array) -> jax.Array:
        """Trunk features of a batch of states ``(..., *state_shape)``."""
        tokens = _batched(self.env.tokens, self.env, states)
        return nnx.merge(self.graphdef, params).trunk(tokens)

    def heads(self, params: nnx.State, features: jax.Array, names: Sequence[str]) -> list[jax.Array]:
        """The named heads (``forward``, ``backward``, ``flow``) on trunk features; ``flow`` loses its last axis."""
        net = nnx.merge(self.graphdef, params)
        out = []
        for name in names:
            value = getattr(net, f"{name}_head")(features)
            out.append(value[..., 0] if name == "flow" else value)
        return out

    def forward_logits(self, params: nnx.State, states: jax.Array) -> jax.Array:
        """Forward-head outputs at states ``(..., *state_shape)`` -> ``(..., num_actions)`` (unmasked)."""
        return self.heads(params, self.features(params, states), ["forward"])[0]


def _batched(fn, env: DagEnvironment, states):
    """``fn`` of ONE state applied over the leading axes of ``states``."""
    lead = states.shape[: states.ndim - len(env.state_shape)]
    flat = states.reshape((-1, *env.state_shape))
    out = jax.vmap(fn)(flat)
    return out.reshape((*lead, *out.shape[1:]))


def masked_log_softmax(logits: jax.Array, mask: jax.Array) -> jax.Array:
    """``log softmax`` over the allowed entries; :data:`~jaxsamp.learned.gflownet.losses.MASKED` elsewhere (finite, so gradients stay finite)."""
    return jax.nn.log_softmax(jnp.where(mask, logits, MASKED), axis=-1)


def rollout(env: DagEnvironment, logits_fn: Callable, key, num_trajectories: int) -> Trajectories:
    """``num_trajectories`` trajectories from ``s_0`` with ``P_F = softmax(logits_fn(states))`` over the allowed actions.

    One ``lax.scan`` of ``env.max_trajectory_length`` steps over the whole
    batch. ``logits_fn(states (B, *state_shape)) -> (B, num_actions)``.
    """
    T = env.max_trajectory_length
    exit_action = env.exit_action
    s0 = batch_constraint(jnp.broadcast_to(env.initial_state(), (num_trajectories, *env.state_shape)))

    def one(carry, k):
        s, done = carry
        mask = jax.vmap(env.forward_mask)(s)
        a = jax.random.categorical(k, jnp.where(mask, logits_fn(s), MASKED))
        a = jnp.where(done, exit_action, a)
        stop = done | (a == exit_action)
        moved = jax.vmap(env.step)(s, jnp.minimum(a, exit_action - 1))
        s_next = jnp.where(_expand(stop, s), s, moved)
        return (s_next, stop), (s, a, done)

    (final, _), (states, actions, was_done) = jax.lax.scan(
        one, (s0, jnp.zeros(num_trajectories, bool)), jax.random.split(key, T)
    )
    states = jnp.concatenate([states, final[None]], axis=0)
    lengths = jnp.sum(~was_done, axis=0).astype(jnp.int32)
    log_rewards = jax.vmap(env.log_reward)(final)
    return Trajectories(jnp.swapaxes(states, 0, 1), jnp.swapaxes(actions, 0, 1).astype(jnp.int32), lengths, log_rewards)


class TerminalSamples(NamedTuple):
    """Objects drawn by forward rollouts, with the log-probabilities of the trajectories that built them.

    Attributes
    ----------
    objects : ``(B, *state_shape)`` int32
        The terminal objects ``x``.
    log_pf : (B,) float32
        ``log P_F(tau)``: the sum of ``log P_F(a_t | s_t)`` over the trajectory, the exit included.
    log_pb : (B,) float32
        ``log P_B(tau | x)``: the sum of ``log P_B(s_t | s_{t+1})`` over its non-exit moves (0 without a
        ``backward_log_prob``).
    """

    objects: jax.Array
    log_pf: jax.Array
    log_pb: jax.Array


def sample_objects(
    env: DagEnvironment, logits_fn: Callable, key, num: int, backward_log_prob: Callable | None = None
) -> TerminalSamples:
    """``num`` rollouts' objects and trajectory log-probabilities, without storing the trajectories.

    Parameters
    ----------
    logits_fn : callable
        ``states (B, *state_shape) -> (B, num_actions)`` forward logits (masked here).
    backward_log_prob : callable, optional
        ``(s, a, s') -> (B,)`` the log-probability ``log P_B(s | s')`` of undoing non-exit move ``a``
        (its value elsewhere is ignored); accumulated into ``log_pb``.
    """
    exit_action = env.exit_action
    s0 = jnp.broadcast_to(env.initial_state(), (num, *env.state_shape))
    zero = jnp.zeros(num, jnp.float32)

    def one(carry, k):
        s, done, log_pf, log_pb = carry
        mask = jax.vmap(env.forward_mask)(s)
        logits = jnp.where(mask, logits_fn(s), MASKED)
        a = jax.random.categorical(k, logits)
        log_p = jnp.take_along_axis(jax.nn.log_softmax(logits, axis=-1), a[:, None], axis=-1)[:, 0]
        stop = done | (a == exit_action)
        moved = jax.vmap(env.step)(s, jnp.minimum(a, exit_action - 1))
        s_next = jnp.where(_expand(stop, s), s, moved)
        log_pf = log_pf + jnp.where(done, 0.0, log_p)
        if backward_log_prob is not None:
            log_pb = log_pb + jnp.where(stop, 0.0, backward_log_prob(s, a, s_next))
        return (s_next, stop, log_pf, log_pb), None

    keys = jax.random.split(key, env.max_trajectory_length)
    (final, _, log_pf, log_pb), _ = jax.lax.scan(one, (s0, jnp.zeros(num, bool), zero, zero), keys)
    return TerminalSamples(final, log_pf, log_pb)


def _expand(flag, like):
    return flag.reshape(flag.shape + (1,) * (like.ndim - flag.ndim))


def transition_masks(trajectories: Trajectories) -> tuple[jax.Array, jax.Array]:
    """``(valid, move)`` (B, T) bool: real transitions (``t < n``), and real non-exit ones (``t < n - 1``)."""
    T = trajectories.actions.shape[1]
    t = jnp.arange(T)[None, :]
    n = trajectories.lengths[:, None]
    return t < n, t < n - 1


def forward_log_probs(env: DagEnvironment, logits: jax.Array, trajectories: Trajectories) -> jax.Array:
    """``log P_F(a_t | s_t)`` (B, T) from forward logits at ``s_0 .. s_{T-1}`` (B, T, A); 0 on padding."""
    valid, _ = transition_masks(trajectories)
    mask = _batched(env.forward_mask, env, trajectories.states[:, :-1])
    log_p = jnp.take_along_axis(masked_log_softmax(logits, mask), trajectories.actions[..., None], axis=-1)[..., 0]
    return jnp.where(valid, log_p, 0.0)


def backward_log_probs(
    env: DagEnvironment, kind: str, trajectories: Trajectories, logits: jax.Array | None = None
) -> jax.Array:
    """``log P_B(s_t | s_{t+1})`` (B, T) of every real non-exit transition; 0 at the exit and on padding.

    Parameters
    ----------
    kind : {"uniform", "maxent", "learned"}
        Uniform over the parents of ``s_{t+1}``; ``N(s_t) / N(s_{t+1})``; or a
        masked softmax of ``logits``, the backward head at ``s_1 .. s_T`` (B, T, num_backward_actions).
    """
    _, move = transition_masks(trajectories)
    nxt = trajectories.states[:, 1:]
    if kind == "uniform":
        count = jnp.sum(_batched(env.backward_mask, env, nxt), axis=-1)
        log_p = -jnp.log(jnp.maximum(count, 1).astype(jnp.float32))
    elif kind == "maxent":
        log_n = _batched(env.log_num_paths, env, trajectories.states)
        log_p = log_n[:, :-1] - log_n[:, 1:]
    else:
        mask = _batched(env.backward_mask, env, nxt)
        b = jax.vmap(env.backward_action)(trajectories.actions.reshape(-1)).reshape(trajectories.actions.shape)
        b = jnp.where(move, b, 0)
        log_p = jnp.take_along_axis(masked_log_softmax(logits, mask), b[..., None], axis=-1)[..., 0]
    return jnp.where(move, log_p, 0.0)
