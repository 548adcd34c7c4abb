"""Data-parallel training throughput of PIS and LEAPS on 1, 2, 4 and 8 forced CPU devices (a scaling curve).

Protocol (fixed before the first run):

* **What**: updates per second of :func:`jaxsamp.core.data_parallel.data_parallel` training through the driver,
  the batch split over a mesh of ``n`` devices, ``n`` in 1, 2, 4, 8; each device count in its own child process
  with ``XLA_FLAGS=--xla_force_host_platform_device_count=n`` (the count is fixed when JAX starts).
* **Configs** (small, the same at every ``n``; batches divisible by 8): ``pis``: PIS on Neal's funnel (d = 10),
  64 paths of 32 SDE steps per update, LangevinNet 2 x 64, KL loss; ``leaps``: LEAPS on the critical 8 x 8
  Ising torus, LE-conv kernels 3, 5 x 8 channels, 64 walkers of 20-step rollouts (one every 5 updates, no
  curriculum: steady state), loss batch 64.
* **Timing**: one :func:`jaxsamp.fit` per family and device count, ``mesh=`` the ``n`` devices, in chunks of
  ``CHUNK`` updates until ``--seconds`` of training have passed (``max_seconds``, compilation left out; at
  least one chunk): ``{family}_updates_per_s_dev{n}`` is the updates made over ``Fitted.seconds -
  Fitted.compile_seconds``, ``{family}_first_call_s_dev{n}`` the compilation (``Fitted.compile_seconds``;
  before 2026-12-06 it was the first call of ``CHUNK`` updates, compilation included, so it read about one
  chunk's time higher), and ``{family}_speedup_dev{n}`` the rate's ratio to the 1-device figure. Seed 0
  (``fit``'s key 1; the runs before 2026-12-06 drew another stream: the same protocol).
* **Reading it**: forced CPU devices share the machine's cores (2 here), so on this machine the curve shows
  the overhead of partitioning (collectives, smaller per-device kernels), not a speed-up; on ``n`` real
  devices the same code splits the per-sample work ``n`` ways.

``--quick`` runs tiny versions for a fraction of a second per device count (tests/scripts/test_bench_scaling.py).

Usage: python scripts/bench_scaling.py [--quick] [--devices 1 2 4 8] [--families pis leaps] [--seconds 20]
Writes benchmarks/results/bench_scaling.json (``--quick``: bench_scaling_quick.json).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from benchmark_io import write_results  # noqa: E402

FAMILIES = ("pis", "leaps")
DEVICES = (1, 2, 4, 8)
CHUNK = 10
MAX_UPDATES = 10**6  # the cap; --seconds ends every run long before it
EVENT = "@@bench_scaling "


def method(family: str, quick: bool) -> tuple[str, object, object, int]:
    """``(registered name, target, settings, batch size)`` of ``family``'s small config (tiny with ``quick``);
    batches divisible by 8."""
    import jaxsamp

    if family == "pis":
        from jaxsamp.bench.cells import build_target
        from jaxsamp.bench.suites.paths import TARGETS
        from jaxsamp.learned.diffusion.pis_dds import PisSettings

        settings = PisSettings(num_time_steps=4 if quick else 32, hidden=8 if quick else 64, num_layers=2)
        return "pis", build_target(TARGETS["funnel"][0]), settings, 8 if quick else 64
    from jaxsamp.learned.leaps.training import LeapsSettings

    settings = LeapsSettings(
        network="conv", network_params={"kernel_sizes": [3] if quick else [3, 5], "channels": 4 if quick else 8,
                                        "time_hidden": 8 if quick else 32},
        free_energy_hidden=[8] if quick else [32], loss_batch=8 if quick else 64, rollout_steps=4 if quick else 20,
        curriculum_steps=0, warm_up=0, rollout_every=5, buffer_rollouts=1, states_per_walker=2 if quick else 4,
        mcmc_updates=1 if quick else 8,
    )
    return "leaps", jaxsamp.targets.get("ising", L=4 if quick else 8, beta=0.4407), settings, 8 if quick else 64


def child(devices: int, families: list[str], quick: bool, seconds: float) -> None:
    """Time each family on a mesh of ``devices`` devices; print one event line per family."""
    import jax

    import jaxsamp

    assert jax.device_count() == devices, jax.devices()
    for family in families:
        name, target, settings, batch = method(family, quick)
        fitted = jaxsamp.fit(name, target, num_steps=MAX_UPDATES, key=1, settings=settings, batch_size=batch,
                             mesh=jaxsamp.batch_mesh(devices), chunk=CHUNK, max_seconds=seconds, progress=False)
        done = len(fitted.history["loss"])
        rate = done / (fitted.seconds - fitted.compile_seconds)
        print(EVENT + json.dumps({"family": family, "first_call_s": fitted.compile_seconds, "updates_per_s": rate,
                                  "updates": done}), flush=True)


def measure(devices: int, families: list[str], quick: bool, seconds: float) -> list[dict]:
    """Run :func:`child` in a fresh process with ``devices`` forced CPU devices; its events."""
    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={devices}".strip()
    env = {**os.environ, "XLA_FLAGS": flags, "JAX_PLATFORMS": "cpu"}
    command = [sys.executable, __file__, "--child", str(devices), "--families", *families, "--seconds", str(seconds)]
    proc = subprocess.run(command + (["--quick"] if quick else []), env=env, capture_output=True, text=True,
                          cwd=ROOT, timeout=1800)
    if proc.returncode:
        raise RuntimeError(f"the {devices}-device child failed:\n{proc.stdout[-2000:]}{proc.stderr[-3000:]}")
    return [json.loads(line[len(EVENT):]) for line in proc.stdout.splitlines() if line.startswith(EVENT)]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny configs, a fraction of a second each")
    parser.add_argument("--devices", type=int, nargs="+", default=list(DEVICES))
    parser.add_argument("--families", nargs="+", choices=FAMILIES, default=list(FAMILIES))
    parser.add_argument("--seconds", type=float, default=20.0, help="timed seconds per family and device count")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.families, args.quick, args.seconds)
        return
    seconds = min(args.seconds, 0.2) if args.quick else args.seconds
    results = {"chunk": CHUNK, "seconds_per_point": seconds}
    for n in args.devices:
        for event in measure(n, args.families, args.quick, seconds):
            f = event["family"]
            results[f"{f}_updates_per_s_dev{n}"] = event["updates_per_s"]
            results[f"{f}_first_call_s_dev{n}"] = event["first_call_s"]
            print(f"{f} on {n} devices: {event['updates_per_s']:.2f} updates/s (first call {event['first_call_s']:.1f} s)",
                  flush=True)
    for f in args.families:
        base = results.get(f"{f}_updates_per_s_dev1")
        for n in args.devices:
            if base and f"{f}_updates_per_s_dev{n}" in results:
                results[f"{f}_speedup_dev{n}"] = results[f"{f}_updates_per_s_dev{n}"] / base
    path = write_results("bench_scaling", results, quick=args.quick)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
