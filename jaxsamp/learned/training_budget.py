"""What :func:`~jaxsamp.learned.fit.fit` does between the driver's chunks, and the clock it keeps.

A fit's budget is counted in updates (the driver's ``num_steps``), in training seconds with compilation left out
(``max_seconds``), or in target evaluations (``max_target_evals``); :class:`TrainingBudget` stops the driver when
one is spent, evaluates the learning curve at chunk ends, and records the seconds and the curve beside each
checkpoint (:data:`BUDGET_RECORD`), so that a resumed fit counts on from the checkpoint it resumes from.
:class:`CompileClock` and :func:`compile_timer` keep JAX's compilation apart from the training's seconds.
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from pathlib import Path

import jax
import numpy as np

from jaxsamp.core.checkpoint import step_dir as checkpoint_folder
from jaxsamp.core.errors import InputError
from jaxsamp.core.validation import check_int

#: the file of a checkpoint folder where :func:`~jaxsamp.learned.fit.fit` keeps, per checkpointed step, the training seconds spent and the
#: learning curve so far, so that a resumed fit counts on from them (its seconds, its budget, its curve)
BUDGET_RECORD = "fit_budget.json"

#: JAX's events for the time it spends making a compiled program: tracing to a jaxpr, lowering it, compiling it
#: (or fetching it from the persistent cache)
_COMPILE_EVENTS = ("/jax/core/compile/jaxpr_trace_duration", "/jax/core/compile/jaxpr_to_mlir_module_duration",
                   "/jax/core/compile/backend_compile_duration", "/jax/compilation_cache/cache_retrieval_time_sec")


class CompileClock:
    """Wall-clock seconds JAX spent making compiled programs, each moment counted once.

    JAX reports each tracing, lowering, compilation or cache fetch as an event with its duration, at its end.
    Events nest (tracing a function traces the jitted functions it calls, each reported on its own) and may
    overlap, so their durations do not add up: the clock keeps the union of their intervals, and
    :attr:`seconds` is its length (never more than the wall time that passed).
    """

    def __init__(self):
        self._intervals: list[tuple[float, float]] = []  # disjoint (start, end) in time.perf_counter's seconds

    def add(self, seconds: float) -> None:
        """An event of ``seconds`` that ends now."""
        end = time.perf_counter()
        start = end - seconds
        kept = []
        for a, b in self._intervals:
            if b < start or a > end:
                kept.append((a, b))
            else:
                start, end = min(a, start), max(b, end)
        self._intervals = [*kept, (start, end)]

    @property
    def seconds(self) -> float:
        return sum(b - a for a, b in self._intervals)


@contextlib.contextmanager
def compile_timer():
    """Seconds JAX spends compiling while the block runs: yields a :class:`CompileClock`.

    Listens to JAX's own compile-time events (``jax.monitoring``), so that training and
    compilation are reported apart without compiling anything twice.
    """
    clock = CompileClock()

    def listen(event: str, seconds: float, **_):
        if event in _COMPILE_EVENTS:
            clock.add(seconds)

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        yield clock
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)


class TrainingBudget:
    """What :func:`~jaxsamp.learned.fit.fit` does between the driver's chunks: stop at a budget, evaluate the learning curve.

    With a checkpoint folder, the training seconds spent and the curve's points are recorded in its
    :data:`BUDGET_RECORD` at every step the driver checkpoints, so that a resumed fit counts on from
    the checkpoint it resumes from.
    """

    def __init__(self, sampler, trainer, state, key, num_steps, max_seconds, max_target_evals, evaluate_every,
                 evaluate_samples, evaluate_options, checkpoint, checkpoint_every, chunk):
        if max_seconds is not None and (isinstance(max_seconds, bool) or not isinstance(max_seconds, (int, float))
                                        or not max_seconds >= 0):
            raise InputError(f"max_seconds must be a number >= 0 (0: one chunk of updates), got {max_seconds!r}")
        self.max_seconds = max_seconds
        self.max_target_evals = check_int("max_target_evals", max_target_evals, ge=1, optional=True)
        self.every = check_int("evaluate_every", evaluate_every, ge=1, optional=True)
        self.samples = check_int("evaluate_samples", evaluate_samples, ge=2)
        self.options = dict(evaluate_options or {})
        if self.options and self.every is None:
            raise InputError("evaluate_options without evaluate_every: the learning curve is off")
        if self.max_target_evals is not None:
            _, metrics = jax.eval_shape(trainer.step, key, state)
            if "target_evals" not in metrics:
                raise InputError("max_target_evals needs a method that counts its target evaluations "
                                 "(a target_evals metric); this one does not", "budget it in num_steps or max_seconds")
        self.active = self.max_seconds is not None or self.max_target_evals is not None or self.every is not None
        if chunk is not None:
            if self.every is not None and self.every % chunk:
                raise InputError(f"chunk={chunk} does not divide evaluate_every={self.every}",
                                 "the learning curve is evaluated at chunk ends")
            self.chunk = chunk
        elif self.every is not None:
            self.chunk = math.gcd(self.every, checkpoint_every or num_steps)
        elif self.active:
            self.chunk = max(1, min(1000, math.ceil(num_steps / 50)))
        else:
            self.chunk = None
        self.sampler, self.num_steps, self.key = sampler, num_steps, jax.random.fold_in(key, 2**31 - 1)
        self.points: list[dict] = []
        self.evaluation_seconds = self.evaluation_compile = 0.0
        # kept by every checkpointed fit, so that a resumed one reports the seconds of all its sessions; the chunks
        # stay the driver's own unless a budget or a curve needs them (so the compiled programs, and the results)
        self.record = Path(checkpoint) / BUDGET_RECORD if checkpoint is not None else None
        self.checkpoint_every, self.resumed = checkpoint_every, None
        self.earlier = (0.0, 0.0)  # seconds and compile seconds of the sessions a resumed fit continues

    @property
    def hook(self):
        """The driver's ``after_chunk``: needed by a budget, a learning curve or a checkpoint's seconds record."""
        return self.after_chunk if self.active or self.record is not None else None

    def start(self, compiling: CompileClock) -> None:
        self.compiling, self.t0 = compiling, time.perf_counter()

    def training_seconds(self) -> tuple[float, float]:
        """Wall-clock seconds and compile seconds of the training so far, the curve's evaluations left out."""
        seconds = time.perf_counter() - self.t0 - self.evaluation_seconds
        compile_seconds = min(self.compiling.seconds - self.evaluation_compile, seconds)
        return seconds + self.earlier[0], compile_seconds + self.earlier[1]

    def _recorded(self) -> dict:
        """The record's entries whose checkpoints are on disk, by step."""
        if self.record is None or not self.record.exists():
            return {}
        recorded = json.loads(self.record.read_text())
        return {int(step): entry for step, entry in recorded.items()
                if checkpoint_folder(self.record.parent, int(step)).exists()}

    def _spent(self, seconds: float, compile_seconds: float, target_evals: int | None) -> bool:
        return (self.max_seconds is not None and seconds - compile_seconds >= self.max_seconds) or (
            self.max_target_evals is not None and target_evals is not None and target_evals >= self.max_target_evals)

    def steps_to_run(self) -> int:
        """``num_steps``, or the step of the newest checkpoint if its record says the budget was spent there."""
        recorded = self._recorded()
        if recorded:
            last = max(recorded)
            entry = recorded[last]
            if last < self.num_steps and self._spent(entry["seconds"], entry["compile_seconds"], entry["target_evals"]):
                return last  # the driver resumes there and trains no more
        return self.num_steps

    def resume(self, start: int) -> None:
        """Take the seconds and curve points recorded at step ``start``, where the driver resumed (if it did)."""
        self.resumed = start
        entry = self._recorded().get(start) if start > 0 else None
        if entry is not None:
            self.earlier, self.points = (entry["seconds"], entry["compile_seconds"]), entry["points"] + self.points

    def _save(self, steps_done: int, target_evals: int | None) -> None:
        """Record the seconds and the curve at ``steps_done``, beside the entries of the checkpoints still on disk."""
        if jax.process_index() != 0:
            return
        seconds, compile_seconds = self.training_seconds()
        kept = {str(step): entry for step, entry in self._recorded().items() if step < steps_done}
        kept[str(steps_done)] = {"seconds": seconds, "compile_seconds": compile_seconds, "target_evals": target_evals,
                                 "points": self.points}
        self.record.parent.mkdir(parents=True, exist_ok=True)
        partial = self.record.with_suffix(".tmp")
        partial.write_text(json.dumps(kept))
        partial.replace(self.record)

    def after_chunk(self, steps_done: int, state, chunk_trace) -> bool:
        if self.resumed is None:  # the first chunk: the driver started it where it resumed
            lengths = [np.shape(leaf)[0] for leaf in jax.tree.leaves(chunk_trace)]
            self.resume(steps_done - lengths[0] if lengths else 0)
        if self.every is not None and (steps_done % self.every == 0 or steps_done == self.num_steps):
            t, c = time.perf_counter(), self.compiling.seconds
            seconds, _ = self.training_seconds()
            figures = self.sampler.evaluate(jax.random.fold_in(self.key, steps_done), state, self.samples,
                                            **self.options)
            self.points.append({"step": steps_done, "train_seconds": seconds,
                                **{k: float(v) for k, v in figures.items()}})
            self.evaluation_seconds += time.perf_counter() - t
            self.evaluation_compile += self.compiling.seconds - c
        seconds, compile_seconds = self.training_seconds()
        evals = int(np.asarray(chunk_trace["target_evals"])[-1]) if "target_evals" in chunk_trace else None
        stop = self._spent(seconds, compile_seconds, evals)
        checkpointed = stop or steps_done == self.num_steps or (
            self.checkpoint_every is not None and steps_done % self.checkpoint_every == 0)
        if self.record is not None and checkpointed:  # the driver writes a checkpoint at this step
            self._save(steps_done, evals)
        return stop

    def curve(self) -> dict:
        """The learning curve as arrays over its points (empty without ``evaluate_every``)."""
        keys = list(dict.fromkeys(k for point in self.points for k in point))
        return {k: np.asarray([point.get(k, np.nan) for point in self.points]) for k in keys}


__all__ = ["BUDGET_RECORD", "CompileClock", "TrainingBudget", "compile_timer"]
