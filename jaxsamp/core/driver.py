"""One driver for MCMC steps and training updates alike.

:func:`run` advances ``state`` by ``num_steps`` calls of ``step(key_i, state)``,
with ``key_i = jax.random.fold_in(key, i)`` for the global step index ``i``. The
steps run as jitted ``lax.scan`` chunks; between chunks, on the host, the driver
updates a progress bar, writes orbax checkpoints and gathers the trace. Because
step ``i``'s key depends only on ``key`` and ``i``, neither the chunk size nor a
kill-and-resume changes a single bit of the result.
"""

from __future__ import annotations

import functools
import math
import numbers
import os
import sys
from pathlib import Path
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core import checkpoint as ckpt
from jaxsamp.core.errors import InputError
from jaxsamp.core.validation import check_int, check_key


def _key_data(key) -> list[int]:
    key = check_key("key", key)
    data = jax.random.key_data(key) if ckpt._is_key(key) else key
    return [int(v) for v in jax.device_get(data).ravel()]


def _step_identity(step) -> str:
    """The default fingerprint: the step function's module and qualified name (``functools.partial`` unwrapped)."""
    while hasattr(step, "func"):
        step = step.func
    return f"{getattr(step, '__module__', '?')}.{getattr(step, '__qualname__', type(step).__name__)}"


def _even_chunk(chunk: int, period: int) -> int:
    """The largest divisor of ``period`` not above ``chunk``, if it is at least ``chunk / 2``; else ``chunk``.

    Every distinct chunk length is one more compilation of the whole scan. A chunk
    that divides the checkpoint spacing (or, without checkpoints, the step count)
    makes every chunk the same length, at the price of at most twice as many host
    round trips.
    """
    best = max(d for d in range(1, min(chunk, period) + 1) if period % d == 0)
    return best if 2 * best >= chunk else chunk


