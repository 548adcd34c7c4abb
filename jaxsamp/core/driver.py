"""One driver for MCMC steps and training updates alike.

:func:`run` advances ``state`` by ``num_steps`` calls of ``step(key_i, state)``,
with ``key_i = jax.random.fold_in(key, i)`` for the global step index ``i``. The
steps run as jitted ``lax.scan`` chunks; between chunks, on the host, the driver
updates a progress bar, writes orbax checkpoints and gathers the trace. Because
step ``i``'s key depends only on ``key`` and ``i``, neither the chunk size nor a
kill-and-resume changes a single bit of the result.

A step function is compiled once per function object, or, for a
:class:`jax.tree_util.Partial` (a kernel whose log density carries data as
leaves, :mod:`jaxsamp.core.compiled`), once per function and per structure,
shapes and dtypes of its bound arguments: they are traced arguments of the
chunk, so new data values reuse its compilation.
"""

from __future__ import annotations

import functools
import math
import numbers
import os
import sys
import warnings
from pathlib import Path
from typing import Any, Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core import checkpoint as ckpt
from jaxsamp.core import fingerprint as fp
from jaxsamp.core.chain_health import chain_warnings
from jaxsamp.core.compiled import as_partial, strong_types
from jaxsamp.core.progress import StepBar
from jaxsamp.core.errors import InputError, RunHealthWarning
from jaxsamp.core.validation import check_int, check_key


def _key_data(key) -> list[int]:
    key = check_key("key", key)
    data = jax.random.key_data(key) if ckpt._is_key(key) else key
    return [int(v) for v in jax.device_get(data).ravel()]


def _step_identity(step) -> str:
    """The step function's module and qualified name (``functools.partial`` unwrapped), to name a run."""
    while hasattr(step, "func"):
        step = step.func
    return f"{getattr(step, '__module__', '?')}.{getattr(step, '__qualname__', type(step).__name__)}"


def _describe_run(step, trace, state, key, desc: str, fingerprint: str | None, identity) -> tuple[str, dict]:
    """The run's fingerprint and its description for the checkpoint manifest.

    Without an explicit ``fingerprint`` it combines what one step (with the trace)
    computes, the initial state's values and the caller's ``identity``
    (:mod:`jaxsamp.core.fingerprint`); the parts are kept in the description so that
    a refused resume can say which one differs, with its details (the settings behind
    an ``identity`` given as a mapping, the program's and each closed-over array's
    hash) so that it can name what differs inside it.
    """
    details = {}
    if fingerprint is not None:
        parts = {"given": str(fingerprint)}
    else:
        one_step = lambda s, k: _one_step(step, trace, s, k, jnp.uint32(0))
        computation, details["computation"] = fp.computation_record(one_step, state, key)
        parts = {"computation": computation, "initial_state": fp.of_values(state)}
        if isinstance(identity, Mapping):
            parts["identity"], details["settings"] = fp.of_settings(identity), fp.flat_settings(identity)
        elif identity is not None:
            parts["identity"] = str(identity)
        fingerprint = fp.combine(parts)
    script = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    return fingerprint, {"name": desc, "step": _step_identity(step), "script": script, "fingerprint_parts": parts,
                         "fingerprint_details": details}


def _check_folder(checkpoint) -> Path:
    """``checkpoint`` as a path, refused before any work when it (or a folder above it) is a file."""
    path = Path(checkpoint)
    for p in (path, *path.parents):
        if p.exists():
            if not p.is_dir():
                raise InputError(
                    f"checkpoint must be a folder, but {p} is a file" + ("" if p == path else f" (checkpoint={path})"),
                    "pass a folder path (it is created if missing)",
                )
            break
    return path


def _resume(checkpoint, step, state, key, key_data, num_steps, trace, fingerprint, who):
    """``(start, state, trace)`` from the newest checkpoint that loads, falling back to older ones; warns when none does."""
    below = None
    while True:
        found = ckpt.resume_point(checkpoint, key_data, fingerprint, who, max_step=num_steps, below=below)
        if found is None:
            break
        folder, manifest = found
        trace_template = None
        if trace is not None:
            n_done = manifest["step"]
            one = jax.eval_shape(lambda s: _one_step(step, trace, s, key, jnp.uint32(0))[1], state)
            trace_template = jax.tree.map(lambda a: jnp.zeros((n_done, *a.shape), a.dtype), one)
        try:
            restored, restored_trace = ckpt.restore(folder, manifest, state, trace_template)
        except ckpt.CheckpointLoadError as err:
            warnings.warn(f"skipping checkpoint {folder}: {err.why}", ckpt.CheckpointSkippedWarning, stacklevel=3)
            below = manifest["step"]
            continue
        return manifest["step"], restored, restored_trace
    if ckpt.list_steps(checkpoint):
        warnings.warn(
            f"no valid checkpoint in {Path(checkpoint).resolve()}; starting from step 0",
            ckpt.CheckpointSkippedWarning, stacklevel=3,
        )
    return 0, state, None


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
    """Step ``i`` of a run: :func:`_keyed_step` with ``fold_in(key, i)`` (what the fingerprint traces)."""
    return _keyed_step(step, trace, state, jax.random.fold_in(key, i))


