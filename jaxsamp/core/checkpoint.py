"""Checkpoints for the driver: orbax for the arrays, a manifest for integrity.

Layout of one checkpoint ``<dir>/step_<0000000123>/``:

* ``state/`` -- the run state's leaves, written by ``orbax.checkpoint.StandardCheckpointer``;
* ``trace.npz`` -- the trace collected so far;
* ``manifest.json`` -- written LAST: step, key data, the run's fingerprint,
  tree structure, the SHA-256 of every file above, and the SHA-256 of the
  manifest's own content (``manifest_sha256``).

A checkpoint without a manifest was interrupted while being written; one whose
files do not match their hashes, or that holds files the manifest does not
list, is corrupt; a manifest that fails its own checksum, lacks a field, or
names a step other than its folder's was edited. All of them are skipped with a
warning that names them, and the next older checkpoint is used; nothing loads
silently. The driver does the same with a checkpoint whose arrays fail to load
(:class:`CheckpointLoadError`). The manifest guards against accidents, not
against someone who can write the folder and sign a new manifest; loading reads
JSON, orbax/tensorstore arrays and ``np.load(allow_pickle=False)``, and never
executes code from the folder.

With several JAX processes (``jax.distributed.initialize()``) every process
writes its shards of the state through orbax; process 0 alone writes the trace
and the manifest, and the processes meet at a barrier before and after.
"""

from __future__ import annotations

import errno
import gc
import hashlib
import json
import logging
import math
import os
import re
import shutil
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core import fingerprint as fp
from jaxsamp.core.errors import CheckpointError

MANIFEST = "manifest.json"
_PREFIX = "step_"
_FIELDS = {"step": int, "key_data": list, "treedef": str, "num_leaves": int, "files": dict}


class CheckpointSkippedWarning(UserWarning):
    """A partial or corrupt checkpoint was found and not loaded."""


class CompletedRunWarning(UserWarning):
    """A run found all its steps in its checkpoint folder: the stored result is returned and nothing is computed."""


class CheckpointLoadError(CheckpointError):
    """A checkpoint that passed its integrity check but whose arrays could not be loaded."""

    def __init__(self, folder: Path, why: str):
        super().__init__(f"checkpoint {folder} could not be loaded: {why}")
        self.why = why


def _is_key(x) -> bool:
    return hasattr(x, "dtype") and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)


def _to_storable(leaf):
    return jax.random.key_data(leaf) if _is_key(leaf) else leaf


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name != MANIFEST)


def step_dir(directory: str | os.PathLike, step: int) -> Path:
    return Path(directory).resolve() / f"{_PREFIX}{step:010d}"


def _manifest_digest(manifest: dict) -> str:
    """SHA-256 of a manifest's content without its own checksum field (canonical JSON)."""
    body = {k: v for k, v in manifest.items() if k != "manifest_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _is_primary() -> bool:
    return jax.process_index() == 0


def _barrier(name: str) -> None:
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(name)


def _host_array(a) -> np.ndarray:
    """A trace leaf on this host: gathered from every process when it is not all addressable here."""
    if isinstance(a, jax.Array) and not a.is_fully_addressable:
        from jax.experimental import multihost_utils

        return np.asarray(multihost_utils.process_allgather(a, tiled=True))
    return np.asarray(a)


def _layout(leaves) -> list[str]:
    """``"float32[64,5]"`` per state leaf (keys by their data): what a restore must match."""
    return [f"{jnp.dtype(_to_storable(a).dtype).name}{list(jnp.shape(_to_storable(a)))}" for a in leaves]


_OS_ERROR_CODE = re.compile(r"os_error_code='?(\d+)")


def _os_error(err: BaseException) -> OSError | None:
    """The file-system error behind ``err``, or None.

    orbax writes through tensorstore, often from a background thread, and
    reports a full disk as a ``ValueError("RESOURCE_EXHAUSTED: ... No space left
    on device [os_error_code='28']")``, possibly wrapped further. This walks the
    cause chain (``__cause__``, ``__context__``, exception groups) for an
    ``OSError`` or an errno in such a message.
    """
    todo, seen = [err], set()
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, OSError):  # a copy: the original's traceback holds orbax's failed write (its coroutines)
            return OSError(e.errno, e.strerror or str(e))
        found = _OS_ERROR_CODE.search(str(e))
        if found:
            return OSError(int(found.group(1)), os.strerror(int(found.group(1))))
        if "No space left on device" in str(e):
            return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        todo += [e.__cause__, e.__context__, *getattr(e, "exceptions", ())]
    return None


