"""Resume checks shared by the tests: a real SIGKILL of a child process, and a stop and resume in process.

The generic mechanism (the driver's atomic checkpoint writes, manifests and keys
by step index surviving a SIGKILL at an arbitrary moment) is checked with real
child processes, for the driver, ``jaxsamp.fit`` and one multi-phase run (MILE).
A *child* script runs a checkpointed job: ``python CHILD CHECKPOINT_DIR OUT_NPZ
[REFERENCE_NPZ]`` saves every array of its final state and trace to ``OUT_NPZ``
and, given ``REFERENCE_NPZ``, those of a second, uninterrupted run without
checkpoints; it defines ``NUM_STEPS``. :func:`assert_kill_resume_bit_identical`
kills a checkpointing child with SIGKILL as soon as its first complete checkpoint
(manifest written) exists, re-runs it on the same folder (the driver resumes, and
the same process then makes the reference run), and requires every array to be
equal bit for bit. The two children share a persistent XLA compilation cache, so
only the first compiles (with the suite's fast-compile ``XLA_FLAGS``, from
``conftest.py``); both runs use the same executables, so bit-identity is unaffected.

What a family of trainers adds to that (its whole train state round-trips through
a checkpoint, its step is a function of the key and the step index alone) needs no
second process: :func:`assert_resumes_bit_identical` stops a checkpointing run
part way, resumes it from its folder in the same process and compares it with an
uninterrupted run.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from unittest import mock

import jax
import numpy as np

from jaxsamp.core import checkpoint as ckpt
from jaxsamp.core import driver
from jaxsamp.core.driver import run

TIMEOUT_S = 600
SEED = 42


def _num_steps(child: Path) -> int:
    spec = importlib.util.spec_from_file_location(child.stem, child)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.NUM_STEPS


def assert_kill_resume_bit_identical(child: Path, tmp_path: Path, min_arrays: int = 1, watch: str | None = None) -> int:
    """Kill ``child`` after its first checkpoint, resume it, compare with an uninterrupted run.

    ``watch`` names a sub-folder of the checkpoint folder to wait for (a child whose
    run has several phases, each checkpointing into its own sub-folder: the kill
    then comes during that phase, ``NUM_STEPS`` being its length).
    Returns the step of the last complete checkpoint before the kill (``0 < step < NUM_STEPS``).
    """
    env = {
        **os.environ, "PYTHONUNBUFFERED": "1", "JAX_COMPILATION_CACHE_DIR": str(tmp_path / "xla_cache"),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0", "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
    }
    folder, killed = tmp_path / "ckpt", tmp_path / "killed.npz"
    watched = folder if watch is None else folder / watch
    proc = subprocess.Popen([sys.executable, str(child), str(folder), str(killed)], env=env)
    deadline = time.time() + TIMEOUT_S
    while time.time() < deadline and proc.poll() is None:
        if any((p / ckpt.MANIFEST).exists() for p in ckpt.list_steps(watched)):
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the child finished before it could be killed; make it longer"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done = max(int(p.name.split("_")[1]) for p in ckpt.list_steps(watched) if (p / ckpt.MANIFEST).exists())
    assert 0 < done < _num_steps(child)
    assert not killed.exists()

    resumed, reference = tmp_path / "resumed.npz", tmp_path / "reference.npz"
    subprocess.run([sys.executable, str(child), str(folder), str(resumed), str(reference)], check=True, env=env,
                   timeout=TIMEOUT_S)
    want, got = np.load(reference), np.load(resumed)
    assert sorted(want.files) == sorted(got.files) and len(want.files) >= min_arrays
    for name in want.files:
        np.testing.assert_array_equal(want[name], got[name], err_msg=name)
    return done


def _metrics(state, info):
    """The trace of every run here: a step's metrics (one function object, so the runs share their compilations)."""
    return info


def _arrays(state, trace) -> dict:
    """Every array of a final state (``state_{i}``) and of a trace (``trace_{name}``, any PyTree), on the host."""
    leaves = {f"state_{i}": np.asarray(leaf) for i, leaf in enumerate(jax.tree.leaves(state))}
    named = jax.tree_util.tree_leaves_with_path(trace)
    return {**{f"trace_{jax.tree_util.keystr(k, simple=True, separator='.')}": np.asarray(v) for k, v in named}, **leaves}


def child_run(step, state, num_steps: int, every: int, chunk: int, checkpoint) -> dict:
    """A child's run through the driver, checkpointing every ``every`` steps into ``checkpoint``.

    With ``checkpoint=None`` (the reference run) the checkpoints go to a fresh
    temporary folder, so that both runs have the same chunk schedule.
    Returns :func:`_arrays` of the final state and the per-step metrics.
    """
    import tempfile

    with tempfile.TemporaryDirectory() as fresh:
        state, trace = run(step, state, jax.random.key(SEED), num_steps, trace=_metrics, chunk=chunk, progress=False,
                           checkpoint=fresh if checkpoint is None else checkpoint, checkpoint_every=every)
    return _arrays(state, trace)


def assert_resumes_bit_identical(step, state, num_steps: int, chunk: int, tmp_path: Path, min_arrays: int = 1) -> None:
    """Stop a checkpointing run of ``step`` half way, resume it, compare it with an uninterrupted run bit for bit.

    The first :func:`jaxsamp.run` call from ``state`` runs ``stop`` steps (half of
    ``num_steps``, in whole chunks) and leaves its checkpoint in a folder, as a run
    killed after that checkpoint would. The second call, from the same initial
    ``state`` and for all ``num_steps``, must resume from the checkpoint at ``stop``
    (asserted) and end, in every array of its final state and of its whole trace (the
    step's metrics), bit for bit where a third run, without checkpoints, ends. The
    runs write no periodic checkpoints (the driver's own test resumes from those):
    what is checked is the family's train state, not the driver. ``chunk`` must divide
    ``num_steps``, so that the three runs scan chunks of one length (one compilation).
    """
    stop = chunk * (num_steps // chunk // 2)
    assert num_steps % chunk == 0 and 0 < stop < num_steps
    folder, key = tmp_path / "ckpt", jax.random.key(SEED)
    options = dict(trace=_metrics, chunk=chunk, progress=False)
    run(step, state, key, stop, checkpoint=folder, **options)

    starts, resume = [], driver._resume

    def spy(*args):
        found = resume(*args)
        starts.append(found[0])
        return found

    with mock.patch.object(driver, "_resume", spy):
        got = _arrays(*run(step, state, key, num_steps, checkpoint=folder, **options))
    assert starts == [stop], f"the second run started at step {starts}, not from the checkpoint at {stop}"
    want = _arrays(*run(step, state, key, num_steps, **options))
    assert sorted(want) == sorted(got) and len(want) >= min_arrays
    for name in want:
        np.testing.assert_array_equal(want[name], got[name], err_msg=name)


def child_main(train) -> None:
    """``python CHILD CHECKPOINT_DIR|- OUT_NPZ [REFERENCE_NPZ]``: save ``train(checkpoint)``'s arrays.

    ``-`` runs without checkpoints; ``REFERENCE_NPZ`` receives a second run's, without checkpoints.
    """
    np.savez(sys.argv[2], **train(None if sys.argv[1] == "-" else sys.argv[1]))
    if len(sys.argv) > 3:
        np.savez(sys.argv[3], **train(None))
