"""The ``vi`` experiment kind through the runner: shipped configs, a semi-implicit and an objective run, bad settings."""

from pathlib import Path

import numpy as np
import pytest

from jaxsamp.core.errors import ConfigError
from jaxsamp.experiments.config import load_config
from jaxsamp.experiments.runner import prepare, resume_experiment, run_experiment

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
SHIPPED = sorted(p.name for p in CONFIGS.glob("*.yaml") if load_config(p).kind == "vi")
SHRINK = ["run.num_steps=3", "run.chunk=1", "run.checkpoint_every=2", "run.progress=false", "run.num_eval_samples=64"]


def test_every_method_is_shipped_and_every_config_builds():
    names = set()
    for name in SHIPPED:
        cfg = load_config(CONFIGS / name)
        prepare(cfg)  # the kind's check: settings, family and target, no training
        names.add(cfg.sampler.name)
    assert names == {"elbo", "snis_forward_kl", "softcvi", "aisivi", "bsivi"}


def test_semi_implicit_run_on_a_2d_target_scores_by_quadrature(tmp_path):
    overrides = [*SHRINK, f"run.out_dir={tmp_path}", "sampler.params.num_inner=8", "sampler.params.pretrain_steps=1",
                 "sampler.params.hidden_width=8", "sampler.params.tau_layers=2", "sampler.params.tau_hidden_width=8", "sampler.params.marginal_draws=64"]
    run_dir, metrics = run_experiment(load_config(CONFIGS / "aisivi_banana.yaml", overrides), verbose=False)
    assert metrics["reference"] == "exact" and metrics["forward_kl"] > 0 and metrics["p_mass"] > 0.999
    # pretraining's NaN loss steps are not judged (3 steps from the config's narrow q may leave the ESS at its floor)
    assert not [w for w in metrics["warnings"] if "training loss" in w], metrics["warnings"]
    for key in ("elbo", "log_Z_hat", "log_Z_abs_err", "ess", "eubo", "mean_log_q_reference"):
        assert np.isfinite(metrics[key]), key
    for plot in ("density.png", "samples.png", "training.png"):
        assert (run_dir / plot).stat().st_size > 0
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir())  # fit checkpointed
    _, again = resume_experiment(run_dir, verbose=False)  # a finished run: fit restores its last checkpoint
    np.testing.assert_equal([again[k] for k in ("log_Z_hat", "elbo", "final_loss")],
                            [metrics[k] for k in ("log_Z_hat", "elbo", "final_loss")])


def test_objective_run_without_exact_samples_is_compared_with_nuts(tmp_path):
    overrides = [*SHRINK, f"run.out_dir={tmp_path}", "sampler.params.family={num_layers: 1, hidden: [4]}",
                 "run.num_warmup=20"]
    run_dir, metrics = run_experiment(load_config(CONFIGS / "softcvi_eight_schools.yaml", overrides), verbose=False)
    assert metrics["reference"] == "NUTS" and np.isfinite(metrics["mean_log_q_reference"])
    assert metrics["warnings"] == []
    assert "forward_kl" not in metrics and "log_Z_abs_err" not in metrics  # 10-d, evidence unknown
    assert (run_dir / "marginals.png").stat().st_size > 0


@pytest.mark.parametrize(("config", "override", "fragment"), [
    ("softcvi_eight_schools.yaml", "sampler.params.family={name: maf}", "unknown family 'maf'"),
    ("softcvi_eight_schools.yaml", "sampler.params.family={name: coupling_flow, depth: 3}", "unknown argument 'depth'"),
    ("softcvi_eight_schools.yaml", "sampler.params.alpha=1.5", "alpha"),
    ("softcvi_eight_schools.yaml", "sampler.name=cavi", "takes sampler name"),
    ("aisivi_banana.yaml", "sampler.params.family={name: diagonal_gaussian}", "unknown parameter 'family'"),
    ("aisivi_banana.yaml", "sampler.params.method=bsivi", "params.method is now sampler.name"),
    ("softcvi_eight_schools.yaml", "sampler.params.num_samples=8", "params.num_samples is now run.num_chains"),
    ("elbo_eight_schools.yaml", "run.num_warmup=0", "needs run.num_warmup > 0"),
])
def test_bad_settings_are_one_line_config_errors(config, override, fragment):
    with pytest.raises(ConfigError, match=fragment):
        prepare(load_config(CONFIGS / config, [override]))
