"""Suite ``diagnostics``: speed and statistical power of the Stein discrepancy tests (PSD against KSD), and the noise
floors and timing of the particle metrics (geometric and energy W2 between two reference splits)."""

from __future__ import annotations

import os
import time

import numpy as np

from jaxsamp.bench import cells, child
from jaxsamp.bench.protocol import Cell, Goal, Protocol

ISSUE_5 = "issue 5 (Stein discrepancies and particle metrics)"
#: alternative -> what the data is: N(0, I) (null), a mean shift of 0.3, Var(x_1) = 1.7, unit-variance Laplace
ALTERNATIVES = ("null", "mean_shift", "variance", "laplace")
POWER = {"repetitions": 100, "num_points": 1000, "dim": 3, "num_bootstrap": 500}
QUICK_POWER = {"repetitions": 8, "num_points": 200, "num_bootstrap": 50}


def gaussian_score(x):
    """The score of N(0, I)."""
    return -x


def stein_test(test: str, order: int, num_bootstrap: int):
    """``(key, x) -> result`` of the IMQ KSD bootstrap test (``order`` unused) or the PSD test of ``order``."""
    from jaxsamp.diagnostics import ksd_test, psd_test

    if test == "ksd":
        return lambda k, x: ksd_test(k, x, gaussian_score, num_bootstrap=num_bootstrap, block_size=256)
    return lambda k, x: psd_test(k, x, gaussian_score, order, num_bootstrap=num_bootstrap)


@cells.runner("stein_speed")
def stein_speed_cell(cell: Cell, seed: int, *, target_evals, evaluation: dict, budget_scale: int = 1,
                     checkpoint=None) -> tuple[dict, dict]:
    """Seconds of the IMQ-KSD and the PSD (r = 2) bootstrap tests, ``num_bootstrap`` draws each, on
    ``num_points`` standard normal points in ``dim`` dimensions: the best of ``repeats`` calls after a compiling one
    (``ksd_test_seconds``, ``psd_test_seconds``), and their ratio ``psd_over_ksd_speedup``. Streams: 0 the
    points, 1 the tests."""
    import jax

    from jaxsamp.diagnostics import ksd_test, psd_test

    p = cell.params
    x = jax.random.normal(cells.stream_key(seed, 0), (p["num_points"], p["dim"]))
    key, b = cells.stream_key(seed, 1), p["num_bootstrap"]
    ksd = jax.jit(lambda k, x: ksd_test(k, x, gaussian_score, num_bootstrap=b))
    psd = jax.jit(lambda k, x: psd_test(k, x, gaussian_score, 2, num_bootstrap=b))
    seconds = {name: cells.best_seconds(fn, key, x, calls=p["repeats"]) for name, fn in (("ksd", ksd), ("psd", psd))}
    return {"ksd_test_seconds": seconds["ksd"], "psd_test_seconds": seconds["psd"],
            "psd_over_ksd_speedup": seconds["ksd"] / seconds["psd"]}, {}


def alternative_sample(alternative: str, key, shape):
    """``shape = (repetitions, n, d)`` draws of ``alternative`` (:data:`ALTERNATIVES`)."""
    import jax
    import jax.numpy as jnp

    z = jax.random.normal(key, shape)
    if alternative == "mean_shift":
        return z + 0.3
    if alternative == "variance":
        return z * jnp.sqrt(jnp.asarray([1.7] + [1.0] * (shape[-1] - 1)))
    if alternative == "laplace":
        return jax.random.laplace(key, shape) / jnp.sqrt(2.0)
    return z


@cells.runner("stein_rejection_rate")
def rejection_rate_cell(cell: Cell, seed: int, *, target_evals, evaluation: dict, budget_scale: int = 1,
                        checkpoint=None) -> tuple[dict, dict]:
    """``rejection_rate`` at level 0.05 of ``test`` (``"psd"`` of ``order``, or ``"ksd"``) against N(0, I) over
    ``repetitions`` data sets of ``num_points`` draws of ``alternative`` in ``dim`` dimensions: the size under
    ``"null"``, the power otherwise. Streams: ``10 + stream`` the data, ``20 + stream`` the tests."""
    import jax
    import jax.numpy as jnp

    p = cell.params
    xs = alternative_sample(p["alternative"], cells.stream_key(seed, 10 + p["stream"]),
                            (p["repetitions"], p["num_points"], p["dim"]))
    run = stein_test(p["test"], p.get("order", 0), p["num_bootstrap"])
    keys = jax.random.split(cells.stream_key(seed, 20 + p["stream"]), p["repetitions"])
    rate = jax.jit(lambda keys, xs: jnp.mean(jax.lax.map(lambda kx: run(*kx).reject, (keys, xs))))(keys, xs)
    return {"rejection_rate": float(rate)}, {}


