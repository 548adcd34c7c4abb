"""Registries of targets and samplers by name, with validated parameters.

``TARGETS.get("gmm", dim=2)`` builds a target; ``SAMPLERS`` maps a sampler
name to a builder used by configs and the CLI. Parameters are checked against
the factory's signature before anything is built: an unknown or missing
parameter, or one of the wrong type, is a one-line :class:`ConfigError` naming it.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from typing import Any, Callable


class ConfigError(ValueError):
    """A bad configuration: unknown key, wrong type, missing value or file."""


def _check_type(where: str, name: str, value: Any, annotation: Any) -> Any:
    if annotation is inspect.Parameter.empty or annotation is Any:
        return value
    origin = typing.get_origin(annotation)
    allowed = typing.get_args(annotation) if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)) else (annotation,)
    for a in allowed:
        if a is type(None) and value is None:
            return value
        base = typing.get_origin(a) or a
        if base is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if base is int and isinstance(value, int) and not isinstance(value, bool):
            return value
        if base in (list, tuple) and isinstance(value, (list, tuple)):
            return value
        if base in (str, bool, dict) and isinstance(value, base):
            return value
        if base not in (float, int, list, tuple, str, bool, dict, type(None)) and isinstance(base, type) and isinstance(value, base):
            return value
    names = " | ".join(getattr(a, "__name__", str(a)) for a in allowed)
    raise ConfigError(f"{where}: parameter {name!r} must be {names}, got {value!r}")


@dataclasses.dataclass
class Entry:
    name: str
    factory: Callable
    summary: str
    kind: str


class Registry:
    """A name -> factory table. Factories are registered with :meth:`register`."""

    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, Entry] = {}

    def register(self, name: str, summary: str | None = None):
        def deco(factory):
            if name in self._entries:
                raise ValueError(f"{self.kind} {name!r} registered twice")
            doc = (factory.__doc__ or "").strip().splitlines()
            self._entries[name] = Entry(name, factory, summary or (doc[0] if doc else ""), self.kind)
            return factory

        return deco

    def names(self) -> list[str]:
        return sorted(self._entries)

    def entry(self, name: str) -> Entry:
        if name not in self._entries:
            raise ConfigError(f"unknown {self.kind} {name!r}; known: {', '.join(self.names())}")
        return self._entries[name]

    def validate(self, name: str, params: dict, skip: tuple[str, ...] = ()) -> dict:
        """Check ``params`` against the factory's signature; return them coerced."""
        factory = self.entry(name).factory
        sig = inspect.signature(factory)
        hints = typing.get_type_hints(factory) if not inspect.isclass(factory) else typing.get_type_hints(factory.__init__)
        where = f"{self.kind} {name!r}"
        accepted = {p.name: p for p in sig.parameters.values() if p.name not in skip and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        out = {}
        for key, value in params.items():
            if key not in accepted:
                raise ConfigError(f"{where}: unknown parameter {key!r}; accepted: {', '.join(accepted) or 'none'}")
            out[key] = _check_type(where, key, value, hints.get(key, inspect.Parameter.empty))
        for pname, p in accepted.items():
            if p.default is inspect.Parameter.empty and pname not in out:
                raise ConfigError(f"{where}: missing required parameter {pname!r}")
        return out

    def get(self, name: str, *args, **params):
        """Build ``name`` with validated ``params``."""
        skip = tuple(list(inspect.signature(self.entry(name).factory).parameters)[: len(args)])
        return self.entry(name).factory(*args, **self.validate(name, params, skip))


TARGETS = Registry("target")
SAMPLERS = Registry("sampler")
EXPERIMENTS = Registry("experiment kind")


def validate_dataclass(where: str, params: dict, cls):
    """Build dataclass ``cls`` from ``params``, with a :class:`ConfigError` naming any bad key.

    Used by experiment kinds whose hyper-parameters are a dataclass (for example
    a learned sampler's settings): unknown keys, wrong types and missing
    required fields are one-line errors.
    """
    fields = {f.name: f for f in dataclasses.fields(cls)}
    hints = typing.get_type_hints(cls)
    out = {}
    for key, value in (params or {}).items():
        if key not in fields:
            raise ConfigError(f"{where}: unknown parameter {key!r}; accepted: {', '.join(fields)}")
        out[key] = _check_type(where, key, value, hints.get(key, inspect.Parameter.empty))
    for name, f in fields.items():
        if name not in out and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ConfigError(f"{where}: missing required parameter {name!r}")
    return cls(**out)
