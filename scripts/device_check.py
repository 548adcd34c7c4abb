"""The prepared device check of issue 45: jaxsamp's GPU-relevant tests and per-family timings at the paper configs.

Whoever has an accelerator runs ``bash scripts/device_check.sh`` (which installs the carried wheels and then
calls this script) in one call of at most 9 minutes; ``scripts/DEVICE.md`` says how to prepare and call it.

Phases, in this order, each under its own time cap and all under ``--budget-seconds``:

1. **tests**: ``pytest -m gpu`` (the ``gpu`` marker: driver determinism and resume, the SDE core's Girsanov
   weights, LEAPS's exact weights by enumeration, EGNN equivariance, SMC log Z, blackjax kernels through
   ``jaxsamp.sample``) on the default backend; passed / failed counts and seconds.
2. **timings at the paper configs**, each trained by ``jaxsamp.fit`` in chunks of updates until
   ``--timing-seconds`` of training have passed (its ``max_seconds``; compilation measured apart, as
   ``Fitted.compile_seconds``), reported as the compilation (``_compile_s``), the first call's seconds
   (compilation plus one chunk), the steady-state seconds per update, and from it the hours to the paper's
   budget (before 2026-12-06 the script timed chunks through the driver itself and derived the compilation
   from the first call: the same quantities):

   * ``pis_funnel`` / ``dds_funnel``: PIS and DDS on Neal's funnel (d = 10) at Sendera et al.'s (NeurIPS 2024)
     size, batches of 300 paths of 100 SDE steps, KL loss, learning rate 1e-3 (the paths suite's rate), the
     configs' LangevinNet 2 x 64; budget 25 000 updates (Sendera et al.'s; the network is ours, not theirs);
   * ``nuts_logreg_d100``: NUTS via ``jaxsamp.sample`` (blackjax's kernel, window adaptation) on a 100-d
     Bayesian logistic regression (99 synthetic standardised features and an intercept, 1000 points, seed 0)
     with 1024 chains, 1000 warm-up and 1000 draws; the second call (compiled kernels cached) gives gradient
     evaluations per second (the draws' ``num_integration_steps``) and draws per second of the sampling phase;
   * ``leaps_L15_ising``: LEAPS on the critical 15 x 15 Ising torus with ``configs/leaps_ising_L15.yaml``
     (the paper's LE-conv, kernels 3, 5, 7, 9, 15 x 20 channels, loss batch 400, 200 walkers, 200 Metropolis
     updates per rollout step), in steady state as the old LEAPS bench script's probe measured it: full-length
     (125-step) rollouts, one every 100 updates, so a chunk of 100 updates holds one rollout; budget 10^5
     updates (the paper trained 1e5-4e5 on one H100, ``../shared/research/leaps.md``);
   * ``adjoint_dw4`` / ``asbs_dw4``: Adjoint Sampling and ASBS with ``configs/{adjoint,asbs}_dw4.yaml`` (EGNN
     5 x 128, 512 paths of 200 time points, 100 Adam steps of batch 512 per epoch), seconds per epoch; budgets
     5000 and 4400 epochs (the configs' ``run.num_steps``; the timed ASBS epochs are adjoint-matching ones,
     200 of each stage's 220).
3. **training, if time is left**: PIS (or ``--train-method dds``) on the funnel at the timing's settings, seed 0,
   for Sendera et al.'s 25 000 updates or as many as fit (``train_{method}_funnel_updates`` says how many),
   trained by ``jaxsamp.fit`` (``max_seconds`` up to the deadline less a compilation margin) and scored as
   the ``paths`` benchmark suite scores it (``Fitted.evaluate``, 2000 paths: ``logz_abs_err`` the
   importance-weighted log Z error, ``elbo``, ``eubo``, ``ess``, ``sinkhorn``).

Each timing family runs in a worker process that reports every figure as it lands; a family that passes its
cap has its worker killed and the next family starts in a fresh worker, so a hang costs one family only. The
results are written after every phase and figure to ``--out/device_<YYYY-MM-DD>.json`` (the benchmark JSON
shape of ``benchmark_io``: command, date, machine, results) with a log beside it, ``device_<date>.log``.
This process never imports JAX, so it holds no accelerator memory while the tests and workers run.

``--quick`` runs every phase at tiny sizes (one test, toy networks and batches) on whatever backend there is,
writing to a temporary folder unless ``--out`` is given: tests/scripts/test_device_check.py runs it on CPU.

Usage: python scripts/device_check.py [--quick] [--out DIR] [--budget-seconds 480] [--families ...]
       [--skip-tests] [--no-train] [--train-method pis|dds] [--timing-seconds 12]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import queue
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EVENT = "@@device_check "  # a worker's stdout line carrying a JSON event
FAMILIES = ("pis_funnel", "dds_funnel", "nuts_logreg_d100", "leaps_L15_ising", "adjoint_dw4", "asbs_dw4")
# caps in seconds (full size / --quick on 2 CPU cores); each is also clipped to the budget left
CAPS = {"tests": (110, 150), "pis_funnel": (50, 90), "dds_funnel": (50, 90), "nuts_logreg_d100": (75, 90),
        "leaps_L15_ising": (100, 120), "adjoint_dw4": (90, 120), "asbs_dw4": (110, 120)}
MIN_START = 25.0  # a phase does not start with fewer seconds than this left
TRAIN_RESERVE = (60.0, 40.0)  # seconds of the training phase kept for the evaluation (full / quick)
SENDERA_UPDATES = 25_000
MAX_TIMED_UPDATES = 10**6  # the timing runs' cap: their max_seconds ends them long before
COMPILE_MARGIN_S = 60.0  # wall seconds the training phase keeps for fit's compilation, outside its max_seconds
QUICK_XLA_FLAGS = "--xla_backend_optimization_level=1 --xla_cpu_use_fusion_emitters=false"
SENDERA_BATCH, SENDERA_STEPS, SENDERA_LR = 300, 100, 1e-3


# --------------------------------------------------------------------------
# the worker: runs families, prints one event line per figure
# --------------------------------------------------------------------------


def emit(kind: str, family: str, **data) -> None:
    print(EVENT + json.dumps({"event": kind, "family": family, **data}, default=float), flush=True)


def time_updates(method: str, target, settings, batch: int, chunk: int, seconds: float, family: str,
                 budget: float | None = None) -> dict:
    """Compilation and steady-state seconds per update of learned ``method``, trained by :func:`jaxsamp.fit`.

    ``fit`` runs chunks of ``chunk`` updates until ``seconds`` of training have passed (its ``max_seconds``,
    compilation left out; at least one chunk): ``{family}_compile_s`` is ``Fitted.compile_seconds`` and
    ``{family}_s_per_update`` the training seconds over the updates made. ``{family}_first_call_s`` (the
    compilation and the first chunk) is emitted as soon as the run ends.
    """
    import jaxsamp

    fitted = jaxsamp.fit(method, target, num_steps=MAX_TIMED_UPDATES, key=1, settings=settings, batch_size=batch,
                         chunk=chunk, max_seconds=seconds, progress=False)
    done = len(fitted.history["loss"])
    per = (fitted.seconds - fitted.compile_seconds) / done
    emit("figures", family, figures={f"{family}_first_call_s": fitted.compile_seconds + chunk * per,
                                     f"{family}_chunk": chunk})
    out = {f"{family}_s_per_update": per, f"{family}_timed_updates": done, f"{family}_compile_s": fitted.compile_seconds}
    if budget is not None:
        out[f"{family}_paper_budget_updates"] = budget
        out[f"{family}_hours_to_paper_budget"] = budget * per / 3600
    return out


def diffusion_sampler(method: str, quick: bool):
    """``(target, settings, batch)`` of PIS / DDS on the funnel at Sendera et al.'s size, the rest from
    configs/{method}_funnel.yaml."""
    import dataclasses

    from jaxsamp.bench.cells import build_target
    from jaxsamp.bench.suites.paths import TARGETS
    from jaxsamp.core.registry import validate_dataclass
    from jaxsamp.experiments.config import load_config
    from jaxsamp.learned.diffusion.pis_dds import DdsSettings, PisSettings

    cfg = load_config(ROOT / "configs" / f"{method}_funnel.yaml")
    settings = validate_dataclass("sampler", cfg.sampler.params, {"pis": PisSettings, "dds": DdsSettings}[method])
    settings = dataclasses.replace(settings, num_time_steps=SENDERA_STEPS, learning_rate=SENDERA_LR, loss="kl")
    batch = SENDERA_BATCH
    if quick:
        settings, batch = dataclasses.replace(settings, num_time_steps=8, hidden=16), 16
    return build_target(TARGETS["funnel"][0]), settings, batch


def family_diffusion(method: str, quick: bool, seconds: float) -> dict:

    target, settings, batch = diffusion_sampler(method, quick)
    out = time_updates(method, target, settings, batch, 5 if quick else 100, seconds, f"{method}_funnel",
                       SENDERA_UPDATES)
    out[f"{method}_funnel_batch"] = batch
    out[f"{method}_funnel_sde_steps"] = settings.num_time_steps
    return out


def logreg_target(quick: bool):
    """A 100-d Bayesian logistic regression: 99 standard-normal features and an intercept, labels from a random w."""
    import numpy as np

    from jaxsamp.targets import BayesLogisticRegression

    rng = np.random.default_rng(0)
    n, p = (100, 99) if quick else (1000, 99)
    features = rng.standard_normal((n, p))
    w = 0.3 * rng.standard_normal(p)
    labels = (rng.random(n) < 1 / (1 + np.exp(-(features @ w)))).astype(np.float64)
    return BayesLogisticRegression(features, labels, name="logreg_d100")


def family_nuts(quick: bool, seconds: float) -> dict:
    import warnings

    import numpy as np

    import jaxsamp

    target = logreg_target(quick)
    chains, warm, draws = (8, 30, 20) if quick else (1024, 1000, 1000)
    name = "nuts_logreg_d100"

    def call(key):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # health warnings of a short run are not what is measured here
            return jaxsamp.sample(target, key=key, num_chains=chains, num_warmup=warm, num_samples=draws,
                                  progress=False)

    start = time.perf_counter()
    call(0)
    emit("figures", name, figures={f"{name}_first_call_s": time.perf_counter() - start})
    post = call(1)  # the kernels are cached per target and settings: no compilation here
    sampling = post.seconds["sampling"]
    grads = float(np.sum(post.info["num_integration_steps"]))
    return {
        f"{name}_chains": chains, f"{name}_dim": target.event_shape[0],
        f"{name}_warmup_s": post.seconds["warmup"], f"{name}_sampling_s": sampling,
        f"{name}_s_per_step": sampling / draws,
        f"{name}_draws_per_s": chains * draws / sampling,
        f"{name}_grad_evals_per_s": grads / sampling,
        f"{name}_mean_integration_steps": grads / (chains * draws),
        f"{name}_divergences": post.num_divergences,
    }


def family_leaps(quick: bool, seconds: float) -> dict:
    """LEAPS at configs/leaps_ising_L15.yaml in steady state (full rollouts, one per ``rollout_every`` updates)."""
    import dataclasses


    from jaxsamp.experiments.config import load_config
    from jaxsamp.experiments.leaps_experiment import check
    from jaxsamp.targets import get

    cfg = load_config(ROOT / "configs" / "leaps_ising_L15.yaml")
    target = get(cfg.target.name, **cfg.target.params)
    settings = dataclasses.replace(check(cfg, target), curriculum_steps=0, buffer_rollouts=1, warm_up=0)
    walkers = cfg.run.num_chains
    if quick:
        target = get(cfg.target.name, **{**cfg.target.params, "L": 6})
        settings = dataclasses.replace(
            settings, network_params={"kernel_sizes": [3, 5], "channels": 4, "time_hidden": 8},
            free_energy_hidden=[16], loss_batch=32, rollout_steps=10, rollout_every=5, states_per_walker=4,
            mcmc_updates=8)
        walkers = 16
    name = "leaps_L15_ising"
    out = time_updates("leaps", target, settings, walkers, settings.rollout_every, seconds, name, cfg.run.num_steps)
    out.update({f"{name}_loss_batch": settings.loss_batch, f"{name}_walkers": walkers,
                f"{name}_rollout_every": settings.rollout_every})
    return out


def family_adjoint(method: str, quick: bool, seconds: float) -> dict:
    """Adjoint Sampling / ASBS at configs/{adjoint,asbs}_dw4.yaml, seconds per epoch (the particles suite's builder)."""
    from jaxsamp.bench.suites.particles import build, config_run

    config = {"adjoint": "adjoint_dw4.yaml", "asbs": "asbs_dw4.yaml"}[method]
    _, target, settings, batch, _ = build(config, quick)
    epochs = config_run(config)[4]  # the paper config's epochs, also at the quick size
    name = f"{method}_dw4"
    out = time_updates(method, target, settings, batch, 1 if quick else 2, seconds, name, epochs)
    out = {k.replace("_update", "_epoch"): v for k, v in out.items()}
    out[f"{name}_batch"] = batch
    return out


def family_train(method: str, quick: bool, deadline: float) -> dict:
    """Train PIS / DDS on the funnel through :func:`jaxsamp.fit` for Sendera's updates or until the wall clock
    nears ``deadline`` (``time.time()``; ``max_seconds`` of training, a compilation margin kept), by whole
    chunks of updates; then the paths suite's evaluation."""
    import jax

    import jaxsamp

    name = f"train_{method}_funnel"
    target, settings, batch = diffusion_sampler(method, quick)
    key = jax.random.key(0)
    goal, chunk, n_eval = (20, 5, 128) if quick else (SENDERA_UPDATES, 250, 2000)
    margin = 0.0 if quick else COMPILE_MARGIN_S
    fitted = jaxsamp.fit(method, target, num_steps=goal, key=key, settings=settings, batch_size=batch, chunk=chunk,
                         max_seconds=max(deadline - time.time() - margin, 1.0), progress=False)
    done, minutes = len(fitted.history["loss"]), fitted.seconds / 60
    emit("figures", name, figures={f"{name}_updates": done, f"{name}_train_minutes": minutes})
    # --quick leaves out the Sinkhorn divergence (its compilation is most of a CPU run's evaluation): NaN there
    figures = fitted.evaluate(jax.random.fold_in(key, 2), n_eval, sinkhorn=not quick)
    nan = float("nan")
    out = {
        f"{name}_updates": done, f"{name}_train_minutes": minutes, f"{name}_paper_budget_updates": SENDERA_UPDATES,
        f"{name}_reached_paper_budget": float(done >= SENDERA_UPDATES),
        f"{name}_logz_abs_err": figures.get("log_Z_abs_err", nan),
        f"{name}_elbo": figures.get("elbo", nan), f"{name}_eubo": figures.get("eubo", nan),
        f"{name}_ess": figures.get("ess", 0.0), f"{name}_sinkhorn": figures.get("sinkhorn", nan),
        f"{name}_nonfinite_paths": figures["nonfinite_samples"], f"{name}_energy_evals": int(fitted.history["target_evals"][-1]),
        f"{name}_eval_paths": n_eval, f"{name}_seed": 0,
    }
    if "log_Z_exact" in figures and "elbo" in figures:  # Sendera's plain (ELBO-type) estimate's error
        out[f"{name}_elbo_abs_err"] = abs(figures["elbo"] - figures["log_Z_exact"])
    return out


def worker(families: list[str], quick: bool, seconds: float, train_method: str, train_deadline: float) -> None:
    """Run ``families`` in order in this process, printing each figure as an event line."""
    import jax

    emit("machine", "", machine={
        "jax": jax.__version__, "backend": jax.default_backend(),
        "devices": [str(d) for d in jax.devices()], "device_kind": jax.devices()[0].device_kind,
    })
    runners = {
        "pis_funnel": lambda: family_diffusion("pis", quick, seconds),
        "dds_funnel": lambda: family_diffusion("dds", quick, seconds),
        "nuts_logreg_d100": lambda: family_nuts(quick, seconds),
        "leaps_L15_ising": lambda: family_leaps(quick, seconds),
        "adjoint_dw4": lambda: family_adjoint("adjoint", quick, seconds),
        "asbs_dw4": lambda: family_adjoint("asbs", quick, seconds),
        "train": lambda: family_train(train_method, quick, train_deadline),
    }
    for family in families:
        emit("start", family)
        try:
            emit("figures", family, figures=runners[family]())
            emit("done", family)
        except Exception as error:  # noqa: BLE001 -- recorded, and the next family still runs
            import traceback

            traceback.print_exc()
            emit("error", family, error=f"{type(error).__name__}: {error}"[:500])


# --------------------------------------------------------------------------
# the orchestrator: phases, caps, the results file
# --------------------------------------------------------------------------


class Report:
    """The results JSON and the log, rewritten / appended as results land."""

    def __init__(self, out: Path, argv: list[str], budget: float):
        self.start = time.perf_counter()
        self.budget = budget
        date = _dt.datetime.now(_dt.timezone.utc)
        self.path = out / f"device_{date:%Y-%m-%d}.json"
        self.log_path = out / f"device_{date:%Y-%m-%d}.log"
        self.log_file = self.log_path.open("a")
        self.payload = {
            "command": "python " + " ".join(shlex.quote(a) for a in [os.path.relpath(argv[0], ROOT)] + argv[1:]),
            "date": date.isoformat(timespec="seconds"),
            "machine": {"platform": platform.platform(), "processor": platform.machine(),
                        "cpu_count": os.cpu_count(), "python": platform.python_version()},
            "results": {},
            "phases": {},
        }

    def left(self) -> float:
        return self.budget - (time.perf_counter() - self.start)

    def log(self, line: str, echo: bool = True) -> None:
        stamped = f"[{time.perf_counter() - self.start:6.1f}s] {line}"
        self.log_file.write(stamped + "\n")
        self.log_file.flush()
        if echo:
            print(stamped, flush=True)

    def update(self, figures: dict) -> None:
        for k, v in figures.items():
            self.payload["results"][k] = float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v
        self.write()

    def phase(self, name: str, status: str) -> None:
        self.payload["phases"][name] = status
        self.log(f"phase {name}: {status}")
        self.write()

    def write(self) -> None:
        self.payload["results"]["wall_seconds"] = time.perf_counter() - self.start
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.payload, indent=2, default=float) + "\n")
        tmp.replace(self.path)


