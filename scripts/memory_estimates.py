"""Peak device memory of one training step at each paper config: measured on CPU at small batches, extrapolated.

Protocol (fixed before the first run):

* **Configs** (the issue's paper configs, as the ``device`` benchmark suite's timing cells define them):
  ``pis_funnel`` / ``dds_funnel`` (Sendera et al.'s 300 paths of 100 SDE steps, LangevinNet 2 x 64, KL loss:
  the whole path is differentiated, one state per step kept by ``jax.checkpoint``), ``leaps_L15_ising``
  (``configs/leaps_ising_L15.yaml``: LE-conv 3, 5, 7, 9, 15 x 20 channels, 200 walkers, loss batch 400, a buffer
  of 100 rollouts x 200 walkers x 16 states), ``adjoint_dw4`` / ``asbs_dw4`` (``configs/{adjoint,asbs}_dw4.yaml``:
  EGNN 5 x 128, 512 paths of 200 time points, Adam batch 512, a buffer of 20 rollouts).
* **Measurement**: the train step as the driver runs it (``jax.jit``, the train state donated), compiled for the
  CPU at two small batches, the paper's batch times ``r`` for ``r`` in ``SCALES`` (every batch-sized setting
  scaled together: paths, walkers, loss / Adam batches, so the replay buffers too); XLA's
  ``memory_analysis()`` of the compiled step gives its arguments, outputs, aliased (donated) bytes and
  temporaries; the step's peak is ``arguments + outputs - aliased + temporaries``. Nothing is run, only
  compiled.
* **Extrapolation**: each figure is linear in the batch (the parameters and optimiser state are the
  intercept, the per-sample work and the buffers the slope), fitted through the two measured points and read
  at ``r = 1``; ``{config}_peak_gib`` is the headline, with the measured points and the state's share beside
  it. On a mesh of ``n`` devices (``jaxsamp.core.data_parallel``) the slope part is divided by ``n``, the
  intercept is not. The extrapolation ignores what XLA's GPU compiler fuses or schedules differently; it is a
  sizing estimate, not a measurement on the device.

``--quick`` measures tiny versions of the same configs (tests/scripts/test_memory_estimates.py runs it).

Usage: python scripts/memory_estimates.py [--quick] [--configs pis_funnel ...]
Writes benchmarks/results/memory_estimates.json (``--quick``: memory_estimates_quick.json).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import jax
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from benchmark_io import write_results  # noqa: E402

CONFIGS = ("pis_funnel", "dds_funnel", "leaps_L15_ising", "adjoint_dw4", "asbs_dw4")
SCALES = (1 / 20, 1 / 10)  # the measured batches, as fractions of the paper's
QUICK_SCALES = (1 / 4, 1 / 2)
GIB = 2.0**30


def build_diffusion(method: str, quick: bool, scale: float):
    """PIS / DDS on the funnel at ``scale`` times Sendera et al.'s 300 paths (the device suite's timing cell)."""
    import jaxsamp.learned.methods  # noqa: F401  (registers the methods)
    from jaxsamp.bench.cells import build_target
    from jaxsamp.bench.suites.device import PROTOCOL
    from jaxsamp.core.registry import LEARNED

    cell = PROTOCOL.cell(f"{method}-timing/funnel").sized(quick)
    settings = LEARNED.entry(method).meta["settings"](**cell.params["settings"])
    paper_batch = cell.params["batch_size"]
    batch = max(1, round(paper_batch * scale))
    return LEARNED.entry(method).factory(build_target(cell.target), settings, batch_size=batch), paper_batch, batch


def build_leaps(quick: bool, scale: float):
    """LEAPS at configs/leaps_ising_L15.yaml (its whole buffer) with walkers and loss batch scaled by ``scale``."""
    from jaxsamp.experiments.config import load_config
    from jaxsamp.experiments.leaps_experiment import check
    from jaxsamp.learned.leaps.training import build
    from jaxsamp.targets import get

    cfg = load_config(ROOT / "configs" / "leaps_ising_L15.yaml")
    params = {**cfg.target.params, "L": 6} if quick else cfg.target.params
    target = get(cfg.target.name, **params)
    settings, walkers = check(cfg, target), cfg.run.num_chains
    if quick:
        settings = dataclasses.replace(settings, network_params={"kernel_sizes": [3], "channels": 4, "time_hidden": 8},
                                       free_energy_hidden=[16], loss_batch=32, rollout_steps=8, buffer_rollouts=4,
                                       states_per_walker=4, mcmc_updates=2)
        walkers = 16
    batch = max(1, round(walkers * scale))
    settings = dataclasses.replace(settings, loss_batch=max(1, round(settings.loss_batch * scale)))
    return build(target, settings, batch_size=batch), walkers, batch


def build_adjoint(method: str, quick: bool, scale: float):
    """Adjoint Sampling / ASBS at configs/{method}_dw4.yaml with paths and Adam batch scaled by ``scale``."""
    from jaxsamp.bench.suites.particles import build
    from jaxsamp.learned.diffusion import adjoint, asbs

    _, target, paper_settings, paper_batch, _ = build(f"{method}_dw4.yaml", quick)
    batch = max(1, round(paper_batch * scale))
    train = max(1, round(paper_settings.train_batch_size * scale))
    settings = dataclasses.replace(paper_settings, train_batch_size=train)
    return {"adjoint": adjoint, "asbs": asbs}[method].build(target, settings, batch_size=batch), paper_batch, batch


BUILDERS = {
    "pis_funnel": lambda quick, scale: build_diffusion("pis", quick, scale),
    "dds_funnel": lambda quick, scale: build_diffusion("dds", quick, scale),
    "leaps_L15_ising": build_leaps,
    "adjoint_dw4": lambda quick, scale: build_adjoint("adjoint", quick, scale),
    "asbs_dw4": lambda quick, scale: build_adjoint("asbs", quick, scale),
}


def step_memory(trainer) -> dict:
    """Bytes of the compiled train step (state donated, as the driver runs it): XLA's memory analysis."""
    state = jax.eval_shape(trainer.init, jax.random.key(0))
    compiled = jax.jit(trainer.step, donate_argnums=1).lower(jax.random.key(1), state).compile()
    m = compiled.memory_analysis()
    state_bytes = sum(int(np.prod(a.shape)) * a.dtype.itemsize for a in jax.tree.leaves(state))
    peak = m.argument_size_in_bytes + m.output_size_in_bytes - m.alias_size_in_bytes + m.temp_size_in_bytes
    return {"peak": float(peak), "state": float(state_bytes), "temp": float(m.temp_size_in_bytes)}


