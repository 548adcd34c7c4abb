"""Variational families on distrax: densities checked by hand, reparameterised draws, bad inputs."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from scipy import stats

from jaxsamp.core.errors import InputError
from jaxsamp.learned.vi.families import CouplingFlow, DiagonalGaussian, FullRankGaussian


def _perturbed(params, key, scale=0.3):
    """``params`` plus N(0, scale^2) noise on every leaf, so no coupling is the identity."""
    leaves, treedef = jax.tree.flatten(params)
    keys = jax.random.split(key, len(leaves))
    return jax.tree.unflatten(treedef, [a + scale * jax.random.normal(k, a.shape) for a, k in zip(leaves, keys)])


def test_one_affine_coupling_log_density_equals_the_change_of_variables_by_hand():
    """``x = loc + exp(log_scale) * c(z)``, ``c`` one affine coupling keeping the even coordinates.

    By hand: ``y = (x - loc) exp(-log_scale)``; ``(shift, log_s) = MLP(y masked)``;
    ``z_odd = (y_odd - shift_odd) exp(-log_s_odd)``, ``z_even = y_even``; then
    ``log q(x) = sum_j log N(z_j) - sum_odd log_s - sum log_scale``. Float32: relative error 1e-5.
    """
    dim = 5
    family = CouplingFlow(dim, num_layers=1, hidden=(16,), coupling="affine")
    params = _perturbed(family.init(jax.random.key(0)), jax.random.key(1))
    kept = np.arange(dim) % 2 == 0

    @jax.jit
    def densities(params):
        x, log_q = family.sample_and_log_prob(jax.random.key(2), params, 7)
        module = family.module(params)
        y = (x - module.loc[...]) * jnp.exp(-module.log_scale[...])
        out = module.conditioners[0](jnp.where(kept, y, 0.0)).reshape(7, dim, 2)
        shift, log_s = out[..., 0], out[..., 1]
        z = jnp.where(kept, y, (y - shift) * jnp.exp(-log_s))
        by_hand = (jax.scipy.stats.norm.logpdf(z).sum(-1) - jnp.where(kept, 0.0, log_s).sum(-1)
                   - module.log_scale[...].sum())
        return log_q, family.log_prob(params, x), by_hand, log_s

    log_q, log_prob, by_hand, log_s = densities(params)
    assert np.abs(np.asarray(log_s)[:, ~kept]).min() > 1e-3  # the coupling really scales
    np.testing.assert_allclose(log_q, by_hand, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(log_prob, by_hand, rtol=1e-5, atol=1e-5)


def test_fresh_spline_flow_is_the_standard_normal_and_its_two_densities_agree():
    """Zero-output conditioners: a fresh spline flow is N(0, I) exactly; perturbed, log_prob matches the draws' log q.

    Float32 tolerance: 1e-5 relative for the identity, 1e-4 for the spline's inverse (a root of a quadratic).
    """
    family = CouplingFlow(3, num_layers=1, hidden=(8,), coupling="spline", num_bins=4)
    fresh = family.init(jax.random.key(0))
    x = jax.random.normal(jax.random.key(1), (6, 3))
    params = _perturbed(fresh, jax.random.key(2), 0.1)

    @jax.jit
    def densities(fresh, params):
        draws, log_q = family.sample_and_log_prob(jax.random.key(3), params, 6)
        return family.log_prob(fresh, x), log_q, family.log_prob(params, draws)

    fresh_log_q, log_q, log_prob = densities(fresh, params)
    np.testing.assert_allclose(fresh_log_q, stats.norm.logpdf(np.asarray(x)).sum(-1), rtol=1e-5)
    np.testing.assert_allclose(log_prob, log_q, rtol=1e-4, atol=1e-4)


def _constant_couplings(family, params, shift, log_scale):
    """``params`` with every conditioner's output fixed to ``(shift, log_scale)`` (zero last kernel, that bias)."""
    module = family.module(params)
    for conditioner in module.conditioners:
        last = conditioner.layers[-1]
        last.kernel[...] = jnp.zeros_like(last.kernel[...])
        last.bias[...] = jnp.tile(jnp.array([shift, log_scale], jnp.float32), family.dim)
    return nnx.split(module)[1]


