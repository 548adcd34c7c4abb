"""Kernel combinators: small functions that take kernels and return a kernel.

optax is the model (``optax.chain``): a combinator takes ``(init, step)`` pairs
and returns one, and the state of a composite holds its children's states.
Anything with ``.init`` and ``.step`` is a kernel, so every blackjax
``SamplingAlgorithm`` works here unchanged.

Kernels that hand a position from one child to another (:func:`compose`,
:func:`mixture`) read it with :func:`position_of` and re-initialise the
receiving child at the new position with :func:`reposition`; fields listed in
a state's ``carried_fields`` (for example adapted hyper-parameters) survive the
hand-off.

The position protocol: a state exposes its position as

1. a ``position`` field or property (every blackjax state, every jaxsamp state);
2. a getter registered for its type with :func:`register_position`;
3. a wrapper's ``inner`` state (``AdaptiveState``, ...), looked through; or
4. for a plain ``tuple`` / ``list`` state, its first element: ``(position, ...)``.

:func:`position_of` works on one chain's state and on a batched (ensemble)
state alike.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core.errors import InputError
from jaxsamp.core.protocols import Kernel

# --------------------------------------------------------------------------
# positions and hand-offs
# --------------------------------------------------------------------------


_POSITION_GETTERS: dict[type, Callable[[Any], Any]] = {}


def register_position(state_type: type, getter: Callable[[Any], Any]) -> None:
    """Tell :func:`position_of` (hence ``compose`` and ``mixture``) how to read a state type's position.

    For state types without a ``position`` field, e.g.
    ``register_position(MyState, lambda s: s.x)``.
    """
    _POSITION_GETTERS[state_type] = getter


def position_of(state) -> Any:
    """The position held by a kernel state, by the position protocol (see the module docstring).

    Raises
    ------
    TypeError
        When the state follows none of the four conventions.
    """
    while True:
        if hasattr(state, "position"):
            return state.position
        getter = _POSITION_GETTERS.get(type(state))
        if getter is not None:
            return getter(state)
        if hasattr(state, "inner"):
            state = state.inner
        elif type(state) in (tuple, list) and len(state) > 0:
            return state[0]
        else:
            raise TypeError(
                f"cannot find a position in a state of type {type(state).__name__}: give it a 'position' field, "
                "register a getter with jaxsamp.register_position, or make it a plain tuple (position, ...)"
            )


def _select(index: jax.Array, options: Sequence[Any]) -> Any:
    """``options[index]`` leaf by leaf, for a scalar index or one index per chain (leading axes)."""

    def pick(*leaves):
        first = jnp.asarray(leaves[0])
        idx = jnp.reshape(index, jnp.shape(index) + (1,) * (first.ndim - jnp.ndim(index)))
        out = first
        for i, leaf in enumerate(leaves[1:], start=1):
            out = jnp.where(idx == i, leaf, out)
        return out

    return jax.tree.map(pick, *options)


def reposition(kernel, state, position):
    """Re-initialise ``kernel`` at ``position``, keeping the carried fields of ``state``.

    A state type may list fields that do not depend on the position (adapted
    step sizes, counters) in a class attribute ``carried_fields``; they are
    copied from ``state`` into the fresh state, recursively through ``inner``.
    """
    fresh = kernel.init(position)
    return _carry(fresh, state)


def _carry(fresh, old):
    carried = getattr(type(old), "carried_fields", ())
    if not carried:
        return fresh
    updates = {f: getattr(old, f) for f in carried}
    if "inner" in fresh._fields and "inner" not in carried:
        updates["inner"] = _carry(fresh.inner, old.inner)
    return fresh._replace(**updates)


# --------------------------------------------------------------------------
# ensemble
# --------------------------------------------------------------------------


def num_chains(state) -> int:
    """Length of the leading (chain) axis of an ensemble state."""
    leaves = jax.tree.leaves(state)
    if not leaves or not jnp.ndim(leaves[0]):
        raise InputError("a state without a leading chain axis has no chains (batch the positions: shape (n, ...))")
    return leaves[0].shape[0]


#: How :func:`ensemble` and the one-call layer step many chains: ``jax.vmap`` or ``lax.map``.
CHAIN_METHODS = ("vectorized", "sequential")


def over_chains(fn: Callable, chain_method: str = "vectorized") -> Callable:
    """``fn`` applied to every chain: ``jax.vmap(fn)`` or, ``"sequential"``, ``lax.map`` over the leading axis.

    Vectorized chains move in lock-step: a step whose cost varies by chain (a NUTS
    tree, a while loop) costs every chain the most expensive one's. Sequential chains
    each cost their own, one after another, inside the same compiled program, and
    lose what vectorization across chains gains. Both compute the same per-chain
    transition with the same keys; XLA compiles a batched and an unbatched program
    differently, so values agree to float round-off (about 1e-7 in float32 after a
    MALA step), and a chaotic sampler (NUTS, whose tree depth and warm-up step size
    depend on every bit) soon draws different, equally valid samples.
    """
    check_chain_method(chain_method)
    if chain_method == "vectorized":
        return jax.vmap(fn)
    return lambda *args: jax.lax.map(lambda a: fn(*a), args)


def check_chain_method(chain_method: str) -> None:
    """Raise an :class:`InputError` unless ``chain_method`` is one of :data:`CHAIN_METHODS`."""
    if chain_method not in CHAIN_METHODS:
        raise InputError(f"chain_method must be one of {', '.join(CHAIN_METHODS)}, got {chain_method!r}")


def ensemble(kernel, chain_method: str = "vectorized") -> Kernel:
    """Run independent copies of ``kernel``, one per chain (``jax.vmap``, or ``lax.map`` with ``"sequential"``).

    ``init(positions, rng_key=None)`` takes positions with a leading chain axis;
    ``step(key, state)`` splits ``key`` into one key per chain. Chain ``c`` uses
    ``jax.random.split(key, n)[c]``, so results do not depend on how the chain axis
    is laid out over devices (:func:`jaxsamp.core.sharding.shard`), and depend on
    ``chain_method`` only through float round-off (:func:`over_chains`).
    """
    check_chain_method(chain_method)  # an unknown method fails here, not at the first step

    def init(positions, rng_key=None):
        n = num_chains(positions)
        if n == 0:
            raise InputError("ensemble.init needs at least one chain; the positions' leading axis has length 0")
        if rng_key is None:
            return jax.vmap(kernel.init)(positions)
        return jax.vmap(kernel.init)(positions, jax.random.split(rng_key, n))

    def step(rng_key, state):
        keys = jax.random.split(rng_key, num_chains(state))
        return over_chains(kernel.step, chain_method)(keys, state)

    return Kernel(init, step)


# --------------------------------------------------------------------------
# repeat / thin
# --------------------------------------------------------------------------


def repeat(kernel, num_steps: int) -> Kernel:
    """Apply ``kernel`` ``num_steps`` times per step; info is stacked along a new axis 0.

    Sub-step ``j`` uses ``fold_in(key, j)``.
    """
    if num_steps < 1:
        raise InputError(f"repeat needs num_steps >= 1, got {num_steps}")

    def step(rng_key, state):
        def body(s, j):
            return kernel.step(jax.random.fold_in(rng_key, j), s)

        return jax.lax.scan(body, state, jnp.arange(num_steps))

    return Kernel(kernel.init, step)


def thin(kernel, every: int) -> Kernel:
    """Like :func:`repeat` but only the last sub-step's info is kept (thinning)."""
    rep = repeat(kernel, every)

    def step(rng_key, state):
        state, infos = rep.step(rng_key, state)
        return state, jax.tree.map(lambda a: a[-1], infos)

    return Kernel(kernel.init, step)


