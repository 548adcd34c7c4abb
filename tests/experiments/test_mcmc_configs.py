"""Every ``kind: mcmc`` config names a registered target and sampler with valid parameters.

Only validation (no tuning, no run): building a tuned sampler runs its tuner, which the
sampler tests cover.
"""

from pathlib import Path

import pytest

import jaxsamp.mcmc  # noqa: F401  (registers samplers)
import jaxsamp.targets  # noqa: F401  (registers targets)
from jaxsamp.experiments.config import load_config
from jaxsamp.core.registry import SAMPLERS, TARGETS

CONFIGS = sorted(p for p in (Path(__file__).resolve().parents[2] / "configs").glob("*.yaml") if "kind: mcmc" in p.read_text())


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_mcmc_config_is_valid(path):
    cfg = load_config(path)
    TARGETS.get(cfg.target.name, **cfg.target.params)
    SAMPLERS.validate(cfg.sampler.name, dict(cfg.sampler.params), skip=("target",))
