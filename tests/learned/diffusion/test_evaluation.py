"""The path samplers' evaluation protocol: log Z scored whole and on disjoint sets (their mean and spread); the
Sinkhorn divergence left out for particle systems by default."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsamp.targets
from jaxsamp.core.errors import InputError
from jaxsamp.core.protocols import WeightedSamples
from jaxsamp.learned.diffusion.evaluation import path_figures
from jaxsamp.learned.diffusion.pis_dds import PisDds, PisSettings

TARGET = jaxsamp.targets.get("gaussian", dim=2, mean=[1.0, -1.0], scale=0.5)


@pytest.fixture(scope="module")
def sampler():
    pis = PisDds(TARGET, PisSettings(num_time_steps=4, hidden=8), batch_size=4)
    return pis, pis.init(jax.random.key(0)).params


def evaluate(pis, params, key, n, **options):
    return path_figures(key, params, n, target=pis.target, sample_at=pis.sample_at,
                        backward_log_weights=pis.backward_log_weights, **options)


def test_log_z_on_disjoint_sets_is_their_mean_and_spread(sampler):
    """By construction on given log-weights: 10 paths in 3 sets of 3 (the tenth is in no set), one non-finite path
    left out of its set; the whole-sample figures use every finite path."""
    pis, params = sampler
    log_w = np.array([0.1, -0.3, np.nan, 0.5, 0.2, -0.1, -0.6, 0.4, 0.0, 3.0], np.float32)
    forward = WeightedSamples(jnp.zeros((10, 2)), jnp.asarray(log_w))
    out = evaluate(pis, params, jax.random.key(1), 10, forward=forward, sinkhorn=False, num_sets=3)

    def log_mean_exp(a):
        a = np.asarray(a, np.float64)
        return math.log(np.mean(np.exp(a)))

    sets = [log_mean_exp(log_w[[0, 1]]), log_mean_exp(log_w[3:6]), log_mean_exp(log_w[6:9])]
    assert out["log_Z_hat_sets_mean"] == pytest.approx(np.mean(sets), rel=1e-6)
    assert out["log_Z_hat_sets_sd"] == pytest.approx(np.std(sets, ddof=1), rel=1e-6)
    errors = np.abs(np.asarray(sets) - TARGET.log_Z)
    assert out["log_Z_abs_err_sets_mean"] == pytest.approx(errors.mean(), rel=1e-6)
    assert out["log_Z_abs_err_sets_sd"] == pytest.approx(errors.std(ddof=1), rel=1e-6)
    assert out["log_Z_hat"] == pytest.approx(log_mean_exp(log_w[np.isfinite(log_w)]), rel=1e-6)
    assert out["nonfinite_samples"] == 1

    single = evaluate(pis, params, jax.random.key(1), 10, forward=forward, sinkhorn=False)
    assert not any("_sets_" in name for name in single)  # one set: the figures of before
    for bad in (0, 11, 2.0, True):
        with pytest.raises(InputError, match="num_sets"):
            evaluate(pis, params, jax.random.key(1), 10, forward=forward, num_sets=bad)


def test_a_state_that_is_not_finite_leaves_its_path_out():
    """A path whose end state is NaN counts as non-finite even when its log-weight is finite."""
    log_w = np.zeros(4, np.float32)
    x = np.zeros((4, 2), np.float32)
    x[1, 0] = np.nan
    out = path_figures(jax.random.key(0), None, 4, target=TARGET, sample_at=None,
                       backward_log_weights=lambda key, params, x: jnp.zeros(len(x)),
                       forward=WeightedSamples(jnp.asarray(x), jnp.asarray(log_w)), sinkhorn=False)
    assert out["nonfinite_samples"] == 1 and out["log_Z_hat"] == 0.0 and out["ess"] == pytest.approx(1.0)
    assert out["eubo"] == 0.0


def test_sinkhorn_is_left_out_for_particle_systems_unless_asked_for():
    """DW-4's states are defined up to rotations and permutations, to which the Sinkhorn divergence is not invariant."""
    dw4 = jaxsamp.targets.get("dw4")
    x = np.asarray(jax.random.normal(jax.random.key(0), (16, 8)))
    common = dict(target=dw4, sample_at=None, backward_log_weights=lambda key, params, x: jnp.zeros(len(x)),
                  forward=WeightedSamples(jnp.asarray(x), jnp.zeros(16)), reference=x[::-1])
    assert "sinkhorn" not in path_figures(jax.random.key(1), None, 16, **common)
    assert "sinkhorn" in path_figures(jax.random.key(1), None, 16, sinkhorn=True, **common)
