"""Bit sequences: GFlowNet's sequence-design benchmark, small enough for exact references.

Malkin et al. (2022), "Trajectory balance: improved credit assignment in
GFlowNets" (NeurIPS), Sec. 5.3, and its non-autoregressive form in Tiapkin et al.
(2024, AISTATS) that the TLM paper uses (Gritsaev et al. 2025, ICLR). A sequence
of ``n`` bits is cut into ``m = n / k`` words of ``k`` bits. A state holds ``m``
slots, each empty (``-1``) or a word ``0 .. 2^k - 1``; a trajectory fills them
one word per step and exits once every slot is full (exit is the only action
there, and allowed nowhere else). Two ways to fill:

* ``left_to_right``: the next word goes into the first empty slot (``2^k`` word
  actions). Every state has one parent, so the backward policy is fixed (1):
  a check that every backward policy reduces to the same GFlowNet.
* ``any_position``: any word into any empty slot (``m 2^k`` actions); a backward
  action empties one filled slot, and a state with ``j`` filled slots has ``j``
  parents and ``N(s) = j!`` paths from the start.

The reward is ``R(x) = exp(-beta min_{x' in M} d(x, x') / n)`` with ``d`` the
Hamming distance to a set ``M`` of ``num_modes`` modes (Malkin et al. 2022); here
the modes are bit strings drawn uniformly at random with ``mode_seed``. A sample
"finds" mode ``j`` when it lies within Hamming distance ``mode_radius`` of it
(:meth:`BitSequence.mode_index`; the nearest such mode). With ``n <= 20`` the
``2^n`` objects are enumerated for the exact ``pi`` and ``log Z``; the exact
flows need every state (``(2^k + 1)^m`` with any-position filling, a few
million at most).

Your own reward instead: ``log_reward=fn`` with ``fn`` a JAX function of one
sequence's ``n`` bits (``(n,)`` int32 of 0 and 1, :meth:`BitSequence.reward_input`)
returning ``log R``; ``log Z`` and ``pi`` are then enumerated from ``fn``
(:mod:`~jaxsamp.targets.dag_environment`).
"""

from __future__ import annotations

import math
from typing import Annotated, Callable

import jax
import jax.numpy as jnp
import numpy as np
from scipy.special import gammaln

from jaxsamp.core.errors import InputError
from jaxsamp.core.registry import TARGETS
from jaxsamp.core.target import categorical
from jaxsamp.core.validation import (
    Interval,
    NonNegativeInt,
    OneOf,
    PositiveFloat,
    PositiveInt,
)
from jaxsamp.targets.dag_environment import DagEnvironment

ORDERS = ("left_to_right", "any_position")
#: The built-in reward's parameters and their defaults (left at them when a ``log_reward`` is given)
BUILTIN_REWARD = {"num_modes": 4, "beta": 3.0, "mode_radius": 1, "mode_seed": 0}


