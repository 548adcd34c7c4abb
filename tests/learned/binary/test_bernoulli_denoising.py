"""Bernoulli-noise denoising: the noise model and its identities against enumeration, the denoiser, its training.

Oracles (module docstring of jaxsamp.learned.binary.bernoulli_denoising): the product
prior's closed-form posterior mean tanh(atanh mu + alpha y) (eq. 5); the
posterior mean and q_alpha by explicit sums over all 2^d clean states; the
uniform prior's exact denoiser tanh(h), which an untrained network reproduces.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _resume_checks import assert_resumes_bit_identical
from flax import nnx

from jaxsamp.core.errors import InputError
from jaxsamp.diagnostics.binary_discrepancies import chi_square_p_value
from jaxsamp.learned.binary.bernoulli_denoising import (
    BernoulliDenoisingSettings,
    BitDenoiser,
    PatchConv,
    build,
    exact_posterior_mean,
    natural_parameter,
    noisy_batch,
    noisy_log_density,
)
from jaxsamp.learned.binary.bernoulli_samplers import flip_probability, measure
from jaxsamp.targets.binary import (
    BernoulliMixture,
    ProductBernoulli,
    bernoulli_mixture,
    enumerated_log_partition,
    spin_states,
)

MEANS = jnp.array([0.8, -0.5, 0.1, -0.95, 0.3, 0.6])
MIXTURE = BernoulliMixture(
    [0.5, 0.3, 0.2],
    [[0.9, 0.8, -0.7, 0.6, -0.9, 0.5], [-0.8, -0.6, 0.7, 0.2, 0.9, -0.9], [0.1, -0.9, -0.9, -0.5, 0.3, 0.95]],
)


def posterior_mean_by_enumeration(log_p, alpha, y):
    """``sum_x x p(x) e^{alpha x.y} / sum_x p(x) e^{alpha x.y}`` over all 2^d states, float64, for ``y`` (..., d)."""
    y = np.asarray(y, np.float64)
    x = np.asarray(spin_states(y.shape[-1]), np.float64)
    logits = np.asarray(log_p, np.float64) + alpha * y @ x.T
    w = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return w @ x / w.sum(axis=-1, keepdims=True)


def test_product_prior_posterior_mean_is_tanh_of_atanh_mu_plus_alpha_y():
    target, alpha = ProductBernoulli(MEANS), 0.7
    g = exact_posterior_mean(target.log_partition)
    log_p = jax.vmap(target.log_prob)(spin_states(6))
    ys = jnp.concatenate([spin_states(6)[::7], 1.5 * jax.random.normal(jax.random.key(0), (10, 6))])  # cube and off it
    closed_form = jnp.tanh(jnp.arctanh(MEANS) + alpha * ys)
    np.testing.assert_allclose(jax.jit(jax.vmap(lambda y: g(alpha * y)))(ys), closed_form, atol=2e-6)
    np.testing.assert_allclose(posterior_mean_by_enumeration(log_p, alpha, ys), closed_form, atol=1e-6)
    # the enumerated log partition is the closed form too
    h = jax.random.normal(jax.random.key(1), (6,))
    np.testing.assert_allclose(enumerated_log_partition(log_p)(h), target.log_partition(h), rtol=1e-5)


@pytest.mark.parametrize("alpha", [0.3, 1.2])
def test_identity_posterior_mean_is_score_over_alpha_on_a_mixture(alpha):
    """``E[x | y] = alpha^-1 grad_y log q_alpha(y)`` (eq. 3): autodiff of the closed-form mixture ``q`` against enumeration."""
    log_q = noisy_log_density(MIXTURE.log_partition, alpha)
    log_p = jax.vmap(MIXTURE.log_prob)(spin_states(6))
    ys = jnp.concatenate([spin_states(6)[::5], 0.8 * jax.random.normal(jax.random.key(2), (8, 6))])
    score = jax.jit(jax.vmap(jax.grad(log_q)))(ys) / alpha
    np.testing.assert_allclose(score, posterior_mean_by_enumeration(log_p, alpha, ys), atol=5e-6)
    # the multi-measurement posterior depends on h = alpha sum_j y_j only: g(h) by autodiff of A, by enumeration at y = h / alpha
    y3 = jnp.where(jax.random.bernoulli(jax.random.key(3), 0.5, (3, 6)), 1.0, -1.0)
    h = natural_parameter(y3, alpha)
    np.testing.assert_allclose(
        exact_posterior_mean(MIXTURE.log_partition)(h), posterior_mean_by_enumeration(log_p, 1.0, h), atol=5e-6
    )


def test_smoothed_density_is_the_noise_channel_applied_to_p():
    """``q_alpha(y) = sum_x p(x) prod_i e^{alpha x_i y_i} / (2 cosh alpha)`` on the cube (eq. 2): normalised, and equal to the channel."""
    alpha = 0.9
    states = spin_states(6)
    q = jnp.exp(jax.vmap(noisy_log_density(MIXTURE.log_partition, alpha))(states))
    p = jnp.exp(jax.vmap(MIXTURE.log_prob)(states))
    channel = jnp.exp(alpha * states @ states.T) / (2 * jnp.cosh(alpha)) ** 6  # p(y | x), rows x
    np.testing.assert_allclose(q, p @ channel, rtol=1e-5)
    np.testing.assert_allclose(float(q.sum()), 1.0, rtol=1e-5)


def test_measurements_follow_the_smoothed_density():
    """Exact samples pushed through :func:`measure` have law ``q_alpha`` (chi-square over 64 states).

    Error budget: 40 000 draws at a fixed seed, reject below p = 1e-4; the flip rate
    within 5 binomial standard errors of ``1 / (1 + e^{2 alpha})``.
    """
    alpha, n = 0.6, 40_000
    x = MIXTURE.sample(jax.random.key(4), n)
    y = measure(jax.random.key(5), x, alpha)
    q = np.exp(np.asarray(jax.vmap(noisy_log_density(MIXTURE.log_partition, alpha))(spin_states(6)), np.float64))
    assert chi_square_p_value(y, q) > 1e-4
    rate, p_flip = float(jnp.mean(x != y)), float(flip_probability(alpha))
    assert abs(rate - p_flip) < 5 * np.sqrt(p_flip * (1 - p_flip) / (6 * n))


@pytest.mark.parametrize(
    "network, shape, padding", [("mlp", (6,), "zeros"), ("conv", (4, 4), "circular"), ("conv", (4, 4), "zeros")]
)
def test_untrained_denoiser_is_the_uniform_prior_posterior(network, shape, padding):
    """With ``f_theta = 0`` at initialisation ``l = 2 h``, i.e. ``g(h) = tanh(h)``: the exact answer for uniform bits."""
    model = BitDenoiser(shape, network, hidden=(16,), channels=4, conv_layers=2, padding=padding, rngs=nnx.Rngs(0))
    h = jax.random.normal(jax.random.key(1), (5, *shape))
    apply = nnx.jit(lambda m, h: m(h))
    np.testing.assert_allclose(jnp.tanh(0.5 * apply(model, h)), jnp.tanh(h), atol=1e-6)
    assert apply(model, h[0]).shape == shape  # one state as well as a batch
    with pytest.raises(InputError, match="denoiser takes h"):
        model(jnp.zeros((3, 7)))


@pytest.mark.parametrize("padding, flax_padding", [("circular", "CIRCULAR"), ("zeros", "SAME")])
def test_patch_convolution_equals_lax_convolution(padding, flax_padding):
    """Against flax's ``lax.conv``: so the circular conv denoiser is translation equivariant on the torus."""
    conv = PatchConv(3, 5, 3, padding, rngs=nnx.Rngs(0))
    conv.bias[...] = jax.random.normal(jax.random.key(1), (5,))
    reference = nnx.Conv(3, 5, (3, 3), padding=flax_padding, rngs=nnx.Rngs(1))
    reference.kernel[...] = conv.kernel[...].reshape(
        3, 3, 3, 5
    )  # patches are ordered (row offset, column offset, channel)
    reference.bias[...] = conv.bias[...]
    x = jax.random.normal(jax.random.key(2), (2, 6, 5, 3))
    apply = nnx.jit(lambda m, x: m(x))
    np.testing.assert_allclose(apply(conv, x), apply(reference, x), atol=1e-5)


