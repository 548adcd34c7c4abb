"""The ``Target`` and ``AnnealingPath`` interfaces.

A target is an immutable object describing an unnormalised density over one
state. ``log_prob`` takes ONE state (batch with ``jax.vmap``) and checks its
shape with chex at trace time, so a wrong event shape is a clear error before
anything runs. When they are known a target also carries its exact ``log_Z``,
an exact sampler ``sample(key, n)`` and a reference sample set ``reference()``.

An :class:`AnnealingPath` is a family of unnormalised densities ``pi_t``,
``t in [0, 1]``, from a tractable base (``t = 0``) to the target (``t = 1``),
with ``log_prob(x, t)`` and its t-derivative, which is what AIS/SMC weights and
the LEAPS/Jarzynski integrand need.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from typing import Any, Callable

import chex
import jax
import jax.numpy as jnp
import numpy as np
from jax.tree_util import Partial

from jaxsamp.core.compiled import strong_types
from jaxsamp.core.errors import InputError


class ReferenceUnavailableError(LookupError):
    """Raised when a target has no exact sampler or reference set."""


@dataclasses.dataclass(frozen=True)
class Domain:
    """The state space of a target.

    Attributes
    ----------
    kind : {"real", "spin", "categorical", "sphere"}
        ``real``: R^d (or particles); ``spin``: values in {-1, +1};
        ``categorical``: integers in ``{0, ..., num_categories - 1}``;
        ``sphere``: unit vectors of R^d, the sphere ``S^{d-1}``.
    num_categories : int or None
        ``q`` for categorical domains.
    ambient_dim : int or None
        ``d`` for the sphere ``S^{d-1}``.
    """

    kind: str
    num_categories: int | None = None
    ambient_dim: int | None = None

    def __post_init__(self):
        if self.kind not in ("real", "spin", "categorical", "sphere"):
            raise InputError(f"unknown domain kind {self.kind!r}")
        if (self.kind == "categorical") != (self.num_categories is not None):
            raise InputError("num_categories is given exactly for categorical domains")
        if (self.kind == "sphere") != (self.ambient_dim is not None):
            raise InputError("ambient_dim is given exactly for sphere domains")

    @property
    def is_discrete(self) -> bool:
        return self.kind in ("spin", "categorical")

    def contains(self, x) -> jax.Array:
        """Elementwise: is each value of ``x`` a value of this domain (finite; +-1; an integer in [0, q))?"""
        x = jnp.asarray(x)
        if self.kind == "spin":
            return jnp.abs(x) == 1
        if self.kind == "categorical":
            whole = x == jnp.round(x) if jnp.issubdtype(x.dtype, jnp.inexact) else True
            return whole & (x >= 0) & (x < self.num_categories)
        return jnp.isfinite(x)

    def describe_values(self) -> str:
        values = {"spin": "+-1", "categorical": f"integers in [0, {self.num_categories})",
                  "sphere": f"finite numbers (unit vectors of R^{self.ambient_dim})"}
        return values.get(self.kind, "finite numbers")


REAL = Domain("real")
SPIN = Domain("spin")


def categorical(q: int) -> Domain:
    """The domain ``{0, ..., q - 1}`` per site."""
    return Domain("categorical", int(q))


def sphere(d: int) -> Domain:
    """The unit sphere ``S^{d-1}`` of R^d (states are unit vectors; the density is w.r.t. surface measure)."""
    if int(d) < 2:
        raise InputError(f"the sphere S^(d-1) needs d >= 2, got {d}")
    return Domain("sphere", ambient_dim=int(d))


def _checked_sample(sample: Callable) -> Callable:
    """``sample(key, n)`` with ``key`` a PRNG key or an integer seed and ``n`` a non-negative integer, else InputError."""

    @functools.wraps(sample)
    def checked(self, key, n, *args, **kwargs):
        from jaxsamp.core.validation import as_key, check_int

        return sample(self, as_key("key", key), check_int("n", n, ge=0), *args, **kwargs)

    return checked


class Target:
    """Base class of every target density.

    Subclasses set ``name``, ``event_shape``, ``domain`` and, when known,
    ``log_Z``; they implement :meth:`_log_prob` for one state and, when exact
    samples or reference sets exist, :meth:`sample` / :meth:`reference`.
    """

    name: str = "target"
    event_shape: tuple[int, ...] = ()
    domain: Domain = REAL
    log_Z: float | None = None
    check: bool = True
    """Check states of discrete domains in :meth:`log_prob` (see there); :meth:`with_checks` turns it off."""

    def __init_subclass__(cls, **kwargs):
        """A subclass's own ``sample`` gets the base class's argument checks (:func:`_checked_sample`)."""
        super().__init_subclass__(**kwargs)
        if "sample" in cls.__dict__:
            cls.sample = _checked_sample(cls.__dict__["sample"])

    # -- density ---------------------------------------------------------
    def log_prob(self, x: jax.Array) -> jax.Array:
        """Unnormalised log density of ONE state ``x`` of shape ``event_shape``.

        With ``check`` on (the default) a state of a discrete domain that holds
        a value outside the domain (a spin of 0.5, a Potts colour of 7) raises
        :class:`~jaxsamp.core.errors.InputError` when ``x`` is a concrete array,
        and gives a NaN log density when it is traced (inside ``jit``/``vmap``),
        which :func:`~jaxsamp.core.guard_finite` and the run's health checks
        report. The check costs one comparison per site.

        A Python list, tuple or number is converted with ``jnp.asarray`` (to
        the default float dtype on real domains), inside ``jit``/``vmap`` too.

        Raises
        ------
        AssertionError
            (chex, at trace time) when ``x`` does not have ``event_shape``, or
            is an integer array on a real domain.
        InputError
            A concrete state outside a discrete domain (with ``check`` on).
        """
        if isinstance(x, (list, tuple, int, float)):
            x = jnp.asarray(x, dtype=None if self.domain.is_discrete else jnp.result_type(float))
        chex.assert_shape(
            x,
            self.event_shape,
            custom_message=f"{self.name}.log_prob takes one state of shape "
            f"{self.event_shape}; batch with jax.vmap",
        )
        if not self.domain.is_discrete:
            chex.assert_type(x, float, custom_message=f"{self.name}.log_prob takes a float state; pass x.astype(float)")
        if not (self.check and self.domain.is_discrete):
            return self._log_prob(x)
        if not isinstance(x, jax.core.Tracer):
            self.check_states(x)
        lp = self._log_prob(x)
        return jnp.where(jnp.all(self.domain.contains(x)), lp, jnp.nan)

    @property
    def log_density(self) -> Callable:
        """:meth:`log_prob` as compiled code takes it: a function of one state, or a :class:`jax.tree_util.Partial`.

        A target whose density depends on data (a numpyro model's, a function's
        with ``data``) gives a ``Partial`` of a function shared by every data set
        of the same structure, with the data as its leaves: the kernels, warm-up
        and driver take it as a traced argument and compile once for all such
        data sets (:mod:`jaxsamp.core.compiled`). By default, the bound method
        :meth:`log_prob` (compiled once per target object).
        """
        return self.log_prob

    def check_states(self, x) -> None:
        """Check one state or a batch (leading axes) on the host: shape, and values in the domain.

        Raises
        ------
        InputError
            Naming the first bad state and what its values must be.
        """
        arr = np.asarray(x)
        k = len(self.event_shape)
        if arr.shape[arr.ndim - k:] != tuple(self.event_shape) or arr.ndim < k:
            raise InputError(f"{self.name}: states must have shape (..., {', '.join(map(str, self.event_shape))}), got {arr.shape}")
        if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
            raise InputError(f"{self.name}: states must be numeric, got dtype {arr.dtype}")
        ok = np.asarray(self.domain.contains(arr)).reshape(*arr.shape[: arr.ndim - k], -1).all(axis=-1)
        if not np.all(ok):
            first = tuple(int(i) for i in np.argwhere(~ok)[0]) if ok.ndim else ()
            bad = arr[first] if first else arr
            values = np.unique(bad[~np.asarray(self.domain.contains(bad))])[:3].tolist()
            where = f" (state {first})" if first else ""
            raise InputError(
                f"{self.name}: {int(np.sum(~ok))} state(s) hold values outside the domain{where}, e.g. {values}; "
                f"values must be {self.domain.describe_values()}"
            )

    def with_checks(self, enabled: bool) -> "Target":
        """A copy of this target with :attr:`check` set to ``enabled`` (off: no per-call state checks)."""
        other = copy.copy(self)
        other.check = bool(enabled)
        return other

    def _log_prob(self, x: jax.Array) -> jax.Array:  # pragma: no cover - abstract
        raise TypeError(f"{type(self).__name__} must implement _log_prob")

    def score(self, x: jax.Array) -> jax.Array:
        """Gradient of :meth:`log_prob` at one state (real domains)."""
        return jax.grad(self.log_prob)(x)

    # -- references ------------------------------------------------------
    @property
    def has_exact_samples(self) -> bool:
        return type(self).sample is not Target.sample

    def sample(self, key: jax.Array, n: int) -> jax.Array:
        """``n`` exact samples, shape ``(n, *event_shape)``.

        ``key`` is a PRNG key or an integer seed; a key of another kind, or an
        ``n`` that is not a non-negative integer, raises
        :class:`~jaxsamp.core.errors.InputError` (in every subclass: the check
        is added to a subclass's own ``sample``).
        """
        raise ReferenceUnavailableError(f"target {self.name!r} has no exact sampler")

    def reference(self) -> Any:
        """A reference sample set (for targets without exact samples)."""
        raise ReferenceUnavailableError(f"target {self.name!r} has no reference sample set")

    def describe(self) -> dict:
        """What is exact for this target: used by ``jaxsamp list`` and the README."""
        return {
            "event_shape": list(self.event_shape),
            "domain": self.domain.kind,
            "log_Z": self.log_Z,
            "exact_samples": self.has_exact_samples,
        }

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, event_shape={self.event_shape})"


class AnnealingPath:
    """A family of unnormalised densities ``pi_t`` from a base (t=0) to a target (t=1).

    Subclasses implement :meth:`log_prob`; :meth:`dlog_prob_dt` defaults to a
    forward-mode derivative in ``t`` and should be overridden by closed forms.

    Attributes
    ----------
    base, target : Target
    log_Z0 : float
        Log normalising constant of ``exp(log_prob(., 0))``.
    """

    base: Target
    target: Target
    log_Z0: float

    def log_prob(self, x: jax.Array, t: jax.Array) -> jax.Array:  # pragma: no cover
        raise TypeError(f"{type(self).__name__} must implement log_prob")

    def dlog_prob_dt(self, x: jax.Array, t: jax.Array) -> jax.Array:
        """``d/dt log pi_t(x)`` (default: ``jax.jvp`` in ``t``)."""
        t = jnp.asarray(t, dtype=jnp.result_type(float))
        return jax.jvp(lambda s: self.log_prob(x, s), (t,), (jnp.ones_like(t),))[1]

    def at(self, t: float) -> "Target":
        """The member ``pi_t`` as a :class:`Target` (for building kernels)."""
        return _PathMember(self, t)


class _PathMember(Target):
    def __init__(self, path: AnnealingPath, t):
        self.path, self.t = path, t
        self.name = f"{path.target.name}@t"
        self.event_shape = path.target.event_shape
        self.domain = path.target.domain

    def _log_prob(self, x):
        return self.path.log_prob(x, self.t)


class GeometricPath(AnnealingPath):
    """``log pi_t = (1 - t) log p_base + t log p_target`` (geometric annealing).

    ``d/dt log pi_t = log p_target - log p_base``. Used by AIS/SMC (Neal 2001,
    "Annealed importance sampling", eq. 1).
    """

    def __init__(self, base: Target, target: Target):
        if base.event_shape != target.event_shape:
            raise InputError(
                f"base event shape {base.event_shape} != target {target.event_shape}"
            )
        if base.log_Z is None:
            raise InputError(f"the base {base.name!r} of a path needs a known log_Z")
        self.base, self.target, self.log_Z0 = base, target, base.log_Z

    def log_prob(self, x, t):
        return (1.0 - t) * self.base.log_prob(x) + t * self.target.log_prob(x)

    def dlog_prob_dt(self, x, t):
        return self.target.log_prob(x) - self.base.log_prob(x)


def _state_last(fn: Callable, *data_and_state):
    """``fn(state, *data)`` called as ``_state_last(fn, *data, state)``: what a ``Partial`` binding the data calls."""
    *data, x = data_and_state
    return fn(x, *data)


class FunctionTarget(Target):
    """``log_prob`` given by a user function of one real-valued state (and of its ``data``).

    ``event_shape`` is ``None`` when unknown (a function handed to a sampler
    without an example state): ``log_prob`` then skips its shape check, and what
    needs the shape (a mass matrix, a tuner's starting point) says so. Nothing
    about such a target is exact: no ``log_Z``, no exact samples, no reference.

    ``log_prob(x) = log_prob_fn(x, *data)``. :attr:`log_density` binds the data
    as the leaves of a :class:`jax.tree_util.Partial` whose function is the same
    for every data set, so compiled code that takes it (``jaxsamp.sample``'s
    warm-up, sampler and checks) compiles once per ``log_prob_fn`` and data
    shapes, and new data values reuse it. What ``log_prob_fn`` closes over is a
    constant of its compilation: new values there need a new function, and
    compile again.
    """

    def __init__(self, log_prob_fn: Callable, event_shape: tuple[int, ...] | None, name: str | None = None,
                 data: tuple = ()):
        if not callable(log_prob_fn):
            raise InputError(f"log_prob_fn must be a function of one state, got {type(log_prob_fn).__name__}")
        self._fn, self._data = log_prob_fn, tuple(data)
        self.event_shape = None if event_shape is None else tuple(int(n) for n in event_shape)
        self.name = name or getattr(log_prob_fn, "__name__", "log_prob")

    def log_prob(self, x):
        if self.event_shape is None:
            return self._log_prob(x)
        return super().log_prob(x)

    @property
    def log_density(self) -> Partial:
        return Partial(_state_last, Partial(self._fn), *self._data)

    def _log_prob(self, x):
        return self._fn(x, *self._data)


def from_function(log_prob_fn: Callable, example_position, name: str | None = None, data: tuple = ()) -> FunctionTarget:
    """Wrap ``log_prob_fn`` as a Target whose event shape is that of ``example_position`` (one state).

    The function is evaluated abstractly (``jax.eval_shape``) at the example to
    check that it returns one scalar.

    Parameters
    ----------
    log_prob_fn : callable
        ``log_prob_fn(x, *data)``: the log density of one state.
    example_position : array
        One state.
    name : str, optional
    data : tuple of PyTrees of arrays
        The function's other arguments, traced in compiled code (see
        :class:`FunctionTarget`; weakly typed JAX arrays are made strong).

    Raises
    ------
    InputError
        When ``log_prob_fn`` is not a function, the example is not a float
        array, ``data`` holds something other than arrays and numbers, or the
        function cannot be called on one state and the data (it takes other
        arguments) or does not return a scalar there.
    """
    if not callable(log_prob_fn):
        raise InputError(f"log_prob_fn must be a function of one state, got {type(log_prob_fn).__name__}")
    example = example_position if isinstance(example_position, jax.Array) else np.asarray(example_position)
    if not jnp.issubdtype(example.dtype, jnp.floating):
        raise InputError(f"the example position must be a float array, got dtype {example.dtype}")
    if not isinstance(data, (tuple, list)):
        raise InputError(f"data must be a tuple of the function's arguments after the state, got {type(data).__name__}")
    for path, leaf in jax.tree_util.tree_flatten_with_path(tuple(data))[0]:
        if not (isinstance(leaf, (jax.Array, np.ndarray, np.generic, int, float))
                and np.dtype(getattr(leaf, "dtype", type(leaf))).kind in "biuf"):
            raise InputError(
                f"the data of a log density are traced arrays; data{jax.tree_util.keystr(path)} is a {type(leaf).__name__}",
                "pass arrays and numbers; fix other settings in the function (functools.partial or a closure)",
            )
    data = strong_types(tuple(data))
    try:
        out = jax.eval_shape(log_prob_fn, jax.ShapeDtypeStruct(example.shape, example.dtype), *data)
    except TypeError as err:
        what = f"one state of shape {example.shape}" + (f" and {len(data)} data argument(s)" if data else "")
        raise InputError(
            f"log_prob_fn {getattr(log_prob_fn, '__name__', '')} cannot be called on {what}: "
            f"{' '.join(str(err).split())}",
            "a log density is log_prob_fn(state, *data): its data come as model_args (jaxsamp.sample) or data= "
            "(from_function), after the state",
        ) from err
    if getattr(out, "shape", None) != ():
        raise InputError(
            f"log_prob_fn must return one scalar for one state of shape {example.shape}, "
            f"got {getattr(out, 'shape', type(out).__name__)}",
            "batch states with jax.vmap outside the function",
        )
    return FunctionTarget(log_prob_fn, example.shape, name, data)


def as_target(target_or_fn, example_position=None) -> Target:
    """A Target as is; a plain log-density function wrapped (shape from ``example_position``, else unknown).

    Every registry sampler runs this on its target argument, so
    ``SAMPLERS.get("mala", log_prob, step_size=0.1)`` works on a plain function.

    Raises
    ------
    InputError
        Something that is neither a Target nor a function.
    """
    if isinstance(target_or_fn, Target):
        return target_or_fn
    if callable(target_or_fn):
        if example_position is None:
            return FunctionTarget(target_or_fn, None)
        return from_function(target_or_fn, example_position)
    raise InputError(f"expected a Target or a log-density function, got {type(target_or_fn).__name__}")
