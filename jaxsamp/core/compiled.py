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

A kernel built around its data (``blackjax.mala(log_density, h)``, the
``ensemble`` of a kernel) closes over them in new functions on every call.
:func:`cached_kernel` makes the same kernel from a function ``make`` of its
traced arguments (the log density, tuned parameters, an inner kernel) and its
static settings (numbers, strings): ``init`` and ``step`` are ``Partial`` s of
functions cached on ``(make, settings)`` with the arguments bound as leaves,
and ``make`` runs inside the trace, so the kernel is compiled once per settings
and argument shapes. The registered samplers (:data:`jaxsamp.core.registry.SAMPLERS`)
and the chains of :func:`jaxsamp.sample` are built this way, and so is ChEES's
and MEADS's one-step warm-up (:func:`cached_function`); the window warm-up and
the tuned sampling kernel (:mod:`jaxsamp.mcmc.warmup`) cache their functions
the same way by hand.

``jax.jit(jax.vmap(f))`` builds a new function on every call, and a closure
over data compiles again for new data values; neither happens here.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import jax
from jax.tree_util import Partial

from jaxsamp.core.protocols import Kernel


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


def _traceable(tree: Any) -> Any:
    """``tree`` with every callable leaf (a function, a bound method) as :func:`as_partial` makes it: a PyTree."""
    return jax.tree.map(lambda leaf: as_partial(leaf) if callable(leaf) else leaf, tree)


def _settings_key(settings: dict) -> tuple:
    """The settings as a hashable cache key, each value with its type (``1`` and ``1.0`` build different kernels)."""
    key = tuple(sorted((name, type(value), value) for name, value in settings.items()))
    try:
        hash(key)
    except TypeError:
        bad = next(name for name, _, value in key if not _hashable(value))
        raise TypeError(
            f"setting {bad!r} is not hashable ({type(settings[bad]).__name__}): settings are numbers, strings and "
            "tuples, fixed in the compilation; pass arrays as traced arguments"
        ) from None
    return key


def _hashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


@functools.lru_cache(maxsize=256)
def _bound(make: Callable, settings: tuple, attribute: str | None) -> Callable:
    """``call(args, *rest)``: ``make(*args, **settings)`` called with ``rest`` (or its ``attribute`` called), cached."""
    built = {name: value for name, _, value in settings}

    def call(args, *rest, **keywords):
        made = make(*args, **built)
        return (made if attribute is None else getattr(made, attribute))(*rest, **keywords)

    call.__module__ = getattr(make, "__module__", call.__module__)
    call.__qualname__ = getattr(make, "__qualname__", type(make).__name__) + (f".{attribute}" if attribute else "")
    return call


def cached_function(make: Callable, *args, **settings) -> Partial:
    """The function ``make(*args, **settings)`` as a :class:`jax.tree_util.Partial` with ``args`` as its leaves.

    Parameters
    ----------
    make : callable
        A function (hashable, the same object from call to call: a module-level
        function) that builds the wanted function from ``args`` and ``settings``;
        it runs again inside every trace, so it must be cheap and pure.
    *args : PyTrees
        The traced arguments: arrays, log densities (a callable leaf becomes
        :func:`as_partial` of it), kernels.
    **settings
        Static settings (numbers, strings, tuples, functions): hashable values
        fixed in the compilation.

    Returns
    -------
    Partial
        ``Partial(call, args)`` where ``call(args, *a)`` is ``make(*args,
        **settings)(*a)`` and is the same object for the same ``make`` and
        settings: compiled code that takes it as an argument (the driver's
        chunks) compiles once per ``make``, settings, and structure, shapes and
        dtypes of ``args``, whatever their values.
    """
    return Partial(_bound(make, _settings_key(settings), None), _traceable(args))


def cached_kernel(make: Callable[..., Kernel], *args, **settings) -> Kernel:
    """The kernel ``make(*args, **settings)`` with ``init`` and ``step`` as :func:`cached_function` s.

    ``make`` is called once here, so that a bad setting raises now rather than
    when the kernel is first traced; the kernel returned makes it again inside
    each trace, from the traced ``args``. Its ``init`` and ``step`` are
    ``Partial`` s of functions cached on ``(make, settings)``: two kernels made
    with the same settings and arguments of the same structure, shapes and
    dtypes (new data for the same log density function, new tuned step sizes)
    share every compilation. ``args`` may hold kernels made this way (a
    combinator's child), which are PyTrees of their own arguments.

    Examples
    --------
    >>> kernel = cached_kernel(ula, target.log_density, step_size=0.1)  # doctest: +SKIP
    >>> chains = cached_kernel(ensemble, kernel, chain_method="vectorized")  # doctest: +SKIP
    """
    key = _settings_key(settings)
    make(*args, **settings)
    args = _traceable(args)
    return Kernel(Partial(_bound(make, key, "init"), args), Partial(_bound(make, key, "step"), args))


__all__ = ["as_partial", "batched", "cached_function", "cached_kernel", "strong_types"]
