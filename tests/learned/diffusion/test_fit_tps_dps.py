"""TPS-DPS through ``jaxsamp.fit`` on the 2-D double well: the samples are paths, with their invariants.

The math (path likelihoods by hand, the loss, the dynamics' increments, training
raising the hit rate, resume from a checkpoint) is tested in ``test_tps_dps.py``; this is the front door.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsamp
from jaxsamp.core.errors import InputError
from jaxsamp.learned.diffusion.tps_dps import TransitionPaths, TpsDpsSettings, build, path_metrics

#: 16 paths of 40 steps of 0.05 per round, 20 Adam steps per round, 8 rounds: a few seconds on 2 CPU cores; a sharp
#: relaxed indicator (sigma 0.5, not 3), so that the paths' weights differ before any path reaches x_B
SMALL = TpsDpsSettings(time_step=0.05, num_time_steps=40, batch_size=16, buffer_size=64, updates_per_rollout=20,
                       annealing_rollouts=2, learning_rate=1e-2, log_z_learning_rate=1e-2, indicator_std=0.5)
ROUNDS, PATHS, N = 8, 16, 64


def test_fit_tps_dps_on_the_double_well():
    """Training finds the transition; finite path log Z and ESS; every path starts at x_A with its recorded V; the
    energy count and annealing.

    The trained paths reach x_B: hit rate >= 50 % and closest approach (``rmsd``) < 0.5; measured 100 % at 0.05.
    The same run with ``optax.set_to_zero()`` (nothing learned) fails it: hit rate 0 % (measured). The other
    checks are exact identities (no statistical budget): the paths' recorded potentials are V at their positions,
    the evaluation figures are :func:`path_metrics` of the paths ``sample`` returns for the same key, and the
    training's energy evaluations are ``N L + 1`` per round (so ``N = batch_size`` paths per round).
    """
    target = jaxsamp.targets.get("double_well_2d")
    fitted = jaxsamp.fit("tps_dps", target, num_steps=ROUNDS, key=0, settings=SMALL, batch_size=PATHS, progress=False)
    assert fitted.warnings == [] and fitted.settings == SMALL
    L = SMALL.num_time_steps
    np.testing.assert_array_equal(fitted.history["target_evals"], (PATHS * L + 1) * np.arange(1, ROUNDS + 1))
    # the behaviour temperature falls from start_temperature to T over annealing_rollouts rounds, then stays
    np.testing.assert_allclose(fitted.history["temperature"], [2400.0] + [1200.0] * (ROUNDS - 1))

    samples = fitted.sample(1, N)
    assert isinstance(samples.x, TransitionPaths) and samples.x.positions.shape == (N, L + 1, 2)
    assert samples.log_w.shape == (N,)
    ess, log_z = float(samples.ess), float(samples.log_Z)
    assert 0.0 < ess <= 1.0 and np.isfinite(log_z)
    np.testing.assert_array_equal(samples.x.positions[:, 0], np.broadcast_to(np.float32(target.spec.start), (N, 2)))
    np.testing.assert_allclose(samples.x.potentials, jax.vmap(jax.vmap(target.potential))(samples.x.positions),
                               rtol=1e-5, atol=1e-5)

    figures = fitted.evaluate(1, N)
    end = jnp.asarray(target.spec.end, jnp.float32)
    expected = path_metrics(samples.x.positions, samples.x.potentials, end, SMALL.hit_radius)
    for name in ("rmsd", "thp", "hits"):
        assert figures[name] == pytest.approx(float(expected[name]))
    assert figures["thp"] >= 50.0 and figures["rmsd"] < 0.5, figures
    # the figures' log Z is summed in float64, the samples' in float32
    assert figures["ess"] == pytest.approx(ess) and figures["log_Z_hat"] == pytest.approx(log_z, rel=1e-5)
    assert figures["target_evals"] == ROUNDS * (PATHS * L + 1) and figures["nonfinite_samples"] == 0
    with pytest.raises(InputError, match="tps_dps: evaluate takes no option sinkhorn"):
        fitted.evaluate(1, N, sinkhorn=False)


def test_training_cut_short_of_the_annealing_is_the_methods_own_warning():
    """``TrainingHealth.checks``: fewer rounds than ``annealing_rollouts`` never sampled at the target temperature."""
    checks = build(jaxsamp.targets.get("double_well_2d"), SMALL, batch_size=PATHS).health.checks
    assert checks({"loss": np.zeros(SMALL.annealing_rollouts)}) == []
    (warning,) = checks({"loss": np.zeros(1)})
    assert warning.startswith("training stopped after 1 of the 2 annealing rollouts")


def test_fit_tps_dps_refuses_a_target_without_transition_paths():
    with pytest.raises(InputError, match="method 'tps_dps': TPS-DPS needs a transition-path target"):
        jaxsamp.fit("tps_dps", jaxsamp.targets.get("gaussian", dim=2), num_steps=1, progress=False)
    with pytest.raises(InputError, match="transition-path target"):
        jaxsamp.fit("tps_dps", lambda x: -jnp.sum(x**2), init=jnp.zeros(2), num_steps=1, progress=False)
