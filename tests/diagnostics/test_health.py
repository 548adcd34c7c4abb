"""Run-health rules: R-hat's threshold, NaN diagnostics, diagnostics over many chains."""

import jax.numpy as jnp
import numpy as np
import pytest

from jaxsamp.diagnostics import health, mcmc
from jaxsamp.experiments.mcmc_experiment import MAX_DIAGNOSED_CHAINS, chain_diagnostics


def test_rhat_threshold_is_1_01_once_chains_have_400_effective_draws_each_and_1_05_before():
    long_chains = np.full(3, 4 * 500.0)  # 4 chains, 500 effective draws each
    short_chains = np.full(3, 4 * 50.0)
    assert health.convergence_warnings([1.0, 1.02, 1.0], long_chains, 4)[0].startswith("the chains disagree: max R-hat 1.020 > 1.01")
    assert health.convergence_warnings([1.0, 1.02, 1.0], short_chains, 4) == []
    assert "1.060 > 1.05" in health.convergence_warnings([1.0, 1.06, 1.0], short_chains, 4)[0]
    assert "max R-hat inf" in health.convergence_warnings([1.0, np.inf, 1.0], short_chains, 4)[0]
    assert health.convergence_warnings([1.0, 1.005, 1.0], long_chains, 4) == []


def test_a_nan_rhat_or_ess_is_a_warning_never_silence():
    (rhat_warning,) = health.convergence_warnings([np.nan, np.nan], [100.0, 100.0], 4)
    assert rhat_warning.startswith("R-hat is NaN for 2 of 2 coordinates")
    warnings = health.convergence_warnings([1.0, 1.0], [np.nan, 100.0], 4)
    assert warnings == ["the bulk ESS is NaN/inf for 1 of 2 coordinates (NaN draws): convergence cannot be judged there"]


def test_the_mcmc_experiment_warns_about_a_coordinate_with_nan_draws():
    draws = np.random.default_rng(0).standard_normal((50, 4, 2)).astype(np.float32)
    draws[10, 2, 1] = np.nan
    metrics, warnings = chain_diagnostics(draws, None)
    assert np.isfinite(metrics["max_rhat"])  # the defined coordinate's
    assert any(w.startswith("R-hat is NaN for 1 of 2 coordinates") for w in warnings)


def test_the_mcmc_experiment_diagnoses_at_most_4096_evenly_spaced_chains():
    draws = np.random.default_rng(1).standard_normal((8, 3 * MAX_DIAGNOSED_CHAINS, 1)).astype(np.float32)
    metrics, warnings = chain_diagnostics(draws, np.zeros(8))
    assert metrics["diagnosed_chains"] == MAX_DIAGNOSED_CHAINS and metrics["divergences"] == 0
    assert np.isfinite(metrics["max_rhat"]) and warnings == []


@pytest.mark.slow
def test_rank_normal_scores_stay_finite_past_2_to_24_draws_per_coordinate():
    # 4097 x 4096 > 2**24: float32 ranks rounded the largest rank past n, erfinv(> 1) was NaN
    # (a million-chain quickstart reported max_rhat = min_ess_bulk = NaN); the ranks are now integers.
    # The rank normalisation is the one step that sees n; R-hat and ESS of finite scores are tested elsewhere.
    draws = np.random.default_rng(2).standard_normal((4097, 4096, 1)).astype(np.float32)
    scores = np.asarray(mcmc._rank_normalize(jnp.asarray(draws))).ravel()
    assert np.all(np.isfinite(scores))
    assert 5.0 < scores.max() < 5.9 and scores.min() == -scores.max()  # capped just below 1, symmetric
    assert abs(scores.mean()) < 1e-4 and abs(scores.std() - 1.0) < 1e-3


