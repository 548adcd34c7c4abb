"""The machinery every objective shares: exact importance weights at the exact posterior, resume through the driver."""

import jax
import numpy as np
import optax
import pytest

import jaxsamp
from jaxsamp.core.errors import InputError
from jaxsamp.targets.linear_regression import ConjugateLinearRegression
from jaxsamp.vi.elbo import ELBO, ELBOSettings
from jaxsamp.vi.softcvi import SoftCVI, SoftCVISettings


def test_weights_of_the_exact_posterior_all_equal_the_evidence():
    """q = the exact posterior: every log w = log p~(x) - log q(x) equals the closed-form log Z, so ESS = 1.

    Float64; budget 1e-8 absolute on log w (values of order 300, rounding ~1e-12).
    """
    with jax.enable_x64(True):
        target = ConjugateLinearRegression()
        method = ELBO(target, ELBOSettings(family="full_rank_gaussian"), batch_size=8)
        state = method.init(jax.random.key(0))._replace(params=method.family.params_at(*target.posterior_cholesky()))
        samples = jax.jit(method.sample, static_argnums=2)(state, jax.random.key(0), 64)
        np.testing.assert_allclose(samples.log_w, target.log_Z, rtol=0, atol=1e-8)
        assert float(samples.ess) == pytest.approx(1.0, abs=1e-12)
        assert float(samples.log_Z) == pytest.approx(target.log_Z, abs=1e-8)


def test_split_run_resumes_bit_identically_through_the_driver(tmp_path):
    """SoftCVI on a coupling flow: 20 steps straight equal 10 steps checkpointed then resumed to 20, bit for bit.

    The resumed run restores the newest checkpoint (the state a killed run leaves) into the
    template state: flow parameters (nnx state), Adam moments and the step counter.
    """
    target = jaxsamp.targets.get("gaussian", dim=2, correlation=0.5)
    flow = {"name": "coupling_flow", "num_layers": 2, "hidden": (4,)}
    trainer = SoftCVI(target, SoftCVISettings(family=flow), 4, optax.adam(1e-2))
    state, key = trainer.init(jax.random.key(0)), jax.random.key(1)
    common = {"trace": lambda s, m: m, "chunk": 10, "progress": False}
    straight, straight_trace = jaxsamp.run(trainer.step, state, key, 20, **common)
    jaxsamp.run(trainer.step, state, key, 10, **common, checkpoint=tmp_path)
    resumed, resumed_trace = jaxsamp.run(trainer.step, state, key, 20, **common, checkpoint=tmp_path)
    assert int(resumed.step) == 20
    for want, got in zip(jax.tree.leaves((straight, straight_trace)), jax.tree.leaves((resumed, resumed_trace))):
        np.testing.assert_array_equal(np.asarray(want), np.asarray(got))


def test_targets_off_flat_real_space_and_bad_families_are_refused():
    """A discrete target, or a family spec that does not fit, is an InputError saying what is needed."""
    with pytest.raises(InputError, match="real-valued with flat states"):
        SoftCVI(jaxsamp.targets.get("ising", L=2, beta=0.4), SoftCVISettings(), 8)
    with pytest.raises(InputError, match="a coupling flow needs dim >= 2"):
        SoftCVI(jaxsamp.targets.get("gaussian", dim=1), SoftCVISettings(), 8)
    with pytest.raises(InputError, match="unknown family 'maf'"):
        SoftCVI(jaxsamp.targets.get("gaussian", dim=2), SoftCVISettings(family="maf"), 8)
    with pytest.raises(InputError, match="unknown argument 'layers'"):
        SoftCVI(jaxsamp.targets.get("gaussian", dim=2), SoftCVISettings(family={"name": "coupling_flow", "layers": 2}), 8)