@cells.runner("reference_floor")
def reference_floor_cell(cell: Cell, seed: int, *, target_evals, evaluation: dict, budget_scale: int = 1,
                         checkpoint=None) -> tuple[dict, dict]:
    """The particle metrics between ``size`` random test-split and ``size`` random validation-split reference
    configurations of the cell's target (NumPy's generator at the seed picks them): ``w2_floor`` (geometric W2)
    and ``energy_w2_floor``, the noise floors no sampler can be claimed to beat, and ``w2_seconds``, the geometric
    W2's first call, compilation included.

    The geometric W2 shards its pairs over the visible devices: on a CPU the cell runs in a child process with one
    forced host device per core (``os.cpu_count()``) unless this process has that many already.
    """
    import jax

    from jaxsamp.diagnostics import energy_w2, geometric_w2

    cores = os.cpu_count() or 1
    if jax.default_backend() == "cpu" and jax.device_count() != cores and not child.in_child():
        return child.run_in_child(reference_floor_cell, cell, seed, env=child.forced_cpu_devices(cores),
                                  target_evals=target_evals, evaluation=evaluation, budget_scale=budget_scale)
    target = cells.build_target(cell.target)
    size = cell.params["size"]
    test, val = (x[np.random.default_rng(seed).permutation(len(x))[:size]]
                 for x in (target.reference("test"), target.reference("val")))
    start = time.perf_counter()
    w2 = geometric_w2(test, val, target.n_particles, target.spatial_dim)
    seconds = time.perf_counter() - start
    return {"w2_floor": float(w2), "energy_w2_floor": float(energy_w2(target.energy, test, val)),
            "w2_seconds": seconds}, {}


def power_cell(test: str, order: int, alternative: str, stream: int) -> Cell:
    """One Stein test against one alternative (its row ``stream`` of the PSD paper's oracle table)."""
    name = f"{test}_r{order}" if test == "psd" else test
    return Cell(f"power/{name}_{alternative}", "stein_rejection_rate", {},
                {"test": test, "order": order, "alternative": alternative, "stream": stream, **POWER},
                quick=QUICK_POWER)


CELLS = (
    Cell("speed/psd_vs_ksd_n10000", "stein_speed", {},
         {"num_points": 10_000, "dim": 5, "num_bootstrap": 500, "repeats": 3},
         quick={"num_points": 1000, "num_bootstrap": 50, "repeats": 1}),
    power_cell("psd", 2, "null", 0),
    power_cell("psd", 1, "mean_shift", 1),
    power_cell("psd", 2, "variance", 2),
    power_cell("psd", 4, "laplace", 3),
    power_cell("ksd", 0, "mean_shift", 4),
    Cell("floor/dw4", "reference_floor", {"name": "dw4"}, {"size": 2000}, quick={"size": 48}),
    Cell("floor/lj13", "reference_floor", {"name": "lj13"}, {"size": 2000}, quick={"size": 48}),
)