class _HeldReports(logging.Filter):
    """orbax's, asyncio's, tensorstore's and Python's reports, held back while a checkpoint is written or read.

    One full disk makes each of orbax's writing threads log its traceback
    (logger ``absl``); asyncio log every task that orbax's event loop abandoned
    when it is collected ("exception was never retrieved", logger ``asyncio``);
    tensorstore report every write that ends after that loop was closed ("Event
    loop is closed", through :data:`sys.unraisablehook`); and Python warn of
    every coroutine never awaited: hundreds of lines, some of them after the
    error itself. Used as a context manager around a save, this holds them all;
    :meth:`settle` waits until the stragglers are in (collecting the abandoned
    tasks); ``drop`` discards them (the error raised says it all); otherwise they
    are shown as they were on leaving.
    """

    LOGGERS = ("absl", "asyncio")

    def __init__(self):
        super().__init__()
        self.records: list[logging.LogRecord] = []
        self.unraisable: list = []
        self.drop = False

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR:
            self.records.append(record)
            return False
        return True

    def _hold_unraisable(self, report) -> None:
        self.unraisable.append((report.exc_type, report.exc_value, report.exc_traceback, report.err_msg, report.object))

    def __enter__(self):
        for name in self.LOGGERS:
            logging.getLogger(name).addFilter(self)
        self._hook, sys.unraisablehook = sys.unraisablehook, self._hold_unraisable
        self._warnings = warnings.catch_warnings(record=True)  # "coroutine ... was never awaited", when collected
        self.warned = self._warnings.__enter__()
        return self

    def settle(self, quiet: float = 1.0, limit: float = 10.0) -> None:
        """Wait until no report has come for ``quiet`` seconds (at most ``limit``), collecting garbage meanwhile.

        Only a failed write waits; on a loaded machine orbax's last abandoned coroutines are collected up to about a
        second after the error (a quarter of a second let one through under a parallel test run).
        """
        start = last_change = time.monotonic()
        count = -1
        while time.monotonic() - last_change < quiet and time.monotonic() - start < limit:
            gc.collect()
            held = len(self.records) + len(self.unraisable) + len(self.warned)
            if held != count:
                count, last_change = held, time.monotonic()
            time.sleep(0.02)

    def __exit__(self, *exc) -> None:
        if self.drop:  # the held reports' tracebacks keep the failed write's frames, and its coroutines, alive:
            self.records.clear()  # freed here, and collected while reports are still held, not after the error
            self.unraisable.clear()
            gc.collect()
        self._warnings.__exit__(*exc)
        for name in self.LOGGERS:
            logging.getLogger(name).removeFilter(self)
        sys.unraisablehook = self._hook
        if self.drop:
            return
        for w in self.warned:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
        for record in self.records:
            logging.getLogger(record.name).handle(record)
        for args in self.unraisable:
            self._hook(_UnraisableReport(*args))


class _UnraisableReport:
    """What :data:`sys.unraisablehook` is given (``sys.UnraisableHookArgs`` cannot be built from Python)."""

    def __init__(self, exc_type, exc_value, exc_traceback, err_msg, object):
        self.exc_type, self.exc_value, self.exc_traceback = exc_type, exc_value, exc_traceback
        self.err_msg, self.object = err_msg, object


def _free_bytes(folder: Path) -> int:
    """Free bytes on the file system of ``folder`` (or of its nearest existing parent)."""
    for p in (folder, *folder.parents):
        if p.exists():
            return shutil.disk_usage(p).free
    return shutil.disk_usage(Path.cwd()).free


#: Room a checkpoint needs beyond its arrays' bytes (orbax's and jaxsamp's metadata files), checked before writing.
METADATA_BYTES = 64 * 1024