def test_training_warnings_name_a_nonfinite_exploding_or_stalled_loss_and_an_ess_at_its_floor():
    steps = np.arange(400.0)
    healthy = 10.0 / (1.0 + steps / 50.0)
    assert health.training_warnings(healthy, ess=0.2, num_samples=64) == []
    assert health.training_warnings(np.r_[healthy[:-1], np.nan])[0].startswith("the training loss was NaN/inf at 1 of 400")
    exploded = np.r_[healthy[:200], np.full(200, 1.6e29)]  # PIS at learning rate 1e4: ELBO -1.6e29
    assert health.training_warnings(exploded)[0].startswith("the training loss exploded from 7.19 ")
    stalled = 5.0 + 0.01 * np.sin(steps)
    assert health.training_warnings(stalled)[0].startswith("the training loss did not improve")
    assert health.training_warnings(stalled[:100]) == []  # under 200 steps: not judged
    assert health.training_warnings(stalled, judge_progress=False) == []
    (floor,) = health.training_warnings(healthy, ess=1 / 64, num_samples=64)
    assert floor.startswith("the ESS is 0.0156, at its floor 1/64")
    (nan,) = health.training_warnings(healthy, ess=float("nan"), num_samples=64)
    assert nan.startswith("the ESS is nan: the importance weights are NaN/inf")  # not called "at its floor"


def test_an_explosion_is_seen_at_the_first_update_and_in_the_last_steps_and_a_noisy_batch_is_not_one():
    """PIS on the funnel at learning rate 1e3 (issue 61): 2.6 at the untrained first step, 1.7e31 after the first
    update, 1.3e33 after. The first tenth of 20 steps holds both the start and the explosion, so the start is read at
    the first step; a divergence in the last 5% of a long run is read on the median of its last 10 steps."""
    first_update = np.r_[2.6, 1.7e31, np.full(18, 1.3e33)]
    (w,) = health.training_warnings(first_update)
    assert w.startswith("the training loss exploded from 2.6 (first step) to 1.3e+33 (last tenth)")
    healthy = 10.0 / (1.0 + np.arange(1000.0) / 50.0)
    late = np.r_[healthy[:-30], np.full(30, 1e30)]
    (w,) = health.training_warnings(late)
    assert w.startswith("the training loss exploded from 5.03 (first tenth of the steps)") and "(median of the last 10 steps)" in w
    assert health.training_warnings(np.r_[healthy[:-4], np.full(4, 1e30)]) == []  # 4 bad batches of 10: noise
    assert health.training_warnings(np.r_[1e-3, np.full(19, 500.0)], judge_progress=False) == []  # floor: 1
    assert health.training_warnings(np.r_[-2.0, np.linspace(-10.0, -1e3, 19)]) == []  # a falling loss, 500x


def test_final_level_is_the_median_of_the_last_tenth_of_the_steps():
    """The README's PIS run (ring, 300 steps, 256 paths): the last batch's ESS read 0.35, the median of the last 30
    steps 0.80, 4000 draws of the trained sampler 0.78."""
    ess = np.r_[np.full(270, 0.5), np.full(29, 0.8), 0.35]
    assert health.final_level(ess) == pytest.approx(0.8)
    assert health.final_level(np.r_[np.full(9, np.nan), 0.4]) == pytest.approx(0.4)  # one tenth of 10: the last
    assert np.isnan(health.final_level(np.full(10, np.nan)))
    assert health.final_level(np.ones((20, 3))) == 1.0  # trailing axes averaged


def test_inner_ess_at_its_floor_at_the_end_of_training_is_a_collapsed_reverse_model():
    """Calibrated on the AISIVI banana runs (BENCHMARKS.md, the `vi` suite, step 2): a failed run's inner ESS sat at
    1/256 from step 200 to the end, a converged one ended at 0.43. Pretraining's NaN steps are skipped, and only the
    last tenth counts, so a collapse the run recovered from is not flagged."""
    k = 256
    pretraining = np.full(100, np.nan)
    failed = np.concatenate([pretraining, np.full(100, 0.05), np.full(3800, 1 / k)])
    (warning,) = health.inner_ess_warnings(failed, k)
    assert "reverse model collapsed" in warning and "1/256" in warning
    recovered = np.concatenate([pretraining, np.full(400, 1 / k), np.full(3500, 0.43)])
    assert health.inner_ess_warnings(recovered, k) == []
    assert health.inner_ess_warnings(np.concatenate([np.full(3600, 0.43), np.full(400, 1.4 / k)]), k)  # the last tenth
    assert health.inner_ess_warnings(np.concatenate([np.full(3600, 0.4), np.full(400, 1.6 / k)]), k) == []
    assert health.inner_ess_warnings(pretraining, k) == []  # nothing to judge
