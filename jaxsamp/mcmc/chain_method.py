"""``chain_method="auto"``: chains in lock-step where batching the model pays, one after another where it does not.

Whether ``jax.vmap`` over the chains (lock-step) or ``lax.map`` (one after
another) runs a call faster depends on the model, not on its size alone. On a
2-core CPU (``jaxsamp bench run chains``; the MCMC guide's table), logistic
regressions with a few hundred coefficients on thousands of data points draw
faster in lock-step, where the chains' matrix-vector products over the data
become one matrix product that reads the data once, while a 500-dimensional
funnel or a dense 500-dimensional Gaussian draws faster one chain after another:
their batched operations gain little, and NUTS chains in lock-step each pay for
the deepest tree of the step. What separated them in the pilot that set the rule
(the suite's notes) is the model's own gradient timed both ways:
:func:`batching_gain` is the time of every chain's gradient one after another
over the time of all of them batched, at the starting points, and ``"auto"``
steps the chains in lock-step when it is at least :data:`LOCKSTEP_GAIN`, a
threshold set between the gains of the two groups in the pilot (its figures are
in the suite's protocol notes, ``jaxsamp.bench.suites.chains``).

On an accelerator ``"auto"`` is always lock-step (its parallel lanes run the
chains side by side); a single chain needs no choice.

The choice is made once per process for a model function, the shapes and
dtypes of its data, and the chains' shapes (the cost of a gradient depends on
these, not on the data's values), so a second call measures nothing and makes
the same choice as the first. It is a timing, so two processes may choose
differently for a model whose gain lies near the threshold, and their NUTS
draws then differ (equally valid; :func:`jaxsamp.core.combinators.over_chains`).
A call with a checkpoint folder stores its choice there and a resumed call
reuses it; pass ``chain_method`` explicitly for draws that repeat bit for bit
across processes and machines. :attr:`Posterior.chain_method
<jaxsamp.Posterior>` says which ran.
"""

from __future__ import annotations

import functools
import json
import time
from pathlib import Path
from typing import Callable

import jax

from jaxsamp.core.combinators import num_chains, over_chains
from jaxsamp.core.compiled import as_partial

#: ``"auto"`` steps the chains in lock-step when their batched gradient is at least this many times faster.
LOCKSTEP_GAIN = 1.5
#: The file in a checkpoint folder that holds a call's choice, so that a resumed call makes the same one.
RECORD = "chain_method.json"
#: Each timing repeats the evaluation until this many seconds have passed, the fastest of ``_REPEATS`` rounds kept.
_MIN_SECONDS = 0.01
_REPEATS = 5
#: The choices made in this process: (model function and data shapes, chains' shapes, gradient, backend) -> choice.
_CHOSEN: dict = {}


@functools.partial(jax.jit, static_argnums=(0, 1))
def _every_chain(chain_method: str, gradient: bool, log_density, positions):
    fn = jax.value_and_grad(log_density) if gradient else log_density
    return over_chains(fn, chain_method)(positions)


def _total_seconds(fn: Callable, calls: int) -> float:
    """Seconds of ``calls`` calls of ``fn``, the last one's result awaited."""
    start = time.perf_counter()
    for _ in range(calls):
        out = fn()
    jax.block_until_ready(out)
    return time.perf_counter() - start


def _per_call_seconds(fns: tuple[Callable, ...]) -> list[float]:
    """Each function's fastest mean seconds per call over ``_REPEATS`` rounds, the functions taking turns within a
    round (so that a slow moment of the machine falls on both), each round of enough calls to last
    ``_MIN_SECONDS`` for the slowest; every function compiled and run once first."""
    jax.block_until_ready([fn() for fn in fns])
    calls = 1
    while calls < 4096 and max(_total_seconds(fn, calls) for fn in fns) < _MIN_SECONDS:
        calls *= 2
    best = [float("inf")] * len(fns)
    for _ in range(_REPEATS):
        for i, fn in enumerate(fns):
            best[i] = min(best[i], _total_seconds(fn, calls) / calls)
    return best


def batching_gain(log_density: Callable, positions, *, gradient: bool = True) -> float:
    """Seconds of every chain's log density and gradient one after another over seconds of all of them batched.

    Parameters
    ----------
    log_density : callable
        The log density of one state (a :class:`jax.tree_util.Partial` with its
        data as leaves, or any callable).
    positions : array, shape (num_chains, ...)
        Where to evaluate it: the chains' starting points.
    gradient : bool
        Time the value and gradient (gradient-based samplers); ``False`` times
        the value alone (a discrete target).

    Returns
    -------
    float
        Above 1 when batching the chains is faster.
    """
    fn = as_partial(log_density)
    sequential, vectorized = _per_call_seconds(tuple(
        functools.partial(_every_chain, method, gradient, fn, positions) for method in ("sequential", "vectorized")))
    return sequential / vectorized


def _model_key(log_density: Callable, positions, gradient: bool) -> tuple:
    """What a gradient's cost depends on: the function with the structure of its data, their shapes and dtypes,
    the chains' shapes and dtypes, and whether the gradient is taken."""
    leaves, structure = jax.tree.flatten(as_partial(log_density))
    shapes = lambda tree: tuple((jax.numpy.shape(x), str(jax.numpy.result_type(x))) for x in jax.tree.leaves(tree))
    return structure, shapes(leaves), shapes(positions), gradient, jax.default_backend()


def clear_choices() -> None:
    """Forget this process's choices (as :func:`jax.clear_caches` forgets its compilations): the next call of each
    model measures again."""
    _CHOSEN.clear()


def choose_chain_method(log_density: Callable, positions, *, gradient: bool = True,
                        folder: str | Path | None = None) -> tuple[str, float | None]:
    """What ``chain_method="auto"`` runs: ``(method, gain)``, ``gain`` None where nothing was timed.

    Lock-step (``"vectorized"``) on an accelerator, for a single chain, and on a
    CPU when :func:`batching_gain` is at least :data:`LOCKSTEP_GAIN`;
    ``"sequential"`` otherwise, measured once per model in a process. A
    ``folder`` that holds a choice (:data:`RECORD`) returns it; one that does
    not gets this call's.
    """
    record = None if folder is None else Path(folder) / RECORD
    if record is not None and record.exists():
        stored = json.loads(record.read_text())
        return stored["chain_method"], stored["batching_gain"]
    if jax.default_backend() != "cpu" or num_chains(positions) == 1:
        method, gain = "vectorized", None
    else:
        model = _model_key(log_density, positions, gradient)
        if model not in _CHOSEN:
            gain = batching_gain(log_density, positions, gradient=gradient)
            _CHOSEN[model] = ("vectorized" if gain >= LOCKSTEP_GAIN else "sequential", gain)
        method, gain = _CHOSEN[model]
    if record is not None:
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(json.dumps({"chain_method": method, "batching_gain": gain}))
    return method, gain
