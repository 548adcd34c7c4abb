"""Sampling and exact scoring of a trained GFlowNet: weighted draws, the exact terminal distribution, ``evaluate``.

:class:`TrainedGFlowNet` is the half of :class:`~jaxsamp.learned.gflownet.GFlowNet`
that reads a train state without training: ``sample(state, key, n)`` draws
objects with trajectory importance weights, ``evaluate(state, key, n)`` scores
them and the forward policy against the environment's exact ``pi`` and ``log Z``.
A subclass provides ``env``, ``model``, ``settings``, ``temperature``, ``true_log_z``
and ``log_z_estimate(params, target)``.

The weights (Malkin et al. 2022, "Trajectory balance", NeurIPS, eq. 14; the
importance-sampling view of Zhang et al. 2022, "Generative flow networks for
discrete probabilistic modeling", ICML): for a trajectory ``tau`` drawn by the
forward policy and ending at ``x``,

    log w(tau) = log R(x) + log P_B(tau | x) - log P_F(tau),

and since ``sum_{tau -> x} P_B(tau | x) = 1``, ``E_{P_F}[w] = sum_x R(x) = Z``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxsamp.core.errors import InputError
from jaxsamp.core.protocols import WeightedSamples
from jaxsamp.learned.gflownet.policy import Trajectories, backward_log_probs, masked_log_softmax, sample_objects

if TYPE_CHECKING:
    from jaxsamp.learned.gflownet.training import GFlowNetTrainState


class TrainedGFlowNet:
    """``sample``, ``evaluate`` and the exact policy metrics of a GFlowNet, from its train state (module docstring)."""

    def logits_fn(self, network: nnx.State):
        """``states -> logits`` of the sampling policy (``Q / tau`` for soft DQN)."""
        return lambda s: self.model.forward_logits(network, s) / self.temperature

    def sampling_backward_log_prob(self, network: nnx.State, target) -> Callable:
        """``(s, a, s') -> log P_B(s | s')`` of the trained backward policy, for :meth:`sample`'s weights.

        The ``P_B`` the forward loss was matched to: fixed (``uniform``, ``maxent``), the
        Polyak-averaged head (``tlm``) or the online head (``naive``, ``pessimistic``).
        """
        env, pb = self.env, self.settings.backward_policy

        def log_prob(s, a, s_next):
            lengths = jnp.where(a == env.exit_action, 1, 2)  # one move (or none) as a trajectory
            one = Trajectories(jnp.stack([s, s_next], 1), a[:, None], lengths, jnp.zeros(a.shape))
            if pb in ("uniform", "maxent"):
                return backward_log_probs(env, pb, one)[:, 0]
            params = target if pb == "tlm" else network
            (logits,) = self.model.heads(params, self.model.features(params, s_next), ["backward"])
            return backward_log_probs(env, "learned", one, logits[:, None])[:, 0]

        return log_prob

    def sample(self, state: GFlowNetTrainState, key, num: int) -> WeightedSamples:
        """``num`` objects of the trained forward policy with trajectory importance weights.

        ``x``: ``(num, *state_shape)`` int32 objects. ``log_w = log R(x) + log P_B(tau | x) - log P_F(tau)``
        for the trajectory ``tau`` that built each ``x`` (the trajectory-balance ratio of
        Malkin et al. 2022, eq. 14, with the trained ``P_B``: :meth:`sampling_backward_log_prob`).
        Since ``sum_tau P_B(tau | x) = 1``, ``E_{P_F}[exp(log_w)] = Z`` for any ``P_B``, so
        ``.log_Z`` is a consistent estimate of ``log Z`` (its exponent unbiased), and
        self-normalised weights make expectations under ``pi`` consistent, on a DAG with
        any number of paths per object. These are weights on trajectories, not on objects:
        ``R(x) / P_F(x)`` with the marginal ``P_F(x) = sum_tau P_F(tau)`` needs a sum over
        every path (:meth:`policy_metrics` does it exactly on enumerable environments), and
        the trajectory weights' ESS is at most the marginal one. At the optimum of
        any balance loss ``log_w = log Z`` on every trajectory: ``ess = 1``.
        """
        network = state.params.network
        backward = self.sampling_backward_log_prob(network, state.target)
        out = sample_objects(self.env, self.logits_fn(network), key, num, backward)
        log_r = jax.vmap(self.env.log_reward)(out.objects)
        return WeightedSamples(out.objects, log_r + out.log_pb - out.log_pf)

    def evaluate(self, state: GFlowNetTrainState, key, num: int) -> dict:
        """The trained sampler's figures against the exact ``pi`` and ``log Z`` (floats).

        From ``num`` weighted draws (:meth:`sample`): ``elbo`` (mean ``log_w``, a lower bound on
        ``log Z``), ``log_Z_reverse`` (the importance estimate ``.log_Z``), ``ess``, and their
        ``_abs_err`` against ``log_Z_exact``; the learned ``log_z_learned`` (the ``log_z`` of
        the step metrics) and its ``logz_abs_err``; and, where every state can be enumerated,
        free of sampling noise, ``policy_l1 = mean_x |pi_theta(x) - pi(x)|`` and
        ``policy_kl = KL(pi || pi_theta)`` of the forward policy's exact terminal
        distribution ``pi_theta`` (:meth:`policy_metrics`).
        """
        if getattr(self, "_jitted_sample", None) is None:  # one compilation for every call of this sampler
            self._jitted_sample = jax.jit(self.sample, static_argnums=2)
        samples = self._jitted_sample(state, key, num)
        log_w = np.asarray(samples.log_w, np.float64)
        exact = self.true_log_z
        learned = float(self.log_z_estimate(state.params, state.target))
        out = {
            "elbo": float(np.mean(log_w)),
            "log_Z_reverse": float(samples.log_Z),
            "ess": float(samples.ess),
            "log_Z_exact": exact,
            "log_z_learned": learned,
            "logz_abs_err": abs(learned - exact),
        }
        out["elbo_abs_err"], out["log_Z_reverse_abs_err"] = abs(out["elbo"] - exact), abs(out["log_Z_reverse"] - exact)
        try:
            out.update(self.policy_metrics(state))
        except InputError:  # more states than an exact push-forward can enumerate
            pass
        return out

    def policy_log_probs(self, network: nnx.State, chunk: int = 16384) -> np.ndarray:
        """``log P_F(a | s)`` of the sampling policy with ``network`` at every state (``all_states()`` order), float32."""
        env = self.env
        states = jnp.asarray(env.all_states())
        size = min(chunk, states.shape[0])
        pad = (-states.shape[0]) % size
        padded = jnp.concatenate([states, jnp.broadcast_to(states[:1], (pad, *env.state_shape))])
        if getattr(self, "_policy_table", None) is None:

            def table(network, blocks):
                def one(block):
                    return masked_log_softmax(self.logits_fn(network)(block), jax.vmap(env.forward_mask)(block))

                return jax.lax.map(one, blocks)

            self._policy_table = jax.jit(table)
        out = self._policy_table(network, padded.reshape(-1, size, *env.state_shape))
        return np.asarray(out).reshape(-1, env.num_actions)[: states.shape[0]]

    def policy_metrics(self, state: GFlowNetTrainState) -> dict:
        """Exact scores of the trained sampler: its terminal distribution ``pi_theta`` (pushed forward through the DAG,
        :meth:`~jaxsamp.targets.dag_environment.DagEnvironment.terminal_distribution`) against ``pi``:
        ``policy_l1 = mean |pi_theta - pi|`` and ``policy_kl = KL(pi || pi_theta)``, free of sampling noise.

        Raises :class:`~jaxsamp.core.errors.InputError` where the states are too many to enumerate."""
        pi_theta = self.env.terminal_distribution(self.policy_log_probs(state.params.network))
        pi = self.env.exact_probabilities
        with np.errstate(divide="ignore"):
            kl = float(np.sum(pi * (np.log(pi) - np.log(pi_theta))))
        return {"policy_l1": float(np.mean(np.abs(pi_theta - pi))), "policy_kl": kl}
