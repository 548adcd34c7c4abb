"""Binary targets: product and mixture laws, log partitions and samplers against enumeration; the digits split; the FVBM.

Oracles: sums over all 2^d states; the exact Gibbs conditionals of a Boltzmann
machine; a pseudo-likelihood fit that must recover the fields of independent bits.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsamp.targets
from jaxsamp.core.errors import ConfigError, InputError
from jaxsamp.diagnostics.binary_discrepancies import (
    chi_square_p_value,
    empirical_distribution,
    hamming_mmd,
    total_variation,
)
from jaxsamp.targets.binary import enumerated_log_partition, spin_states, state_index
from jaxsamp.targets.boltzmann_machine import FullyVisibleBoltzmannMachine, fit_pseudo_likelihood


def test_spin_states_and_their_indices_agree():
    states = spin_states(5)
    assert states.shape == (32, 5) and set(np.unique(states)) == {-1.0, 1.0}
    np.testing.assert_array_equal(state_index(states), np.arange(32))
    with pytest.raises(InputError, match="enumeration"):
        spin_states(21)


@pytest.mark.parametrize(
    "name, params",
    [
        ("product_bernoulli", {"means": [0.5, -0.2, 0.9, 0.0, -0.6]}),
        ("bernoulli_mixture", {"dim": 5, "num_components": 3, "seed": 4}),
    ],
)
def test_laws_are_normalised_and_sampled_exactly(name, params):
    """``sum_x p(x) = 1`` (log Z = 0), ``A(0) = 0``, ``A`` equals enumeration; exact samples pass chi-square (p > 1e-4, 20 000 draws)."""
    target = jaxsamp.targets.get(name, **params)
    states = spin_states(5)
    log_p = jax.vmap(target.log_prob)(states)
    np.testing.assert_allclose(float(jnp.exp(log_p).sum()), 1.0, rtol=1e-5)
    h = jax.random.normal(jax.random.key(0), (5,))
    np.testing.assert_allclose(target.log_partition(h), enumerated_log_partition(log_p)(h), rtol=1e-5)
    assert abs(float(target.log_partition(jnp.zeros(5)))) < 1e-6
    x = target.sample(jax.random.key(1), 20_000)
    assert chi_square_p_value(x, np.exp(np.asarray(log_p, np.float64))) > 1e-4
    assert total_variation(x, np.exp(np.asarray(log_p))) < 0.05


def test_mixture_parameters_are_reproducible_and_checked():
    a = jaxsamp.targets.get("bernoulli_mixture", dim=6, num_components=2, seed=7)
    b = jaxsamp.targets.get("bernoulli_mixture", dim=6, num_components=2, seed=7)
    np.testing.assert_array_equal(a.means, b.means)
    with pytest.raises(ConfigError, match="weights and means"):
        jaxsamp.targets.get("bernoulli_mixture", weights=[1.0])
    with pytest.raises(ConfigError, match=r"shape \(K, d\)"):
        jaxsamp.targets.get("bernoulli_mixture", weights=[0.5, 0.5], means=[[0.1, 0.2]])


def test_binary_digits_split_is_fixed_and_disjoint():
    digits = jaxsamp.targets.get("binary_digits")
    train, test = digits.train(), digits.test()
    assert train.shape == (1297, 8, 8) and test.shape == (500, 8, 8)
    assert set(np.unique(train)) == {-1.0, 1.0}
    np.testing.assert_array_equal(jaxsamp.targets.get("binary_digits").test(), test)
    assert 0.25 < float((train > 0).mean()) < 0.4  # about a third of the pixels are on at threshold 8
    with pytest.raises(InputError, match="without a density"):
        digits.log_prob(jnp.ones((8, 8)))


def test_boltzmann_machine_flip_ratios_and_gibbs_conditionals():
    rng = np.random.default_rng(0)
    W, b = rng.normal(size=(5, 5)), rng.normal(size=5)
    model = FullyVisibleBoltzmannMachine(W, b)
    x = spin_states(5)[13]
    flips = jnp.stack([x.at[i].multiply(-1) for i in range(5)])
    direct = jax.vmap(model.log_prob)(flips) - model.log_prob(x)
    np.testing.assert_allclose(model.flip_log_ratios(x), direct, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(model.couplings, model.couplings.T)
    assert float(jnp.abs(jnp.diag(model.couplings)).max()) == 0.0


def test_pseudo_likelihood_recovers_a_known_machine():
    """Data from a known 6-spin Boltzmann machine (20 000 exact draws by enumeration): the fit recovers ``W`` and ``b`` within 0.1
    (the estimator's standard error is about 0.01 here)."""
    rng = np.random.default_rng(1)
    A = 0.4 * rng.normal(size=(6, 6))
    truth = FullyVisibleBoltzmannMachine(A, 0.3 * rng.normal(size=6))
    states = spin_states(6)
    log_p = jax.vmap(truth.log_prob)(states)
    data = states[jax.random.categorical(jax.random.key(2), log_p, shape=(20_000,))]
    model, info = fit_pseudo_likelihood(data, num_steps=800, learning_rate=0.05, l2=0.0)
    assert info["pseudo_log_likelihood"] > info["pseudo_log_likelihood_start"]
    np.testing.assert_allclose(model.couplings, truth.couplings, atol=0.1)
    np.testing.assert_allclose(model.fields, truth.fields, atol=0.1)
    with pytest.raises(InputError, match=r"\+-1"):
        fit_pseudo_likelihood(np.zeros((4, 3)))


def test_hamming_mmd_is_the_gaussian_mmd_with_bandwidth_sqrt_2_ell():
    """``k = exp(-H / ell)``: the V-statistic by hand, 0 for identical sets, positive for different laws."""
    x = jnp.where(jax.random.bernoulli(jax.random.key(0), 0.3, (40, 7)), 1.0, -1.0)
    y = jnp.where(jax.random.bernoulli(jax.random.key(1), 0.6, (30, 7)), 1.0, -1.0)

    def k(a, b):
        return jnp.exp(-jnp.sum(a[:, None] != b[None], axis=-1) / 3.0)

    by_hand = jnp.sqrt(k(x, x).mean() + k(y, y).mean() - 2 * k(x, y).mean())
    np.testing.assert_allclose(hamming_mmd(x, y, 3.0), by_hand, rtol=1e-4)
    assert float(hamming_mmd(x, x, 3.0)) < 1e-3
    assert float(empirical_distribution(x).sum()) == pytest.approx(1.0)