def _stream(proc: subprocess.Popen, lines: queue.Queue) -> None:
    for line in proc.stdout:
        lines.put(line.rstrip("\n"))
    lines.put(None)


def _spawn(command: list[str], env: dict) -> tuple[subprocess.Popen, queue.Queue]:
    """Start ``command`` in a session of its own (so it can be killed whole); its output lines arrive on the queue,
    then None."""
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, env=env)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=_stream, args=(proc, lines), daemon=True).start()
    return proc, lines


def _next_line(lines: queue.Queue) -> str | None:
    """The next output line, "" when none came within a second (so the caller can check its clock), None at the end."""
    try:
        return lines.get(timeout=1.0)
    except queue.Empty:
        return ""


def _kill(proc: subprocess.Popen) -> None:
    """End the process group this script started for ``proc``."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def run_tests(report: Report, quick: bool) -> None:
    """pytest on the ``gpu``-marked tests (only the files that hold them are collected), under the phase cap."""
    cap = min(CAPS["tests"][quick], report.left() - 5)
    if cap < MIN_START:
        report.phase("tests", f"skipped: {report.left():.0f} s left")
        return
    if quick:
        files, extra = ["tests/core/test_driver.py"], ["-k", "test_step_i_uses_fold_in_key_i"]
    else:
        files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*.py")
                       if "pytest.mark.gpu" in p.read_text())
        extra = []
    command = [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
               "--timeout", str(int(cap)), *extra, *files]
    report.log("tests: " + " ".join(command[1:]))
    start = time.perf_counter()
    # the kill-and-resume tests start child processes: none may take most of the accelerator's memory up front
    env = {**os.environ, "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}
    proc, lines = _spawn(command, env)
    tail, timed_out = [], False
    while True:
        line = _next_line(lines)
        if line is None:
            break
        if line:
            tail = (tail + [line])[-40:]
            report.log("  " + line)
        if time.perf_counter() - start > cap:
            timed_out = True
            _kill(proc)
            break
    proc.wait()
    counts = {k: 0 for k in ("passed", "failed", "error", "skipped", "deselected")}
    for line in tail[-3:]:
        for number, word in re.findall(r"(\d+) (passed|failed|errors?|skipped|deselected)", line):
            counts["error" if word.startswith("error") else word] = int(number)
    seconds = time.perf_counter() - start
    status = "timed out" if timed_out else ("ok" if proc.returncode == 0 else f"failed (exit {proc.returncode})")
    report.update({"gpu_tests_passed": counts["passed"], "gpu_tests_failed": counts["failed"],
                   "gpu_tests_errors": counts["error"], "gpu_tests_skipped": counts["skipped"],
                   "gpu_tests_seconds": seconds, "gpu_tests_files": len(files)})
    report.phase("tests", f"{status} in {seconds:.0f} s: {counts}")


def run_families(report: Report, families: list[str], args, quick: bool) -> None:
    """Run ``families`` in worker processes, each family under its cap; a killed worker's rest goes on in a new one."""
    pending = list(families)
    while pending:
        if report.left() < MIN_START:
            for family in pending:
                report.phase(family, f"skipped: {report.left():.0f} s left")
            return
        if pending == ["train"] and report.left() < MIN_START + TRAIN_RESERVE[quick]:
            report.phase("train", f"skipped: {report.left():.0f} s left")
            return
        # training stops (by whole chunks) early enough to leave its evaluation TRAIN_RESERVE seconds
        train_deadline = time.time() + report.left() - 10 - TRAIN_RESERVE[quick]
        command = [sys.executable, __file__, "--worker", *pending, "--timing-seconds", str(args.timing_seconds),
                   "--train-method", args.train_method, "--train-deadline", f"{train_deadline:.1f}"]
        if quick:
            command.append("--quick")
        report.log("worker: " + " ".join(command[2:]))
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        if quick and QUICK_XLA_FLAGS not in env.get("XLA_FLAGS", ""):  # tests/conftest.py's: compile speed on CPU
            env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} {QUICK_XLA_FLAGS}".strip()
        proc, lines = _spawn(command, env)
        current, started, cap = None, time.perf_counter(), None
        while True:
            line = _next_line(lines)
            if line is None:
                break
            if line.startswith(EVENT):
                event = json.loads(line[len(EVENT):])
                kind, family = event["event"], event["family"]
                if kind == "machine":
                    report.payload["machine"].update(event["machine"])
                    report.update({"jax_version": event["machine"]["jax"], "backend": event["machine"]["backend"],
                                   "device_kind": event["machine"]["device_kind"]})
                elif kind == "start":
                    current, started = family, time.perf_counter()
                    cap = report.left() - 5 if family == "train" else min(CAPS[family][quick], report.left() - 5)
                    report.log(f"{family}: started (cap {cap:.0f} s)")
                elif kind == "figures":
                    report.update(event["figures"])
                    report.log(f"{family}: " + ", ".join(f"{k}={_fmt(v)}" for k, v in event["figures"].items()))
                elif kind in ("done", "error"):
                    status = "ok" if kind == "done" else f"error: {event['error']}"
                    report.phase(family, f"{status} in {time.perf_counter() - started:.0f} s")
                    pending.remove(family)
                    current = None
            elif line:
                report.log("  " + line, echo=not quick)
            if current is not None and time.perf_counter() - started > cap:
                _kill(proc)
                report.phase(current, f"timed out after {cap:.0f} s (worker killed)")
                pending.remove(current)
                break
        proc.wait()
        if current is None and pending and proc.returncode not in (0, None):
            # the worker died between families (e.g. at import): record it rather than loop
            for family in pending:
                report.phase(family, f"not run: worker exited with {proc.returncode}")
            return
        if current is not None and current in pending:  # died inside a family without an event
            report.phase(current, f"worker exited with {proc.returncode} during it")
            pending.remove(current)