# --------------------------------------------------------------------------
# compose / mixture
# --------------------------------------------------------------------------


class ComposeState(tuple):
    """The state of :func:`compose`: the children's states in order (a tuple, and a PyTree).

    The last child holds the current position (``.position``); the others are
    stale until their turn.
    """

    @property
    def position(self):
        return position_of(self[-1])


jax.tree_util.register_pytree_node(ComposeState, lambda s: (tuple(s), None), lambda _, children: ComposeState(children))


def _init_children(kernels, position, rng_key):
    """Every child initialised at ``position``; child ``j`` gets ``fold_in(rng_key, j)`` when a key is given."""
    if rng_key is None:
        return tuple(k.init(position) for k in kernels)
    return tuple(k.init(position, jax.random.fold_in(rng_key, j)) for j, k in enumerate(kernels))


def compose(*kernels) -> Kernel:
    """Apply kernels in sequence; the state is a :class:`ComposeState` of the children's states.

    Each child starts from the previous child's position (see :func:`reposition`).
    If every child leaves ``pi`` invariant, so does the composition. The
    hand-off re-initialises the receiving child, which for blackjax kernels costs
    one extra log-density-and-gradient evaluation per child per step.
    """
    if not kernels:
        raise InputError("compose needs at least one kernel")

    def init(position, rng_key=None):
        return ComposeState(_init_children(kernels, position, rng_key))

    def step(rng_key, state):
        new_states, infos = [], []
        # the last child holds the current position; the others are stale
        current = position_of(state[-1]) if len(kernels) > 1 else None
        for j, (k, s) in enumerate(zip(kernels, state)):
            if current is not None:
                s = reposition(k, s, current)
            s, info = k.step(jax.random.fold_in(rng_key, j), s)
            current = position_of(s)
            new_states.append(s)
            infos.append(info)
        return ComposeState(new_states), tuple(infos)

    return Kernel(init, step)


