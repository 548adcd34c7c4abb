"""One validation layer for every boundary: settings, registry parameters, driver arguments, arrays.

Ranges live in the type annotations, as :class:`typing.Annotated` metadata, so a
setting's type, range and documentation sit in one place and every boundary
checks them the same way::

    @dataclasses.dataclass(frozen=True)
    class Settings:
        step_size: PositiveFloat = 0.1
        num_steps: PositiveInt = 100

        def __post_init__(self):
            check_fields(self)

* :func:`check_value` checks one value against an annotation (type, then every
  :class:`Interval` / :class:`OneOf` in its metadata); floats must be finite.
* :func:`check_fields` checks every field of a dataclass instance (settings
  objects call it from ``__post_init__``; the config schema calls it on load).
* :func:`check_parameters` checks keyword parameters against a function's
  signature (the registries of targets and samplers).
* :func:`check_int`, :func:`check_float`, :func:`check_array` are for plain
  library arguments (the driver, kernel builders, target constructors).
* :func:`check_key` and :func:`as_key` are for PRNG keys and integer seeds:
  every function that takes a ``key`` goes through one of them.

Every failure is an :class:`~jaxsamp.core.errors.InputError` (or the error class
passed in) whose one-line message names the parameter, the rule and the value.
Values that are JAX tracers are not checked (they have no value at trace time):
a kernel built inside ``jit`` with a traced step size is checked by whoever
built the concrete value.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import numbers
import types
import typing
from typing import Annotated, Any, Callable

import jax
import numpy as np

from jaxsamp.core.errors import InputError

# --------------------------------------------------------------------------
# constraints carried in Annotated metadata
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Interval:
    """A range ``gt < x``, ``ge <= x``, ``x < lt``, ``x <= le`` (any subset); the value must be finite."""

    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None

    def describe(self) -> str:
        bounds = (("> ", self.gt), (">= ", self.ge), ("< ", self.lt), ("<= ", self.le))
        parts = [op + (str(b) if isinstance(b, int) else f"{b:g}") for op, b in bounds if b is not None]
        return "finite" if not parts else " and ".join(parts)

    def violated(self, value) -> bool:
        v = value if isinstance(value, int) else float(value)  # ints compared exactly (seeds beyond 2**53)
        return (
            not math.isfinite(v)
            or (self.gt is not None and not v > self.gt)
            or (self.ge is not None and not v >= self.ge)
            or (self.lt is not None and not v < self.lt)
            or (self.le is not None and not v <= self.le)
        )


@dataclasses.dataclass(frozen=True)
class OneOf:
    """The value must be one of ``choices``."""

    choices: tuple

    def describe(self) -> str:
        return "one of " + ", ".join(repr(c) for c in self.choices)

    def violated(self, value) -> bool:
        return value not in self.choices


PositiveInt = Annotated[int, Interval(ge=1)]
NonNegativeInt = Annotated[int, Interval(ge=0)]
PositiveFloat = Annotated[float, Interval(gt=0)]
NonNegativeFloat = Annotated[float, Interval(ge=0)]
FiniteFloat = Annotated[float, Interval()]
Probability = Annotated[float, Interval(ge=0, le=1)]
#: The largest integer seed ``jax.random.key`` takes (a signed 64-bit integer).
SEED_MAX = 2**63 - 1
Seed = Annotated[int, Interval(ge=0, le=SEED_MAX)]
OpenUnitFloat = Annotated[float, Interval(gt=0, lt=1)]


# --------------------------------------------------------------------------
# one value against one annotation
# --------------------------------------------------------------------------


def _is_tracer(value) -> bool:
    return isinstance(value, jax.core.Tracer)


def _alternatives(annotation) -> list[tuple[Any, tuple]]:
    """``[(base type, constraints), ...]``: one entry per member of a Union, Annotated metadata unpacked."""
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        base, *meta = typing.get_args(annotation)
        return [(t, (*c, *meta)) for t, c in _alternatives(base)]
    if origin in (typing.Union, types.UnionType):
        return [alt for arg in typing.get_args(annotation) for alt in _alternatives(arg)]
    return [(annotation, ())]


def _coerce(value, base):
    """``(ok, value)``: ``value`` converted to ``base`` if it is of that type (ints promoted to float)."""
    if base is type(None):
        return value is None, value
    base = typing.get_origin(base) or base
    if base is float and isinstance(value, numbers.Real) and not isinstance(value, bool):
        return True, float(value)
    if base is int and isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return True, int(value)
    if base in (list, tuple):
        return isinstance(value, (list, tuple)), value
    if base in (str, bool, dict):
        return isinstance(value, base), value
    if base is typing.Any:
        return True, value
    return isinstance(base, type) and base not in (float, int) and isinstance(value, base), value


def _type_name(a) -> str:
    return "None" if a is type(None) else getattr(a, "__name__", str(a))


def check_value(name: str, value: Any, annotation: Any, where: str = "", error: type = InputError) -> Any:
    """Check ``value`` against ``annotation`` (type and Annotated constraints); return it coerced.

    ``int`` values are accepted for ``float`` annotations (and converted);
    ``bool`` is never an ``int``; every float must be finite. In a Union the
    first member whose type fits decides, with its own constraints. Tracers
    pass unchecked.

    Raises
    ------
    error
        ``"<where>: <name> must be <rule>, got <value>"`` on one line.
    """
    prefix = f"{where}: " if where else ""
    if annotation is inspect.Parameter.empty or annotation is Any or _is_tracer(value):
        return value
    alternatives = _alternatives(annotation)
    for base, constraints in alternatives:
        ok, coerced = _coerce(value, base)
        if not ok:
            continue
        if isinstance(coerced, float) and not math.isfinite(coerced):
            raise error(f"{prefix}{name} must be finite, got {coerced!r}")
        for c in constraints:
            if isinstance(c, (Interval, OneOf)) and c.violated(coerced):
                raise error(f"{prefix}{name} must be {c.describe()}, got {coerced!r}")
        return coerced
    names = " | ".join(_type_name(base) for base, _ in alternatives)
    raise error(f"{prefix}{name} must be {names}, got {value!r}")


def check_fields(obj, where: str | None = None, error: type = InputError, prefix: str = "") -> None:
    """Check every field of dataclass instance ``obj`` against its annotation.

    Messages start with ``where`` (default: the class name) and name each field
    as ``prefix + name`` (e.g. ``prefix="run."`` gives ``run.chunk``). Frozen or
    not, coerced values (an int given for a float field) are written back, so a
    settings object always holds the types it declares.
    """
    hints = typing.get_type_hints(type(obj), include_extras=True)
    where = type(obj).__name__ if where is None else where
    for f in dataclasses.fields(obj):
        value = check_value(prefix + f.name, getattr(obj, f.name), hints.get(f.name, Any), where, error)
        object.__setattr__(obj, f.name, value)


def check_parameters(fn: Callable, params: dict, where: str, error: type = InputError, skip: tuple[str, ...] = ()) -> dict:
    """Check keyword ``params`` against ``fn``'s signature: names, required ones, types and ranges.

    Returns the coerced parameters. Parameters named in ``skip`` (positional
    arguments the caller supplies, such as the target of a sampler factory) are
    neither accepted nor required.
    """
    target = fn.__init__ if inspect.isclass(fn) else fn
    hints = typing.get_type_hints(target, include_extras=True)
    sig = inspect.signature(fn)
    accepted = {
        p.name: p for p in sig.parameters.values()
        if p.name not in skip and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }
    out = {}
    for key, value in params.items():
        if key not in accepted:
            raise error(f"{where}: unknown parameter {key!r}; accepted: {', '.join(accepted) or 'none'}")
        out[key] = check_value(key, value, hints.get(key, inspect.Parameter.empty), where, error)
    for pname, p in accepted.items():
        if p.default is inspect.Parameter.empty and pname not in out:
            raise error(f"{where}: missing required parameter {pname!r}")
    return out


# --------------------------------------------------------------------------
# plain arguments
# --------------------------------------------------------------------------


def check_widths(owner: str, name: str, value) -> tuple[int, ...]:
    """Hidden-layer widths ``value`` (a non-empty sequence of positive ints, not bools) as a tuple.

    Raises
    ------
    InputError
        Naming ``owner`` (a settings class) and the field ``name``.
    """
    if not value or not all(isinstance(w, int) and not isinstance(w, bool) and w >= 1 for w in value):
        raise InputError(f"{owner}: {name} must be a non-empty list of positive ints, got {value!r}")
    return tuple(value)


def settings_or_default(settings, cls: type):
    """A learned method's ``build``: ``settings``, or ``cls()`` (its defaults) for None.

    Raises
    ------
    InputError
        ``settings`` of another type, a subclass too (AISIVI's settings extend BSIVI's, ASBS's
        Adjoint Sampling's, with fields the other method would silently ignore).
    """
    if settings is None:
        return cls()
    if type(settings) is not cls:
        article = "an" if cls.__name__[0] in "AEIOU" else "a"
        raise InputError(f"settings must be {article} {cls.__name__}, got {type(settings).__name__}")
    return settings


def check_int(name: str, value, *, ge: int | None = None, le: int | None = None, optional: bool = False) -> int | None:
    """``value`` as an ``int`` (a Python or NumPy integer, not a bool or a float) within ``[ge, le]``."""
    annotation = Annotated[int, Interval(ge=ge, le=le)]
    return check_value(name, value, annotation | None if optional else annotation)


def check_float(
    name: str,
    value,
    *,
    gt: float | None = None,
    ge: float | None = None,
    lt: float | None = None,
    le: float | None = None,
    optional: bool = False,
):
    """``value`` as a finite ``float`` within the given bounds (tracers and arrays of any shape pass through).

    A concrete 0-d array is checked like a float and returned unchanged.
    """
    if _is_tracer(value):
        return value
    if isinstance(value, (np.ndarray, jax.Array)) and np.ndim(value) == 0:
        check_value(name, float(value), Annotated[float, Interval(gt=gt, ge=ge, lt=lt, le=le)])
        return value
    annotation = Annotated[float, Interval(gt=gt, ge=ge, lt=lt, le=le)]
    return check_value(name, value, annotation | None if optional else annotation)


def check_array(
    name: str,
    value,
    *,
    ndim: int | None = None,
    shape: tuple | None = None,
    finite: bool = True,
    dtype: str | None = None,
) -> np.ndarray:
    """``value`` as a NumPy array with the given rank/shape (``None`` entries are free), finite when asked.

    ``dtype`` is ``"float"`` or ``"int"`` to require that kind. Returns
    ``np.asarray(value)``; tracers are returned unchanged.
    """
    if _is_tracer(value):
        return value
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as err:  # ragged lists
        raise InputError(f"{name} must be an array, got {value!r} ({err})") from None
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise InputError(f"{name} must be numeric, got dtype {arr.dtype}")
    if dtype == "float" and not np.issubdtype(arr.dtype, np.floating):
        raise InputError(f"{name} must be a float array, got dtype {arr.dtype}")
    if dtype == "int" and not np.issubdtype(arr.dtype, np.integer):
        raise InputError(f"{name} must be an integer array, got dtype {arr.dtype}")
    if ndim is not None and arr.ndim != ndim:
        raise InputError(f"{name} must have {ndim} dimension(s), got shape {arr.shape}")
    if shape is not None and (arr.ndim != len(shape) or any(s is not None and s != a for s, a in zip(shape, arr.shape))):
        want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
        raise InputError(f"{name} must have shape {want}, got {arr.shape}")
    if finite and np.issubdtype(arr.dtype, np.inexact) and not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))
        where = f" at index {tuple(int(i) for i in bad[0])}" if arr.ndim else ""
        raise InputError(f"{name} must be finite; {len(bad)} NaN/inf entr{'y' if len(bad) == 1 else 'ies'}, first{where}")
    return arr


# --------------------------------------------------------------------------
# PRNG keys and seeds
# --------------------------------------------------------------------------

_KEY_HINT = "make one with jax.random.key(seed)"


def _is_typed_key(value) -> bool:
    return hasattr(value, "dtype") and jax.dtypes.issubdtype(value.dtype, jax.dtypes.prng_key)


def _describe(value) -> str:
    if hasattr(value, "dtype") and hasattr(value, "shape"):
        return f"{type(value).__name__} of dtype {value.dtype} and shape {tuple(value.shape)}"
    return f"{type(value).__name__} {value!r}"


def check_key(name: str, value):
    """``value`` if it is ONE PRNG key: a typed key (``jax.random.key``) or a raw ``uint32`` key vector.

    Raises
    ------
    InputError
        Anything else (a seed, a float, a batch of keys), naming ``name``, with
        the hint ``jax.random.key(seed)``.
    """
    if _is_typed_key(value):
        if value.ndim:
            raise InputError(f"{name} must be ONE PRNG key, got a batch of shape {tuple(value.shape)}", _KEY_HINT)
        return value
    if hasattr(value, "dtype") and value.dtype == np.uint32 and getattr(value, "ndim", 0) >= 1:
        if value.ndim != 1:
            raise InputError(f"{name} must be ONE PRNG key, got a batch of shape {tuple(value.shape[:-1])}", _KEY_HINT)
        return value  # a raw (legacy) key
    raise InputError(f"{name} must be a PRNG key, got {_describe(value)}", _KEY_HINT)


def as_key(name: str, value):
    """``value`` as ONE PRNG key: an integer seed through ``jax.random.key``, a key as :func:`check_key` takes it.

    A seed is any integer: a Python ``int``, a NumPy integer scalar or a 0-d
    integer array, within a signed 64-bit integer's range. ``bool`` is not a seed.

    Raises
    ------
    InputError
        A float, bool, string, batch of keys or anything else that is not a key
        or a seed, naming ``name``, with the hint ``jax.random.key(seed)``.
    """
    is_int_array = (hasattr(value, "dtype") and getattr(value, "ndim", None) == 0 and not _is_typed_key(value)
                    and np.issubdtype(value.dtype, np.integer))  # numpy cannot read a typed key's dtype
    if (isinstance(value, (int, np.integer)) and not isinstance(value, bool)) or is_int_array:
        if _is_tracer(value):
            return jax.random.key(value)
        seed = int(value)
        if not -SEED_MAX - 1 <= seed <= SEED_MAX:
            raise InputError(f"{name}: an integer seed must fit in a signed 64-bit integer, got {seed}", _KEY_HINT)
        return jax.random.key(seed)
    if _is_typed_key(value) or (hasattr(value, "dtype") and value.dtype == np.uint32 and getattr(value, "ndim", 0) >= 1):
        return check_key(name, value)
    raise InputError(f"{name} must be a PRNG key or an integer seed, got {_describe(value)}", _KEY_HINT)
