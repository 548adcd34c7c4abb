"""What every objective shares: exact importance weights at the exact posterior, resume through fit, target checks."""

import jax
import numpy as np
import pytest

import jaxsamp
from jaxsamp.core.errors import InputError
from jaxsamp.learned.vi import elbo, softcvi
from jaxsamp.learned.vi.elbo import ELBOSettings
from jaxsamp.learned.vi.families import FullRankGaussian
from jaxsamp.learned.vi.softcvi import SoftCVISettings
from jaxsamp.targets.linear_regression import ConjugateLinearRegression


def test_weights_of_the_exact_posterior_all_equal_the_evidence():
    """q = the exact posterior: every log w = log p~(x) - log q(x) equals the closed-form log Z, so ESS = 1.

    Float64; budget 1e-8 absolute on log w (values of order 300, rounding ~1e-12).
    """
    with jax.enable_x64(True):
        target = ConjugateLinearRegression()
        method = elbo.build(target, ELBOSettings(family="full_rank_gaussian"), batch_size=8)
        exact = FullRankGaussian(target.event_shape[0]).params_at(*target.posterior_cholesky())
        state = method.init(jax.random.key(0))._replace(params=exact)
        samples = jax.jit(method.sample, static_argnums=2)(jax.random.key(0), state, 64)
        np.testing.assert_allclose(samples.log_w, target.log_Z, rtol=0, atol=1e-8)
        assert float(samples.ess) == pytest.approx(1.0, abs=1e-12)
        assert float(samples.log_Z) == pytest.approx(target.log_Z, abs=1e-8)


def test_split_fit_resumes_bit_identically(tmp_path):
    """SoftCVI on a coupling flow: 20 steps straight equal 10 steps checkpointed then resumed to 20, bit for bit.

    The resumed fit restores the newest checkpoint (the state a killed run leaves): flow
    parameters (nnx state), Adam moments, the step counter and the history of the first 10 steps.
    """
    target = jaxsamp.targets.get("gaussian", dim=2, correlation=0.5)
    common = {"key": 1, "batch_size": 4, "progress": False,
              "settings": SoftCVISettings(family={"name": "coupling_flow", "num_layers": 2, "hidden": (4,)})}
    straight = jaxsamp.fit("softcvi", target, num_steps=20, **common)
    jaxsamp.fit("softcvi", target, num_steps=10, checkpoint=tmp_path, **common)
    resumed = jaxsamp.fit("softcvi", target, num_steps=20, checkpoint=tmp_path, **common)
    assert int(resumed.state.step) == 20
    for want, got in zip(jax.tree.leaves((straight.state, straight.history)),
                         jax.tree.leaves((resumed.state, resumed.history)), strict=True):
        np.testing.assert_array_equal(np.asarray(want), np.asarray(got))


def test_targets_off_flat_real_space_and_bad_families_are_refused():
    """A discrete target, or a family spec that does not fit, is an InputError saying what is needed."""
    with pytest.raises(InputError, match="real-valued with flat states"):
        softcvi.build(jaxsamp.targets.get("ising", L=2, beta=0.4))
    with pytest.raises(InputError, match="a coupling flow needs dim >= 2"):
        softcvi.build(jaxsamp.targets.get("gaussian", dim=1))
    with pytest.raises(InputError, match="unknown family 'maf'"):
        softcvi.build(jaxsamp.targets.get("gaussian", dim=2), SoftCVISettings(family="maf"))
    with pytest.raises(InputError, match="unknown argument 'layers'"):
        softcvi.build(jaxsamp.targets.get("gaussian", dim=2), SoftCVISettings(family={"name": "coupling_flow", "layers": 2}))
    with pytest.raises(InputError, match="settings must be a SoftCVISettings, got ELBOSettings"):
        softcvi.build(jaxsamp.targets.get("gaussian", dim=2), ELBOSettings())