class MixtureState(NamedTuple):
    children: tuple
    current: jax.Array  # index of the child holding the current position

    @property
    def position(self):
        """The current position (held by child ``current``), for one chain or a batch of chains."""
        return _select(self.current, [position_of(c) for c in self.children])


class MixtureInfo(NamedTuple):
    """What one mixture step did.

    Attributes
    ----------
    index : int array
        The child that moved.
    acceptance_rate : float array
        That child's acceptance rate (NaN when it reports none), so averages
        over steps are the mixture's true acceptance.
    infos : tuple
        Every child's info; for the children not chosen, float fields are NaN
        and others zero, so ``nanmean(infos[k].acceptance_rate)`` is child ``k``'s
        own acceptance rate.
    """

    index: jax.Array
    acceptance_rate: jax.Array
    infos: tuple


def _blank_like(tree):
    """NaN for float leaves and zero for the others, shaped like ``tree`` (abstract or concrete)."""

    def blank(s):
        return jnp.full(s.shape, jnp.nan if jnp.issubdtype(s.dtype, jnp.inexact) else 0, s.dtype)

    return jax.tree.map(blank, tree)


def _acceptance_of(info) -> jax.Array:
    rate = getattr(info, "acceptance_rate", None)
    return jnp.float32(jnp.nan) if rate is None else jnp.asarray(rate, jnp.float32)


def mixture(kernels: Sequence, weights: Sequence[float] | None = None) -> Kernel:
    """At each step choose one kernel at random (probabilities ``weights``) and apply it.

    If every child leaves ``pi`` invariant, so does the mixture. Its info is a
    :class:`MixtureInfo`.
    """
    kernels = tuple(kernels)
    m = len(kernels)
    if m == 0:
        raise InputError("mixture needs at least one kernel")
    w = np.ones(m) / m if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (m,) or np.any(w < 0) or w.sum() <= 0:
        raise InputError(f"mixture weights must be {m} non-negative numbers, got {weights}")
    log_w = jnp.log(jnp.asarray(w / w.sum()))

    def init(position, rng_key=None):
        return MixtureState(_init_children(kernels, position, rng_key), jnp.int32(0))

    def step(rng_key, state):
        key_choice, key_step = jax.random.split(rng_key)
        j = jax.random.categorical(key_choice, log_w).astype(jnp.int32)
        position = state.position

        def branch(i):
            def run():
                child = jax.lax.cond(
                    state.current == i,
                    lambda: state.children[i],
                    lambda: reposition(kernels[i], state.children[i], position),
                )
                new_child, info = kernels[i].step(key_step, child)
                children = list(state.children)
                children[i] = new_child
                infos = [
                    info if r == i else _blank_like(jax.eval_shape(kernels[r].step, key_step, state.children[r])[1])
                    for r in range(m)
                ]
                return tuple(children), _acceptance_of(info), tuple(infos)

            return run

        children, acceptance, infos = jax.lax.switch(j, [branch(i) for i in range(m)])
        return MixtureState(children, j), MixtureInfo(j, acceptance, infos)

    return Kernel(init, step)


