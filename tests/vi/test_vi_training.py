"""The machinery every objective shares: exact importance weights at the exact posterior, resume through the driver."""

import functools

import jax
import numpy as np
import optax
import pytest

import jaxsamp
from jaxsamp.core.errors import InputError
from jaxsamp.targets.linear_regression import ConjugateLinearRegression
from jaxsamp.vi.families import CouplingFlow, FullRankGaussian
from jaxsamp.vi.softcvi import SoftCVISettings, softcvi_trainer
from jaxsamp.vi.training import weighted_samples


def test_weights_of_the_exact_posterior_all_equal_the_evidence():
    """q = the exact posterior: every log w = log p~(x) - log q(x) equals the closed-form log Z, so ESS = 1.

    Float64; budget 1e-8 absolute on log w (values of order 300, rounding ~1e-12).
    """
    with jax.enable_x64(True):
        target = ConjugateLinearRegression()
        family = FullRankGaussian(target.event_shape[0])
        draw = jax.jit(functools.partial(weighted_samples, target, family, n=64))
        samples = draw(family.params_at(*target.posterior_cholesky()), jax.random.key(0))
        np.testing.assert_allclose(samples.log_w, target.log_Z, rtol=0, atol=1e-8)
        assert float(samples.ess) == pytest.approx(1.0, abs=1e-12)
        assert float(samples.log_Z) == pytest.approx(target.log_Z, abs=1e-8)


def test_split_run_resumes_bit_identically_through_the_driver(tmp_path):
    """SoftCVI on a coupling flow: 20 steps straight equal 10 steps checkpointed then resumed to 20, bit for bit.

    The resumed run restores the newest checkpoint (the state a killed run leaves) into the
    template state: flow parameters (nnx state), Adam moments and the step counter.
    """
    target = jaxsamp.targets.get("gaussian", dim=2, correlation=0.5)
    family = CouplingFlow(2, num_layers=2, hidden=(4,))
    trainer = softcvi_trainer(target, family, SoftCVISettings(num_samples=4), optax.adam(1e-2))
    state, key = trainer.init(jax.random.key(0)), jax.random.key(1)
    common = {"trace": lambda s, m: m, "chunk": 10, "progress": False}
    straight, straight_trace = jaxsamp.run(trainer.step, state, key, 20, **common)
    jaxsamp.run(trainer.step, state, key, 10, **common, checkpoint=tmp_path)
    resumed, resumed_trace = jaxsamp.run(trainer.step, state, key, 20, **common, checkpoint=tmp_path)
    assert int(resumed.step) == 20
    for want, got in zip(jax.tree.leaves((straight, straight_trace)), jax.tree.leaves((resumed, resumed_trace))):
        np.testing.assert_array_equal(np.asarray(want), np.asarray(got))


def test_target_and_family_of_different_spaces_are_refused():
    """A 2-D target with a 3-D family, or a discrete target, is an InputError naming the shapes."""
    with pytest.raises(InputError, match=r"states of shape \(3,\)"):
        softcvi_trainer(jaxsamp.targets.get("gaussian", dim=2), FullRankGaussian(3))
    with pytest.raises(InputError, match="real-valued"):
        softcvi_trainer(jaxsamp.targets.get("ising", L=2, beta=0.4), FullRankGaussian(4))
