"""GFlowNet training objectives as pure functions of per-transition log-probabilities.

A batch of ``B`` trajectories padded to ``T`` transitions is described by

* ``log_pf`` (B, T): ``log P_F(s_{t+1} | s_t)`` of the action taken (the exit included);
* ``log_pb`` (B, T): ``log P_B(s_t | s_{t+1})``, 0 at the exit transition;
* ``log_flow`` (B, T + 1): ``log F(s_t)``, with ``log F(s_n) = log R(x)`` at the
  position after the exit (``n`` transitions; the exit leaves ``x = s_{n-1}``);
* ``lengths`` (B,): ``n``; transitions ``t >= n`` are padding and never count.

The objectives (each vanishes exactly when the flows, forward and backward
policies are consistent with the reward, see
:meth:`~jaxsamp.targets.dag_environment.DagEnvironment.exact_flows`):

* :func:`trajectory_balance` -- Malkin et al. (2022), "Trajectory balance", NeurIPS, eq. 14:
  ``(log Z + sum_t log P_F - log R(x) - sum_t log P_B)^2``, mean over trajectories;
* :func:`detailed_balance` -- Bengio et al. (2023), "GFlowNet foundations", JMLR, eq. 44:
  ``(log F(s) + log P_F(s'|s) - log F(s') - log P_B(s|s'))^2`` per transition
  (the exit with ``F(s') = R(x)``), mean over all transitions of the batch;
* :func:`subtrajectory_balance` -- Madan et al. (2023), "Learning GFlowNets from
  partial episodes", ICML, eq. 9 with torchgfn's ``geometric_within`` weighting:
  every sub-trajectory ``i < j <= n`` weighted by ``lambda^{j - i - 1}``,
  normalised within each trajectory, then averaged over trajectories;
* :func:`soft_dqn_residuals` -- the soft-RL view (Tiapkin et al. 2024,
  "Generative flow networks as entropy-regularized RL", AISTATS, Alg. 1, with the
  Munchausen bonus of Vieillard et al. 2020, NeurIPS): with rewards
  ``log P_B(s | s')`` on intermediate transitions and ``log R(x)`` at the exit,
  ``Q(s, a) - [r + tau logsumexp(Q_target(s') / tau)] - alpha clip(tau log pi_target(a|s), l0, 0)``.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

MASKED = -1e30  # a finite "minus infinity": masked logits keep softmax gradients finite


def step_mask(lengths: jax.Array, num_steps: int) -> jax.Array:
    """``(B, T)`` bool: transition ``t`` is real (``t < n``)."""
    return jnp.arange(num_steps)[None, :] < lengths[:, None]


def trajectory_balance_residuals(log_z, log_pf, log_pb, log_reward, lengths) -> jax.Array:
    """``log Z + sum_t log P_F - log R(x) - sum_t log P_B`` per trajectory, (B,)."""
    chex.assert_equal_shape([log_pf, log_pb])
    valid = step_mask(lengths, log_pf.shape[1])
    return log_z + jnp.sum(jnp.where(valid, log_pf - log_pb, 0.0), axis=1) - log_reward


def trajectory_balance(log_z, log_pf, log_pb, log_reward, lengths) -> jax.Array:
    """The trajectory-balance loss: mean over trajectories of the squared residual."""
    return jnp.mean(trajectory_balance_residuals(log_z, log_pf, log_pb, log_reward, lengths) ** 2)


def detailed_balance_residuals(log_flow, log_pf, log_pb) -> jax.Array:
    """``log F(s_t) + log P_F - log F(s_{t+1}) - log P_B`` for every transition, (B, T) (padding included)."""
    chex.assert_equal_shape([log_pf, log_pb, log_flow[:, 1:]])
    return log_flow[:, :-1] + log_pf - log_flow[:, 1:] - log_pb


def detailed_balance(log_flow, log_pf, log_pb, lengths) -> jax.Array:
    """The detailed-balance loss: mean over every real transition of the batch of the squared residual."""
    valid = step_mask(lengths, log_pf.shape[1])
    residual = jnp.where(valid, detailed_balance_residuals(log_flow, log_pf, log_pb), 0.0)
    return jnp.sum(residual**2) / jnp.maximum(jnp.sum(valid), 1)


def subtrajectory_residuals(log_flow, log_pf, log_pb, lengths) -> tuple[jax.Array, jax.Array]:
    """Residuals of every sub-trajectory ``s_i -> s_j``, (B, T + 1, T + 1), and the mask ``i < j <= n``.

    ``log F(s_i) + sum_{i <= t < j} (log P_F - log P_B) - log F(s_j)``, from
    cumulative sums (``O(T^2)`` per trajectory).
    """
    B, T = log_pf.shape
    valid = step_mask(lengths, T)
    step = jnp.where(valid, log_pf - log_pb, 0.0)
    cumulative = jnp.concatenate([jnp.zeros((B, 1), step.dtype), jnp.cumsum(step, axis=1)], axis=1)
    flow = jnp.where(jnp.arange(T + 1)[None, :] <= lengths[:, None], log_flow, 0.0)
    residual = flow[:, :, None] + cumulative[:, None, :] - cumulative[:, :, None] - flow[:, None, :]
    i, j = jnp.arange(T + 1)[:, None], jnp.arange(T + 1)[None, :]
    pairs = (i < j)[None] & (j[None] <= lengths[:, None, None])
    return residual, pairs


def subtrajectory_balance(log_flow, log_pf, log_pb, lengths, lam: float) -> jax.Array:
    """SubTB(lambda) with ``geometric_within`` weights: ``lambda^{j-i-1}`` normalised per trajectory, mean over trajectories."""
    residual, pairs = subtrajectory_residuals(log_flow, log_pf, log_pb, lengths)
    T1 = residual.shape[1]
    span = jnp.arange(T1)[None, :] - jnp.arange(T1)[:, None]
    weight = jnp.where(pairs, jnp.asarray(lam, residual.dtype) ** jnp.maximum(span - 1, 0)[None], 0.0)
    per_trajectory = jnp.sum(weight * jnp.where(pairs, residual, 0.0) ** 2, axis=(1, 2)) / jnp.sum(weight, axis=(1, 2))
    return jnp.mean(per_trajectory)


def soft_value(q: jax.Array, mask: jax.Array, temperature: float) -> jax.Array:
    """``tau logsumexp(Q / tau)`` over the allowed actions (..., A) -> (...)."""
    return temperature * jax.nn.logsumexp(jnp.where(mask, q / temperature, MASKED), axis=-1)


def soft_policy_log_probs(q: jax.Array, mask: jax.Array, temperature: float) -> jax.Array:
    """``log softmax(Q / tau)`` over the allowed actions (a large negative number elsewhere)."""
    return jax.nn.log_softmax(jnp.where(mask, q / temperature, MASKED), axis=-1)


def soft_dqn_residuals(q_sa, done, log_reward, log_pb, next_value, munchausen=0.0) -> jax.Array:
    """``Q(s, a) - target`` with ``target = log R(x)`` at the exit, else ``log P_B(s | s') + V_target(s')``, plus the Munchausen bonus.

    Parameters
    ----------
    q_sa : (N,) the online ``Q(s, a)``.
    done : (N,) bool, ``a`` is the exit.
    log_reward : (N,) ``log R(s)`` (read only where ``done``).
    log_pb : (N,) ``log P_B(s | s')`` (read only where not ``done``).
    next_value : (N,) ``tau logsumexp(Q_target(s') / tau)`` (read only where not ``done``).
    munchausen : (N,) or scalar, ``alpha clip(tau log pi_target(a | s), l0, 0)`` (0 for soft DQN).
    """
    target = jnp.where(done, log_reward, log_pb + jnp.where(done, 0.0, next_value)) + munchausen
    return q_sa - target
