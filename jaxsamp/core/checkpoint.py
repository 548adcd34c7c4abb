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
import hashlib
import json
import logging
import os
import re
import shutil
import time
import warnings
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core.errors import CheckpointError

MANIFEST = "manifest.json"
_PREFIX = "step_"
_FIELDS = {"step": int, "key_data": list, "treedef": str, "num_leaves": int, "files": dict}


class CheckpointSkippedWarning(UserWarning):
    """A partial or corrupt checkpoint was found and not loaded."""


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
        if isinstance(e, OSError):
            return e
        found = _OS_ERROR_CODE.search(str(e))
        if found:
            return OSError(int(found.group(1)), os.strerror(int(found.group(1))))
        if "No space left on device" in str(e):
            return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        todo += [e.__cause__, e.__context__, *getattr(e, "exceptions", ())]
    return None


class _HeldLogs(logging.Filter):
    """Holds back orbax's error logs (a full disk logs each background thread's traceback) while a save runs."""

    def __init__(self):
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR and "orbax" in record.pathname:
            self.records.append(record)
            return False
        return True


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
    partial folder is removed before the error propagates. A file-system error
    that orbax or tensorstore wrapped in their own error types is raised as the
    ``OSError`` it is (e.g. ``ENOSPC``), naming the checkpoint folder, without
    the tracebacks orbax logs from its writing threads.
    """
    import orbax.checkpoint as ocp

    target = step_dir(directory, step)
    trace_arrays = [_host_array(a) for a in (jax.tree.leaves(trace) if trace is not None else [])]
    if trace_steps is not None:  # a caller's own record (scalars included) is kept whole
        trace_arrays = [a[:trace_steps] for a in trace_arrays]
    absl_logger, held = logging.getLogger("absl"), _HeldLogs()
    absl_logger.addFilter(held)
    try:
        if _is_primary():
            if target.exists():
                shutil.rmtree(target)
            target.mkdir(parents=True)
        _barrier(f"jaxsamp-ckpt-mkdir-{step}")
        leaves, treedef = jax.tree.flatten(state)
        tree = {f"leaf_{i:05d}": _to_storable(leaf) for i, leaf in enumerate(leaves)}
        ckptr = ocp.StandardCheckpointer()
        ckptr.save(target / "state", tree)
        ckptr.wait_until_finished()
        ckptr.close()
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
        if _is_primary():
            shutil.rmtree(target, ignore_errors=True)
        cause = _os_error(err) if isinstance(err, Exception) else None
        if cause is not None and not (cause is err and err.filename):
            held.records.clear()  # the error says it all
            raise OSError(cause.errno, f"{cause.strerror or cause} while writing checkpoint {target}") from err
        raise
    finally:
        absl_logger.removeFilter(held)
        for record in held.records:  # not a file-system error: show orbax's logs as they were
            absl_logger.handle(record)
    return target


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
PART_MEANINGS = {
    "computation": "the step computes something else (a setting, a target parameter, the data or the code changed)",
    "initial_state": "the initial state differs (other starting points, another initialisation)",
    "identity": "the settings differ",
    "given": "the explicit fingerprint differs",
}


def _what_differs(theirs: dict, mine: dict) -> str:
    parts_theirs, parts_mine = theirs.get("fingerprint_parts") or {}, mine.get("fingerprint_parts") or {}
    if not parts_theirs or set(parts_theirs) != set(parts_mine):
        return "it was fingerprinted another way (another jaxsamp version, or another entry point)"
    return "; ".join(PART_MEANINGS.get(k, k) for k in sorted(parts_mine) if parts_theirs[k] != parts_mine[k])


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
        or is past ``max_step``. The message names the folder, the run that wrote
        it and this run, both fingerprints in full and what differs.
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
            f"checkpoint folder {Path(directory)} belongs to another run: it was written by {describe(theirs)}, "
            f"fingerprint {manifest.get('fingerprint')}; this is {describe(mine)}, fingerprint {fingerprint}; "
            f"{_what_differs(theirs, mine)}",
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
    try:
        loaded = ckptr.restore(folder.resolve() / "state", tree)
    except Exception as err:
        raise CheckpointLoadError(folder, f"its arrays could not be loaded ({_describe(err)})") from err
    finally:
        ckptr.close()
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
