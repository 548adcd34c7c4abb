"""A plain log-density function as a Target.

Everything in jaxsamp that takes a :class:`~jaxsamp.core.target.Target` also
takes a plain function ``log_prob(x)`` of one state: :func:`as_target` wraps it,
with the event shape read from an example position (the initial position of
the chains, when there is one). blackjax users can therefore keep their
functions as they are.
"""

from __future__ import annotations

from typing import Callable

import jax
import numpy as np

from jaxsamp.core.errors import InputError
from jaxsamp.core.target import Target


class FunctionTarget(Target):
    """``log_prob`` given by a user function of one real-valued state of shape ``event_shape``.

    Nothing about it is exact: no ``log_Z``, no exact samples, no reference set.
    """

    def __init__(self, log_prob_fn: Callable, event_shape: tuple[int, ...], name: str | None = None):
        if not callable(log_prob_fn):
            raise InputError(f"log_prob_fn must be a function of one state, got {type(log_prob_fn).__name__}")
        self._fn = log_prob_fn
        self.event_shape = tuple(int(n) for n in event_shape)
        self.name = name or getattr(log_prob_fn, "__name__", "log_prob")

    def _log_prob(self, x):
        return self._fn(x)


def from_function(log_prob_fn: Callable, example_position, name: str | None = None) -> FunctionTarget:
    """Wrap ``log_prob_fn`` as a Target whose event shape is that of ``example_position`` (one state).

    The function is evaluated once at the example (abstractly, with
    ``jax.eval_shape``) to check that it returns one scalar.

    Raises
    ------
    InputError
        When the example is not a real array or the function does not return a scalar there.
    """
    example = np.asarray(example_position) if not isinstance(example_position, jax.Array) else example_position
    if not np.issubdtype(example.dtype, np.floating):
        raise InputError(f"the example position must be a float array, got dtype {example.dtype}")
    out = jax.eval_shape(log_prob_fn, jax.ShapeDtypeStruct(example.shape, example.dtype))
    if getattr(out, "shape", None) != ():
        raise InputError(
            f"log_prob_fn must return one scalar for one state of shape {example.shape}, "
            f"got {getattr(out, 'shape', type(out).__name__)}",
            "batch states with jax.vmap outside the function",
        )
    return FunctionTarget(log_prob_fn, example.shape, name)


def as_target(target_or_fn, example_position=None) -> Target:
    """``target_or_fn`` if it is a Target; a plain function wrapped by :func:`from_function` otherwise.

    Raises
    ------
    InputError
        A function without an example position, or something that is neither.
    """
    if isinstance(target_or_fn, Target):
        return target_or_fn
    if callable(target_or_fn):
        if example_position is None:
            raise InputError(
                "a plain log-density function needs an example position to know its event shape",
                "pass initial positions, or wrap it with jaxsamp.targets.from_function(fn, example)",
            )
        return from_function(target_or_fn, example_position)
    raise InputError(f"expected a Target or a log-density function, got {type(target_or_fn).__name__}")
