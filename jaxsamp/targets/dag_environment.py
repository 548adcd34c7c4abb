"""Environments for GFlowNets: a target over terminal objects built through a DAG of partial states.

A GFlowNet (Bengio et al. 2021, "Flow network based generative models for
non-iterative diverse candidate generation", NeurIPS; Bengio et al. 2023,
"GFlowNet foundations", JMLR) samples an object ``x`` by a sequence of
constructive actions ``s_0 -> s_1 -> ... -> s_{n-1} = x -> exit`` from a fixed
initial state, with ``P(x) ∝ R(x)``. A :class:`DagEnvironment` is both a
:class:`~jaxsamp.core.target.Target` over the terminal objects
(``log_prob(x) = log R(x)``, with the exact ``log Z``, ``pi = R / Z`` and exact
samples by enumeration) and the DAG that builds them, as pure JAX functions of
ONE state (batch with ``jax.vmap``):

* ``forward_mask(s)`` (``num_actions``,) -- which forward actions are allowed;
  the last action is **exit**, which ends the trajectory at ``x = s`` (an
  environment whose objects are only the complete states allows exit only there);
* ``step(s, a)`` -- the child of ``s`` under a non-exit forward action ``a``;
* ``backward_mask(s)`` (``num_backward_actions``,) and ``parent(s, b)``;
* ``backward_action(a)`` -- the backward action that undoes forward action ``a``
  (the same for every state in these environments);
* ``tokens(s)`` -- the state's k-hot encoding as ``tokens_per_state`` indices
  into ``num_tokens`` (a network's first layer sums their embeddings, which is
  a linear layer on the one-hot encoding without the matrix product);
* ``log_num_paths(s)`` -- ``log`` of the number of paths from ``s_0`` to ``s``,
  for the maximum-entropy backward policy ``P_B(s | s') = N(s) / N(s')``
  (Tiapkin et al. 2024, "Generative flow networks as entropy-regularized RL", AISTATS);
* ``terminal_index(x)`` and ``mode_index(x)`` -- an object's place in the
  enumeration of ``terminal_states()``, and the mode it lies in (-1: none).

The reward is the environment's own, or **a user's**: an environment built with
``log_reward=fn`` (``jaxsamp.targets.get("hypergrid", ..., log_reward=fn)``,
``bit_sequence(..., log_reward=fn)``) has ``log R(x) = fn(reward_input(x))`` for a
plain JAX function ``fn`` of ONE object (:meth:`DagEnvironment.reward_input`: the
hypergrid's coordinates, a bit sequence's bits), and its exact ``log Z``, ``pi``
and flows are enumerated from ``fn`` as the sampler evaluates it (the default
float dtype: float32 unless ``jax_enable_x64``). Such an environment knows no
modes (``num_modes = 0``, ``mode_index = -1``).

States are ``int32`` arrays of shape ``state_shape``; a trajectory has at most
``max_trajectory_length`` transitions, the exit included. :meth:`DagEnvironment.exact_flows`
gives the exact state flows, forward policy and ``log Z`` for a fixed backward
policy by dynamic programming over every state.
"""

from __future__ import annotations

import abc
import functools
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy.special import logsumexp

from jaxsamp.core.errors import InputError
from jaxsamp.core.target import Target

#: Enumerations (terminal objects, or every state for the flows) above this size are refused.
MAX_ENUMERATION = 2**22
#: Objects per vectorised call when a user's log reward is enumerated (``jax.lax.map``'s ``batch_size``).
REWARD_BATCH = 16384

BACKWARD_POLICIES = ("uniform", "maxent")


class ExactFlows(NamedTuple):
    """The flows that a fixed backward policy makes consistent with the rewards, over every state.

    Attributes
    ----------
    log_flow : (num_states,) float64
        ``log F(s)``; ``log F(s_0) = log Z``.
    log_pf : (num_states, num_actions) float64
        ``log P_F(a | s)``, ``-inf`` where ``a`` is not allowed.
    log_pb : (num_states, num_backward_actions) float64
        ``log P_B(b | s)``, ``-inf`` where ``b`` is not allowed (all ``-inf`` at ``s_0``).
    log_Z : float
    """

    log_flow: np.ndarray
    log_pf: np.ndarray
    log_pb: np.ndarray
    log_Z: float


