"""The experiment config schema: YAML -> typed dataclasses via OmegaConf structured configs.

A config names a target and a sampler by registry name, with their parameters,
plus the run settings. Loading merges the YAML and any ``key=value`` overrides
into the structured schema and checks every run setting's range (the
``Annotated`` types of :mod:`jaxsamp.core.validation`), so an unknown key, a
wrong type or range, a missing file or a refused interpolation is a one-line
:class:`~jaxsamp.core.errors.ConfigError` naming it, raised before anything is
written.

Two things never reach the run folder: a ``name`` that is not a single path
component (it is sanitised, so ``../../x`` cannot write outside ``out_dir``)
and environment variables (``${oc.env:...}`` is refused, so a secret cannot
land in the saved ``config.yaml``).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Annotated, Any, Optional

import yaml
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from jaxsamp.core.errors import ConfigError
from jaxsamp.core.fingerprint import of_settings
from jaxsamp.core.validation import (
    Interval,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    Seed,
    check_fields,
)
from jaxsamp.experiments.shipped import YAML_SUFFIXES, resolve_config, shipped_configs


@dataclasses.dataclass
class Component:
    """A registry entry by name with its parameters."""

    name: str = "???"
    params: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class RunSettings:
    """How the driver runs: chains/walkers, steps, chunking, checkpoints."""

    num_chains: PositiveInt = 256
    num_steps: PositiveInt = 1000
    num_warmup: NonNegativeInt = 0
    burn_in: NonNegativeInt = 0
    thin: PositiveInt = 1
    init_scale: PositiveFloat = 1.0
    chunk: Optional[PositiveInt] = None
    checkpoint_every: Optional[PositiveInt] = None
    progress: bool = True
    shard: bool = False  # chains / particles / members on a mesh of every device; a learned kind's batch
    num_eval_samples: Annotated[int, Interval(ge=2)] = 2000
    out_dir: str = "runs"


@dataclasses.dataclass
class EvaluateSettings:
    """How a learned kind scores the trained sampler, beside its own evaluation.

    ``smc``: ``true`` or a mapping of :meth:`jaxsamp.Fitted.smc`'s options (``resample_threshold``,
    ``resampler``, ``moves``, ``num_moves``, ``segment_length``) adds the figures of a resampled SMC
    run of ``run.num_eval_samples`` particles along the trained sampler's path
    (``Fitted.evaluate(key, n, smc=...)``), each named ``smc_<figure>``, to ``metrics.json``: for a
    sampler with a path (LEAPS, the curves, SCLD, CMCD). Null (the default): no SMC run.
    """

    smc: Any = None


@dataclasses.dataclass
class ExperimentConfig:
    """One experiment: ``jaxsamp run <name or path.yaml> [key=value ...]``."""

    name: str = "???"
    seed: Seed = 0
    kind: str = "mcmc"
    target: Component = dataclasses.field(default_factory=Component)
    sampler: Component = dataclasses.field(default_factory=Component)
    run: RunSettings = dataclasses.field(default_factory=RunSettings)
    evaluate: EvaluateSettings = dataclasses.field(default_factory=EvaluateSettings)

    def identity(self) -> dict:
        """What determines a run's numbers: seed, kind, target, sampler, chains, warm-up, thinning, init scale.

        Run length, chunking, checkpoint spacing, progress, sharding, the output
        folder and the evaluation (its size, ``evaluate``) do not change the sampled numbers, so a
        resumed run may change them. The driver mixes these settings into the
        fingerprint it derives from the computation and the initial state
        (:func:`jaxsamp.run`); a checkpoint written under other settings belongs to
        another run and is refused, naming the settings that differ.
        """
        return {
            "seed": self.seed, "kind": self.kind,
            "target": dataclasses.asdict(self.target), "sampler": dataclasses.asdict(self.sampler),
            "run": {k: getattr(self.run, k) for k in ("num_chains", "num_warmup", "thin", "init_scale")},
        }

    def fingerprint(self) -> str:
        """SHA-256 of :meth:`identity` (:func:`jaxsamp.core.fingerprint.of_settings`)."""
        return of_settings(self.identity())

    def driver_options(self, run_dir: Path, folder: str = "checkpoints") -> dict:
        """The keyword arguments every experiment passes to :func:`jaxsamp.run` (checkpoints in ``run_dir/folder``)."""
        return {
            "chunk": self.run.chunk,
            "progress": self.run.progress,
            "checkpoint": Path(run_dir) / folder,
            "checkpoint_every": self.run.checkpoint_every,
            "identity": self.identity(),
            "desc": self.name,
        }



_SAFE_NAME = re.compile(r"[^A-Za-z0-9._+-]")


def safe_run_name(name: str) -> str:
    """``name`` as one path component: other characters become ``_``, leading dots are dropped.

    ``"../../x"`` becomes ``"_.._x"``, so a run can never write outside its ``out_dir``.
    """
    cleaned = _SAFE_NAME.sub("_", name).lstrip(".")
    if not cleaned:
        raise ConfigError(f"name {name!r} has no usable characters for a folder name (use letters, digits, . _ + -)")
    return cleaned


def _one_line(err: OmegaConfBaseException) -> str:
    msg = str(err).strip().splitlines()
    head = msg[0] if msg else type(err).__name__
    key = getattr(err, "full_key", None)
    return f"{head} (key: {key})" if key and key not in head else head


def _parse_override(item: str) -> tuple[str, Any]:
    key, _, raw = item.partition("=")
    if "=" not in item or not key.strip():
        raise ConfigError(f"override {item!r} is not of the form key=value")
    if key.strip().startswith("~"):
        raise ConfigError(f"override {item!r}: removing a key is not supported", "set it to another value instead")
    key = key.strip().lstrip("+")  # Hydra's "+key=value" (add a key): a sampler's params are added without it
    if not re.fullmatch(r"[A-Za-z_][\w-]*(\.[A-Za-z_0-9][\w-]*)*", key):
        raise ConfigError(f"override {item!r}: {key!r} is not a dotted key such as run.num_chains")
    try:
        node = OmegaConf.create({"v": raw} if raw == "" else f"v: {raw}")
    except yaml.YAMLError as err:  # "a: b", "[1, 2", a "!!python/..." tag (the safe loader has no constructor for it)
        why = " ".join(str(getattr(err, "problem", None) or err).split())
        raise ConfigError(
            f"override {item!r}: the value {raw!r} cannot be read as YAML ({why})",
            "give a number, a word, a [list] or a {mapping}; quote text holding ': ' or '!!', e.g. name='\"a: b\"'",
        ) from None
    return key.strip(), OmegaConf.to_container(node, resolve=False)["v"]  # interpolations stay unresolved


def _refuse_env(node: Any, key: str = "") -> None:
    """Refuse ``${oc.env:...}`` anywhere in a config: its value would be saved in the run folder."""
    if isinstance(node, dict):
        for k, v in node.items():
            _refuse_env(v, f"{key}.{k}" if key else str(k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            _refuse_env(v, f"{key}[{i}]")
    elif isinstance(node, str) and "oc.env" in node:
        raise ConfigError(
            f"{key}: environment interpolation {node!r} is not allowed",
            "its value would be written to the run folder's config.yaml; pass the value as a key=value override",
        )


def check_config(cfg: ExperimentConfig, where: str = "config") -> ExperimentConfig:
    """Check every run setting's range and sanitise the run name; return ``cfg``."""
    check_fields(cfg.run, where, ConfigError, prefix="run.")
    check_fields(cfg, where, ConfigError)
    cfg.name = safe_run_name(cfg.name)
    return cfg


