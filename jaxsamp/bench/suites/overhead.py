"""Suite ``overhead``: what jaxsamp's combinators and driver cost over hand-written JAX (blackjax MALA wrapped and
driven against the same MALA vmapped and scanned by hand, with an A/A control), and what a checkpointed run pays
once to fingerprint itself."""

from __future__ import annotations

import io
import statistics
import time
from unittest import mock

from jaxsamp.bench import cells
from jaxsamp.bench.protocol import Cell, Goal, Protocol

GOAL = "issue 2 (the combinators and the driver, item 10): both overhead ratios at most 1.02"
#: the fingerprint's repeats (median)
REPEATS = 5


def quartic_log_prob(x):
    """A 32-d anisotropic, non-Gaussian target: sum of scaled quartic wells."""
    import jax.numpy as jnp

    scales = jnp.linspace(0.5, 2.0, x.shape[-1])
    return -0.5 * jnp.sum((x / scales) ** 2) - 0.05 * jnp.sum(x**4)


def fingerprint_seconds(step, state, key, repeats: int = REPEATS) -> float:
    """Median seconds to fingerprint a run of ``step`` from ``state`` (what a checkpointed run pays once: one trace
    of the step, the state hashed; :mod:`jaxsamp.core.fingerprint`)."""
    from jaxsamp.core import fingerprint

    def once():
        start = time.perf_counter()
        fingerprint.of_computation(step, key, state)
        fingerprint.of_values(state)
        return time.perf_counter() - start

    return statistics.median(once() for _ in range(repeats))


