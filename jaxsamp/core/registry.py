"""Registries of targets, samplers and experiment kinds by name, with validated parameters.

``TARGETS.get("gmm", dim=2)`` builds a target; ``SAMPLERS`` maps a sampler
name to a builder ``factory(target, **params) -> Kernel`` used by configs, the
CLI and :func:`jaxsamp.sample`; ``EXPERIMENTS`` maps an experiment kind to its
runner. The library's sampler factories return a
:func:`~jaxsamp.core.compiled.cached_kernel` of the target's log density (its
data traced, the parameters and the target's shapes and domain static), so a
second build with new data of the same shapes compiles nothing; a factory that
returns a kernel of closures still works, and compiles again on every build. The registries
live in the core so that the library layers (targets, kernels, learned
samplers) register themselves without importing the experiment layer above
them.

Parameters are checked against the factory's signature before anything is
built (:func:`jaxsamp.core.validation.check_parameters`): an unknown or missing
parameter, one of the wrong type, or one outside the range its annotation
declares is a one-line :class:`~jaxsamp.core.errors.ConfigError` naming it.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Callable, NamedTuple

from jaxsamp.core.errors import ConfigError, InputError
from jaxsamp.core.target import as_target
from jaxsamp.core.validation import check_parameters


@dataclasses.dataclass
class Entry:
    """A registered factory: its name, one-line summary, and facts about it (``meta``)."""

    name: str
    factory: Callable
    summary: str
    kind: str
    meta: dict = dataclasses.field(default_factory=dict)


class Registry:
    """A name -> factory table. Factories are registered with :meth:`register`."""

    def __init__(self, kind: str, first_argument: Callable | None = None):
        self.kind = kind
        self._entries: dict[str, Entry] = {}
        self._first_argument = first_argument  # applied to a factory's first positional argument

    def register(self, name: str, summary: str | None = None, **meta):
        """Register a factory under ``name``; ``meta`` holds facts about it (e.g. ``metropolis=True``)."""

        def deco(factory):
            if name in self._entries:
                raise ValueError(f"{self.kind} {name!r} registered twice")
            doc = (factory.__doc__ or "").strip().splitlines()
            self._entries[name] = Entry(name, factory, summary or (doc[0] if doc else ""), self.kind, meta)
            return factory

        return deco

    def names(self) -> list[str]:
        return sorted(self._entries)

    def entry(self, name: str) -> Entry:
        if name not in self._entries:
            raise ConfigError(f"unknown {self.kind} {name!r}; known: {', '.join(self.names())}")
        return self._entries[name]

    def validate(self, name: str, params: dict, skip: tuple[str, ...] = ()) -> dict:
        """Check ``params`` against the factory's signature (names, types, ranges); return them coerced."""
        return check_parameters(self.entry(name).factory, params, f"{self.kind} {name!r}", ConfigError, skip)

    def get(self, name: str, *args, **params):
        """Build ``name`` with validated ``params``; an invalid value the factory itself finds is a ConfigError too."""
        skip = tuple(list(inspect.signature(self.entry(name).factory).parameters)[: len(args)])
        checked = self.validate(name, params, skip)
        if args and self._first_argument is not None:
            args = (self._first_argument(args[0]), *args[1:])
        try:
            return self.entry(name).factory(*args, **checked)
        except InputError as err:
            if isinstance(err, ConfigError):
                raise
            raise ConfigError(f"{self.kind} {name!r}: {err.message}", err.hint) from None


class ExperimentKind(NamedTuple):
    """What ``EXPERIMENTS`` holds: an experiment kind's check and its run.

    Attributes
    ----------
    check : callable
        ``check(cfg, target) -> checked``: validates the kind's settings against
        the target without doing any work or writing any file; raises
        :class:`ConfigError`. Its result is handed to ``run``.
    run : callable
        ``run(cfg, target, checked, run_dir) -> metrics``; a ``"warnings"`` entry
        (a list of strings) reports a run that finished but did not sample well.
    """

    check: Callable[[Any, Any], Any]
    run: Callable[[Any, Any, Any, Any], dict]


TARGETS = Registry("target")
SAMPLERS = Registry("sampler", first_argument=as_target)  # a plain log-density function is a target
EXPERIMENTS = Registry("experiment kind")
#: Learned methods for :func:`jaxsamp.fit`: ``factory(target, settings, batch_size)`` returns a Trainer with
#: ``sample(state, key, n)`` and ``evaluate(state, key, n)``; ``meta`` holds its ``settings`` dataclass and
#: default ``batch_size``, and ``judge_progress``: whether its loss is a fixed objective whose failure to
#: decrease means trouble (registered in :mod:`jaxsamp.learned.methods`).
LEARNED = Registry("learned method")


def validate_dataclass(where: str, params: dict, cls):
    """Build settings dataclass ``cls`` from ``params``, with a :class:`ConfigError` naming any bad key.

    Used by experiment kinds whose hyper-parameters are a dataclass (for example
    a learned sampler's settings): unknown keys, wrong types, values out of
    their annotated range and missing required fields are one-line errors. A key
    that ``cls.RENAMED`` (a class variable: old name -> new name) lists is
    refused with its new name.
    """
    fields = {f.name: f for f in dataclasses.fields(cls)}
    renamed = getattr(cls, "RENAMED", {})
    for key in params or {}:
        if key not in fields:
            now = f" (renamed {renamed[key]!r})" if key in renamed else ""
            raise ConfigError(f"{where}: unknown parameter {key!r}{now}; accepted: {', '.join(fields)}")
    for name, f in fields.items():
        if name not in (params or {}) and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ConfigError(f"{where}: missing required parameter {name!r}")
    try:
        return cls(**(params or {}))
    except InputError as err:
        raise ConfigError(f"{where}: {err.message}", err.hint) from None
    except TypeError as err:  # a settings class without field checks given a wrong type
        raise ConfigError(f"{where}: {err}") from None


def build_learned_sampler(cfg, kind: str, samplers: dict, **kwargs):
    """The sampler of ``cfg.sampler`` for experiment kind ``kind``, every problem a one-line :class:`ConfigError`.

    ``samplers`` maps each accepted ``sampler.name`` to ``(build, settings_class)``;
    ``build(settings, **kwargs)`` constructs the sampler (its :class:`InputError`,
    say a target it cannot handle, becomes a ConfigError naming the sampler).
    """
    name = cfg.sampler.name
    if name not in samplers:
        raise ConfigError(f"experiment kind {kind!r} takes sampler name {' or '.join(samplers)}, got {name!r}")
    build, settings_class = samplers[name]
    where = f"sampler {name!r}"
    settings = validate_dataclass(where, cfg.sampler.params, settings_class)
    try:
        return build(settings, **kwargs)
    except InputError as err:
        raise ConfigError(f"{where}: {err.message}", err.hint) from None

