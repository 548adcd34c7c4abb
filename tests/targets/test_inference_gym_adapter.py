"""The Inference Gym adapter: the posterior on unconstrained space, and scores against the Gym's ground truth."""

import jax
import numpy as np
import pytest
from inference_gym import using_jax as gym

import jaxsamp
from jaxsamp.core.errors import InputError


def test_log_density_includes_the_jacobian():
    model = gym.targets.EightSchools()
    target = jaxsamp.targets.from_inference_gym(model)
    assert target.event_shape == (10,)
    x = jax.random.normal(jax.random.key(0), (10,))
    value = target.constrain(x)
    expected = model.unnormalized_log_prob(value)  # identity bijectors: no Jacobian term
    assert float(target.log_prob(x)) == pytest.approx(float(expected), rel=1e-5)
    assert target.reference_mean.shape == (10,) and np.all(target.reference_std > 0)
    with pytest.raises(InputError, match="no sample transformation 'bogus'"):
        jaxsamp.targets.from_inference_gym(model, "bogus")


def test_reference_mean_error_is_the_largest_weighted_mean_error_in_ground_truth_sds():
    """Against the formula by hand on the 32-d Brownian motion (SCLD's target; log-scale bijectors)."""
    target = jaxsamp.targets.from_inference_gym(gym.targets.BrownianMotionUnknownScalesMissingMiddleObservations())
    x = np.asarray(jax.random.normal(jax.random.key(1), (3, 32)), np.float32)
    values = np.stack([np.asarray(target.reference_values(row), np.float64) for row in x])
    m, s = target.reference_mean, target.reference_std

    def by_hand(weights):
        mean = weights @ values / weights.sum()
        return np.max(np.abs(mean - m) / s)

    assert target.reference_mean_error(x) == pytest.approx(by_hand(np.ones(3)), rel=1e-6)
    log_w = np.array([0.0, np.log(3.0), -np.inf])  # weights 1 : 3 : 0
    assert target.reference_mean_error(x, log_w) == pytest.approx(by_hand(np.array([1.0, 3.0, 0.0])), rel=1e-6)
    x_bad = x.copy()
    x_bad[1, 0] = np.nan  # a non-finite draw is left out
    assert target.reference_mean_error(x_bad) == pytest.approx(by_hand(np.array([1.0, 0.0, 1.0])), rel=1e-6)
    with pytest.raises(InputError, match="no draw with a finite state"):
        target.reference_mean_error(x, np.full(3, np.nan))