def load_config(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> ExperimentConfig:
    """Load and validate a config file, applying ``key=value`` overrides.

    Parameters
    ----------
    path : str or Path
        A YAML file, or the name of a shipped config (``"quickstart"``; see
        :func:`~jaxsamp.experiments.shipped.resolve_config`).
    overrides : sequence of str
        ``key=value`` settings applied over the file, e.g. ``run.num_steps=100``.

    Raises
    ------
    ConfigError
        Missing file or unknown config name, YAML error, unknown key, wrong
        type or range, missing value, or an ``${oc.env:...}`` interpolation;
        the message is one line and names the culprit.
    """
    path = resolve_config(path)
    if path.is_dir():
        raise ConfigError(f"config path is a folder, not a file: {path}", "give a YAML file or a shipped config's name, e.g. quickstart")
    if not path.is_file():
        shipped = path.stem in shipped_configs() and path.suffix in YAML_SUFFIXES
        raise ConfigError(f"config file not found: {path}", f"the shipped config is found by name: {path.stem}" if shipped else None)
    try:
        raw = OmegaConf.load(path)
    except Exception as err:  # yaml.YAMLError and friends
        raise ConfigError(f"{path}: cannot parse YAML: {str(err).splitlines()[0]}") from None
    if not isinstance(raw, DictConfig):
        raise ConfigError(f"{path}: a config must be a mapping of keys (name, kind, target, ...), got a YAML list")
    try:
        cfg = OmegaConf.merge(OmegaConf.structured(ExperimentConfig), raw)
        for item in overrides:
            key, value = _parse_override(item)
            OmegaConf.update(cfg, key, value, merge=True, force_add=".params." in key)
        _refuse_env(OmegaConf.to_container(cfg, resolve=False))
        missing = sorted(OmegaConf.missing_keys(cfg))
        if missing:
            raise ConfigError(f"missing required value(s): {', '.join(missing)}")
        obj = OmegaConf.to_object(cfg)
    except ConfigError as err:
        raise ConfigError(f"{path}: {err.message}", err.hint) from None
    except OmegaConfBaseException as err:
        raise ConfigError(f"{path}: {_one_line(err)}") from None
    return check_config(obj, str(path))


def to_yaml(cfg: ExperimentConfig) -> str:
    """The resolved config as YAML (what the run folder stores)."""
    return OmegaConf.to_yaml(OmegaConf.structured(cfg))