@cells.runner("combinator_overhead")
def combinator_overhead_cell(cell: Cell, seed: int, *, target_evals, evaluation: dict, budget_scale: int = 1,
                             checkpoint=None) -> tuple[dict, dict]:
    """Median per-step seconds of four variants of ``num_chains`` MALA chains (step size 0.05) on
    :func:`quartic_log_prob` in ``dim`` dimensions, ``steps`` steps per call, ``trials`` calls each, alternated in
    one process after a compiling call of each (so that machine noise hits them alike):

    - ``direct``: blackjax MALA vmapped over the chains and scanned by hand (``fold_in(key, i)`` per step);
    - ``wrapped``: ``jaxsamp.ensemble(mala)`` under ``jaxsamp.run`` in one chunk, no progress bar;
    - ``driver``: the same under ``jaxsamp.run`` with its progress bar (drawn into a sink) and 10 chunks;
    - ``control``: ``direct`` again, the A/A noise floor.

    Figures: the ratios ``wrapped_over_direct``, ``driver_over_scan``, ``control_direct_over_direct``, the step
    times in ms and ``fingerprint_seconds`` of the ensemble's step. Random streams: 0 the starting points, 1 the
    chains.
    """
    import blackjax
    import jax
    import jax.numpy as jnp

    import jaxsamp

    p = cell.params
    chains, steps = p["num_chains"], p["steps"]
    mala = blackjax.mala(quartic_log_prob, step_size=0.05)
    ensemble = jaxsamp.ensemble(mala)
    state = ensemble.init(jax.random.normal(cells.stream_key(seed, 0), (chains, p["dim"])))
    key = cells.stream_key(seed, 1)

    @jax.jit
    def direct(state, key):
        def body(s, i):
            keys = jax.random.split(jax.random.fold_in(key, i), s.position.shape[0])
            return jax.vmap(mala.step)(keys, s)[0], None

        return jax.lax.scan(body, state, jnp.arange(steps, dtype=jnp.uint32))[0]

    sink = io.StringIO()  # the progress bar is drawn (and costs what it costs) but not shown

    def driver():
        with mock.patch("sys.stderr", sink):
            return jaxsamp.run(ensemble.step, state, key, steps, chunk=max(1, steps // 10), progress=True)[0]

    variants = {"direct": lambda: direct(state, key),
                "wrapped": lambda: jaxsamp.run(ensemble.step, state, key, steps, chunk=steps, progress=False)[0],
                "driver": driver, "control": lambda: direct(state, key)}
    for fn in variants.values():  # compile
        cells.seconds_of(fn)
    times = {name: [] for name in variants}
    for _ in range(p["trials"]):
        for name, fn in variants.items():
            times[name].append(cells.seconds_of(fn) / steps)
    median = {name: statistics.median(v) for name, v in times.items()}
    figures = {"wrapped_over_direct": median["wrapped"] / median["direct"],
               "driver_over_scan": median["driver"] / median["direct"],
               "control_direct_over_direct": median["control"] / median["direct"],
               **{f"{name}_step_ms": 1e3 * median[name] for name in ("direct", "wrapped", "driver")},
               "fingerprint_seconds": fingerprint_seconds(ensemble.step, state, key)}
    return figures, {}


@cells.runner("fingerprint")
def fingerprint_cell(cell: Cell, seed: int, *, target_evals, evaluation: dict, budget_scale: int = 1,
                     checkpoint=None) -> tuple[dict, dict]:
    """``fingerprint_seconds`` of the training step of ``configs/<params["config"]>`` from its initial state (the
    seed's key initialises it; stream 1 is the run's key)."""
    import jax

    from jaxsamp.bench.suites.particles import build
    from jaxsamp.core.registry import LEARNED

    method, target, settings, batch, _ = build(cell.params["config"])
    sampler = LEARNED.entry(method).factory(target, settings, batch_size=batch)
    state = jax.jit(sampler.init)(jax.random.key(seed))
    return {"fingerprint_seconds": fingerprint_seconds(sampler.step, state, cells.stream_key(seed, 1))}, {}


CELLS = (
    Cell("mala/quartic_32d", "combinator_overhead", {},
         {"num_chains": 1024, "dim": 32, "steps": 400, "trials": 15},
         quick={"num_chains": 64, "steps": 20, "trials": 3}),
    Cell("fingerprint/leaps_ising_L15", "fingerprint", {}, {"config": "leaps_ising_L15.yaml"},
         quick={"config": "leaps_ising_L8.yaml"}),
)

PROTOCOL = Protocol(
    suite="overhead",
    summary="what the combinators and the driver cost over hand-written vmap + lax.scan (blackjax MALA, 1024 chains, "
            "32-d), against an A/A control; the seconds a checkpointed run pays to fingerprint itself",
    cells=CELLS,
    seeds=(0, 1, 2),
    headline="driver_over_scan",
    figures=("wrapped_over_direct", "control_direct_over_direct", "direct_step_ms", "wrapped_step_ms",
             "driver_step_ms", "fingerprint_seconds"),
    evaluation={},
    quick_evaluation={},
    goals=(Goal("mala/quartic_32d", "wrapped_over_direct", 1.02, "below", source=GOAL),
           Goal("mala/quartic_32d", "driver_over_scan", 1.02, "below", source=GOAL)),
    notes="""\
Two ratios of median per-step times, measured in one process with the variants alternated (so that machine noise
hits them alike): ``wrapped_over_direct``, blackjax MALA through ``jaxsamp.ensemble`` + ``jaxsamp.run`` over the
same MALA vmapped and scanned by hand; ``driver_over_scan``, the same ensemble kernel under ``jaxsamp.run`` with
its progress bar and 10 chunks over the hand-written jitted ``lax.scan``; and ``control_direct_over_direct``, the
hand-written scan against itself: the noise floor of the two ratios on this machine (an A/A comparison). A ratio
goal is read against that floor. Size: 1024 chains on a 32-d sum of scaled quartic wells, 400 steps per trial, 15
trials of each variant (quick: 64 chains, 20 steps, 3 trials). A timing: run it alone on the machine.

``fingerprint_seconds``: what a checkpointed ``jaxsamp.run`` pays once per call to fingerprint the run
(``jaxsamp.core.fingerprint``: one trace of the step, the initial state hashed), median of 5: of the 1024-chain
MALA step above, and of the LEAPS trainer at the paper's 15 x 15 configuration (``configs/leaps_ising_L15.yaml``,
200 walkers, LE-conv [3, 5, 7, 9, 15] x 20 channels), the largest training step in the library (quick: the 8 x 8
config).

Seeds: seed 0 draws the script's keys (``key(0)`` the starting points, ``key(1)`` the chains), seed s the keys
``100 s`` on (``jaxsamp.bench.cells.stream_key``); the LEAPS trainer is initialised at ``key(s)``. Converted once
from ``scripts/bench_overhead.py``'s ``bench_overhead.json`` (its run of 2026-12-04 at ``e6a07f9``, alone on the
machine) as seed 0; the settings it echoed (chains, dim, steps per trial, trials) are the cells' definitions here.
The LEAPS trainer is now built through the method registry from the config's sampler settings (the script went
through the leaps experiment's ``check``), the same settings.
""",
)

# --------------------------------------------------------------------------
# the old results file
# --------------------------------------------------------------------------

LEGACY_FILE = "bench_overhead.json"
_LEGACY_COMBINATORS = {"wrapped_over_direct", "driver_over_scan", "control_direct_over_direct", "direct_step_ms",
                       "wrapped_step_ms", "driver_step_ms"}
#: the settings the script echoed: the cells' definitions now
_LEGACY_SETTINGS = {"chains", "dim", "steps_per_trial", "trials"}


def legacy_key(name: str):
    """The old file kept no per-seed keys (its one run is seed 0's): nothing for this hook."""
    return


def legacy_single(name: str):
    """``(cell, figure, 1, 0)`` of a key of ``bench_overhead.json``, None for an echoed setting; an unknown key is an
    error, so nothing is dropped silently."""
    from jaxsamp.core.errors import InputError

    if name in _LEGACY_COMBINATORS:
        return "mala/quartic_32d", name, 1, 0
    if name == "fingerprint_seconds_mala":
        return "mala/quartic_32d", "fingerprint_seconds", 1, 0
    if name == "fingerprint_seconds_leaps_L15":
        return "fingerprint/leaps_ising_L15", "fingerprint_seconds", 1, 0
    if name in _LEGACY_SETTINGS:
        return None
    raise InputError(f"{LEGACY_FILE}: no cell of suite 'overhead' takes {name!r}")