def test_noisy_batch_has_k_measurements():
    """``h / alpha`` of an example with ``k`` measurements is ``x`` times a sum of ``k`` +-1 draws: parity and range of ``k``."""
    x = jnp.ones((4000, 5))
    s = np.asarray(noisy_batch(jax.random.key(0), x, 0.5, 3)) / 0.5
    k_parity = np.abs(np.round(s)) % 2  # k odd: odd sums; k even: even sums
    assert np.all(np.abs(s) <= 3) and np.allclose(s, np.round(s))
    assert set(np.unique(np.abs(s))) <= {0.0, 1.0, 2.0, 3.0}
    rows_same_parity = np.all(k_parity == k_parity[:, :1], axis=1)
    assert rows_same_parity.all()  # one k per example


def test_bad_inputs_are_clear_errors():
    with pytest.raises(InputError, match=r"\+-1 spins"):
        build(jnp.zeros((10, 4)))
    with pytest.raises(InputError, match="2-D states"):
        build(jnp.ones((10, 4)), BernoulliDenoisingSettings(network="conv"))
    with pytest.raises(InputError, match="alpha"):
        BernoulliDenoisingSettings(alpha=-1.0)
    with pytest.raises(InputError, match="hidden"):
        BernoulliDenoisingSettings(hidden=(8, 0))
    with pytest.raises(InputError, match="strictly inside"):
        ProductBernoulli([0.5, 1.0])


def test_stopped_training_run_resumes_bit_identically(tmp_path):
    """Checkpointed denoiser training, stopped half way, resumes bit for bit.

    A small MLP denoiser on samples of a 6-bit mixture, up to 3 measurements per
    example; the whole train state (network, Adam moments, step count) has to
    round-trip through the checkpoint.
    """
    data = bernoulli_mixture(dim=6, num_components=3, seed=2).sample(jax.random.key(0), 500)
    settings = BernoulliDenoisingSettings(alpha=0.8, max_measurements=3, hidden=(32, 32), decay_steps=40)
    denoiser = build(data, settings, batch_size=64)
    assert_resumes_bit_identical(denoiser.step, denoiser.init(jax.random.key(1)), 40, 10, tmp_path, min_arrays=5)
