"""A config's ``evaluate.smc``: a learned kind adds the figures of a resampled SMC run along the trained path
(``smc_<figure>``, in the glossary), and a bad option or a sampler without a path is a ConfigError before any work."""

from pathlib import Path

import pytest

from jaxsamp.core.errors import ConfigError
from jaxsamp.experiments.config import load_config
from jaxsamp.experiments.runner import prepare, run_experiment

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
TINY_CURVE = ["run.num_steps=2", "run.num_chains=16", "run.chunk=1", "run.checkpoint_every=2",
              "sampler.params.hidden=[8]", "sampler.params.ode_steps=8", "run.num_eval_samples=64",
              "run.progress=false"]


def test_a_curves_run_reports_the_smc_run_of_its_trained_curve(tmp_path):
    cfg = load_config(CONFIGS / "curves_linear_gmm2d.yaml",
                      [*TINY_CURVE, f"run.out_dir={tmp_path}", "evaluate.smc={moves: mala, resample_threshold: 0.9}"])
    _, metrics = run_experiment(cfg)  # an undocumented metric would fail here (the glossary's warning is an error)
    assert metrics["smc_log_Z_exact"] == 0.0 and metrics["smc_log_Z_abs_err"] == abs(metrics["smc_log_Z_hat"])
    # the flow (2 per particle and level) and MALA (2 per particle and level): 8 levels of 64 particles
    assert metrics["smc_sample_target_evals"] == 8 * 64 * 4
    assert metrics["smc_num_resamplings"] > 0 and 0 < metrics["smc_segment_ess_min"] <= 1
    assert "log_Z_hat" in metrics and metrics["log_Z_hat"] != metrics["smc_log_Z_hat"]  # the kind's own figures stay


@pytest.mark.parametrize("smc, message", [
    ("{movs: mala}", "evaluate.smc takes no option movs"),
    ("[1]", "evaluate.smc must be True or a dict"),
])
def test_a_bad_smc_option_is_a_config_error_naming_the_options(smc, message):
    cfg = load_config(CONFIGS / "curves_linear_gmm2d.yaml", [f"evaluate.smc={smc}"])
    with pytest.raises(ConfigError, match=message) as refused:
        prepare(cfg)
    assert "resample_threshold, resampler, moves, num_moves, segment_length" in refused.value.hint


@pytest.mark.parametrize("config, sampler", [("pis_funnel", "pis"), ("mala_gaussian", "mala")])
def test_evaluate_smc_needs_a_sampler_with_a_path(config, sampler):
    cfg = load_config(CONFIGS / f"{config}.yaml", ["evaluate.smc=true"])
    with pytest.raises(ConfigError, match=f"sampler '{sampler}' has none") as refused:
        prepare(cfg)
    assert refused.value.hint.startswith("samplers with one: cmcd, curves, leaps, scld")
    prepare(load_config(CONFIGS / f"{config}.yaml"))  # without it, the config is fine