# --------------------------------------------------------------------------
# block updates
# --------------------------------------------------------------------------


class BlockState(NamedTuple):
    position: jax.Array
    count: jax.Array  # number of block updates done (drives the cyclic order)


class BlockInfo(NamedTuple):
    block: jax.Array
    inner: Any


def on_blocks(
    make_kernel: Callable[[Callable], Any],
    logdensity_fn: Callable,
    blocks: Sequence[Sequence[int]],
    order: str = "random",
) -> Kernel:
    """Update one block of coordinates per step, the others held fixed (Gibbs-style).

    Parameters
    ----------
    make_kernel : callable
        ``make_kernel(conditional_logdensity) -> kernel`` acting on a block
        ``x_B`` (for example ``lambda f: blackjax.mala(f, 0.1)``).
    logdensity_fn : callable
        Log density of the full flat position ``x`` (shape ``(d,)``).
    blocks : sequence of index sequences
        A partition (or cover) of ``range(d)``.
    order : {"random", "cyclic"}
        Random-scan (block drawn uniformly, Burns et al. 2025 RBLD) or cyclic
        (block ``k mod b`` at update ``k``, CBLD).

    Notes
    -----
    Each block update leaves the conditional ``pi(x_B | x_-B)`` invariant, hence
    ``pi``; a random scan or a full cycle is therefore ``pi``-invariant. Blocks of
    unequal sizes are dispatched with ``lax.switch`` (all branches must return
    infos of the same structure); equal sizes use one gather.
    """
    if order not in ("random", "cyclic"):
        raise InputError(f"order must be 'random' or 'cyclic', got {order!r}")
    index_sets = [np.asarray(b, dtype=np.int32) for b in blocks]
    if not index_sets or any(b.ndim != 1 or b.size == 0 for b in index_sets):
        raise InputError("blocks must be a non-empty list of non-empty index lists")
    nb = len(index_sets)
    equal = len({b.size for b in index_sets}) == 1

    def update(key, x, idx):
        def conditional(xb):
            return logdensity_fn(x.at[idx].set(xb))

        k = make_kernel(conditional)
        s, info = k.step(key, k.init(x[idx]))
        return x.at[idx].set(position_of(s)), info

    def init(position, rng_key=None):
        return BlockState(jnp.asarray(position), jnp.int32(0))

    def step(rng_key, state):
        key_block, key_step = jax.random.split(rng_key)
        if order == "random":
            b = jax.random.randint(key_block, (), 0, nb)
        else:
            b = state.count % nb
        if equal:
            table = jnp.asarray(np.stack(index_sets))
            x, info = update(key_step, state.position, table[b])
        else:
            x, info = jax.lax.switch(
                b, [lambda idx=idx: update(key_step, state.position, jnp.asarray(idx)) for idx in index_sets]
            )
        return BlockState(x, state.count + 1), BlockInfo(b, info)

    return Kernel(init, step)


# --------------------------------------------------------------------------
# guards and carried hyper-parameters
# --------------------------------------------------------------------------


class GuardInfo(NamedTuple):
    inner: Any
    rejected_nonfinite: jax.Array  # True when the proposal had a NaN/inf and was discarded
    moved: jax.Array  # True when the kept position differs from the previous one


def _all_finite(tree) -> jax.Array:
    checks = [
        jnp.all(jnp.isfinite(leaf))
        for leaf in jax.tree.leaves(tree)
        if jnp.issubdtype(jnp.asarray(leaf).dtype, jnp.inexact)
    ]
    return jnp.all(jnp.stack(checks)) if checks else jnp.bool_(True)


