"""The ``mile`` experiment kind: every shipped config validates, bad settings are one-line ConfigErrors.

Validation only: the kind's whole run (deep ensemble, MILE, BDE, metrics, plot) is exercised by
tests/bench/suites/test_mile_suite.py, whose quick run of the suite ``mile`` runs it through ``run_experiment``.
"""

from pathlib import Path

import pytest

from jaxsamp.core.errors import ConfigError
from jaxsamp.experiments.config import Component, load_config
from jaxsamp.experiments.runner import prepare

CONFIGS = sorted((Path(__file__).resolve().parents[2] / "configs").glob("mile_*.yaml"))


def test_six_configs_ship():
    assert [p.stem for p in CONFIGS] == [
        f"mile_{d}" for d in ("airfoil", "bikesharing", "concrete", "energy", "protein", "yacht")
    ]


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_mile_config_is_valid(path):
    cfg = load_config(path)
    target, _, checked = prepare(cfg)
    assert checked.deep_ensemble.num_members == cfg.run.num_chains == 12
    assert target.sizes == (target.split.x_train.shape[1], 16, 16, 2)
    assert (checked.bde is None) == (path.stem in ("mile_bikesharing", "mile_protein"))


@pytest.mark.parametrize(
    "override, message",
    [
        ("sampler.params.mile.tune_steps=5", "tune_steps must be >= 10"),
        ("sampler.params.mile.thining=2", "unknown parameter 'thining'"),
        ("sampler.params.deep_ensemble.num_members=3", "run.num_chains, not deep_ensemble.num_members"),
        ("sampler.params.bde.warmup_steps=5", "warmup_steps must be >= 20"),
        ("sampler.params.run_bde=maybe", "run_bde must be true or false"),
        ("sampler.params.nuts={}", "unknown parameter 'nuts'"),
        ("sampler.name=nuts", "takes sampler name 'mile'"),
    ],
)
def test_bad_settings_are_config_errors(override, message):
    cfg = load_config(CONFIGS[0], [override])
    with pytest.raises(ConfigError, match=message):
        prepare(cfg)


def test_a_target_other_than_a_bnn_is_refused():
    cfg = load_config(CONFIGS[0])
    cfg.target = Component("gaussian", {"dim": 2})
    with pytest.raises(ConfigError, match="needs a bnn_regression target"):
        prepare(cfg)