def save(
    directory, step: int, state: Any, trace: Any, key_data: list[int], fingerprint: str | None = None,
    run: str | dict = "", trace_steps: int | None = None,
) -> Path:
    """Write a checkpoint of ``state`` and ``trace`` at ``step``; return its folder.

    ``trace_steps`` keeps only the trace's first so many steps (the driver's
    trace buffer holds the whole run's steps, filled so far up to ``step``); the
    cut is made on the host copy, so no second copy of the trace is made on the
    device.

    ``run`` says who writes it: a name, or a dict with a ``"name"`` and what else
    identifies the run to a person (its step function, script, fingerprint parts);
    a refused resume quotes it.

    If writing fails (a full disk, a read-only folder, an interrupt), the
    partial folder is removed before the error propagates. A file system with
    less room than the checkpoint's arrays (plus :data:`METADATA_BYTES`) is
    refused before anything is written. A file-system error met while writing,
    raised by orbax or tensorstore from their writing threads and often wrapped
    in their own error types, is raised as the ``OSError`` it is (e.g.
    ``ENOSPC``), naming the checkpoint folder; the reports of orbax's threads,
    its abandoned asyncio tasks and tensorstore's late callbacks are not shown
    (:class:`_HeldReports`; the error's chain, shown by ``--debug``, keeps the cause).

    Raises
    ------
    OSError
        The checkpoint could not be written (``errno.ENOSPC`` for a full disk).
    """
    target = step_dir(directory, step)
    trace_arrays = [_host_array(a) for a in (jax.tree.leaves(trace) if trace is not None else [])]
    if trace_steps is not None:  # a caller's own record (scalars included) is kept whole
        trace_arrays = [a[:trace_steps] for a in trace_arrays]
    leaves, treedef = jax.tree.flatten(state)
    needed = METADATA_BYTES + sum(_nbytes(_to_storable(leaf)) for leaf in leaves) + sum(a.nbytes for a in trace_arrays)
    free = _free_bytes(target.parent)
    if free < needed:
        raise OSError(errno.ENOSPC, f"{os.strerror(errno.ENOSPC)} while writing checkpoint {target} (it needs about "
                                    f"{_size(needed)}, {_size(free)} free)")
    cause = None
    with _HeldReports() as held:
        try:
            if _is_primary():
                if target.exists():
                    shutil.rmtree(target)
                target.mkdir(parents=True)
            _barrier(f"jaxsamp-ckpt-mkdir-{step}")
            _write_arrays(target / "state", {f"leaf_{i:05d}": _to_storable(leaf) for i, leaf in enumerate(leaves)})
            _barrier(f"jaxsamp-ckpt-state-{step}")
            if _is_primary():
                np.savez(target / "trace.npz", **{f"leaf_{i:05d}": a for i, a in enumerate(trace_arrays)})
                manifest = {
                    "step": int(step),
                    "key_data": key_data,
                    "fingerprint": fingerprint,
                    "run": {**_as_run(run), "written": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())},
                    "treedef": str(treedef),
                    "layout": _layout(leaves),
                    "num_leaves": len(leaves),
                    "trace_treedef": str(jax.tree.structure(trace)),
                    "trace_layout": _layout(trace_arrays),
                    "files": {str(p.relative_to(target)): _sha256(p) for p in _files(target)},
                }
                manifest["manifest_sha256"] = _manifest_digest(manifest)
                tmp = target / (MANIFEST + ".tmp")
                tmp.write_text(json.dumps(manifest, indent=1))
                os.replace(tmp, target / MANIFEST)
            _barrier(f"jaxsamp-ckpt-done-{step}")
        except BaseException as err:
            cause = _os_error(err) if isinstance(err, Exception) else None
            if cause is None:
                if _is_primary():
                    shutil.rmtree(target, ignore_errors=True)
                raise  # not a file-system error: orbax's reports are shown as they were
        if cause is not None:  # out of the except block: orbax's error, its frames and abandoned tasks are garbage
            held.settle()  # collected, with their reports held, and the writes still in flight ended
            held.drop = True
            if _is_primary():
                shutil.rmtree(target, ignore_errors=True)
    if cause is not None:  # the error says it all; its cause is not chained (it holds orbax's tasks and threads)
        raise OSError(cause.errno, f"{cause.strerror or cause} while writing checkpoint {target}")
    return target


def _write_arrays(folder: Path, tree: dict) -> None:
    """Write ``tree`` with orbax into ``folder``.

    A function of its own so that orbax's checkpointer (which holds the
    coroutines of a failed write) is garbage once it returns or raises; kept in
    :func:`save`'s frame, it would live on in the raised error's traceback and
    Python would warn of its coroutines "never awaited" after the error.
    """
    import orbax.checkpoint as ocp

    checkpointer = ocp.Checkpointer(ocp.StandardCheckpointHandler())
    try:
        checkpointer.save(folder, tree)
    finally:
        checkpointer.close()


def _nbytes(array) -> int:
    return math.prod(jnp.shape(array)) * jnp.result_type(array).itemsize