def _schedule(start: int, num_steps: int, chunk: int, every: int | None) -> list[tuple[int, int]]:
    """Chunk boundaries; every checkpoint step is a boundary."""
    out, i = [], start
    while i < num_steps:
        end = min(num_steps, (i // chunk + 1) * chunk)
        if every:
            end = min(end, (i // every + 1) * every)
        out.append((i, end - i))
        i = end
    return out


def _one_step(step, trace, state, key, i):
    state, info = step(jax.random.fold_in(key, i), state)
    return state, (trace(state, info) if trace is not None else None)


@functools.partial(jax.jit, static_argnums=(0, 1, 2))
def _scan_chunk(step, trace, length, state, key, start):
    """``length`` steps from global index ``start``; compiled once per (step, trace, length)."""
    indices = start + jnp.arange(length, dtype=jnp.uint32)
    return jax.lax.scan(lambda s, i: _one_step(step, trace, s, key, i), state, indices)


def _non_arrays(tree) -> list[str]:
    """``"<path> is a <type>"`` for each leaf of ``tree`` that is not an array or a number (a string, an object)."""
    return [
        f"{jax.tree_util.keystr(path)} is a {type(leaf).__name__}"
        for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]
        if not isinstance(leaf, (jax.Array, np.ndarray, np.generic, numbers.Number))
    ]


def _explain_failure(step, trace, state, key) -> None:
    """After a chunk failed to trace: raise an InputError naming the culprit if it is one of the user's arguments.

    Checks that the state's leaves are arrays, that ``step`` returns a pair
    ``(state, info)`` whose state has the input's structure, shapes and dtypes,
    and that ``trace`` returns arrays. Returns when none of these is the cause
    (the caller then re-raises the original error). Runs only on failure, so it
    costs a healthy run nothing.
    """
    bad = _non_arrays(state)
    if bad:
        raise InputError(f"state must be a PyTree of arrays; state{bad[0]}", "make every leaf a jnp array")
    found = []

    def probe(s):
        out = step(key, s)
        if not (isinstance(out, tuple) and len(out) == 2):
            found.append("step must return a pair (state, info), got "
                         + ("an array" if isinstance(out, jax.Array) else type(out).__name__))
            return
        kinds = [jax.tree.map(lambda a: f"{jnp.result_type(a)}{list(jnp.shape(a))}", x) for x in (s, out[0])]
        if jax.tree.structure(kinds[0]) != jax.tree.structure(kinds[1]):
            found.append(f"step must return a state of the input's structure: {jax.tree.structure(s)} became "
                         f"{jax.tree.structure(out[0])}")
        elif kinds[0] != kinds[1]:
            path, a, b = next((p, a, b) for (p, a), b in zip(jax.tree_util.tree_flatten_with_path(kinds[0])[0],
                                                            jax.tree.leaves(kinds[1])) if a != b)
            found.append(f"step must keep the state's shapes and dtypes: {jax.tree_util.keystr(path) or 'the state'} "
                         f"is {a} in and {b} out")
        elif trace is not None and _non_arrays(trace(*out)):
            found.append(f"trace must return a PyTree of arrays; its output{_non_arrays(trace(*out))[0]}")

    try:
        jax.eval_shape(probe, state)
    except Exception:  # noqa: BLE001  (the original error says more than a second failure would)
        return
    if found:
        raise InputError(found[0], "a kernel's step is step(key, state) -> (new_state, info)")


def _strong_types(state: Any) -> Any:
    """``state`` with weakly typed leaves made strong (same dtype, same values).

    A kernel's ``init`` often leaves Python scalars as weakly typed arrays while
    its ``step`` returns strong ones; without this the first chunk would be
    compiled once more for the second's input types.
    """

    def strong(leaf):
        if isinstance(leaf, jax.Array) and jax.typeof(leaf).weak_type:
            return jax.lax.convert_element_type(leaf, leaf.dtype)
        return leaf

    return jax.tree.map(strong, state)


def _concat(parts: list) -> Any:
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    return jax.tree.map(lambda *a: jnp.concatenate(a, axis=0), *parts)


def run(
    step: Callable,
    state: Any,
    key: jax.Array,
    num_steps: int,
    *,
    trace: Callable[[Any, Any], Any] | None = None,
    chunk: int | None = None,
    progress: bool = True,
    checkpoint: str | Path | None = None,
    checkpoint_every: int | None = None,
    keep: int = 2,
    fingerprint: str | None = None,
    desc: str = "jaxsamp",
) -> tuple[Any, Any]:
    """Run ``num_steps`` steps of a kernel or trainer.

    Parameters
    ----------
    step : callable
        ``step(key, state) -> (state, info)``: a :class:`~jaxsamp.core.Kernel` or
        :class:`~jaxsamp.core.Trainer` step (an ``ensemble`` step for many chains).
    state : PyTree
        Initial state. When resuming, it is the template whose structure,
        dtypes and shardings the checkpoint is restored into.
    key : PRNG key
        Step ``i`` uses ``fold_in(key, i)``.
    num_steps : int
        Total number of steps, counting those a resumed checkpoint already did.
    trace : callable, optional
        ``trace(state, info) -> PyTree`` evaluated after every step inside the
        scan; the returned arrays are stacked along a new leading axis.
    chunk : int, optional
        Steps per jitted scan. Default: ``ceil(num_steps / 50)`` (at most 1000)
        with a progress bar or periodic checkpoints, else all steps in one scan.
        A larger chunk means fewer host round trips; results do not depend on it.
        It is rounded down, by at most half, to a divisor of ``checkpoint_every``
        (else of ``num_steps``) where one exists, so that every chunk has the same
        length and the scan is compiled once.
    progress : bool
        Show a tqdm progress bar on stderr, updated between chunks.
    checkpoint : path, optional
        Folder for orbax checkpoints. If it holds a valid checkpoint the run
        resumes from the newest one; partial/corrupt ones are skipped with a
        :class:`~jaxsamp.core.checkpoint.CheckpointSkippedWarning`.
    checkpoint_every : int, optional
        Write a checkpoint every this many steps (default: only at the end).
    keep : int
        Number of checkpoints kept on disk.
    fingerprint : str, optional
        What identifies this run's settings (the experiment runner passes a
        hash of its config, :func:`jaxsamp.sample` one of its settings; by
        default the step function's module and qualified name). It is
        stored in every checkpoint with ``desc``, the state's structure, shapes
        and dtypes; resuming from a folder whose checkpoints carry another
        fingerprint or another state layout is refused with an error naming both runs.

    Returns
    -------
    state : PyTree
        The state after ``num_steps`` steps.
    trace : PyTree or None
        Stacked trace outputs, leading axis ``num_steps``.

    Raises
    ------
    InputError
        A non-callable ``step``, a key that is not a PRNG key, or a step count,
        chunk, checkpoint spacing or ``keep`` that is not an integer in range.
    CheckpointError
        The checkpoint folder belongs to another run (PRNG key or fingerprint),
        is ahead of ``num_steps``, or holds a state of another structure.
    """
    if not callable(step):
        raise InputError(f"step must be a function step(key, state) -> (state, info), got {type(step).__name__}")
    num_steps = check_int("num_steps", num_steps, ge=0)
    chunk = check_int("chunk", chunk, ge=1, optional=True)
    checkpoint_every = check_int("checkpoint_every", checkpoint_every, ge=1, optional=True)
    keep = check_int("keep", keep, ge=1)
    if checkpoint is not None and not isinstance(checkpoint, (str, os.PathLike)):
        raise InputError(f"checkpoint must be a folder path (str or Path), got {type(checkpoint).__name__}")
    if chunk is None:  # host round trips only where they buy something: a moving progress bar, checkpoints
        chunk = max(1, min(1000, math.ceil(num_steps / 50))) if progress or checkpoint_every else max(num_steps, 1)
    chunk = _even_chunk(chunk, checkpoint_every or max(num_steps, 1))
    key_data = _key_data(key)
    if fingerprint is None:
        fingerprint = _step_identity(step)

    start, parts = 0, []
    if checkpoint is not None:
        found = ckpt.resume_point(checkpoint, key_data, fingerprint, desc, max_step=num_steps)
        if found is not None:
            folder, manifest = found
            trace_template = None
            if trace is not None:
                n_done = manifest["step"]
                one = jax.eval_shape(lambda s: _one_step(step, trace, s, key, jnp.uint32(0))[1], state)
                trace_template = jax.tree.map(lambda a: jnp.zeros((n_done, *a.shape), a.dtype), one)
            state, restored_trace = ckpt.restore(folder, manifest, state, trace_template)
            start = manifest["step"]
            if restored_trace is not None and start > 0:
                parts.append(restored_trace)

    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=num_steps, initial=start, desc=desc, file=sys.stderr, dynamic_ncols=True)

    state = _strong_types(state)
    pending = None  # (marker array, steps) of the chunk dispatched last
    for s0, length in _schedule(start, num_steps, chunk, checkpoint_every):
        try:
            state, out = _scan_chunk(step, trace, length, state, key, jnp.uint32(s0))
        except (TypeError, ValueError, AttributeError):
            _explain_failure(step, trace, state, key)
            raise
        if trace is not None:
            parts.append(out)
        if pending is not None and bar is not None:
            jax.block_until_ready(pending[0])
            bar.update(pending[1])
        pending = (jax.tree.leaves(state)[:1], length)
        end = s0 + length
        if checkpoint is not None and checkpoint_every and end % checkpoint_every == 0 and end < num_steps:
            ckpt.save(checkpoint, end, state, _concat(parts), key_data, fingerprint, desc)
            ckpt.prune(checkpoint, keep)
    if pending is not None:
        jax.block_until_ready(pending[0])
        if bar is not None:
            bar.update(pending[1])
    if bar is not None:
        bar.close()
    full_trace = _concat(parts)
    if parts and len(parts) > 1:
        parts[:] = [full_trace]
    if checkpoint is not None and num_steps > start:
        ckpt.save(checkpoint, num_steps, state, full_trace, key_data, fingerprint, desc)
        ckpt.prune(checkpoint, keep)
    return state, full_trace
