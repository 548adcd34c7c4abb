"""The hypergrid: GFlowNet's standard benchmark environment, with its exact target.

Bengio et al. (2021), "Flow network based generative models for non-iterative
diverse candidate generation" (NeurIPS), Sec. 4.1; the version of ``torchgfn``
that the TLM paper's code uses (Gritsaev et al. 2025, ICLR,
``tgritsaev/gflownet-tlm``; research/methods.md §9). States are points
``s in {0, ..., H-1}^D`` starting from the origin; a forward action adds 1 to one
coordinate (not allowed at ``H - 1``) or exits, ending the trajectory at
``x = s``, so every state is also an object; a backward action subtracts 1 from
a nonzero coordinate. The reward is::

    R(x) = R0 + R1 prod_d 1[0.25 < |x_d / (H-1) - 1/2|]
              + R2 prod_d 1[0.3 < |x_d / (H-1) - 1/2| < 0.4]

with ``(R0, R1, R2) = (1e-3, 0.5, 2)`` (``standard``) or ``(1e-4, 1, 3)``
(``hard``). Its ``2^D`` modes are the corner regions where the ``R2`` term is on;
:meth:`Hypergrid.mode_index` numbers them by which side of the centre each
coordinate lies. The band indicators are tabulated per coordinate value once,
in exact integer arithmetic (``|x/(H-1) - 1/2| = |2x - (H-1)| / (2(H-1))``), so
the JAX and NumPy rewards agree and a boundary value (0.25, 0.3 or 0.4 hit
exactly, as for ``H - 1`` a multiple of 4 or 5) is outside its band rather than
on whichever side floating point rounds it; for ``H = 20`` and ``H = 8`` no
value is on a boundary. ``N(s)``, the number
of paths from the origin, is the multinomial ``(sum_d s_d)! / prod_d s_d!``.

Your own reward instead: ``log_reward=fn`` with ``fn`` a JAX function of one point
(``(D,)`` int32 coordinates) returning ``log R``; ``log Z`` and ``pi`` are then
enumerated from ``fn`` (:mod:`~jaxsamp.targets.dag_environment`).
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
from jaxsamp.core.validation import Interval, NonNegativeFloat, PositiveFloat
from jaxsamp.targets.dag_environment import DagEnvironment

REWARDS = {"standard": (1e-3, 0.5, 2.0), "hard": (1e-4, 1.0, 3.0)}


class Hypergrid(DagEnvironment):
    """The ``H^D`` hypergrid with the three-level reward (see the module docstring).

    Parameters
    ----------
    dim : int
        ``D >= 1``.
    side : int
        ``H >= 2``, the number of values per coordinate.
    reward : {"standard", "hard"} or (R0, R1, R2)
        ``R0 > 0`` (every object has positive reward), ``R1, R2 >= 0``.
    log_reward : callable, optional
        Your own ``log R`` instead: a JAX function of one point (``(D,)`` int32, each
        coordinate in ``0 .. H-1``) returning one finite real number (a log reward, not
        a reward: pass ``lambda x: jnp.log(R(x))`` for a reward ``R > 0``). ``reward``
        must then be left at its default; the grid has no modes.

    Attributes
    ----------
    num_actions : ``D + 1`` (increment coordinate ``d``; exit last).
    num_backward_actions : ``D`` (decrement coordinate ``d``).
    max_trajectory_length : ``D (H - 1) + 1`` transitions.
    tokens_per_state, num_tokens : ``D`` and ``D H`` (the one-hot encoding of every coordinate).
    """

    def __init__(self, dim: int = 4, side: int = 20, reward="standard", log_reward: Callable | None = None):
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise InputError(f"dim must be an int >= 1, got {dim!r}")
        if isinstance(side, bool) or not isinstance(side, int) or side < 2:
            raise InputError(f"side must be an int >= 2, got {side!r}")
        if isinstance(reward, str):
            if reward not in REWARDS:
                raise InputError(f"reward must be one of {tuple(REWARDS)} or (R0, R1, R2), got {reward!r}")
            self.reward_name, levels = reward, REWARDS[reward]
        else:
            levels = tuple(float(r) for r in reward)
            if len(levels) != 3 or not all(math.isfinite(r) for r in levels):
                raise InputError(f"reward must be three finite numbers (R0, R1, R2), got {reward!r}")
            self.reward_name = "custom"
        if levels[0] <= 0 or levels[1] < 0 or levels[2] < 0:
            raise InputError(f"reward levels need R0 > 0 and R1, R2 >= 0, got {levels}")
        if log_reward is not None and self.reward_name != "standard":
            raise InputError(f"log_reward replaces the built-in reward: leave reward at 'standard', got {reward!r}")
        self.dim, self.side, self.levels = dim, side, levels
        self.name = "hypergrid"
        self.event_shape = self.state_shape = (dim,)
        self.domain = categorical(side)
        self.num_actions, self.num_backward_actions = dim + 1, dim
        self.max_trajectory_length = dim * (side - 1) + 1
        self.tokens_per_state, self.num_tokens = dim, dim * side
        self.num_terminal_states = self.num_states = side**dim
        self.num_modes = 2**dim if levels[2] > 0 else 0
        # |x / (H-1) - 1/2| = d / (2 (H-1)) with the integer d = |2x - (H-1)|: the bands in exact arithmetic
        d = np.abs(2 * np.arange(side) - (side - 1))
        self._outer_band = (2 * d > side - 1).astype(np.float64)
        self._mode_band = ((5 * d > 3 * (side - 1)) & (5 * d < 4 * (side - 1))).astype(np.float64)
        self._high_half = (np.arange(side) > (side - 1) / 2).astype(np.int32)
        self._place = side ** np.arange(dim - 1, -1, -1)
        if log_reward is not None:
            self._use_log_reward(log_reward)

    # -- the target --------------------------------------------------------
    def _builtin_log_reward(self, x):
        r0, r1, r2 = self.levels
        outer = jnp.prod(jnp.asarray(self._outer_band, jnp.float32)[x])
        band = jnp.prod(jnp.asarray(self._mode_band, jnp.float32)[x])
        return jnp.log(r0 + r1 * outer + r2 * band)

    def _builtin_numpy_log_rewards(self, states):
        r0, r1, r2 = self.levels
        states = np.asarray(states)
        return np.log(r0 + r1 * self._outer_band[states].prod(-1) + r2 * self._mode_band[states].prod(-1))

    # -- the DAG -------------------------------------------------------------
    def initial_state(self):
        return jnp.zeros(self.state_shape, jnp.int32)

    def forward_mask(self, s):
        return jnp.concatenate([s < self.side - 1, jnp.ones((1,), bool)])

    def backward_mask(self, s):
        return s > 0

    def step(self, s, a):
        return s + (jnp.arange(self.dim) == a).astype(s.dtype)

    def parent(self, s, b):
        return s - (jnp.arange(self.dim) == b).astype(s.dtype)

    def backward_action(self, a):
        return a

    def tokens(self, s):
        return s + self.side * jnp.arange(self.dim, dtype=s.dtype)

    def log_num_paths(self, s):
        s = s.astype(jnp.float32)
        return jax.scipy.special.gammaln(jnp.sum(s) + 1.0) - jnp.sum(jax.scipy.special.gammaln(s + 1.0))

    def _numpy_log_num_paths(self, states):
        states = np.asarray(states, np.float64)
        return gammaln(states.sum(-1) + 1.0) - gammaln(states + 1.0).sum(-1)

    def terminal_index(self, x):
        return jnp.sum(x * jnp.asarray(self._place, jnp.int32)).astype(jnp.int32)

    state_index = terminal_index

    def mode_index(self, x):
        in_band = jnp.all(jnp.asarray(self._mode_band > 0)[x])
        corner = jnp.sum(jnp.asarray(self._high_half)[x] * (2 ** jnp.arange(self.dim - 1, -1, -1)))
        return jnp.where(in_band & (self.num_modes > 0), corner, -1).astype(jnp.int32)

    def terminal_states(self):
        self._check_enumerable(self.num_terminal_states, "states")
        grid = np.indices((self.side,) * self.dim).reshape(self.dim, -1).T
        return grid.astype(np.int32)

    all_states = terminal_states

    def describe(self) -> dict:
        reward = {} if self.user_log_reward is not None else {"reward": list(self.levels)}
        return {**super().describe(), "dim": self.dim, "side": self.side, **reward}


@TARGETS.register("hypergrid")
def hypergrid(
    dim: Annotated[int, Interval(ge=1)] = 4,
    side: Annotated[int, Interval(ge=2)] = 20,
    reward: str = "standard",
    R0: PositiveFloat | None = None,
    R1: NonNegativeFloat | None = None,
    R2: NonNegativeFloat | None = None,
    log_reward: Callable | None = None,
) -> Hypergrid:
    """GFlowNet hypergrid H^D (standard or hard reward, R0, R1, R2, or your own log_reward); exact pi, log Z, flows."""
    custom = (R0, R1, R2)
    if any(r is not None for r in custom):
        if any(r is None for r in custom):
            raise InputError("give all three of R0, R1, R2 (or none, for the named reward)")
        if log_reward is not None:
            raise InputError("log_reward replaces the built-in reward: give R0, R1, R2 or log_reward, not both")
        return Hypergrid(dim, side, custom)
    return Hypergrid(dim, side, reward, log_reward)