def _keyed_step(step, trace, state, step_key):
    state, info = step(step_key, state)
    return state, (trace(state, info) if trace is not None else None)


@functools.partial(jax.jit, static_argnums=(0, 1), donate_argnums=3)
def _scan_chunk(trace, length, step, state, key, start):
    """``length`` steps from global index ``start``; compiled once per (step, trace, length).

    ``step`` is a :class:`jax.tree_util.Partial` (:func:`~jaxsamp.core.compiled.as_partial`),
    a traced argument: its function and the structure, shapes and dtypes of its
    bound arguments select the compilation, their values do not (a kernel step
    with a log density's data bound to it is compiled once for every data set of
    those shapes). The input ``state`` is donated: its buffers are reused for the output state,
    so a chunk holds one train state (a replay buffer, say) on the device, not
    two. Returns ``(state, trace, end)``; ``end`` (the index after the last
    step, not donated) is what the host waits on to tell the chunk is done.
    """
    # The chunk's keys in one batched hash before the scan: the same fold_in(key, i) as
    # one hash per step inside it, bit for bit, but that costs about 20 µs a step on a CPU
    # (a NUTS step on eight schools takes about 80 µs).
    keys = jax.vmap(functools.partial(jax.random.fold_in, key))(start + jnp.arange(length, dtype=jnp.uint32))
    state, out = jax.lax.scan(lambda s, k: _keyed_step(step, trace, s, k), state, keys)
    return state, out, start + length


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


def _owned(state: Any) -> Any:
    """``state`` with a fresh copy of every JAX array, so that donating it to a chunk leaves the caller's intact.

    The copy is made once per call of :func:`run`; the first chunk donates it,
    so the peak memory is that of a chunk without donation (input and output).
    """
    leaves, treedef = jax.tree.flatten(state)
    arrays = [i for i, leaf in enumerate(leaves) if isinstance(leaf, jax.Array)]
    # one batched copy in place (each array's own sharding, across processes too), nothing compiled
    copies = jax.device_put([leaves[i] for i in arrays], [leaves[i].sharding for i in arrays], may_alias=False)
    for i, copy in zip(arrays, copies):
        leaves[i] = copy
    return jax.tree.unflatten(treedef, leaves)


@functools.partial(jax.jit, donate_argnums=0)
def _write(buffer, part, at):
    """``buffer`` with ``part`` written at step ``at``; the buffer is donated, so it is updated in place."""
    return jax.tree.map(lambda b, p: jax.lax.dynamic_update_slice_in_dim(b, p.astype(b.dtype), at, axis=0), buffer, part)


