"""The one-line verdict: within or BEYOND Monte Carlo error, by the stated standard errors, for every kind."""

import math
from types import SimpleNamespace

import numpy as np
import pytest

from jaxsamp.core.registry import EXPERIMENTS
from jaxsamp.experiments import kinds as _kinds  # noqa: F401  (registers the kinds)
from jaxsamp.experiments.config import load_config
from jaxsamp.experiments.runner import run_experiment
from jaxsamp.experiments.shipped import resolve_config
from jaxsamp.experiments.verdict import _JUDGES, log_z_standard_error, verdict


def cfg(kind, n=1000):
    return SimpleNamespace(kind=kind, run=SimpleNamespace(num_eval_samples=n))


EXACT = SimpleNamespace(log_Z=0.0)
NONE = SimpleNamespace(log_Z=None)


def test_every_experiment_kind_has_a_judge():
    assert set(_JUDGES) == set(EXPERIMENTS.names())


def test_the_log_z_standard_error_matches_repeated_importance_sampling():
    """Proposal N(0, 1.5^2) for N(0, 1): the delta-method error agrees with the spread over 400 repeats within 15 %."""
    rng = np.random.default_rng(0)
    n, s = 2000, 1.5
    x = rng.normal(0, s, (400, n))
    log_w = -0.5 * x**2 + 0.5 * (x / s) ** 2 + np.log(s)  # normalised target: log Z = 0
    w = np.exp(log_w)
    estimates = np.log(w.mean(1))
    ess = float(np.mean(w.sum(1) ** 2 / (w**2).sum(1)) / n)
    assert log_z_standard_error(ess, n) == pytest.approx(np.std(estimates), rel=0.15)


@pytest.mark.parametrize("kind,key", [("vi", "log_Z_hat"), ("diffusion", "log_Z_hat"), ("adjoint", "log_Z_hat"),
                                      ("curves", "log_Z_hat")])
def test_importance_sampling_log_z_is_within_or_beyond(kind, key):
    se = log_z_standard_error(0.5, 1000)  # 0.0316
    assert "within 3 standard errors" in verdict(cfg(kind), EXACT, {key: 2 * se, "ess": 0.5})
    assert "BEYOND 3 standard errors" in verdict(cfg(kind), EXACT, {key: 4 * se, "ess": 0.5})
    assert "too few to judge" in verdict(cfg(kind), EXACT, {key: 0.0, "ess": 0.01})
    assert "not finite" in verdict(cfg(kind), EXACT, {key: math.nan, "ess": 0.5})


def test_failed_paths_do_not_count_as_samples():
    se_980 = log_z_standard_error(0.5, 980)
    line = verdict(cfg("diffusion"), EXACT, {"log_Z_hat": 0.01, "ess": 0.5, "nonfinite_samples": 20})
    assert f"({se_980:.4f}; ESS 0.500 of 980)" in line


def test_particle_systems_without_exact_log_z_report_w2():
    line = verdict(cfg("adjoint"), NONE, {"log_Z_hat": 3.1, "ess": 0.2, "w2": 1.08, "energy_w2": 1.4})
    assert "no exact log Z" in line and "W2 to the reference set 1.080" in line


def test_leaps_uses_the_walkers_and_says_when_resampling_leaves_no_error():
    se = log_z_standard_error(0.3, 4000)
    figures = {"log_Z_hat_exact": 15.0 + 2 * se, "log_Z_exact": 15.0, "ess_exact": 0.3, "eval_walkers": 4000}
    assert "within" in verdict(cfg("leaps"), EXACT, figures)
    resampled = {"log_Z_hat_exact": 15.1, "log_Z_exact": 15.0, "ess_since_last_resample_exact": 0.9,
                 "eval_walkers": 4000}
    assert "no standard error" in verdict(cfg("leaps"), EXACT, resampled)


def test_leaps_headline_is_the_exact_weights_with_the_papers_quadrature_beside_them():
    """A config whose headline rule is a quadrature (``ess``, ``log_Z_hat``) is still judged on the exact weights."""
    se = log_z_standard_error(0.3, 4000)
    figures = {"log_Z_hat": 15.0 + 10 * se, "ess": 0.9, "log_Z_hat_exact": 15.0 + 2 * se, "ess_exact": 0.3,
               "log_Z_exact": 15.0, "eval_walkers": 4000, "ess_quadrature_paper": 0.67,
               "log_Z_hat_quadrature_paper": 15.2}
    line = verdict(cfg("leaps"), EXACT, figures)
    assert "log Z (exact weights)" in line and "within" in line and "ESS 0.300 of 4000" in line
    assert "the paper's quadrature on the same walkers: ESS 0.670, log Z 15.2000" in line
    headline_exact = {"log_Z_hat": 15.0 + 2 * se, "ess": 0.3, "log_Z_exact": 15.0, "eval_walkers": 4000}
    assert "log Z (exact weights)" in verdict(cfg("leaps"), EXACT, headline_exact)  # named once, unsuffixed


def test_mcmc_means_and_bernoulli_tv():
    assert "within 4 standard errors" in verdict(cfg("mcmc"), EXACT, {"mean_max_abs_z": 2.5})
    assert "BEYOND" in verdict(cfg("mcmc"), EXACT, {"mean_max_abs_z": 6.0, "mode_weight_tv": 0.1})
    assert "max R-hat 1.002" in verdict(cfg("mcmc"), NONE, {"max_rhat": 1.002, "min_ess_bulk": 900.0})
    assert "within" in verdict(cfg("bernoulli_denoising"), NONE, {"tv": 0.10, "tv_floor": 0.096, "tv_floor_sd": 0.002})
    assert "BEYOND" in verdict(cfg("bernoulli_denoising"), NONE, {"tv": 0.139, "tv_floor": 0.096, "tv_floor_sd": 0.002})


def test_a_missing_figure_is_said_not_raised():
    assert "did not report" in verdict(cfg("smc"), EXACT, {})


def test_a_cli_run_ends_with_its_verdict_in_metrics_and_last_on_stdout(capsys, tmp_path):
    config = load_config(resolve_config("quickstart"), ["run.num_steps=60", "run.burn_in=10", "run.num_chains=64",
                                                     "run.progress=false", f"run.out_dir={tmp_path}"])
    _, metrics = run_experiment(config)
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1] == f"verdict: {metrics['verdict']}" and "standard errors of the exact means" in out[-1]


def test_scld_is_judged_as_smc_when_it_resampled_and_as_importance_sampling_when_not():
    se = log_z_standard_error(0.5, 1000)
    assert "no standard error" in verdict(cfg("scld"), EXACT, {"log_Z_hat": 0.1, "log_Z_exact": 0.0,
                                                                 "num_resamplings": 3.0, "ess": 1.0})
    assert "within 3 standard errors" in verdict(cfg("scld"), EXACT, {"log_Z_hat": 2 * se, "ess": 0.5,
                                                                       "num_resamplings": 0.0})
