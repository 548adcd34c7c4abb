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

import dataclasses
from typing import Any

import chex
import jax
import jax.numpy as jnp


class ReferenceUnavailableError(LookupError):
    """Raised when a target has no exact sampler or reference set."""


@dataclasses.dataclass(frozen=True)
class Domain:
    """The state space of a target.

    Attributes
    ----------
    kind : {"real", "spin", "categorical"}
        ``real``: R^d (or particles); ``spin``: values in {-1, +1};
        ``categorical``: integers in ``{0, ..., num_categories - 1}``.
    num_categories : int or None
        ``q`` for categorical domains.
    """

    kind: str
    num_categories: int | None = None

    def __post_init__(self):
        if self.kind not in ("real", "spin", "categorical"):
            raise ValueError(f"unknown domain kind {self.kind!r}")
        if (self.kind == "categorical") != (self.num_categories is not None):
            raise ValueError("num_categories is given exactly for categorical domains")

    @property
    def is_discrete(self) -> bool:
        return self.kind != "real"


REAL = Domain("real")
SPIN = Domain("spin")


def categorical(q: int) -> Domain:
    """The domain ``{0, ..., q - 1}`` per site."""
    return Domain("categorical", int(q))


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

    # -- density ---------------------------------------------------------
    def log_prob(self, x: jax.Array) -> jax.Array:
        """Unnormalised log density of ONE state ``x`` of shape ``event_shape``.

        Raises
        ------
        AssertionError
            (chex, at trace time) when ``x`` does not have ``event_shape``.
        """
        chex.assert_shape(
            x,
            self.event_shape,
            custom_message=f"{self.name}.log_prob takes one state of shape "
            f"{self.event_shape}; batch with jax.vmap",
        )
        if self.domain.kind == "real":
            chex.assert_type(x, float)
        return self._log_prob(x)

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
        """``n`` exact samples, shape ``(n, *event_shape)``."""
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
            raise ValueError(
                f"base event shape {base.event_shape} != target {target.event_shape}"
            )
        if base.log_Z is None:
            raise ValueError(f"the base {base.name!r} of a path needs a known log_Z")
        self.base, self.target, self.log_Z0 = base, target, base.log_Z

    def log_prob(self, x, t):
        return (1.0 - t) * self.base.log_prob(x) + t * self.target.log_prob(x)

    def dlog_prob_dt(self, x, t):
        return self.target.log_prob(x) - self.base.log_prob(x)
