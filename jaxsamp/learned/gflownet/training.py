"""GFlowNets with a choice of backward policy, trajectory likelihood maximisation (TLM) among them.

Gritsaev, Morozov, Samsonov & Tiapkin (2025), "Optimizing backward policies in
GFlowNets via trajectory likelihood maximization", ICLR (arXiv 2410.15474), as
their hypergrid code runs it (``tgritsaev/gflownet-tlm``, on torchgfn;
research/methods.md §9). A GFlowNet samples objects ``x`` of a
:class:`~jaxsamp.targets.dag_environment.DagEnvironment` with probability
``∝ R(x)`` by a forward policy ``P_F`` over the DAG of partial states; training
matches ``P_F`` to a backward policy ``P_B`` on complete trajectories. One driver
step of :class:`GFlowNet`'s trainer is one iteration of the paper's algorithm:

1. roll out ``B`` trajectories (16 in the paper) of the current ``P_F`` in one
   ``lax.scan`` (:func:`~jaxsamp.learned.gflownet.policy.rollout`);
2. **backward step** (``tlm`` and ``pessimistic``): one Adam step on
   ``-sum_tau sum_t log P_B(s_t | s_{t+1})``. TLM uses the fresh trajectories, a
   learning rate decaying by ``backward_lr_decay`` (0.999) per step, and
   forward losses that read ``P_B`` from a Polyak-averaged copy
   ``theta_bar <- (1 - rate) theta_bar + rate theta`` (rate 0.25);
3. **forward step** with any forward loss, ``P_B`` held fixed in it
   (:mod:`~jaxsamp.learned.gflownet.losses`): ``tb`` (with a learned ``log Z``,
   learning rate 0.1), ``db`` and ``subtb`` (learned ``log F``, ``lambda = 0.9``),
   or ``soft_dqn`` / ``munchausen_dqn`` (Huber TD loss on 256 transitions of a
   prioritised buffer of 10^5, target network Polyak rate 0.25, Munchausen
   ``alpha = 0.15``, ``l0 = -100``, entropy scale ``1 / (1 - alpha)``, updates
   from the 17th iteration), in the soft-RL view where the intermediate rewards
   are ``log P_B(s | s')`` of the target ``P_B``.

Backward policies, each combinable with each loss:

* ``uniform`` -- fixed, uniform over the parents;
* ``maxent`` -- fixed, ``P_B(s | s') = N(s) / N(s')`` with ``N`` the number of
  paths from ``s_0``, the maximum-entropy choice (Tiapkin et al. 2024, AISTATS);
* ``naive`` -- the backward head trained jointly by the forward loss;
* ``pessimistic`` -- our reading of Jang et al. (2024), "Pessimistic backward
  policy for GFlowNets", NeurIPS: the same likelihood step as TLM but on a
  batch of observed trajectories drawn from a FIFO buffer of past rollouts, at a
  constant learning rate, with the forward loss reading the current ``P_B``
  (no target network);
* ``tlm`` -- as above.

``P_F``, ``P_B`` and ``log F`` are heads of one trunk (2 x 256 MLP), ``P_B``
initialised uniform; the backward step updates the trunk too, as the
reference's backward optimiser holds the tied trunk. The forward optimiser
(Adam, 1e-3) sees zero gradients for the backward head except under ``naive``.

Every ``eval_every`` iterations the paper's metrics are computed from the empirical
distribution ``pi_hat`` of the last ``history_size`` terminal states visited in training
(200 000 in the paper): ``empirical_l1 = mean_x |pi_hat(x) - pi(x)|`` (torchgfn's mean over
objects), ``empirical_kl = KL(pi || pi_hat)`` with ``pi_hat + 1e-9``, ``log_Z_learned_abs_err =
|log Z - log Z_learned|`` (``log Z_learned``: the learned ``log Z`` for TB, ``log F(s_0)``
for DB and SubTB, the soft value ``V(s_0)`` for soft DQN), and ``modes_found``, the
modes hit by any terminal state since the start. (``evaluate``'s ``policy_l1`` and
``policy_kl`` are the same figures of the forward policy's exact terminal distribution,
free of the window's sampling noise.)

:func:`build` is the method's constructor (``jaxsamp.fit("gflownet", env, ...)``): it returns
a :class:`~jaxsamp.core.LearnedSampler` over :class:`GFlowNet`, the numerics; the trained
sampler's weighted draws and exact scores are :mod:`~jaxsamp.learned.gflownet.sampling`'s.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Annotated, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from jaxsamp.core.errors import InputError
from jaxsamp.core.protocols import LearnedSampler, TrainingHealth, WeightedSamples
from jaxsamp.core.target import Target
from jaxsamp.core.validation import (
    Interval,
    OneOf,
    OpenUnitFloat,
    PositiveFloat,
    PositiveInt,
    Probability,
    check_fields,
    check_widths,
)
from jaxsamp.learned import buffer as fifo
from jaxsamp.learned.gflownet import losses
from jaxsamp.learned import prioritized_buffer as prioritized
from jaxsamp.learned.gflownet.policy import (
    PolicyModel,
    Trajectories,
    backward_log_probs,
    forward_log_probs,
    rollout,
    transition_masks,
)
from jaxsamp.diagnostics.weights import figures
from jaxsamp.learned.gflownet import sampling
from jaxsamp.targets.dag_environment import DagEnvironment

LOSSES = ("tb", "db", "subtb", "soft_dqn", "munchausen_dqn")
BACKWARD_POLICIES = ("uniform", "naive", "maxent", "pessimistic", "tlm")
DQN_LOSSES = ("soft_dqn", "munchausen_dqn")
KL_SMOOTHING = 1e-9
#: Trajectories rolled out per iteration by default (the TLM paper's 16): ``jaxsamp.fit``'s ``batch_size``
BATCH_SIZE = 16


@dataclasses.dataclass(frozen=True)
class GFlowNetSettings:
    """Hyper-parameters (defaults: the TLM paper's hypergrid settings, research/anchors2.md).

    Attributes
    ----------
    loss : {"tb", "db", "subtb", "soft_dqn", "munchausen_dqn"}
    backward_policy : {"uniform", "naive", "maxent", "pessimistic", "tlm"}
    hidden : tuple of int
        Trunk widths (256, 256).
    learning_rate : float
        Adam on the network for the forward loss (1e-3).
    log_z_learning_rate : float
        Adam on TB's ``log Z`` (0.1).
    subtb_lambda : float
        SubTB's geometric weight (0.9).
    backward_learning_rate : float
        Adam of the backward step (TLM, pessimistic; 1e-3).
    backward_lr_decay : float
        TLM's per-step learning-rate factor (0.999).
    target_rate : float
        Polyak rate of the target network (TLM's ``P_B``, soft DQN's ``Q``; 0.25).
    backward_first : bool
        Backward step before the forward step (True, the paper's default).
    pessimistic_buffer_size : int
        Trajectories kept for the pessimistic backward step (FIFO; 1000).
    munchausen_alpha, munchausen_l0 : float
        Munchausen-DQN's ``alpha`` (0.15) and clip ``l0`` (-100).
    buffer_size, batch_size : int
        Soft DQN's prioritised replay of transitions (10^5) and its batch (256).
    priority_exponent : float
        ``alpha`` of the prioritised replay (0.5).
    learning_starts : int
        Soft DQN updates begin after this many iterations (16).
    huber_delta : float
        Soft DQN's Huber loss threshold (1).
    history_size : int
        Terminal states behind ``pi_hat``, the empirical distribution of ``empirical_l1`` (200 000).
    eval_every : int
        Iterations between evaluations of ``empirical_l1`` and ``empirical_kl`` (100).
    """

    loss: Annotated[str, OneOf(LOSSES)] = "tb"
    backward_policy: Annotated[str, OneOf(BACKWARD_POLICIES)] = "tlm"
    hidden: tuple = (256, 256)
    learning_rate: PositiveFloat = 1e-3
    log_z_learning_rate: PositiveFloat = 0.1
    subtb_lambda: OpenUnitFloat = 0.9
    backward_learning_rate: PositiveFloat = 1e-3
    backward_lr_decay: Annotated[float, Interval(gt=0, le=1)] = 0.999
    target_rate: Annotated[float, Interval(gt=0, le=1)] = 0.25
    backward_first: bool = True
    pessimistic_buffer_size: PositiveInt = 1000
    munchausen_alpha: Annotated[float, Interval(ge=0, lt=1)] = 0.15
    munchausen_l0: Annotated[float, Interval(lt=0)] = -100.0
    buffer_size: PositiveInt = 100_000
    batch_size: PositiveInt = 256
    priority_exponent: Probability = 0.5
    learning_starts: Annotated[int, Interval(ge=0)] = 16
    huber_delta: PositiveFloat = 1.0
    history_size: PositiveInt = 200_000
    eval_every: PositiveInt = 100

    def __post_init__(self):
        check_fields(self)
        object.__setattr__(self, "hidden", check_widths(type(self).__name__, "hidden", self.hidden))

    @property
    def entropy_scale(self) -> float:
        """Soft DQN's ``tau = 1 / (1 - alpha)`` (1 without the Munchausen term), so that ``(1 - alpha) tau = 1``."""
        return 1.0 / (1.0 - self.munchausen_alpha) if self.loss == "munchausen_dqn" else 1.0


class GFlowNetParams(NamedTuple):
    """Trained quantities: the network (``nnx.split`` state) and TB's ``log Z``."""

    network: nnx.State
    log_z: jax.Array


class TerminalHistory(NamedTuple):
    """The last ``N`` terminal states visited, as a ring of indices and their counts.

    Attributes
    ----------
    ring : (N,) int32 -- terminal indices, -1 in slots never written.
    counts : (num_terminal_states,) int32 -- how often each object is in the ring.
    position, size : int32
    modes_seen : (num_modes,) bool -- modes hit since the start.
    """

    ring: jax.Array
    counts: jax.Array
    position: jax.Array
    size: jax.Array
    modes_seen: jax.Array


class Replay(NamedTuple):
    """Soft DQN's prioritised transitions and the pessimistic policy's trajectories (``()`` when unused)."""

    transitions: prioritized.PrioritizedBuffer | tuple
    trajectories: fifo.ReplayBuffer | tuple


class GFlowNetTrainState(NamedTuple):
    """A plain PyTree the driver checkpoints.

    Attributes
    ----------
    params : GFlowNetParams
    target : nnx.State -- the Polyak-averaged network (TLM's ``P_B``, soft DQN's ``Q``).
    optimizer : (network Adam state, log Z Adam state)
    backward_optimizer : Adam state of the backward step (``()`` without one)
    replay : Replay
    history : TerminalHistory
    iteration : int32 -- iterations done; ``iteration * B`` trajectories.
    """

    params: GFlowNetParams
    target: nnx.State
    optimizer: tuple
    backward_optimizer: tuple | optax.OptState
    replay: Replay
    history: TerminalHistory
    iteration: jax.Array


def as_environment(target) -> DagEnvironment:
    """``target`` if it is a DAG environment, else an InputError saying what a GFlowNet needs."""
    if not isinstance(target, DagEnvironment):
        raise InputError(
            f"a GFlowNet needs a DAG environment, got {getattr(target, 'name', type(target).__name__)!r}",
            'build one: jaxsamp.targets.get("hypergrid", dim=2, side=8) or jaxsamp.targets.get("bit_sequence", ...)',
        )
    return target


def sampling_policy(model: PolicyModel, settings: GFlowNetSettings):
    """``network -> (states -> logits)`` of the policy that samples: the forward head (``Q / tau`` for soft DQN)."""
    tau = settings.entropy_scale
    return lambda network: lambda s: model.forward_logits(network, s) / tau


def policy_distribution(env: DagEnvironment, settings: GFlowNetSettings, network: nnx.State) -> np.ndarray:
    """``pi_theta``: the exact distribution over objects of a trained forward policy, pushed through the DAG.

    ``network`` and ``settings`` as :func:`jaxsamp.fit` leaves them (``fitted.state.params.network``,
    ``fitted.settings``); float64 in ``terminal_index`` order
    (:meth:`~jaxsamp.targets.dag_environment.DagEnvironment.terminal_distribution`). Raises
    :class:`~jaxsamp.core.errors.InputError` where the states are too many to enumerate.
    """
    logits_fn = sampling_policy(PolicyModel(env, settings.hidden), settings)
    return env.terminal_distribution(sampling.policy_table(env, logits_fn)(network))


def _polyak(target, online, rate):
    return jax.tree.map(lambda t, o: (1.0 - rate) * t + rate * o, target, online)


def _select(flag, new, old):
    return jax.tree.map(lambda a, b: jnp.where(flag, a, b), new, old)


class GFlowNet:
    """The numerics of a GFlowNet on a DAG environment: training step, weighted draws, exact scores (key first).

    One ``step`` is one iteration of the TLM paper's algorithm (module docstring;
    Gritsaev et al. 2025, Alg. 1): ``num_trajectories`` rollouts, the backward
    step (``tlm``, ``pessimistic``), the forward step. :func:`build` makes one and
    returns its :class:`~jaxsamp.core.LearnedSampler`; the step metrics and how to set
    the settings are in its docstring.

    Parameters
    ----------
    env : DagEnvironment
        ``jaxsamp.targets.get("hypergrid", ...)`` or ``("bit_sequence", ...)``; its
        terminal objects must be enumerable (the exact ``pi`` and ``log Z`` score training).
    settings : GFlowNetSettings
    num_trajectories : int
        Trajectories rolled out per iteration (16 in the paper).
    optimizer : optax.GradientTransformation, optional
        The network's optimiser for the forward loss, instead of Adam at ``settings.learning_rate``.

    Attributes
    ----------
    env : DagEnvironment
    settings : GFlowNetSettings
    model : PolicyModel
    logits_fn : callable
        ``network -> (states -> logits)`` of the sampling policy (:func:`sampling_policy`).
    log_Z_exact : float
        The environment's ``log Z`` by enumeration.
    """

    def __init__(self, env: DagEnvironment, settings: GFlowNetSettings, num_trajectories: int,
                 optimizer: optax.GradientTransformation | None = None):
        as_environment(env)
        if isinstance(num_trajectories, bool) or not isinstance(num_trajectories, int) or num_trajectories < 1:
            raise InputError(f"num_trajectories must be a positive int, got {num_trajectories!r}")
        if num_trajectories > settings.history_size:
            raise InputError(f"num_trajectories={num_trajectories} exceeds history_size={settings.history_size}")
        self.dqn = settings.loss in DQN_LOSSES
        T = env.max_trajectory_length
        if self.dqn and num_trajectories * T > settings.buffer_size:
            raise InputError(
                f"a rollout of {num_trajectories} x {T} transitions does not fit buffer_size={settings.buffer_size}"
            )
        if settings.backward_policy == "pessimistic" and num_trajectories > settings.pessimistic_buffer_size:
            raise InputError(f"num_trajectories={num_trajectories} exceeds pessimistic_buffer_size")
        self.env, self.settings, self.num_trajectories = env, settings, num_trajectories
        self.model = PolicyModel(env, settings.hidden)
        self.pi = jnp.asarray(env.exact_probabilities, jnp.float32)
        self.log_Z_exact = float(env.log_Z)
        self.optimizer = optax.adam(settings.learning_rate) if optimizer is None else optimizer
        self.log_z_optimizer = optax.adam(settings.log_z_learning_rate)
        pb = settings.backward_policy
        self.trains_backward = pb in ("tlm", "pessimistic")
        rate = (
            optax.exponential_decay(settings.backward_learning_rate, 1, settings.backward_lr_decay)
            if pb == "tlm"
            else settings.backward_learning_rate
        )
        self.backward_optimizer = optax.adam(rate)
        self.uses_target = pb == "tlm" or self.dqn
        self.temperature = settings.entropy_scale
        self.logits_fn = sampling_policy(self.model, settings)
        self._compiled_sample = jax.jit(self.sample, static_argnums=2)  # evaluate's: compiled once per sampler

    # ---- sampling and exact scores ------------------------------------------------------
    def sample_trajectories(self, network: nnx.State, key, num: int) -> Trajectories:
        """``num`` trajectories of the current forward policy."""
        return rollout(self.env, self.logits_fn(jax.lax.stop_gradient(network)), key, num)

    def sample(self, key, state: GFlowNetTrainState, num_samples: int) -> WeightedSamples:
        """``num_samples`` objects of the trained forward policy with trajectory importance weights
        (:func:`~jaxsamp.learned.gflownet.sampling.weighted_draws`), ``P_B`` the one the forward loss was
        matched to (:func:`~jaxsamp.learned.gflownet.sampling.backward_log_prob`)."""
        network = state.params.network
        backward = sampling.backward_log_prob(self.model, self.settings.backward_policy, network, state.target)
        return sampling.weighted_draws(self.env, self.logits_fn(network), backward, key, num_samples)

    def evaluate(self, key, state: GFlowNetTrainState, num_samples: int, **options) -> dict:
        """The trained sampler's figures against the exact ``pi`` and ``log Z`` (floats); it takes no option.

        The canonical figures of ``num_samples`` weighted draws (:meth:`sample`;
        :func:`~jaxsamp.diagnostics.weights.figures`: ``log_Z_hat``, ``ess``, ``elbo``, their errors
        against ``log_Z_exact``); the learned ``log_Z_learned`` (the step metrics' one) and its
        ``log_Z_learned_abs_err``; and, where every state can be enumerated, free of sampling noise,
        ``policy_l1 = mean_x |pi_theta(x) - pi(x)|`` and ``policy_kl = KL(pi || pi_theta)`` of the
        forward policy's exact terminal distribution ``pi_theta`` (:meth:`policy_metrics`).
        """
        if options:
            raise InputError(f"evaluate takes no option {', '.join(sorted(options))}", "its options: none")
        out = figures(self._compiled_sample(key, state, num_samples), log_Z_exact=self.log_Z_exact)
        learned = float(self.log_Z_learned(state.params, state.target))
        out.update(log_Z_learned=learned, log_Z_learned_abs_err=abs(learned - self.log_Z_exact))
        try:
            out.update(self.policy_metrics(state))
        except InputError:  # more states than an exact push-forward can enumerate
            pass
        return out

    @functools.cached_property
    def policy_log_probs(self):
        """``network -> log P_F(a | s)`` of the sampling policy at every state, compiled once
        (:func:`~jaxsamp.learned.gflownet.sampling.policy_table`)."""
        return sampling.policy_table(self.env, self.logits_fn)

    def policy_metrics(self, state: GFlowNetTrainState) -> dict:
        """``policy_l1`` and ``policy_kl`` of the trained forward policy's exact terminal distribution
        (:func:`~jaxsamp.learned.gflownet.sampling.policy_figures`).

        Raises :class:`~jaxsamp.core.errors.InputError` where the states are too many to enumerate."""
        return sampling.policy_figures(self.env, self.policy_log_probs(state.params.network))

    # ---- backward log-probabilities in the forward losses ----------------------------
    def _log_pb(self, network, target, trajectories: Trajectories, features) -> jax.Array:
        pb = self.settings.backward_policy
        if pb in ("uniform", "maxent"):
            return backward_log_probs(self.env, pb, trajectories)
        if pb == "tlm":
            features = self.model.features(target, trajectories.states[:, 1:])
            (logits,) = self.model.heads(target, features, ["backward"])
            return jax.lax.stop_gradient(backward_log_probs(self.env, "learned", trajectories, logits))
        (logits,) = self.model.heads(network, features[:, 1:], ["backward"])
        log_pb = backward_log_probs(self.env, "learned", trajectories, logits)
        return log_pb if pb == "naive" else jax.lax.stop_gradient(log_pb)

    def backward_nll(self, network: nnx.State, trajectories: Trajectories) -> jax.Array:
        """TLM's objective ``-sum_tau sum_t log P_B(s_t | s_{t+1})`` of a batch under the online backward head."""
        features = self.model.features(network, trajectories.states[:, 1:])
        (logits,) = self.model.heads(network, features, ["backward"])
        return -jnp.sum(backward_log_probs(self.env, "learned", trajectories, logits))

    # ---- forward losses ------------------------------------------------------------------
    def flow_loss(self, params: GFlowNetParams, target, trajectories: Trajectories) -> jax.Array:
        """TB, DB or SubTB on a batch of trajectories (``P_B`` per the backward policy)."""
        s = self.settings
        features = self.model.features(params.network, trajectories.states)
        names = ["forward"] + (["flow"] if s.loss in ("db", "subtb") else [])
        heads = self.model.heads(params.network, features, names)
        log_pf = forward_log_probs(self.env, heads[0][:, :-1], trajectories)
        log_pb = self._log_pb(params.network, target, trajectories, features)
        n, log_r = trajectories.lengths, trajectories.log_rewards
        if s.loss == "tb":
            return losses.trajectory_balance(params.log_z, log_pf, log_pb, log_r, n)
        at_end = jnp.arange(log_pf.shape[1] + 1)[None, :] == n[:, None]
        log_flow = jnp.where(at_end, log_r[:, None], heads[1])
        if s.loss == "db":
            return losses.detailed_balance(log_flow, log_pf, log_pb, n)
        return losses.subtrajectory_balance(log_flow, log_pf, log_pb, n, s.subtb_lambda)

    def dqn_residuals(self, network, target, transitions) -> jax.Array:
        """Soft-DQN TD residuals of transitions ``(s, a, s', log R(s))`` (N,)."""
        env, s, tau = self.env, self.settings, self.temperature
        state, action, nxt, log_r = transitions
        done = action == env.exit_action
        n, pb = state.shape[0], s.backward_policy
        munchausen = s.loss == "munchausen_dqn"
        # the trunk runs only where a head is read: online Q(s) (and P_B(.|s') when it is the online head),
        # target Q(s') (and Q(s) for the Munchausen term, P_B(.|s') for TLM)
        online_features = self.model.features(
            network, jnp.concatenate([state, nxt]) if pb in ("naive", "pessimistic") else state
        )
        target_features = self.model.features(target, jnp.concatenate([nxt, state]) if munchausen else nxt)
        (q,) = self.model.heads(network, online_features[:n], ["forward"])
        (q_target,) = self.model.heads(target, target_features, ["forward"])
        q_target = jax.lax.stop_gradient(q_target)
        next_mask = jax.vmap(env.forward_mask)(nxt)
        q_sa = jnp.take_along_axis(q, action[:, None], axis=-1)[:, 0]
        next_value = losses.soft_value(q_target[:n], next_mask, tau)
        as_trajectory = Trajectories(jnp.stack([state, nxt], 1), action[:, None], jnp.where(done, 1, 2), log_r)
        if pb in ("uniform", "maxent"):
            log_pb = backward_log_probs(env, pb, as_trajectory)[:, 0]
        else:
            params, feats = (target, target_features[:n]) if pb == "tlm" else (network, online_features[n:])
            (logits,) = self.model.heads(params, feats, ["backward"])
            log_pb = backward_log_probs(env, "learned", as_trajectory, logits[:, None])[:, 0]
            if pb != "naive":
                log_pb = jax.lax.stop_gradient(log_pb)
        bonus = 0.0
        if munchausen:
            log_pi = losses.soft_policy_log_probs(q_target[n:], jax.vmap(env.forward_mask)(state), tau)
            log_pi_a = jnp.take_along_axis(log_pi, action[:, None], axis=-1)[:, 0]
            bonus = s.munchausen_alpha * jnp.clip(tau * log_pi_a, s.munchausen_l0, 0.0)
        return losses.soft_dqn_residuals(q_sa, done, log_r, log_pb, next_value, bonus)

    def _huber(self, residual):
        return optax.losses.huber_loss(residual, delta=self.settings.huber_delta)

    # ---- the trainer ----------------------------------------------------------------------
    def init(self, key) -> GFlowNetTrainState:
        """Fresh network (``P_B`` uniform), ``log Z = 0``, empty buffers and history."""
        s, env = self.settings, self.env
        network = self.model.init(key)
        params = GFlowNetParams(network, jnp.zeros((), jnp.float32))
        optimizer = (self.optimizer.init(network), self.log_z_optimizer.init(params.log_z))
        backward_optimizer = self.backward_optimizer.init(network) if self.trains_backward else ()
        state0 = jnp.zeros(env.state_shape, jnp.int32)
        transitions = ()
        if self.dqn:
            item = (state0, jnp.zeros((), jnp.int32), state0, jnp.zeros((), jnp.float32))
            transitions = prioritized.init(item, s.buffer_size)
        trajectories = ()
        if s.backward_policy == "pessimistic":
            T = env.max_trajectory_length
            item = (
                jnp.zeros((T + 1, *env.state_shape), jnp.int32),
                jnp.zeros((T,), jnp.int32),
                jnp.zeros((), jnp.int32),
            )
            trajectories = fifo.init(item, s.pessimistic_buffer_size)
        history = TerminalHistory(
            jnp.full((s.history_size,), -1, jnp.int32),
            jnp.zeros((env.num_terminal_states,), jnp.int32),
            jnp.zeros((), jnp.int32),
            jnp.zeros((), jnp.int32),
            jnp.zeros((max(env.num_modes, 1),), bool),
        )
        target = network if self.uses_target else ()
        return GFlowNetTrainState(
            params,
            target,
            optimizer,
            backward_optimizer,
            Replay(transitions, trajectories),
            history,
            jnp.zeros((), jnp.int32),
        )

    def _record(self, history: TerminalHistory, objects) -> TerminalHistory:
        env = self.env
        index = jax.vmap(env.terminal_index)(objects)
        modes = jax.vmap(env.mode_index)(objects)
        N, K = history.ring.shape[0], history.counts.shape[0]
        slots = (history.position + jnp.arange(index.shape[0])) % N
        old = history.ring[slots]
        counts = history.counts.at[jnp.where(old >= 0, old, K)].add(-1, mode="drop").at[index].add(1)
        seen = history.modes_seen.at[jnp.where(modes >= 0, modes, history.modes_seen.shape[0])].set(True, mode="drop")
        return TerminalHistory(
            history.ring.at[slots].set(index),
            counts,
            (history.position + index.shape[0]) % N,
            jnp.minimum(history.size + index.shape[0], N),
            seen,
        )

    def empirical_metrics(self, history: TerminalHistory) -> dict:
        """``empirical_l1`` (mean over objects of ``|pi_hat - pi|``) and ``empirical_kl`` (``KL(pi || pi_hat +
        1e-9)``) of the empirical terminal distribution ``pi_hat`` of the history (the paper's L1 and KL)."""
        pi_hat = history.counts.astype(jnp.float32) / jnp.maximum(history.size, 1).astype(jnp.float32)
        l1 = jnp.mean(jnp.abs(pi_hat - self.pi))
        kl = jnp.sum(self.pi * (jnp.log(self.pi) - jnp.log(pi_hat + KL_SMOOTHING)))
        return {"empirical_l1": l1, "empirical_kl": kl}

    def log_Z_learned(self, params: GFlowNetParams, target) -> jax.Array:
        """The learned ``log Z``: TB's parameter, ``log F(s_0)`` (DB, SubTB) or the soft value ``V(s_0)`` (soft DQN)."""
        if self.settings.loss == "tb":
            return params.log_z
        s0 = self.env.initial_state()[None]
        features = self.model.features(params.network, s0)
        if self.dqn:
            (q,) = self.model.heads(params.network, features, ["forward"])
            return losses.soft_value(q, jax.vmap(self.env.forward_mask)(s0), self.temperature)[0]
        return self.model.heads(params.network, features, ["flow"])[0][0]

    def _backward_step(self, key, params: GFlowNetParams, target, backward_optimizer, replay: Replay, fresh):
        """TLM (fresh trajectories, then Polyak) or pessimistic (buffer trajectories) likelihood step."""
        if self.settings.backward_policy == "pessimistic":
            states, actions, lengths = fifo.sample(replay.trajectories, key, self.num_trajectories)
            batch = Trajectories(states, actions, lengths, jnp.zeros(lengths.shape))
        else:
            batch = fresh
        nll, grads = jax.value_and_grad(self.backward_nll)(params.network, batch)
        updates, backward_optimizer = self.backward_optimizer.update(grads, backward_optimizer, params.network)
        network = optax.apply_updates(params.network, updates)
        if self.settings.backward_policy == "tlm" and not self.dqn:
            target = _polyak(target, network, self.settings.target_rate)
        return params._replace(network=network), target, backward_optimizer, nll

    def _forward_flow_step(self, params: GFlowNetParams, target, optimizer, trajectories):
        loss, grads = jax.value_and_grad(self.flow_loss)(params, target, trajectories)
        step_net, net_opt = self.optimizer.update(grads.network, optimizer[0], params.network)
        step_z, z_opt = self.log_z_optimizer.update(grads.log_z, optimizer[1], params.log_z)
        log_z = params.log_z + step_z if self.settings.loss == "tb" else params.log_z
        return GFlowNetParams(optax.apply_updates(params.network, step_net), log_z), (net_opt, z_opt), loss

    def _transitions(self, trajectories: Trajectories):
        valid, _ = transition_masks(trajectories)
        T = trajectories.actions.shape[1]
        flat = lambda a: a.reshape((-1, *a.shape[2:]))
        log_r = jnp.broadcast_to(trajectories.log_rewards[:, None], (trajectories.lengths.shape[0], T))
        items = (
            flat(trajectories.states[:, :-1]),
            flat(trajectories.actions),
            flat(trajectories.states[:, 1:]),
            flat(log_r),
        )
        return items, flat(valid)

    def _forward_dqn_step(self, key, params: GFlowNetParams, target, optimizer, replay: Replay, active):
        s = self.settings
        index, batch = prioritized.sample(replay.transitions, key, s.batch_size)

        def loss_fn(network):
            residual = self.dqn_residuals(network, target, batch)
            td = self._huber(residual)
            return jnp.mean(td), td

        (loss, td), grads = jax.value_and_grad(loss_fn, has_aux=True)(params.network)
        step_net, net_opt = self.optimizer.update(grads, optimizer[0], params.network)
        new_params = params._replace(network=optax.apply_updates(params.network, step_net))
        buffer = prioritized.update_priorities(
            replay.transitions, index, jax.lax.stop_gradient(td), s.priority_exponent
        )
        params = _select(active, new_params, params)
        optimizer = (_select(active, net_opt, optimizer[0]), optimizer[1])
        replay = replay._replace(transitions=_select(active, buffer, replay.transitions))
        return params, optimizer, replay, loss

    def step(self, key, state: GFlowNetTrainState) -> tuple[GFlowNetTrainState, dict]:
        """One iteration: rollout, backward step (TLM / pessimistic), forward step; exact metrics every ``eval_every``."""
        s = self.settings
        k_roll, k_back, k_fwd = jax.random.split(key, 3)
        params, target, optimizer, backward_optimizer, replay = (
            state.params,
            state.target,
            state.optimizer,
            state.backward_optimizer,
            state.replay,
        )
        fresh = self.sample_trajectories(params.network, k_roll, self.num_trajectories)
        history = self._record(state.history, fresh.terminal)
        if s.backward_policy == "pessimistic":
            replay = replay._replace(
                trajectories=fifo.add(replay.trajectories, (fresh.states, fresh.actions, fresh.lengths))
            )
        active = state.iteration >= s.learning_starts + 1 if self.dqn else jnp.asarray(True)
        backward_loss = jnp.asarray(jnp.nan, jnp.float32)

        def backward(params, target, backward_optimizer):
            new = self._backward_step(k_back, params, target, backward_optimizer, replay, fresh)
            chosen = _select(active, new[:3], (params, target, backward_optimizer))
            return (*chosen, jnp.where(active, new[3], jnp.nan))

        if self.trains_backward and s.backward_first:
            params, target, backward_optimizer, backward_loss = backward(params, target, backward_optimizer)
        if self.dqn:
            items, valid = self._transitions(fresh)
            td = self._huber(self.dqn_residuals(params.network, target, items))
            buffer = prioritized.add(replay.transitions, items, jax.lax.stop_gradient(td), s.priority_exponent, valid)
            replay = replay._replace(transitions=buffer)
            params, optimizer, replay, loss = self._forward_dqn_step(k_fwd, params, target, optimizer, replay, active)
            target = _select(active, _polyak(target, params.network, s.target_rate), target)
        else:
            params, optimizer, loss = self._forward_flow_step(params, target, optimizer, fresh)
        if self.trains_backward and not s.backward_first:
            params, target, backward_optimizer, backward_loss = backward(params, target, backward_optimizer)

        iteration = state.iteration + 1
        evaluate = iteration % s.eval_every == 0
        nan = jnp.asarray(jnp.nan, jnp.float32)
        empirical = jax.lax.cond(evaluate, self.empirical_metrics, lambda h: {"empirical_l1": nan, "empirical_kl": nan},
                                 history)
        log_z = self.log_Z_learned(params, target)
        metrics = {
            "loss": loss,
            "backward_loss": backward_loss,
            "log_Z_learned": log_z,
            "log_Z_learned_abs_err": jnp.where(evaluate, jnp.abs(log_z - self.log_Z_exact), nan),
            **empirical,
            "modes_found": jnp.sum(history.modes_seen) if self.env.num_modes else jnp.zeros((), jnp.int32),
            "mean_length": jnp.mean(fresh.lengths.astype(jnp.float32)),
            "trajectories": iteration * self.num_trajectories,
        }
        new = GFlowNetTrainState(params, target, optimizer, backward_optimizer, replay, history, iteration)
        return new, metrics


def learning_curve(history: dict) -> dict:
    """The evaluated rows of a training history (every ``eval_every`` iterations) as NumPy arrays:
    ``trajectories``, ``empirical_l1``, ``empirical_kl``, ``log_Z_learned_abs_err``, ``modes_found``."""
    rows = np.isfinite(np.asarray(history["empirical_l1"]))
    names = ("trajectories", "empirical_l1", "empirical_kl", "log_Z_learned_abs_err", "modes_found")
    return {name: np.asarray(history[name])[rows] for name in names}


def judges_progress(settings: GFlowNetSettings) -> bool:
    """Whether the forward loss is a fixed objective, so that one that does not decrease means trouble.

    Not where its target moves with training: the DQN losses regress on a Polyak-averaged target
    network, and under the ``tlm`` and ``pessimistic`` backward policies the forward loss reads a
    ``P_B`` trained by a separate likelihood step. TB, DB and SubTB with a fixed (``uniform``,
    ``maxent``) or jointly trained (``naive``) ``P_B`` are judged.
    """
    return settings.loss not in DQN_LOSSES and settings.backward_policy not in ("tlm", "pessimistic")


def training_health(settings: GFlowNetSettings) -> TrainingHealth:
    """How a GFlowNet's training is judged: :func:`judges_progress`, and for soft DQN only the iterations that
    update (after ``learning_starts + 1``; before them the TD loss is computed but not applied)."""
    if settings.loss not in DQN_LOSSES:
        return TrainingHealth(judges_progress(settings))

    def updating(history: dict) -> dict:
        return {None: np.arange(len(history["loss"])) >= settings.learning_starts + 1}

    return TrainingHealth(judges_progress(settings), stages=updating)


def build(target, settings: GFlowNetSettings | None = None, *, batch_size: int | None = None,
          optimizer: optax.GradientTransformation | None = None) -> LearnedSampler:
    """A GFlowNet on a DAG environment as a :class:`~jaxsamp.core.LearnedSampler` (Gritsaev et al. 2025, ICLR).

    ``jaxsamp.fit("gflownet", env, ...)`` calls it. One ``step`` is one iteration of the
    TLM paper's algorithm (module docstring): ``batch_size`` rollouts, the backward step
    (``tlm``, ``pessimistic``), the forward step. ``sample`` draws objects with trajectory
    importance weights; ``evaluate`` scores them and the forward policy against the exact
    ``pi`` and ``log Z`` (:meth:`GFlowNet.evaluate`; no options).

    Parameters
    ----------
    target : DagEnvironment
        ``jaxsamp.targets.get("hypergrid", ...)`` or ``("bit_sequence", ...)``, with the built-in
        reward or your own (``log_reward=fn``, a JAX function of one object); its terminal objects
        must be enumerable (the exact ``pi`` and ``log Z`` score training).
    settings : GFlowNetSettings, optional
        Default: the TLM paper's hypergrid settings.
    batch_size : int, optional
        Trajectories rolled out per iteration (default :data:`BATCH_SIZE`, 16 as in the paper).
    optimizer : optax.GradientTransformation, optional
        The network's optimiser for the forward loss, instead of Adam at ``settings.learning_rate``
        (TB's ``log Z`` and the backward step keep their own Adam).

    Returns
    -------
    LearnedSampler
        Judged for progress where the loss is a fixed objective (:func:`training_health`).

    Notes
    -----
    **Step metrics** (per iteration; ``nan`` where not computed):

    ``loss``
        The forward loss (nats^2: a squared log-ratio; TB per trajectory, DB/SubTB
        per transition; soft DQN's Huber TD loss on its replay batch, computed but not applied
        before ``learning_starts``).
    ``backward_loss``
        TLM / pessimistic: ``-sum log P_B`` of the batch (nats, summed over transitions
        and trajectories); ``nan`` for the fixed and naive backward policies.
    ``log_Z_learned``
        The learned ``log Z`` (nats): TB's ``log Z``, ``log F(s_0)`` (DB, SubTB), ``V(s_0)`` (soft DQN).
    ``log_Z_learned_abs_err``
        ``|log_Z_learned - log Z|`` (nats), every ``eval_every`` iterations.
    ``empirical_l1``, ``empirical_kl``
        Every ``eval_every`` iterations: ``mean_x |pi_hat(x) - pi(x)|`` (probability) and
        ``KL(pi || pi_hat + 1e-9)`` (nats) of the empirical ``pi_hat`` of the last
        ``history_size`` terminal states of training (the paper's metrics; ``evaluate``'s
        ``policy_l1`` / ``policy_kl`` are those of the policy's exact terminal distribution).
    ``modes_found``
        Modes hit by any training rollout so far (count).
    ``mean_length``
        Mean trajectory length of the batch (transitions, exit included).
    ``trajectories``
        Trajectories rolled out so far (count).

    **Settings for a new environment.** The paper's defaults (:class:`GFlowNetSettings`:
    2 x 256 trunk, Adam 1e-3, TB's ``log Z`` at 0.1, 16 trajectories per iteration,
    10^6 trajectories in all) were set on the 20^4 hypergrid and the bit sequences;
    they are the place to start. What matters most: the **loss** (SubTB and
    Munchausen-DQN gave the paper's best L1 on the hypergrid; TB is the cheapest and
    learns ``log Z`` directly), the **backward policy** (``tlm`` helps DB, SubTB and
    DQN most on long trajectories; ``uniform`` is the safe fixed choice), and the
    budget: the number of trajectories should be large against the number of
    objects with non-negligible reward (``pi`` must be visited to be learned). On a
    small grid (8 x 8) a 64-wide trunk and a few thousand trajectories reach
    ``empirical_l1 ~ 1e-3``; sparse rewards (the ``hard`` hypergrid, ``R0 = 1e-4``) need
    ``loss="subtb"`` or ``"munchausen_dqn"`` and the full budget to find every mode.
    ``history_size`` only sizes the ``empirical_l1``/``empirical_kl`` window (keep it at about a fifth of
    the trajectories); ``eval_every`` only how often they are computed.
    """
    settings = GFlowNetSettings() if settings is None else settings
    environment = as_environment(target)
    gfn = GFlowNet(environment, settings, BATCH_SIZE if batch_size is None else batch_size, optimizer)
    return LearnedSampler(gfn.init, gfn.step, gfn.sample, gfn.evaluate, training_health(settings),
                          density=environment if isinstance(environment, Target) else None)