def estimate(name: str, quick: bool, scales: tuple[float, float]) -> dict:
    """The two measured points and the linear extrapolation to the paper's batch (GiB)."""
    points, paper_batch = [], None
    for scale in scales:
        trainer, paper_batch, batch = BUILDERS[name](quick, scale)
        start = time.perf_counter()
        points.append((batch, step_memory(trainer)))
        print(f"{name}: batch {batch} (paper {paper_batch}): peak {points[-1][1]['peak'] / GIB:.4f} GiB, "
              f"compiled in {time.perf_counter() - start:.1f} s", flush=True)
    (b1, m1), (b2, m2) = points
    out = {f"{name}_paper_batch": paper_batch}
    for what in ("peak", "state", "temp"):
        slope = (m2[what] - m1[what]) / (b2 - b1)
        out[f"{name}_{what}_gib" if what != "peak" else f"{name}_peak_gib"] = (m1[what] + slope * (paper_batch - b1)) / GIB
        out[f"{name}_{what}_per_sample_mib"] = slope / 2.0**20
        out[f"{name}_{what}_fixed_gib"] = (m1[what] - slope * b1) / GIB
    for batch, m in points:
        out[f"{name}_measured_peak_gib_batch{batch}"] = m["peak"] / GIB
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny configs (the test)")
    parser.add_argument("--configs", nargs="+", choices=CONFIGS, default=list(CONFIGS))
    args = parser.parse_args(argv)
    results = {}
    for name in args.configs:
        results.update(estimate(name, args.quick, QUICK_SCALES if args.quick else SCALES))
    path = write_results("memory_estimates", results, quick=args.quick)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