def _size(n: int) -> str:
    """``n`` bytes for a person: ``"12 KiB"``, ``"3.4 MiB"``, ``"1.2 GiB"``."""
    if n < 2**20:
        return f"{n / 2**10:.0f} KiB"
    return f"{n / 2**20:.1f} MiB" if n < 2**30 else f"{n / 2**30:.1f} GiB"


def _check_manifest(manifest, folder: Path) -> str:
    """Why ``manifest`` is not a valid manifest of ``folder`` ("" when it is)."""
    if not isinstance(manifest, dict):
        return "its manifest is not a JSON object"
    if manifest.get("manifest_sha256") != _manifest_digest(manifest):
        return "its manifest does not match its own checksum (edited or corrupt)"
    for name, kind in _FIELDS.items():
        if not isinstance(manifest.get(name), kind):
            return f"its manifest has no valid {name!r}"
    if step_dir(folder.parent, manifest["step"]).name != folder.name:
        return f"its manifest names step {manifest['step']}, not the folder's"
    return ""


def _verify(folder: Path) -> tuple[dict | None, str]:
    mf = folder / MANIFEST
    if not mf.exists():
        return None, "it has no manifest (the run was killed while writing it)"
    try:
        manifest = json.loads(mf.read_text())
    except (json.JSONDecodeError, OSError, UnicodeDecodeError) as err:
        return None, f"its manifest is unreadable ({' '.join(str(err).split())})"
    why = _check_manifest(manifest, folder)
    if why:
        return None, why
    on_disk = {str(p.relative_to(folder)) for p in _files(folder)}
    missing = set(manifest["files"]) - on_disk
    if missing:
        return None, f"files are missing: {sorted(missing)[:3]}"
    unlisted = on_disk - set(manifest["files"])
    if unlisted:
        return None, f"it holds files its manifest does not list: {sorted(unlisted)[:3]}"
    for name, digest in manifest["files"].items():
        if _sha256(folder / name) != digest:
            return None, f"{name} does not match its checksum (corrupt)"
    return manifest, ""


def list_steps(directory) -> list[Path]:
    d = Path(directory)
    if not d.is_dir():
        return []
    return sorted((p for p in d.iterdir() if p.is_dir() and p.name.startswith(_PREFIX)), reverse=True)


def latest_valid(directory, below: int | None = None) -> tuple[Path, dict] | None:
    """The newest checkpoint (before step ``below``, if given) that passes its integrity check.

    Each one skipped on the way is named in a :class:`CheckpointSkippedWarning`.
    """
    for folder in list_steps(directory):
        if below is not None and folder.name >= step_dir(directory, below).name:
            continue
        manifest, why = _verify(folder)
        if manifest is not None:
            return folder, manifest
        warnings.warn(f"skipping checkpoint {folder}: {why}", CheckpointSkippedWarning, stacklevel=3)
    return None


def _as_run(run) -> dict:
    """A run's description as a dict with at least a ``"name"`` (a bare name is ``{"name": name}``)."""
    return dict(run) if isinstance(run, dict) else {"name": str(run or "?")}


def describe(run) -> str:
    """A run as a person recognises it: ``run 'x' (step m.f, script s.py, written ...)``."""
    run = _as_run(run)
    details = [f"{label} {run[field]}" for field, label in
               (("step", "step"), ("script", "script"), ("written", "written")) if run.get(field)]
    return f"run {run['name']!r}" + (f" ({', '.join(details)})" if details else "")


#: What a differing fingerprint part means, for the refusal message.
PART_MEANINGS = {  # in the order a refusal names them: the settings first, the most specific
    "identity": "the settings differ",
    "computation": "the step computes something else (a setting, a target parameter, the data or the code changed)",
    "initial_state": "the initial state differs (other starting points, another initialisation)",
    "given": "the explicit fingerprint differs",
}