class DagEnvironment(Target, abc.ABC):
    """Base class of GFlowNet environments (see the module docstring for the interface).

    Subclasses set ``name``, ``event_shape``, ``domain``, ``state_shape``,
    ``num_actions`` (exit last), ``num_backward_actions``,
    ``max_trajectory_length``, ``num_tokens``, ``tokens_per_state``,
    ``num_terminal_states``, ``num_states``, ``num_modes`` and implement the
    single-state functions, :meth:`terminal_states`, :meth:`all_states` and
    their built-in reward (``_builtin_log_reward``, ``_builtin_numpy_log_rewards``);
    a constructor that takes a user's ``log_reward`` hands it to
    :meth:`_use_log_reward` once the attributes are set.
    A state is terminal-able where its forward mask allows exit; the objects
    of the target are exactly those states.

    Attributes
    ----------
    user_log_reward : callable or None
        The user's ``log R`` of one :meth:`reward_input`; ``None``: the built-in reward.
    """

    state_shape: tuple[int, ...]
    num_actions: int
    num_backward_actions: int
    max_trajectory_length: int
    num_tokens: int
    tokens_per_state: int
    num_terminal_states: int
    num_states: int
    num_modes: int
    user_log_reward: Callable | None = None

    @property
    def exit_action(self) -> int:
        """The index of the exit action (the last forward action)."""
        return self.num_actions - 1

    # -- the DAG (one state; subclasses) -----------------------------------
    @abc.abstractmethod
    def initial_state(self) -> jax.Array:
        ...

    @abc.abstractmethod
    def forward_mask(self, s: jax.Array) -> jax.Array:
        ...

    @abc.abstractmethod
    def backward_mask(self, s: jax.Array) -> jax.Array:
        ...

    @abc.abstractmethod
    def step(self, s: jax.Array, a: jax.Array) -> jax.Array:
        ...

    @abc.abstractmethod
    def parent(self, s: jax.Array, b: jax.Array) -> jax.Array:
        ...

    @abc.abstractmethod
    def backward_action(self, a: jax.Array) -> jax.Array:
        ...

    @abc.abstractmethod
    def tokens(self, s: jax.Array) -> jax.Array:
        ...

    @abc.abstractmethod
    def log_num_paths(self, s: jax.Array) -> jax.Array:
        ...

    @abc.abstractmethod
    def terminal_index(self, x: jax.Array) -> jax.Array:
        ...

    @abc.abstractmethod
    def state_index(self, s: jax.Array) -> jax.Array:
        ...

    @abc.abstractmethod
    def mode_index(self, x: jax.Array) -> jax.Array:
        ...

    @abc.abstractmethod
    def terminal_states(self) -> np.ndarray:
        """Every terminal object, ``(num_terminal_states, *state_shape)`` int32, in ``terminal_index`` order."""
        ...

    @abc.abstractmethod
    def all_states(self) -> np.ndarray:
        """Every state, ``(num_states, *state_shape)`` int32, in ``state_index`` order."""
        ...

    def log_reward(self, x: jax.Array) -> jax.Array:
        """``log R(x)`` of ONE terminal object (the target's unnormalised log density)."""
        return self.log_prob(x)

    # -- the reward: built in, or the user's ------------------------------------
    def reward_input(self, x: jax.Array) -> jax.Array:
        """What a user's ``log_reward`` takes for ONE terminal state ``x``: the state itself (or its decoding)."""
        return x

    def _use_log_reward(self, log_reward: Callable) -> None:
        """Take ``log_reward`` (a function of one :meth:`reward_input`) as this environment's ``log R``.

        Checked abstractly (``jax.eval_shape``, nothing runs): it must be callable on one
        object and return one real number. Its values are checked where they are computed
        on the host: every object at enumeration (:attr:`exact_log_rewards`, the flows) and a
        concrete object in :meth:`log_prob`. The environment then knows no modes.

        Raises
        ------
        InputError
            Not a function, not callable on one object, or not a scalar real output.
        """
        if not callable(log_reward):
            raise InputError(f"log_reward must be a function of one object, got {type(log_reward).__name__}",
                             "log_reward=lambda x: ... returning log R(x) for one object")
        example = jax.eval_shape(self.reward_input, jax.ShapeDtypeStruct(self.state_shape, jnp.int32))
        one = f"one object of shape {example.shape} {example.dtype}"
        try:
            out = jax.eval_shape(log_reward, example)
        except (TypeError, ValueError, IndexError) as err:
            first_line = next((line.strip() for line in str(err).splitlines() if line.strip()), type(err).__name__)
            raise InputError(f"log_reward cannot be called on {one}: {first_line}",
                             "write log_reward for one object with jax.numpy (no Python branching on its values)"
                             ) from None
        shape, dtype = getattr(out, "shape", None), getattr(out, "dtype", None)
        real = dtype is not None and (jnp.issubdtype(dtype, jnp.integer) or jnp.issubdtype(dtype, jnp.floating))
        if shape != () or not real:
            got = f"shape {shape} {dtype}" if shape is not None else type(out).__name__
            raise InputError(f"log_reward must return one real number for {one}, got {got}",
                             "return log R(x) of one object as a scalar; jaxsamp batches with jax.vmap")
        self.user_log_reward = log_reward
        self.num_modes = 0

    def _user_log_reward_value(self, x: jax.Array) -> jax.Array:
        """The user's ``log R`` of one terminal state, in the default float dtype."""
        return jnp.asarray(self.user_log_reward(self.reward_input(x)), jnp.result_type(float))

    def _non_finite(self, values: np.ndarray, states: np.ndarray) -> InputError:
        """The error for a user's log reward that is NaN or infinite at some ``states`` (shown as ``fn`` saw them)."""
        bad = np.flatnonzero(~np.isfinite(values))
        name = getattr(self.user_log_reward, "__name__", "<lambda>")
        fn = "log_reward" if name == "<lambda>" else f"log_reward {name}"
        first = np.asarray(self.reward_input(jnp.asarray(states[bad[0]]))).tolist()
        where = f"at {len(bad)} of {len(values)} objects, first at" if len(values) > 1 else "at"
        return InputError(
            f"{self.name}: {fn} is {values[bad[0]]} {where} {first}",
            "a GFlowNet needs R(x) > 0, a finite log R(x), at every object: return log R (not R), with a floor",
        )

    def _log_prob(self, x: jax.Array) -> jax.Array:
        if self.user_log_reward is None:
            return self._builtin_log_reward(x)
        value = self._user_log_reward_value(x)
        if not isinstance(value, jax.core.Tracer) and not np.isfinite(value):
            raise self._non_finite(np.asarray(value).reshape(1), np.asarray(x)[None])
        return value

    def _numpy_log_rewards(self, states: np.ndarray) -> np.ndarray:
        """``log R`` of many terminal states, float64: the built-in reward without float32 rounding, or the user's
        as the sampler computes it (compiled once, :data:`REWARD_BATCH` objects at a time), every value finite."""
        if self.user_log_reward is None:
            return self._builtin_numpy_log_rewards(states)
        values = np.asarray(self._user_log_rewards(jnp.asarray(states, jnp.int32)), np.float64)
        if not np.all(np.isfinite(values)):
            raise self._non_finite(values, states)
        return values

    @functools.cached_property
    def _user_log_rewards(self) -> Callable:
        return jax.jit(lambda states: jax.lax.map(self._user_log_reward_value, states, batch_size=REWARD_BATCH))

    @abc.abstractmethod
    def _builtin_log_reward(self, x: jax.Array) -> jax.Array:
        """The environment's own ``log R`` of one terminal state (JAX)."""
        ...

    @abc.abstractmethod
    def _builtin_numpy_log_rewards(self, states: np.ndarray) -> np.ndarray:
        """The environment's own ``log R`` of many terminal states in float64 (without float32 rounding)."""
        ...

    # -- exact references (numpy float64) -------------------------------------
    def _check_enumerable(self, count: int, what: str) -> None:
        if count > MAX_ENUMERATION:
            raise InputError(f"{self.name}: {count} {what} are too many to enumerate (limit {MAX_ENUMERATION})")

    @functools.cached_property
    def exact_log_rewards(self) -> np.ndarray:
        """``log R(x)`` of every terminal object, float64, in ``terminal_index`` order."""
        self._check_enumerable(self.num_terminal_states, "terminal objects")
        return self._numpy_log_rewards(self.terminal_states())

    @functools.cached_property
    def exact_probabilities(self) -> np.ndarray:
        """``pi(x) = R(x) / Z`` of every terminal object, float64, in ``terminal_index`` order."""
        log_r = self.exact_log_rewards
        return np.exp(log_r - logsumexp(log_r))

    @functools.cached_property
    def log_Z(self) -> float:
        """Exact ``log Z = log sum_x R(x)`` by enumeration."""
        return float(logsumexp(self.exact_log_rewards))

    def sample(self, key: jax.Array, n: int) -> jax.Array:
        """``n`` exact draws from ``pi``, ``(n, *state_shape)`` int32 (categorical over the enumeration)."""
        index = jax.random.categorical(key, jnp.asarray(np.log(self.exact_probabilities), jnp.float32), shape=(n,))
        return jnp.asarray(self.terminal_states())[index]

    def exact_flows(self, backward_policy: str = "uniform") -> ExactFlows:
        """The exact flows for a fixed backward policy, by dynamic programming over every state.

        For a backward policy ``P_B`` the flow consistent with the rewards is
        ``F(s) = R(s) 1[s may exit] + sum_{s -> s'} F(s') P_B(s | s')``, and then
        ``P_F(s' | s) = F(s') P_B(s | s') / F(s)``, ``P_F(exit | s) = R(s) / F(s)``,
        ``F(s_0) = Z`` (Bengio et al. 2023, GFlowNet foundations, Prop. 7-8):
        with these, the trajectory-balance, detailed-balance and
        sub-trajectory-balance residuals vanish on every trajectory. Computed in
        log space, float64, as a Bellman recursion over all states repeated
        ``max_trajectory_length`` times (exact on a DAG of that depth).

        Parameters
        ----------
        backward_policy : {"uniform", "maxent"}
            Uniform over a state's parents, or ``P_B(s | s') = N(s) / N(s')``
            with ``N`` the number of paths from ``s_0``.

        Raises
        ------
        InputError
            An unknown backward policy, or more states than :data:`MAX_ENUMERATION`.
        """
        if backward_policy not in BACKWARD_POLICIES:
            raise InputError(f"backward_policy must be one of {BACKWARD_POLICIES}, got {backward_policy!r}")
        states_np = self.all_states()
        fmask, children, bmask, parents, b_of_a, start = self._neighbour_tables
        if backward_policy == "uniform":
            counts = np.maximum(np.sum(bmask, axis=1, keepdims=True), 1)
            log_pb = np.where(bmask, -np.log(counts), -np.inf)
        else:
            log_n = self._numpy_log_num_paths(states_np)
            log_pb = np.where(bmask, log_n[parents] - log_n[:, None], -np.inf)
        moves, can_exit = fmask[:, :-1], fmask[:, -1]
        safe_children = np.where(moves, children, 0)
        edge_log_pb = np.where(moves, log_pb[safe_children, b_of_a[None, :]], -np.inf)  # log P_B(s | child)
        log_exit = np.full(self.num_states, -np.inf)
        log_exit[can_exit] = self._numpy_log_rewards(states_np[can_exit])
        log_flow = np.full(self.num_states, -np.inf)
        for _ in range(self.max_trajectory_length + 1):
            through = np.where(moves, log_flow[safe_children] + edge_log_pb, -np.inf)
            log_flow = np.logaddexp(log_exit, _row_logsumexp(through))
        log_pf = np.full((self.num_states, self.num_actions), -np.inf)
        log_pf[:, :-1] = np.where(moves, log_flow[safe_children] + edge_log_pb - log_flow[:, None], -np.inf)
        log_pf[:, -1] = np.where(can_exit, log_exit - log_flow, -np.inf)
        return ExactFlows(log_flow, log_pf, log_pb, float(log_flow[int(start)]))

    @functools.cached_property
    def _neighbour_tables(self):
        """Over every state (NumPy): forward mask, children's and parents' indices, the backward action undoing each
        forward action, and the start's index (computed once per environment)."""
        self._check_enumerable(self.num_states, "states")
        return tuple(np.asarray(t) for t in jax.jit(self._tables)(jnp.asarray(self.all_states())))

    @functools.cached_property
    def _forward_tables(self):
        """``(children (num_states, num_actions - 1), -1 where not allowed; exit allowed; start; objects' state indices)``."""
        fmask, children, _, _, _, start = self._neighbour_tables
        objects = np.asarray(jax.jit(jax.vmap(self.state_index))(jnp.asarray(self.terminal_states())))
        return np.where(fmask[:, :-1], children, -1), fmask[:, -1], int(start), objects

    def terminal_distribution(self, log_pf: np.ndarray) -> np.ndarray:
        """The exact distribution over objects of trajectories drawn with forward policy ``log_pf``.

        Probability is pushed forward from ``s_0`` for ``max_trajectory_length``
        steps, stopping by each state's exit probability, in float64: no sampling
        noise, so a learned ``P_F`` can be scored against ``pi`` exactly.

        Parameters
        ----------
        log_pf : (num_states, num_actions)
            ``log P_F(a | s)`` for every state in :meth:`all_states` order (rows are
            renormalised over the allowed actions in float64).

        Returns
        -------
        (num_terminal_states,) float64 in ``terminal_index`` order.
        """
        if np.shape(log_pf) != (self.num_states, self.num_actions):
            raise InputError(f"log_pf must have shape ({self.num_states}, {self.num_actions}), got {np.shape(log_pf)}")
        children, can_exit, start, objects = self._forward_tables
        allowed = np.concatenate([children >= 0, can_exit[:, None]], axis=1)
        logits = np.where(allowed, np.asarray(log_pf, np.float64), -np.inf)
        pf = np.exp(logits - _row_logsumexp(logits)[:, None])
        p = np.zeros(self.num_states)
        p[start] = 1.0
        ended = np.zeros(self.num_states)
        safe = np.where(children >= 0, children, 0).ravel()
        for _ in range(self.max_trajectory_length):
            ended += p * pf[:, -1]
            p = np.bincount(safe, weights=(p[:, None] * pf[:, :-1]).ravel(), minlength=self.num_states)
        return ended[objects]

    def _tables(self, states):
        """Every state's neighbours, the backward action undoing each forward action, and the start's index."""
        b_of_a = jax.vmap(self.backward_action)(jnp.arange(self.num_actions - 1))
        return (*jax.vmap(self._neighbours)(states), b_of_a, self.state_index(self.initial_state()))

    def _neighbours(self, s):
        """Forward mask, children's state indices, backward mask and parents' state indices of ONE state."""
        forward = jnp.arange(self.num_actions - 1)
        backward = jnp.arange(self.num_backward_actions)
        fmask, bmask = self.forward_mask(s), self.backward_mask(s)
        children = jax.vmap(lambda a: self.state_index(self.step(s, a)))(forward)
        parents = jax.vmap(lambda b: self.state_index(self.parent(s, b)))(backward)
        return fmask, jnp.where(fmask[:-1], children, 0), bmask, jnp.where(bmask, parents, 0)

    @abc.abstractmethod
    def _numpy_log_num_paths(self, states: np.ndarray) -> np.ndarray:
        """``log N(s)`` of many states in float64 (subclasses give the closed form)."""
        ...

    def describe(self) -> dict:
        user = {} if self.user_log_reward is None else {"log_reward": getattr(self.user_log_reward, "__name__", "")}
        return {
            **super().describe(),
            "num_actions": self.num_actions,
            "max_trajectory_length": self.max_trajectory_length,
            "num_terminal_states": self.num_terminal_states,
            "num_modes": self.num_modes,
            **user,
        }


def _row_logsumexp(a: np.ndarray) -> np.ndarray:
    """``logsumexp`` over the last axis, ``-inf`` for rows that are all ``-inf`` (no warnings)."""
    top = np.max(a, axis=-1)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(np.sum(np.exp(a - safe[..., None]), axis=-1)) + safe