PROTOCOL = Protocol(
    suite="diagnostics",
    summary="the Stein discrepancy tests' speed (PSD against KSD at n = 10^4) and power (the PSD paper's oracle "
            "table); the particle metrics' noise floors between two reference splits and the geometric W2's time",
    cells=CELLS,
    seeds=(0, 1, 2),
    headline="rejection_rate",
    figures=("psd_over_ksd_speedup", "ksd_test_seconds", "psd_test_seconds", "w2_floor", "energy_w2_floor",
             "w2_seconds"),
    evaluation={},
    quick_evaluation={},
    goals=(Goal("speed/psd_vs_ksd_n10000", "psd_over_ksd_speedup", 50, "above",
                source=f"{ISSUE_5}: the PSD test at least 50 times faster than KSD's at n = 10^4, d = 5"),
           Goal("floor/lj13", "w2_seconds", 120, "below",
                source=f"{ISSUE_5}: one geometric W2 of 2000 against 2000 LJ-13 configurations within 120 s on the "
                       "2-core CI machine")),
    notes="""\
Speed: the IMQ-KSD bootstrap test's wall time over the PSD (r = 2) bootstrap test's, both with B = 500, on
n = 10^4 standard normal points in d = 5 (each compiled beforehand, best of 3). A timing: run it alone.

Power (the oracle table of the PSD paper, research/methods.md Sec. 1): rejection rates at level 0.05 over 100
repetitions, d = 3, n = 1000, B = 500, target N(0, I): the null (the size, PSD r = 2), a mean shift of 0.3
(PSD r = 1 and IMQ KSD), Var(x_1) = 1.7 (PSD r = 2), a unit-variance Laplace (PSD r = 4). Each cell is a row of
the table, its data and test keys the script's (``key(10 + row)``, ``key(20 + row)``) at seed 0.

Noise floors: the geometric and energy W2 between 2000 random test-split and 2000 random validation-split
reference configurations of DW-4 and LJ-13 (``data/reference``; NumPy's generator at the seed picks them), the
figure no sampler can be claimed to beat (the particles suite's ``w2_floor`` at its own size); ``w2_seconds`` is
that geometric W2's first call, compilation included. The geometric W2 shards its pairs over the visible devices:
on a CPU these cells run in a child process with one forced host device per core
(``--xla_force_host_platform_device_count``, appended to ``XLA_FLAGS``), as the script ran itself whole; the cell's
record names the parent's machine, whose device list is not the child's.

Seeds: seed 0 draws the script's keys, seed s the keys ``100 s`` on (``jaxsamp.bench.cells.stream_key``).
Converted once from ``scripts/bench_diagnostics.py``'s ``bench_diagnostics.json`` (its run of 2026-12-01 on a
quiet machine, jax 0.10.2, two forced host devices) as seed 0: ``psd_over_ksd_speedup_n10000`` as
``psd_over_ksd_speedup`` (the KSD and PSD seconds apart were not recorded), each power as its cell's
``rejection_rate``, ``geom_w2_<system>_reference_vs_reference`` as ``w2_floor``,
``energy_w2_<system>_reference_vs_reference`` as ``energy_w2_floor`` and ``geom_w2_lj13_2000_seconds`` as
``w2_seconds`` (the script timed LJ-13's only).
""",
)

# --------------------------------------------------------------------------
# the old results file
# --------------------------------------------------------------------------

LEGACY_FILE = "bench_diagnostics.json"
_LEGACY_KEYS = {
    "psd_over_ksd_speedup_n10000": ("speed/psd_vs_ksd_n10000", "psd_over_ksd_speedup"),
    "psd_size": ("power/psd_r2_null", "rejection_rate"),
    "psd_power_meanshift_r1": ("power/psd_r1_mean_shift", "rejection_rate"),
    "psd_power_var_r2": ("power/psd_r2_variance", "rejection_rate"),
    "psd_power_laplace_r4": ("power/psd_r4_laplace", "rejection_rate"),
    "ksd_power_meanshift": ("power/ksd_mean_shift", "rejection_rate"),
    "geom_w2_lj13_2000_seconds": ("floor/lj13", "w2_seconds"),
    **{f"geom_w2_{s}_reference_vs_reference": (f"floor/{s}", "w2_floor") for s in ("dw4", "lj13")},
    **{f"energy_w2_{s}_reference_vs_reference": (f"floor/{s}", "energy_w2_floor") for s in ("dw4", "lj13")},
}


def legacy_key(name: str):
    """The old file kept no per-seed keys (its one run is seed 0's): nothing for this hook."""
    return


def legacy_single(name: str):
    """``(cell, figure, 1, 0)`` of a key of ``bench_diagnostics.json``; an unknown key is an error."""
    from jaxsamp.core.errors import InputError

    if name not in _LEGACY_KEYS:
        raise InputError(f"{LEGACY_FILE}: no cell of suite 'diagnostics' takes {name!r}")
    return (*_LEGACY_KEYS[name], 1, 0)