def _computation_change(theirs: dict | None, mine: dict | None) -> str:
    """What changed in the step's computation, from the two runs' :func:`~jaxsamp.core.fingerprint.computation_record` details."""
    said = "the step computes something else"
    if not theirs or not mine:
        return PART_MEANINGS["computation"]
    if theirs.get("program") != mine.get("program"):
        return f"{said}: its program differs (another method or sampler, a setting, a target parameter, or the code)"
    old, new = theirs.get("constants", []), mine.get("constants", [])
    changed = [i for i, (a, b) in enumerate(zip(old, new)) if a != b]
    if len(old) != len(new) or not changed:
        return f"{said}: it closes over other arrays (the data or a target's parameters; {len(old)} -> {len(new)})"
    first_old, first_new = old[changed[0]].split(" ")[0], new[changed[0]].split(" ")[0]
    which = f"{len(changed)} of the {len(new)} arrays it closes over" if len(changed) > 1 else \
        f"array {changed[0] + 1} of the {len(new)} it closes over"
    if first_old != first_new:
        return f"{said}: the data differ ({which}: {first_old} -> {first_new})"
    return f"{said}: the data differ ({which}, the first {first_new}, changed values: a model's data or a target's parameters)"


def _what_differs(theirs: dict, mine: dict) -> str:
    """The differing fingerprint parts, each as precisely as the two manifests' details allow."""
    parts_theirs, parts_mine = theirs.get("fingerprint_parts") or {}, mine.get("fingerprint_parts") or {}
    if not parts_theirs or set(parts_theirs) != set(parts_mine):
        return "it was fingerprinted another way (another jaxsamp version, or another entry point)"
    details_theirs, details_mine = theirs.get("fingerprint_details") or {}, mine.get("fingerprint_details") or {}
    said = []
    for part in sorted(parts_mine, key=lambda p: (list(PART_MEANINGS).index(p) if p in PART_MEANINGS else 9, p)):
        if parts_theirs[part] == parts_mine[part]:
            continue
        if part == "identity" and "settings" in details_theirs and "settings" in details_mine:
            changes = fp.settings_changes(details_theirs["settings"], details_mine["settings"])
            said.append("settings differ (checkpoint -> this run): " + ", ".join(changes))
        elif part == "computation":
            said.append(_computation_change(details_theirs.get("computation"), details_mine.get("computation")))
        else:
            said.append(PART_MEANINGS.get(part, part))
    return "; ".join(said)


def resume_point(directory, key_data: list[int], fingerprint: str, run: str | dict,
                 max_step: int | None = None, below: int | None = None) -> tuple[Path, dict] | None:
    """The newest valid checkpoint in ``directory`` that this run may resume from, or None when there is none.

    Parameters
    ----------
    directory : path
        The run's checkpoint folder.
    key_data : list of int
        The data of the run's PRNG key, as :func:`save` stores it.
    fingerprint : str
        What identifies the run's numbers, as :func:`save` stores it.
    run : str or dict
        The run's name, or its description as :func:`save` takes it, for the error message.
    max_step : int, optional
        The run's last step; a checkpoint past it is refused.
    below : int, optional
        Consider only checkpoints before this step (the driver's fallback when
        a newer one failed to load).

    Raises
    ------
    CheckpointError
        The checkpoint was written with another PRNG key or another fingerprint,
        or is past ``max_step``. The message names the folder, what differs (the
        settings with their old and new values, the program or which closed-over
        array, the initial state, or the key), the run that wrote it and this run,
        and both fingerprints in full.
    """
    found = latest_valid(directory, below)
    if found is None:
        return None
    folder, manifest = found
    theirs, mine = _as_run(manifest.get("run")), _as_run(run)
    hint = f"use another checkpoint folder for this run, or delete {Path(directory)} to start it afresh there"
    if manifest["key_data"] != key_data:
        raise CheckpointError(
            f"checkpoint folder {Path(directory)} was written by {describe(theirs)} with PRNG key data "
            f"{manifest['key_data']}; this is {describe(mine)} with key data {key_data}",
            f"resume with the original run's key, or {hint}",
        )
    if manifest.get("fingerprint") != fingerprint:
        raise CheckpointError(
            f"checkpoint folder {Path(directory)} belongs to another run: {_what_differs(theirs, mine)}; it was "
            f"written by {describe(theirs)}, fingerprint {manifest.get('fingerprint')}; this is {describe(mine)}, "
            f"fingerprint {fingerprint}",
            hint,
        )
    if max_step is not None and manifest["step"] > max_step:
        raise CheckpointError(f"checkpoint {folder} is at step {manifest['step']} > num_steps={max_step}")
    return found


