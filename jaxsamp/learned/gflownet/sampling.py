"""Sampling and exact scoring of a GFlowNet's policy: weighted draws and the forward policy's exact terminal distribution.

Pure functions of a policy's parts (the environment, a logits function, a backward
log-probability), not of a train state, so that a trained network and an exact table
are scored alike (:class:`~jaxsamp.learned.gflownet.training.GFlowNet` calls them with
its network).

The weights (Malkin et al. 2022, "Trajectory balance", NeurIPS, eq. 14; the
importance-sampling view of Zhang et al. 2022, "Generative flow networks for
discrete probabilistic modeling", ICML): for a trajectory ``tau`` drawn by the
forward policy and ending at ``x``,

    log w(tau) = log R(x) + log P_B(tau | x) - log P_F(tau),

and since ``sum_{tau -> x} P_B(tau | x) = 1``, ``E_{P_F}[w] = sum_x R(x) = Z``.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxsamp.core.protocols import WeightedSamples
from jaxsamp.learned.gflownet.policy import (
    PolicyModel,
    Trajectories,
    backward_log_probs,
    masked_log_softmax,
    sample_objects,
)
from jaxsamp.targets.dag_environment import DagEnvironment


def backward_log_prob(model: PolicyModel, backward_policy: str, network: nnx.State, target: nnx.State) -> Callable:
    """``(s, a, s') -> log P_B(s | s')`` of a backward policy, per move of a batch: what :func:`weighted_draws` takes.

    The ``P_B`` the forward loss was matched to: fixed (``uniform``, ``maxent``; the
    parameters are not read), the Polyak-averaged head ``target`` (``tlm``) or the online
    head of ``network`` (``naive``, ``pessimistic``).
    """
    env = model.env

    def log_prob(s, a, s_next):
        lengths = jnp.where(a == env.exit_action, 1, 2)  # one move (or none) as a trajectory
        one = Trajectories(jnp.stack([s, s_next], 1), a[:, None], lengths, jnp.zeros(a.shape))
        if backward_policy in ("uniform", "maxent"):
            return backward_log_probs(env, backward_policy, one)[:, 0]
        params = target if backward_policy == "tlm" else network
        (logits,) = model.heads(params, model.features(params, s_next), ["backward"])
        return backward_log_probs(env, "learned", one, logits[:, None])[:, 0]

    return log_prob


def weighted_draws(env: DagEnvironment, logits_fn: Callable, backward: Callable, key, num_samples: int
                   ) -> WeightedSamples:
    """``num_samples`` objects of the forward policy ``softmax(logits_fn)`` with trajectory importance weights.

    ``x``: ``(num_samples, *state_shape)`` int32 objects. ``log_w = log R(x) + log P_B(tau | x) -
    log P_F(tau)`` for the trajectory ``tau`` that built each ``x`` (the trajectory-balance ratio of
    Malkin et al. 2022, eq. 14, with the ``P_B`` of ``backward``: :func:`backward_log_prob`).
    Since ``sum_tau P_B(tau | x) = 1``, ``E_{P_F}[exp(log_w)] = Z`` for any ``P_B``, so
    ``.log_Z`` is a consistent estimate of ``log Z`` (its exponent unbiased), and
    self-normalised weights make expectations under ``pi`` consistent, on a DAG with
    any number of paths per object. These are weights on trajectories, not on objects:
    ``R(x) / P_F(x)`` with the marginal ``P_F(x) = sum_tau P_F(tau)`` needs a sum over
    every path (:func:`policy_figures` does it exactly on enumerable environments), and
    the trajectory weights' ESS is at most the marginal one. At the optimum of
    any balance loss ``log_w = log Z`` on every trajectory: ``ess = 1``.

    Parameters
    ----------
    env : DagEnvironment
    logits_fn : callable
        ``states (B, *state_shape) -> (B, num_actions)`` forward logits (masked here).
    backward : callable
        ``(s, a, s') -> (B,)`` log-probability of undoing each move (:func:`backward_log_prob`).
    key : PRNG key
    num_samples : int
    """
    out = sample_objects(env, logits_fn, key, num_samples, backward)
    log_r = jax.vmap(env.log_reward)(out.objects)
    return WeightedSamples(out.objects, log_r + out.log_pb - out.log_pf)


def policy_table(env: DagEnvironment, logits_fn: Callable, chunk: int = 16384) -> Callable:
    """A compiled ``network -> log P_F(a | s)`` at every state (``all_states()`` order, float32 NumPy array).

    ``logits_fn(network)`` is the sampling policy's ``states -> logits``; the states are
    scored in blocks of ``chunk`` (one ``lax.map``), and the function is compiled once.
    Raises :class:`~jaxsamp.core.errors.InputError` where the states are too many to enumerate.
    """
    states = jnp.asarray(env.all_states())
    size = min(chunk, states.shape[0])
    pad = (-states.shape[0]) % size
    blocks = jnp.concatenate([states, jnp.broadcast_to(states[:1], (pad, *env.state_shape))])
    blocks = blocks.reshape(-1, size, *env.state_shape)

    @jax.jit
    def table(network, blocks):  # the states an argument, not a constant of the compiled program
        def one(block):
            return masked_log_softmax(logits_fn(network)(block), jax.vmap(env.forward_mask)(block))

        return jax.lax.map(one, blocks)

    return lambda network: np.asarray(table(network, blocks)).reshape(-1, env.num_actions)[: states.shape[0]]


def policy_figures(env: DagEnvironment, log_probs: np.ndarray) -> dict:
    """Exact scores of a forward policy given by its table ``log P_F(a | s)`` (:func:`policy_table`).

    Its terminal distribution ``pi_theta`` (pushed forward through the DAG,
    :meth:`~jaxsamp.targets.dag_environment.DagEnvironment.terminal_distribution`) against ``pi``:
    ``policy_l1 = mean |pi_theta - pi|`` and ``policy_kl = KL(pi || pi_theta)``, free of sampling noise.
    """
    pi_theta = env.terminal_distribution(log_probs)
    pi = env.exact_probabilities
    with np.errstate(divide="ignore"):
        kl = float(np.sum(pi * (np.log(pi) - np.log(pi_theta))))
    return {"policy_l1": float(np.mean(np.abs(pi_theta - pi))), "policy_kl": kl}


__all__ = ["backward_log_prob", "policy_figures", "policy_table", "weighted_draws"]