def _fmt(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes on any backend (the CPU test of this script)")
    parser.add_argument("--out", type=Path, help="folder for device_<date>.json and its log (default: $OUT, else "
                                                  "benchmarks/results; --quick: a temporary folder)")
    parser.add_argument("--budget-seconds", type=float, default=480.0, help="wall-clock budget of all phases")
    parser.add_argument("--timing-seconds", type=float, default=12.0, help="steady-state seconds timed per family")
    parser.add_argument("--families", nargs="+", choices=FAMILIES, default=list(FAMILIES))
    parser.add_argument("--skip-tests", action="store_true")
    parser.add_argument("--no-train", action="store_true", help="no paper-scale training after the timings")
    parser.add_argument("--train-method", choices=("pis", "dds"), default="pis")
    parser.add_argument("--worker", nargs="+", choices=(*FAMILIES, "train"), help=argparse.SUPPRESS)
    parser.add_argument("--train-deadline", type=float, default=0.0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        sys.path.insert(0, str(ROOT / "scripts"))
        worker(args.worker, args.quick, 0.0 if args.quick else args.timing_seconds, args.train_method,
               args.train_deadline or time.time() + 60.0)
        return 0

    out = args.out
    if out is None:
        env_out = os.environ.get("OUT")
        out = Path(tempfile.mkdtemp(prefix="device_check_")) if args.quick else (
            Path(env_out) if env_out else ROOT / "benchmarks" / "results")
    out.mkdir(parents=True, exist_ok=True)
    report = Report(out, [str(Path(__file__))] + list(argv), args.budget_seconds)
    report.update({"budget_seconds": args.budget_seconds, "quick": float(args.quick)})
    report.log(f"device check: budget {args.budget_seconds:.0f} s, results -> {report.path}")
    if not args.skip_tests:
        run_tests(report, args.quick)
    families = list(args.families) + ([] if args.no_train else ["train"])
    run_families(report, families, args, args.quick)
    report.update({})
    report.log(f"done in {time.perf_counter() - report.start:.0f} s; results in {report.path}")
    report.log_file.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