def _describe(err: BaseException, limit: int = 240) -> str:
    text = " ".join(f"{type(err).__name__}: {err}".split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def restore(folder: Path, manifest: dict, state_template: Any, trace_template: Any):
    """Load ``(state, trace)`` from a verified checkpoint, shaped like the templates.

    Loading reads JSON, orbax/tensorstore array files and a NumPy ``.npz``
    (``allow_pickle=False``): nothing in a checkpoint is unpickled or executed.

    Raises
    ------
    CheckpointError
        The checkpoint holds a state or trace of another structure, shapes or dtypes.
    CheckpointLoadError
        Its arrays could not be loaded (e.g. an array file damaged and the
        manifest re-signed); the driver then falls back to an older checkpoint.
    """
    import orbax.checkpoint as ocp

    leaves, treedef = jax.tree.flatten(state_template)
    if manifest["num_leaves"] != len(leaves) or manifest["treedef"] != str(treedef):
        raise CheckpointError(
            f"checkpoint {folder} holds a state of a different structure than this run's "
            f"(written by {describe(manifest.get('run'))})",
            "it was written by another configuration; use a new checkpoint folder",
        )
    if manifest.get("layout", _layout(leaves)) != _layout(leaves):
        diff = next((a, b) for a, b in zip(manifest["layout"], _layout(leaves)) if a != b)
        raise CheckpointError(
            f"checkpoint {folder} holds state arrays of other shapes or dtypes than this run's "
            f"(written by {describe(manifest.get('run'))}: {diff[0]} where this run has {diff[1]})",
            "it was written with another number of chains or another model; use a new checkpoint folder",
        )

    def abstract(leaf):
        stored = _to_storable(leaf)
        sharding = getattr(stored, "sharding", None)
        return jax.ShapeDtypeStruct(stored.shape, stored.dtype, sharding=sharding)

    tleaves, tdef = jax.tree.flatten(trace_template) if trace_template is not None else ([], None)
    if trace_template is not None:
        stored = (manifest.get("trace_treedef"), manifest.get("trace_layout"))
        if stored != (None, None) and stored != (str(tdef), _layout(tleaves)):
            theirs, ours = stored[0], str(tdef)
            if theirs == ours and isinstance(stored[1], list):  # same tree, other arrays: name the first that differs
                pairs = zip(stored[1], _layout(tleaves))
                theirs, ours = next(((a, b) for a, b in pairs if a != b), (stored[1], _layout(tleaves)))
            raise CheckpointError(
                f"checkpoint {folder} holds a trace of another structure than this run's (written by run "
                f"{manifest.get('run')!r}: {theirs} where this run's trace gives {ours})",
                "resume with the trace function of the run that wrote it, or use a new checkpoint folder",
            )

    tree = {f"leaf_{i:05d}": abstract(leaf) for i, leaf in enumerate(leaves)}
    ckptr = ocp.StandardCheckpointer()
    failure = None
    with _HeldReports() as held:  # damaged arrays: tensorstore's late callbacks would print after the warning
        try:
            loaded = ckptr.restore(folder.resolve() / "state", tree)
        except Exception as err:
            failure = _describe(err)
        finally:
            ckptr.close()
        if failure is not None:  # out of the except block, so that orbax's error and tasks are garbage
            held.settle()
            held.drop = True
    if failure is not None:
        raise CheckpointLoadError(folder, f"its arrays could not be loaded ({failure})")
    restored = []
    for i, leaf in enumerate(leaves):
        value = loaded[f"leaf_{i:05d}"]
        if _is_key(leaf):
            value = jax.random.wrap_key_data(value, impl=jax.random.key_impl(leaf))
        restored.append(value)
    state = jax.tree.unflatten(treedef, restored)
    trace = None
    if trace_template is not None:
        try:
            with np.load(folder / "trace.npz", allow_pickle=False) as npz:
                arrays = [npz[f"leaf_{i:05d}"] for i in range(len(tleaves))]
        except KeyError as err:  # a checkpoint written before manifests recorded the trace's structure
            raise CheckpointError(
                f"checkpoint {folder} holds a trace of another structure than this run's (no {err} in trace.npz)",
                "resume with the trace function of the run that wrote it, or use a new checkpoint folder",
            ) from None
        except Exception as err:
            raise CheckpointLoadError(folder, f"its trace could not be loaded ({_describe(err)})") from err
        trace = jax.tree.unflatten(tdef, [jnp.asarray(a) for a in arrays])
    return state, trace


def prune(directory, keep: int) -> None:
    """Delete all but the ``keep`` newest checkpoints (process 0 only)."""
    if not _is_primary():
        return
    for folder in list_steps(directory)[keep:]:
        shutil.rmtree(folder, ignore_errors=True)