@pytest.mark.parametrize(("max_log_scale", "finite"), [(None, False), (3.0, True)])
def test_clamped_coupling_scales_keep_a_deep_flow_finite(max_log_scale, finite):
    """Six affine couplings whose conditioners all output log-scale 40 (shift 0): each coordinate is scaled 3 times.

    Unclamped, that is e^120 > float32's max and every draw overflows to inf (the AISIVI
    reverse-model failure). Clamped at m = 3 each scale is exp(3 tanh(40 / 3)), so the flow is
    exactly N(0, sigma^2 I) with log sigma = 9 tanh(40 / 3): its log q equals that Gaussian's
    (float32, 1e-5 relative).
    """
    family = CouplingFlow(2, num_layers=6, hidden=(4,), max_log_scale=max_log_scale)
    params = _constant_couplings(family, family.init(jax.random.key(0)), 0.0, 40.0)
    x, log_q = jax.jit(lambda p: family.sample_and_log_prob(jax.random.key(1), p, 5))(params)
    assert bool(np.all(np.isfinite(np.asarray(x)))) is finite
    if finite:
        log_sigma = 9.0 * np.tanh(40.0 / 3.0)
        want = stats.norm.logpdf(np.asarray(x, np.float64), scale=np.exp(log_sigma)).sum(-1)
        np.testing.assert_allclose(log_q, want, rtol=1e-5)


def test_gaussian_families_match_scipy_and_draws_are_reparameterised():
    """log q of both Gaussians equals scipy's; d(sum of draws)/d(loc) = n (x = loc + L eps)."""
    rng = np.random.default_rng(0)
    loc = rng.normal(size=3)
    scale_tril = np.tril(rng.normal(size=(3, 3)), -1) + np.diag([0.5, 1.0, 2.0])
    full = FullRankGaussian(3)
    params = full.params_at(loc, scale_tril)
    x = rng.normal(size=(4, 3)).astype(np.float32)
    want = stats.multivariate_normal(loc, scale_tril @ scale_tril.T).logpdf(x)
    np.testing.assert_allclose(full.log_prob(params, x), want, rtol=1e-5)

    diagonal = DiagonalGaussian(3, init_scale=2.0)
    np.testing.assert_allclose(diagonal.log_prob(diagonal.init(jax.random.key(0)), x),
                               stats.norm.logpdf(x, scale=2.0).sum(-1), rtol=1e-5)

    grad = jax.grad(lambda p: full.sample_and_log_prob(jax.random.key(1), p, 5)[0].sum())(params)
    np.testing.assert_allclose(grad["loc"][...], np.full(3, 5.0))


def test_bad_family_inputs_are_clear_input_errors():
    """Points of the wrong shape, params of another family, impossible settings."""
    family = FullRankGaussian(3)
    params = family.init(jax.random.key(0))
    with pytest.raises(InputError, match=r"points of shape \(n, 3\)"):
        family.log_prob(params, jnp.zeros((4, 2)))
    with pytest.raises(InputError, match=r"points of shape \(n, 3\)"):
        family.log_prob(params, jnp.zeros(3))
    with pytest.raises(InputError, match="params do not fit"):
        FullRankGaussian(4).log_prob(params, jnp.zeros((1, 4)))
    with pytest.raises(InputError, match="params do not fit"):
        DiagonalGaussian(3).log_prob(params, jnp.zeros((1, 3)))
    with pytest.raises(InputError, match="positive diagonal"):
        family.params_at(np.zeros(3), -np.eye(3))
    with pytest.raises(InputError, match="dim >= 2"):
        CouplingFlow(1)
    with pytest.raises(InputError, match="coupling must be one of"):
        CouplingFlow(2, coupling="neural_spline")
    with pytest.raises(InputError, match="max_log_scale bounds affine couplings"):
        CouplingFlow(2, coupling="spline", max_log_scale=3.0)
    with pytest.raises(InputError, match="max_log_scale"):
        CouplingFlow(2, max_log_scale=0.0)
    conditional = CouplingFlow(2, num_layers=1, hidden=(4,), context_dim=3)
    with pytest.raises(InputError, match=r"context of shape \(3,\)"):
        conditional.log_prob(conditional.init(jax.random.key(0)), jnp.zeros((1, 2)))
    with pytest.raises(InputError, match="init_scale"):
        DiagonalGaussian(2, init_scale=0.0)