def _position_changed(new_state, old_state) -> jax.Array:
    """Whether the position (or, for states without one, any leaf) differs between two states."""
    try:
        new, old = position_of(new_state), position_of(old_state)
    except TypeError:
        new, old = new_state, old_state
    changes = [jnp.any(a != b) for a, b in zip(jax.tree.leaves(new), jax.tree.leaves(old))]
    return jnp.any(jnp.stack(changes)) if changes else jnp.bool_(False)


def guard_finite(kernel) -> Kernel:
    """Reject any step whose new state holds a NaN or inf, keeping the old state.

    A log density that returns NaN/inf at a proposal (a numerical blow-up, a
    point outside the support) then costs one rejected step instead of a
    poisoned chain. ``info.rejected_nonfinite`` says when it happened and
    ``info.moved`` whether the chain's position changed; sum them over the trace
    to count (:func:`jaxsamp.diagnostics.health.chain_warnings` turns the counts
    into warnings when a run did not sample).
    """

    def step(rng_key, state):
        new_state, info = kernel.step(rng_key, state)
        ok = _all_finite(new_state)
        kept = jax.tree.map(lambda new, old: jnp.where(ok, new, old), new_state, state)
        return kept, GuardInfo(info, jnp.logical_not(ok), _position_changed(kept, state))

    return Kernel(kernel.init, step)


class AdaptiveState(NamedTuple):
    inner: Any
    hyper: dict
    count: jax.Array

    carried_fields = ("hyper", "count")


def adaptive(
    make_kernel: Callable[..., Any],
    init_hyper: dict,
    update_hyper: Callable[[dict, Any, jax.Array], dict] | None = None,
) -> Kernel:
    """A kernel whose hyper-parameters live in its state (``optax.inject_hyperparams``).

    Parameters
    ----------
    make_kernel : callable
        ``make_kernel(**hyper) -> kernel``; called inside ``step`` with traced values.
    init_hyper : dict
        Initial hyper-parameters, e.g. ``{"step_size": 0.1}``.
    update_hyper : callable, optional
        ``update_hyper(hyper, info, count) -> hyper`` applied after each step
        (adaptation). Without it the hyper-parameters are simply carried, so a
        schedule or an outer tuner can change them between runs.

    Notes
    -----
    Adapting from the chain's own history breaks the Markov property; stop the
    adaptation (``update_hyper`` returning ``hyper`` unchanged after a warm-up
    count) before collecting samples.
    """
    init_hyper = {k: jnp.asarray(v, dtype=jnp.result_type(float)) for k, v in init_hyper.items()}

    def init(position, rng_key=None):
        return AdaptiveState(make_kernel(**init_hyper).init(position), dict(init_hyper), jnp.int32(0))

    def step(rng_key, state):
        inner, info = make_kernel(**state.hyper).step(rng_key, state.inner)
        hyper = state.hyper if update_hyper is None else update_hyper(state.hyper, info, state.count)
        return AdaptiveState(inner, hyper, state.count + 1), info

    return Kernel(init, step)


def robbins_monro_step_size(
    target_acceptance: float = 0.574, rate: float = 0.05, num_adapt: int = 1000
) -> Callable:
    """An ``update_hyper`` for :func:`adaptive` that tunes ``step_size`` towards an acceptance rate.

    ``log h <- log h + rate * (acceptance - target) / sqrt(1 + count)`` for the
    first ``num_adapt`` steps, then frozen (Robbins & Monro 1951; Andrieu &
    Thoms 2008, eq. 20). The default target 0.574 is the optimal MALA rate.
    """

    def update(hyper, info, count):
        acc = jnp.asarray(getattr(info, "acceptance_rate"), dtype=hyper["step_size"].dtype)
        gain = jnp.where(count < num_adapt, rate / jnp.sqrt(1.0 + count), 0.0)
        log_h = jnp.log(hyper["step_size"]) + gain * (jnp.minimum(acc, 1.0) - target_acceptance)
        return {**hyper, "step_size": jnp.exp(log_h)}

    return update
