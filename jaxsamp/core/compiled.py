"""Compiled functions built once per function, so that a second call of the one-call layers compiles nothing.

``jax.jit(f)`` reuses its compilation whenever it is given the same ``f``, but
``jax.jit(jax.vmap(f))`` builds a new function (and compiles it again) on every
call. :func:`batched` keeps one jitted, vmapped version per function: a bound
method of the same object counts as the same function (Python compares bound
methods by their object and their function), so ``batched(target.log_prob)``
is compiled once per target, shape and dtype.

The cache holds at most :data:`CACHE_SIZE` functions (and, through bound
methods, their objects): the least recently used is dropped first.
"""

from __future__ import annotations

import functools
from typing import Callable

import jax

#: Functions kept compiled (least recently used dropped first).
CACHE_SIZE = 128


@functools.lru_cache(maxsize=CACHE_SIZE)
def batched(fn: Callable, depth: int = 1) -> Callable:
    """``jax.jit`` of ``fn`` vmapped over ``depth`` leading axes, built once per ``(fn, depth)``.

    Parameters
    ----------
    fn : callable
        A function of one state (a target's ``log_prob``, a ``constrain`` map).
        Must be hashable; functions and bound methods are.
    depth : int
        How many leading batch axes: 1 for ``(n, ...)``, 2 for ``(chains, draws, ...)``.

    Returns
    -------
    callable
        The compiled batched function; the same object for the same arguments.
    """
    mapped = fn
    for _ in range(depth):
        mapped = jax.vmap(mapped)
    return jax.jit(mapped)


__all__ = ["CACHE_SIZE", "batched"]