class _Trace:
    """A run's trace, gathered chunk by chunk into one buffer of ``num_steps`` steps.

    The buffer is allocated, with the chunks' sharding, when a second piece
    arrives, and every later chunk is written into it in place: the peak memory
    is the whole trace plus one chunk, not the chunks and their concatenation.
    A run of one chunk returns that chunk itself. A resumed run's restored trace
    (its first steps, on the host) is the first piece.
    """

    def __init__(self, num_steps: int, restored: Any = None):
        self.num_steps = num_steps
        self.value = None if restored is None else jax.tree.map(np.asarray, restored)
        self.filled = 0 if restored is None else int(jax.tree.leaves(restored)[0].shape[0])
        self.in_buffer = False

    def add(self, part: Any) -> None:
        """Append the trace of the chunk that ran the next steps."""
        leaves = jax.tree.leaves(part)
        if self.value is None or not leaves:
            self.value = part
        else:
            if not self.in_buffer:
                first = self.value
                buffer = jax.tree.map(lambda a: jnp.zeros((self.num_steps, *a.shape[1:]), a.dtype, device=a.sharding), part)
                self.value, self.in_buffer = _write(buffer, first, jnp.int32(0)), True
                del first, buffer
            self.value = _write(self.value, part, jnp.int32(self.filled))
        self.filled += int(leaves[0].shape[0]) if leaves else 0


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
    identity: str | Mapping | None = None,
    desc: str = "jaxsamp",
    health: bool = True,
    after_chunk: Callable[[int, Any, Any], bool | None] | None = None,
) -> tuple[Any, Any]:
    """Run ``num_steps`` steps of a kernel or trainer.

    Parameters
    ----------
    step : callable
        ``step(key, state) -> (state, info)``: a :class:`~jaxsamp.core.Kernel` or
        :class:`~jaxsamp.core.Trainer` step (an ``ensemble`` step for many chains).
        A plain function is compiled once per function object; a
        :class:`jax.tree_util.Partial` is passed to the compiled chunk as a traced
        argument, so steps of the same function whose bound arguments (a log
        density's data, say) have the same structure, shapes and dtypes share one
        compilation. The fingerprint covers the bound arguments' values.
    state : PyTree
        Initial state. A resumed run must start from the initial state of the
        run that wrote the checkpoint (its values are part of the fingerprint);
        the checkpoint is restored into its structure, dtypes and shardings.
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
        Show progress on stderr, updated between chunks: a tqdm bar in a terminal or a notebook, plain lines
        (each tenth of the run, and at least every ten minutes) in a log file or a pipe
        (:class:`~jaxsamp.core.progress.StepBar`).
    checkpoint : path, optional
        Folder for orbax checkpoints. If it holds a valid checkpoint the run
        resumes from the newest one; partial/corrupt ones, and ones whose arrays
        fail to load, are skipped with a
        :class:`~jaxsamp.core.checkpoint.CheckpointSkippedWarning` and the next
        older one is used. A folder whose checkpoints are all skipped warns
        that the run starts from step 0; a new or empty folder does not. A folder
        that holds all ``num_steps`` steps of this run returns the stored result,
        with a :class:`~jaxsamp.core.checkpoint.CompletedRunWarning` saying so.
    checkpoint_every : int, optional
        Write a checkpoint every this many steps (default: only at the end).
        Needs ``checkpoint``.
    keep : int
        Number of checkpoints kept on disk.
    fingerprint : str, optional
        What identifies this run's numbers in its checkpoints. By default it is
        derived: a hash of what one step and the trace compute (their jaxpr,
        with every closed-over setting, parameter and data array), of the
        initial state's structure, shapes, dtypes and values, and of
        ``identity``; a change of any of them changes it
        (:mod:`jaxsamp.core.fingerprint`). It is computed only with
        ``checkpoint``, once per call: one trace of the step, no compilation
        (about 0.05 s for a NUTS step, 0.1-0.5 s for a training step on a 2-core
        CPU). A string given here is used instead, as is. It is stored in every
        checkpoint with ``desc``, the step function's name and the script;
        resuming from a folder whose checkpoints carry another fingerprint or
        another state layout is refused with an error naming both runs, both
        fingerprints and what differs.
    identity : str or mapping, optional
        What else identifies the run, mixed into the derived fingerprint: a string,
        or a mapping of JSON-able settings (the experiment runner passes its
        config's, :func:`jaxsamp.fit` and :func:`jaxsamp.sample` their method and
        settings), hashed by :func:`~jaxsamp.core.fingerprint.of_settings` and kept
        in the checkpoints so that a refused resume names the settings that differ
        (``run.num_chains 16 -> 32``).
    desc : str
        The progress bar's label, also recorded in checkpoints to name the run.
    health : bool
        After the run, compare the chains' start and end once, on the host
        (:func:`jaxsamp.core.chain_health.chain_warnings`), and emit a
        :class:`~jaxsamp.core.errors.RunHealthWarning` for each finding: chains
        that started where the log density (the state's ``logdensity`` field,
        as in every blackjax state) is NaN/inf, chains that ended where it is
        NaN (stuck in a NaN region), +inf (absorbed by a region of infinite
        density) or -inf, and real-valued chains none of which moved. Only
        states with chain positions are checked (a ``position`` field, a
        registered position getter, a wrapper's ``inner`` state); a trainer's
        state is not. It costs one host copy of the start and end positions and
        log densities, compared in NumPy once per call (about 1 ms for 1000
        chains in dimension 100), nothing inside the scan. ``False`` turns it
        off; :func:`jaxsamp.sample`, the warm-up, SMC, MILE's tuning phases and
        the ``mcmc`` experiment kind turn it off and run their own, fuller
        checks on the trace (:mod:`jaxsamp.diagnostics.health`: acceptance,
        non-finite proposals, divergences, R-hat, training losses).

    after_chunk : callable, optional
        ``after_chunk(steps_done, state, chunk_trace) -> stop``, called on the host
        once each chunk has finished (``chunk_trace``: that chunk's trace outputs, or
        None without ``trace``). Returning True ends the run there: the state and
        the trace of the steps done are returned (and checkpointed, with
        ``checkpoint``), so a later call with the same arguments resumes from them.
        What :func:`jaxsamp.fit` stops a budget and evaluates a learning curve by;
        with it, each chunk is waited for before the next is dispatched.

    Returns
    -------
    state : PyTree
        The state after ``num_steps`` steps (fewer when ``after_chunk`` stopped the run).
    trace : PyTree or None
        Stacked trace outputs, leading axis the steps done.

    Raises
    ------
    InputError
        A non-callable ``step``, a key that is not a PRNG key, a step count,
        chunk, checkpoint spacing or ``keep`` that is not an integer in range,
        ``checkpoint_every`` without ``checkpoint``, or a ``checkpoint`` path
        that is a file.
    CheckpointError
        The checkpoint folder belongs to another run (PRNG key or fingerprint),
        is ahead of ``num_steps``, or holds a state or trace of another structure.
    """
    if not callable(step):
        raise InputError(f"step must be a function step(key, state) -> (state, info), got {type(step).__name__}")
    num_steps = check_int("num_steps", num_steps, ge=0)
    chunk = check_int("chunk", chunk, ge=1, optional=True)
    checkpoint_every = check_int("checkpoint_every", checkpoint_every, ge=1, optional=True)
    keep = check_int("keep", keep, ge=1)
    if checkpoint is not None and not isinstance(checkpoint, (str, os.PathLike)):
        raise InputError(f"checkpoint must be a folder path (str or Path), got {type(checkpoint).__name__}")
    if checkpoint_every is not None and checkpoint is None:
        raise InputError(
            f"checkpoint_every={checkpoint_every} needs a checkpoint folder, got checkpoint=None",
            "pass checkpoint=FOLDER, or drop checkpoint_every",
        )
    if checkpoint is not None:
        checkpoint = _check_folder(checkpoint)
    if chunk is None:  # host round trips only where they buy something: a moving progress bar, checkpoints
        chunk = max(1, min(1000, math.ceil(num_steps / 50))) if progress or checkpoint_every else max(num_steps, 1)
    chunk = _even_chunk(chunk, checkpoint_every or max(num_steps, 1))
    key_data = _key_data(key)

    start, restored_trace = 0, None
    initial = state
    if checkpoint is not None:
        fingerprint, who = _describe_run(step, trace, state, key, desc, fingerprint, identity)
        start, state, restored_trace = _resume(checkpoint, step, state, key, key_data, num_steps, trace, fingerprint, who)
        if start == num_steps > 0:
            warnings.warn(
                f"checkpoint folder {checkpoint} already holds all {num_steps} steps of this run: the stored result "
                "is returned, nothing is recomputed (another folder, or deleting this one, runs it again)",
                ckpt.CompletedRunWarning, stacklevel=2,
            )
    gathered = _Trace(num_steps, restored_trace if start > 0 else None)
    del restored_trace

    bar = StepBar(num_steps, start, desc, enabled=progress)

    state = _owned(strong_types(state))  # each chunk donates its input state: never the caller's arrays
    traced_step = strong_types(as_partial(step))
    pending = None  # (marker array, steps) of the chunk dispatched last
    done = num_steps
    try:
        for s0, length in _schedule(start, num_steps, chunk, checkpoint_every):
            try:
                state, out, end_marker = _scan_chunk(trace, length, traced_step, state, key, jnp.uint32(s0))
            except (TypeError, ValueError, AttributeError):
                _explain_failure(step, trace, state, key)
                raise
            if trace is not None:
                gathered.add(out)
            if pending is not None:
                jax.block_until_ready(pending[0])
                bar.update(pending[1])
            pending = (end_marker, length)
            end = s0 + length
            stop = False
            if after_chunk is not None:
                jax.block_until_ready(end_marker)
                stop = bool(after_chunk(end, state, out if trace is not None else None)) and end < num_steps
            del out
            if stop:
                done = end
                break
            if checkpoint is not None and checkpoint_every and end % checkpoint_every == 0 and end < num_steps:
                ckpt.save(checkpoint, end, state, gathered.value, key_data, fingerprint, who, trace_steps=end)
                ckpt.prune(checkpoint, keep)
        if pending is not None:
            jax.block_until_ready(pending[0])
            bar.update(pending[1])
    finally:
        bar.close()
    full_trace = gathered.value
    if done < num_steps and gathered.in_buffer:  # stopped early: the buffer's unfilled rows are not steps
        full_trace = jax.tree.map(lambda a: a[:done], full_trace)
    del gathered
    if checkpoint is not None and done > start:
        ckpt.save(checkpoint, done, state, full_trace, key_data, fingerprint, who)
        ckpt.prune(checkpoint, keep)
    if health:
        for message in chain_warnings(initial, state, done):
            warnings.warn(message, RunHealthWarning, stacklevel=2)
    return state, full_trace