class BitSequence(DagEnvironment):
    """Bit strings of ``length`` built ``word_length`` bits at a time (see the module docstring).

    Parameters
    ----------
    length : int
        ``n``, at most 20 (the objects are enumerated), a multiple of ``word_length``.
    word_length : int
        ``k``, at most 8.
    num_modes : int
        ``|M|``, the number of random modes.
    beta : float
        Sharpness of the reward, ``R = exp(-beta d_min / n)``.
    mode_radius : int
        Hamming distance within which a sample finds a mode.
    order : {"left_to_right", "any_position"}
    mode_seed : int
        Seed of the modes.
    log_reward : callable, optional
        Your own ``log R`` instead: a JAX function of one sequence's ``length`` bits
        (``(length,)`` int32 of 0 and 1) returning one finite real number (a log reward,
        not a reward: pass ``lambda b: jnp.log(R(b))`` for a reward ``R > 0``). The
        built-in reward's ``num_modes``, ``beta``, ``mode_radius`` and ``mode_seed`` must
        then be left at their defaults; the environment has no modes.
    """

    def __init__(
        self,
        length: int = 12,
        word_length: int = 2,
        num_modes: int = 4,
        beta: float = 3.0,
        mode_radius: int = 1,
        order: str = "any_position",
        mode_seed: int = 0,
        log_reward: Callable | None = None,
    ):
        for name, value, low in (
            ("length", length, 1),
            ("word_length", word_length, 1),
            ("num_modes", num_modes, 1),
            ("mode_radius", mode_radius, 0),
            ("mode_seed", mode_seed, 0),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise InputError(f"{name} must be an int >= {low}, got {value!r}")
        if length > 20:
            raise InputError(f"length must be <= 20 (the 2^length objects are enumerated), got {length}")
        if word_length > 8 or length % word_length:
            raise InputError(f"word_length must divide length and be <= 8, got {word_length} for length {length}")
        if not (math.isfinite(beta) and beta > 0):
            raise InputError(f"beta must be finite and > 0, got {beta!r}")
        if order not in ORDERS:
            raise InputError(f"order must be one of {ORDERS}, got {order!r}")
        given = {"num_modes": num_modes, "beta": beta, "mode_radius": mode_radius, "mode_seed": mode_seed}
        changed = [name for name, default in BUILTIN_REWARD.items() if given[name] != default]
        if log_reward is not None and changed:
            raise InputError(f"log_reward replaces the built-in reward: leave {', '.join(changed)} at the default")
        self.length, self.word_length, self.beta, self.order = length, word_length, float(beta), order
        self.mode_radius = mode_radius
        self.num_slots = m = length // word_length
        self.num_words = w = 2**word_length
        self.modes = np.random.default_rng(mode_seed).integers(0, 2, size=(num_modes, length)).astype(np.int8)
        self.name = "bit_sequence"
        self.event_shape = self.state_shape = (m,)
        self.domain = categorical(w)
        if order == "left_to_right":
            self.num_actions, self.num_backward_actions = w + 1, 1
            self.num_states = (w ** (m + 1) - 1) // (w - 1)  # the prefixes of length 0..m
        else:
            self.num_actions, self.num_backward_actions = m * w + 1, m
            self.num_states = (w + 1) ** m
        self.max_trajectory_length = m + 1
        self.tokens_per_state, self.num_tokens = m, m * (w + 1)
        self.num_terminal_states = 2**length
        self.num_modes = num_modes
        self._word_bits = ((np.arange(w)[:, None] >> np.arange(word_length - 1, -1, -1)) & 1).astype(np.int8)
        self._slot_place = w ** np.arange(m - 1, -1, -1)
        if log_reward is not None:
            self._use_log_reward(log_reward)

    # -- the target -----------------------------------------------------------
    def bits(self, x):
        """The ``n`` bits (int8) of ONE complete state ``(m,)``."""
        return jnp.asarray(self._word_bits)[x].reshape(self.length)

    def _distances(self, x):
        return jnp.sum(self.bits(x)[None, :] != jnp.asarray(self.modes), axis=-1)

    def reward_input(self, x):
        """A user's ``log_reward`` takes the ``n`` bits of the sequence, ``(length,)`` int32."""
        return self.bits(x).astype(jnp.int32)

    def _builtin_log_reward(self, x):
        return -self.beta * jnp.min(self._distances(x)).astype(jnp.float32) / self.length

    def _builtin_numpy_log_rewards(self, states):
        bits = self._word_bits[np.asarray(states)].reshape(len(states), self.length)
        d = np.min(np.sum(bits[:, None, :] != self.modes[None], axis=-1), axis=-1)
        return -self.beta * d.astype(np.float64) / self.length

    def mode_index(self, x):
        d = self._distances(x)
        nearest = jnp.argmin(d)
        return jnp.where((d[nearest] <= self.mode_radius) & (self.num_modes > 0), nearest, -1).astype(jnp.int32)

    # -- the DAG -----------------------------------------------------------------
    def _filled(self, s):
        return jnp.sum(s >= 0)

    def initial_state(self):
        return jnp.full(self.state_shape, -1, jnp.int32)

    def forward_mask(self, s):
        full = jnp.all(s >= 0)
        if self.order == "left_to_right":
            words = jnp.full((self.num_words,), ~full)
        else:
            words = jnp.repeat(s < 0, self.num_words)
        return jnp.concatenate([words, full[None]])

    def backward_mask(self, s):
        if self.order == "left_to_right":
            return (self._filled(s) > 0)[None]
        return s >= 0

    def step(self, s, a):
        if self.order == "left_to_right":
            slot, word = self._filled(s), a
        else:
            slot, word = a // self.num_words, a % self.num_words
        return jnp.where(jnp.arange(self.num_slots) == slot, word, s).astype(s.dtype)

    def parent(self, s, b):
        slot = self._filled(s) - 1 if self.order == "left_to_right" else b
        return jnp.where(jnp.arange(self.num_slots) == slot, -1, s).astype(s.dtype)

    def backward_action(self, a):
        return jnp.zeros_like(a) if self.order == "left_to_right" else a // self.num_words

    def tokens(self, s):
        return s + 1 + (self.num_words + 1) * jnp.arange(self.num_slots, dtype=s.dtype)

    def log_num_paths(self, s):
        if self.order == "left_to_right":
            return jnp.zeros(())
        return jax.scipy.special.gammaln(self._filled(s).astype(jnp.float32) + 1.0)

    def _numpy_log_num_paths(self, states):
        if self.order == "left_to_right":
            return np.zeros(len(states))
        return gammaln(np.sum(np.asarray(states) >= 0, axis=-1) + 1.0)

    def terminal_index(self, x):
        return jnp.sum(x * jnp.asarray(self._slot_place, jnp.int32)).astype(jnp.int32)

    def state_index(self, s):
        w, m = self.num_words, self.num_slots
        if self.order == "any_position":
            return jnp.sum((s + 1) * jnp.asarray((w + 1) ** np.arange(m - 1, -1, -1), jnp.int32)).astype(jnp.int32)
        j = self._filled(s)
        offset = (w**j - 1) // (w - 1)
        place = jnp.where(jnp.arange(m) < j, w ** jnp.clip(j - 1 - jnp.arange(m), 0), 0)
        return (offset + jnp.sum(jnp.maximum(s, 0) * place)).astype(jnp.int32)

    def terminal_states(self):
        self._check_enumerable(self.num_terminal_states, "objects")
        index = np.arange(self.num_terminal_states)
        return ((index[:, None] // self._slot_place[None, :]) % self.num_words).astype(np.int32)

    def all_states(self):
        self._check_enumerable(self.num_states, "states")
        w, m = self.num_words, self.num_slots
        if self.order == "any_position":
            index = np.arange(self.num_states)
            return ((index[:, None] // ((w + 1) ** np.arange(m - 1, -1, -1))[None, :]) % (w + 1) - 1).astype(np.int32)
        out = []
        for j in range(m + 1):  # prefixes of length j, in state_index order
            values = np.arange(w**j)
            prefix = (values[:, None] // (w ** np.arange(j - 1, -1, -1))[None, :]) % w if j else np.zeros((1, 0), int)
            out.append(np.concatenate([prefix, -np.ones((len(values), m - j), int)], axis=1))
        return np.concatenate(out).astype(np.int32)

    def describe(self) -> dict:
        reward = {} if self.user_log_reward is not None else {"beta": self.beta, "mode_radius": self.mode_radius}
        return {
            **super().describe(),
            "length": self.length,
            "word_length": self.word_length,
            "order": self.order,
            **reward,
        }


@TARGETS.register("bit_sequence")
def bit_sequence(
    length: Annotated[int, Interval(ge=1, le=20)] = 12,
    word_length: Annotated[int, Interval(ge=1, le=8)] = 2,
    num_modes: PositiveInt = 4,
    beta: PositiveFloat = 3.0,
    mode_radius: NonNegativeInt = 1,
    order: Annotated[str, OneOf(ORDERS)] = "any_position",
    mode_seed: NonNegativeInt = 0,
    log_reward: Callable | None = None,
) -> BitSequence:
    """Bit strings built word by word, R = exp(-beta d_min / n) or your own log_reward; exact pi, log Z."""
    return BitSequence(length, word_length, num_modes, beta, mode_radius, order, mode_seed, log_reward)
