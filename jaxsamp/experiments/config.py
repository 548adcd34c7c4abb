"""The experiment config schema: YAML -> typed dataclasses via OmegaConf structured configs.

A config names a target and a sampler by registry name, with their parameters,
plus the run settings. Loading merges the YAML and any ``key=value`` overrides
into the structured schema, so an unknown key, a wrong type or a missing file is
a one-line :class:`~jaxsamp.experiments.registry.ConfigError` naming it, raised
before anything is written.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Optional

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from jaxsamp.experiments.registry import ConfigError


@dataclasses.dataclass
class Component:
    """A registry entry by name with its parameters."""

    name: str = "???"
    params: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class RunSettings:
    """How the driver runs: chains/walkers, steps, chunking, checkpoints."""

    num_chains: int = 256
    num_steps: int = 1000
    burn_in: int = 0
    thin: int = 1
    init_scale: float = 1.0
    chunk: Optional[int] = None
    checkpoint_every: Optional[int] = None
    progress: bool = True
    shard: bool = False
    num_eval_samples: int = 2000
    out_dir: str = "runs"


@dataclasses.dataclass
class ExperimentConfig:
    """One experiment: ``jaxsamp run configs/<name>.yaml [key=value ...]``."""

    name: str = "???"
    seed: int = 0
    kind: str = "mcmc"
    target: Component = dataclasses.field(default_factory=Component)
    sampler: Component = dataclasses.field(default_factory=Component)
    run: RunSettings = dataclasses.field(default_factory=RunSettings)


def _one_line(err: OmegaConfBaseException) -> str:
    msg = str(err).strip().splitlines()
    head = msg[0] if msg else type(err).__name__
    key = getattr(err, "full_key", None)
    return f"{head} (key: {key})" if key and key not in head else head


def _parse_override(item: str) -> tuple[str, Any]:
    if "=" not in item:
        raise ConfigError(f"override {item!r} is not of the form key=value")
    key, _, raw = item.partition("=")
    value = OmegaConf.create({"v": raw} if raw == "" else f"v: {raw}")["v"]
    return key.strip(), value


def load_config(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> ExperimentConfig:
    """Load and validate a config file, applying ``key=value`` overrides.

    Raises
    ------
    ConfigError
        Missing file, YAML error, unknown key, wrong type or missing value; the
        message is one line and names the culprit.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    try:
        raw = OmegaConf.load(path)
    except Exception as err:  # yaml.YAMLError and friends
        raise ConfigError(f"{path}: cannot parse YAML: {str(err).splitlines()[0]}") from None
    try:
        cfg = OmegaConf.merge(OmegaConf.structured(ExperimentConfig), raw)
        for item in overrides:
            key, value = _parse_override(item)
            OmegaConf.update(cfg, key, value, merge=True, force_add=".params." in key)
        missing = sorted(OmegaConf.missing_keys(cfg))
        if missing:
            raise ConfigError(f"{path}: missing required value(s): {', '.join(missing)}")
        return OmegaConf.to_object(cfg)
    except OmegaConfBaseException as err:
        raise ConfigError(f"{path}: {_one_line(err)}") from None


def to_yaml(cfg: ExperimentConfig) -> str:
    """The resolved config as YAML (what the run folder stores)."""
    return OmegaConf.to_yaml(OmegaConf.structured(cfg))
