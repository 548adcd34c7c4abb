"""Functions as PyTrees, and compiled functions that take them as arguments, so that second calls compile nothing.

A log density with data (a numpyro model's, a plain function's with
``model_args``) is a :class:`jax.tree_util.Partial`: a function that is the
same object from call to call, with the data bound as its leaves. Compiled
code takes such a function as an ordinary (traced) argument: two log densities
of the same function and the same data shapes and dtypes share one
compilation, whatever the data values. A plain function, which may close over
anything, enters as ``Partial(fn)``: no leaves, the function itself in the
tree's structure, so it is compiled once per function object (a bound method
of the same object counts as the same function: Python compares bound methods
by their object and their function). :func:`as_partial` makes that one form;
:func:`batched` is the jitted, vmapped application of such a function that the
one-call layers use (the health check of the starting points, the
constraining of the draws, a kernel's ``init``); the driver's chunks take a
step function the same way (:func:`jaxsamp.run`).

``jax.jit(jax.vmap(f))`` builds a new function on every call, and a closure
over data compiles again for new data values; neither happens here.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import jax
from jax.tree_util import Partial


def as_partial(fn: Callable) -> Partial:
    """``fn`` as a PyTree function: a :class:`jax.tree_util.Partial` as is, any other callable as ``Partial(fn)``.

    A ``Partial``'s bound arguments are its leaves (traced when it is passed to
    compiled code); its function is part of its structure (compared by equality).
    """
    return fn if isinstance(fn, Partial) else Partial(fn)


def strong_types(tree: Any) -> Any:
    """``tree`` with weakly typed JAX arrays made strong (same dtype, same values); other leaves as they are.

    A weakly typed array (``jnp.full(3, 5.0)``, a kernel ``init``'s Python
    scalar) is compiled for apart from a strong one of the same dtype: a
    driver's first chunk would compile once more for the second's input types,
    and data made one way or the other would not share their compilation.
    """

    def strong(leaf):
        if isinstance(leaf, jax.Array) and jax.typeof(leaf).weak_type:
            return jax.lax.convert_element_type(leaf, leaf.dtype)
        return leaf

    return jax.tree.map(strong, tree)


@functools.partial(jax.jit, static_argnums=0)
def _mapped(depth: int, fn: Partial, x):
    for _ in range(depth):
        fn = jax.vmap(fn)
    return fn(x)


def batched(fn: Callable, depth: int = 1) -> Callable:
    """``jax.jit`` of ``fn`` vmapped over ``depth`` leading axes, ``fn`` a traced argument of one compiled function.

    Parameters
    ----------
    fn : callable
        A function of one state (a target's log density, a ``constrain`` map, a
        kernel's ``init``): a :class:`jax.tree_util.Partial` (its bound data
        traced) or a hashable callable (functions and bound methods are).
    depth : int
        How many leading batch axes: 0 for none (``jax.jit(fn)``), 1 for
        ``(n, ...)``, 2 for ``(chains, draws, ...)``.

    Returns
    -------
    callable
        The batched function. It compiles once per ``depth``, function (the
        ``Partial``'s function and the structure of its bound arguments), and the
        shapes and dtypes of the bound arguments and of the input: new data
        values of the same shapes reuse the compilation.
    """
    return functools.partial(_mapped, depth, as_partial(fn))


__all__ = ["as_partial", "batched", "strong_types"]
