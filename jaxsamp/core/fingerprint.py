"""Fingerprints of what determines a run's numbers, for the checkpoint check.

A checkpoint folder may only be resumed by the run that wrote it. The driver
stores a fingerprint in every checkpoint and refuses a folder whose fingerprint
differs from the resuming run's. The fingerprint must therefore change whenever
anything that determines the numbers changes, without the user naming it:

* :func:`of_computation` hashes what a function *computes*: its jaxpr (every
  primitive, every literal such as a closed-over Python step size, every
  sub-computation) and the values of the arrays it closes over (a target's
  parameters, a model's data, a network's constants). Two step functions that
  differ in any closed-over setting, parameter or data have different
  fingerprints; re-creating the same function in a new process gives the same one.
* :func:`of_values` hashes a PyTree's structure, shapes, dtypes and bytes (the
  initial state, the starting points).

The parts are combined by :func:`combine`; the manifest keeps them apart, so that
a refused resume can say which part differs, with what it can name inside a part
(not hashed into the fingerprint): the settings behind ``identity``
(:func:`flat_settings`, when a caller gives them as a mapping, :func:`of_settings`
hashes them) and, for the computation, whether the program or a closed-over
array changed (:func:`computation_record`).

Cost: :func:`of_computation` traces the function once (``jax.make_jaxpr``; no
compilation) and hashes its constants; on this project's 2-core CPU that is
about 0.05 s for a NUTS step and 0.1-0.5 s for a learned sampler's training
step (``jaxsamp bench run overhead`` measures it), paid once per checkpointed
call. :func:`of_values` hashes at about 1 GB/s.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np

#: A Python object's memory address as ``repr`` prints it (``<function f at 0x7f...>``): not part of a computation.
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _is_key(x) -> bool:
    return hasattr(x, "dtype") and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)


def _host(leaf) -> np.ndarray:
    """``leaf`` as a host array (PRNG keys as their data; arrays spread over processes gathered)."""
    if _is_key(leaf):
        leaf = jax.random.key_data(leaf)
    if isinstance(leaf, jax.Array) and not leaf.is_fully_addressable:
        from jax.experimental import multihost_utils

        return np.asarray(multihost_utils.process_allgather(leaf, tiled=True))
    return np.asarray(leaf)


def _update_with_array(h, a: np.ndarray) -> None:
    h.update(f"{a.dtype.str}{list(a.shape)}".encode())
    h.update(np.ascontiguousarray(a).tobytes())


def _aval(leaf) -> str:
    if _is_key(leaf):
        return f"key<{jax.random.key_impl(leaf)}>{list(jnp.shape(leaf))}"
    return f"{jnp.result_type(leaf).name}{list(jnp.shape(leaf))}"


def of_values(tree: Any) -> str:
    """SHA-256 of a PyTree's structure, shapes, dtypes and values (PRNG keys by their data)."""
    leaves, treedef = jax.tree.flatten(tree)
    h = hashlib.sha256(str(treedef).encode())
    for leaf in leaves:
        h.update(_aval(leaf).encode())
        _update_with_array(h, _host(leaf))
    return h.hexdigest()


def of_computation(fn: Callable, *args) -> str:
    """SHA-256 of what ``fn(*args)`` computes: its jaxpr and the values of the constants it closes over.

    Parameters
    ----------
    fn : callable
        A JAX-traceable function.
    *args : PyTrees
        Example arguments: only their structure, shapes and dtypes matter.

    Returns
    -------
    str
        64 hex digits. Equal for the same function built the same way in another
        process; different when a closed-over setting (a literal in the jaxpr), a
        closed-over array's value, the arguments' layout or the computation changes.
    """
    return computation_record(fn, *args)[0]


def computation_record(fn: Callable, *args) -> tuple[str, dict]:
    """:func:`of_computation`'s hash, and what a refused resume can name when it differs.

    Returns
    -------
    digest : str
        :func:`of_computation` ``(fn, *args)``.
    details : dict
        ``"program"``: a hash of the jaxpr alone (the code, its literals and the
        arguments' layout); ``"constants"``: ``"float32[100,5] <hash>"`` for each
        closed-over array (a target's parameters, a model's data), at most
        :data:`MAX_NAMED_CONSTANTS` of them. Not part of the fingerprint.
    """
    closed = jax.make_jaxpr(fn)(*args)
    program = _ADDRESS.sub("", str(closed.jaxpr)).encode()
    h = hashlib.sha256(program)
    constants = []
    for const in closed.consts:
        array = _host(const)
        _update_with_array(h, array)
        if len(constants) < MAX_NAMED_CONSTANTS:
            one = hashlib.sha256()
            _update_with_array(one, array)
            constants.append(f"{array.dtype.name}{list(array.shape)} {one.hexdigest()[:16]}")
    return h.hexdigest(), {"program": hashlib.sha256(program).hexdigest(), "constants": constants}


#: Closed-over arrays whose hashes :func:`computation_record` keeps for a refusal to name.
MAX_NAMED_CONSTANTS = 256


def of_settings(settings: Mapping[str, Any]) -> str:
    """SHA-256 of JSON-able settings (keys sorted, other values by ``str``): a run's ``identity``."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()


def flat_settings(settings: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """``settings`` as ``{"run.num_chains": "16", ...}``: nested mappings by dotted keys, values as JSON text."""
    flat = {}
    for key, value in settings.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flat_settings(value, name + "."))
        else:
            flat[name] = json.dumps(value, sort_keys=True, default=str)
    return flat


def settings_changes(old: Mapping[str, str], new: Mapping[str, str], limit: int = 3) -> list[str]:
    """``"key old -> new"`` for the first ``limit`` keys (sorted) whose values differ between two :func:`flat_settings`."""
    keys = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    changes = [f"{k} {old.get(k, '(absent)')} -> {new.get(k, '(absent)')}" for k in keys[:limit]]
    return changes + ([f"and {len(keys) - limit} more"] if len(keys) > limit else [])


def combine(parts: dict[str, str]) -> str:
    """One SHA-256 of named fingerprint parts (order of the names does not matter)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()
