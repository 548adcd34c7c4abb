"""Lattice observables against exact enumeration (Ising 4x4, Potts 3x3), the transfer matrix's P(m) and direct sums."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsamp.targets
from jaxsamp.diagnostics import observables as obs


def _two_point_direct(states):
    """G(r) per configuration (n, L, L) -> (n, L//2 + 1) by explicit shifted sums, both axes averaged."""
    ds = states - states.mean(axis=(1, 2), keepdims=True)
    return np.stack(
        [
            0.5 * (np.mean(ds * np.roll(ds, -r, axis=1), axis=(1, 2)) + np.mean(ds * np.roll(ds, -r, axis=2), axis=(1, 2)))
            for r in range(states.shape[1] // 2 + 1)
        ],
        axis=1,
    )


def test_ising_observables_from_exactly_weighted_enumeration():
    # every state of a 4x4 torus, weighted by its exact probability: the self-normalised
    # estimates ARE the exact expectations
    target = jaxsamp.targets.get("ising", L=4, beta=0.4)
    states, probs = target.enumerate_states()
    log_w = jnp.log(jnp.asarray(probs, jnp.float32))
    m_values, p_m = target.exact_magnetization_distribution()  # transfer matrix: independent of the states
    assert float(obs.mean_abs_magnetization(states, log_w)) == pytest.approx(float(np.sum(p_m * np.abs(m_values))), rel=1e-5)
    density, edges = obs.magnetization_histogram(states, log_w, bins=8)
    expected = np.histogram(m_values, bins=8, range=(-1, 1), weights=p_m)[0] / (2 / 8)
    np.testing.assert_allclose(np.asarray(density), expected, rtol=1e-4, atol=1e-6)
    assert np.asarray(edges)[[0, -1]].tolist() == [-1.0, 1.0]
    g = np.asarray(obs.connected_two_point(states, log_w))
    np.testing.assert_allclose(g, probs @ _two_point_direct(states.astype(np.float64)), rtol=1e-4, atol=1e-6)
    assert g[0] == pytest.approx(1.0 - float(np.sum(p_m * m_values**2)), rel=2e-4)  # G(0) = 1 - <m^2>, float32 sums


def test_two_point_function_matches_direct_sums_per_configuration():
    rng = np.random.default_rng(0)
    states = rng.choice([-1.0, 1.0], size=(6, 7, 7)).astype(np.float32)
    direct = _two_point_direct(states.astype(np.float64))
    np.testing.assert_allclose(np.asarray(obs.connected_two_point(states)), direct.mean(0), rtol=1e-5, atol=1e-6)
    log_w = jnp.asarray(rng.normal(size=6), jnp.float32)
    w = np.asarray(jax.nn.softmax(log_w))
    np.testing.assert_allclose(np.asarray(obs.connected_two_point(states, log_w)), w @ direct, rtol=1e-5, atol=1e-6)


def test_potts_magnetization():
    q = 3
    target = jaxsamp.targets.get("potts", L=3, beta=0.6, q=q)
    assert np.asarray(obs.potts_magnetization(np.full((1, 3, 3), 2), q)) == pytest.approx(1.0, abs=1e-6)
    balanced = np.arange(9).reshape(1, 3, 3) % 3  # three sites of each colour: M = 0
    assert float(obs.potts_magnetization(balanced, q)[0]) == pytest.approx(0.0, abs=1e-6)
    states, probs = target.enumerate_states()
    values, p = target.exact_magnetization_distribution()
    # in float64: a float32 weighted mean over the 3^9 states is only good to ~1e-4 (it depends on the
    # order in which XLA sums), which says nothing about the estimator
    with jax.enable_x64(True):
        states64 = jnp.asarray(states, jnp.float64)
        got = obs.mean_potts_magnetization(states64, q, jnp.log(jnp.asarray(probs, jnp.float64)))
        unweighted = obs.self_normalized_mean(obs.potts_magnetization(states64, q))
    assert float(got) == pytest.approx(float(np.sum(values * p)), rel=1e-9)
    assert float(unweighted) == pytest.approx(
        float(np.mean(np.abs(np.mean(np.exp(2j * np.pi * states / q), axis=(1, 2))))), rel=1e-9
    )


def test_lattice_observables_of_exact_probabilities_are_the_exact_law_of_the_order_parameter():
    """Enumeration weighted by exact probabilities: ``lattice_observables`` gives the transfer matrix's ``P(m)``
    histogram and ``<|m|>`` (Ising 4x4), the exact ``<|M|>`` (Potts 3x3, no G(r)); errors against itself are 0."""
    ising = jaxsamp.targets.get("ising", L=4, beta=0.4407)
    states, probs = ising.enumerate_states()
    got = obs.lattice_observables(ising, jnp.asarray(states), jnp.log(jnp.asarray(probs, jnp.float32)))
    exact = obs.exact_magnetization_observables(ising)
    assert got["abs_order"] == pytest.approx(exact["abs_order"], rel=1e-4)  # float32 sums over 2^16 states
    np.testing.assert_allclose(got["hist"], exact["hist"], rtol=1e-4, atol=1e-6)
    assert got["hist"].shape == (obs.NUM_BINS,) and got["two_point"].shape == (3,)
    errors = obs.observable_errors(ising, got, got)
    assert errors["order_hist_tv"] == 0 and errors["two_point_max_abs_err"] == 0
    assert errors["abs_order"] == errors["abs_order_reference"] == got["abs_order"]

    potts = jaxsamp.targets.get("potts", L=3, beta=1.0, q=3)
    states, probs = potts.enumerate_states()
    got = obs.lattice_observables(potts, jnp.asarray(states), jnp.log(jnp.asarray(probs, jnp.float32)))
    values, p = potts.exact_magnetization_distribution()
    assert "two_point" not in got and got["abs_order"] == pytest.approx(float(np.sum(values * p)), rel=1e-4)
    assert obs.order_parameter_axis(potts) == ((0.0, 1.0), "|M|") and obs.exact_magnetization_observables(potts) is None
    assert set(obs.observable_errors(potts, got, got)) == {"abs_order", "abs_order_reference", "order_hist_tv"}


def test_observable_errors_are_the_total_variation_and_the_largest_two_point_error():
    ising = jaxsamp.targets.get("ising", L=4, beta=0.4407)
    width = 2.0 / obs.NUM_BINS
    flat = {"hist": np.full(obs.NUM_BINS, 0.5), "abs_order": 0.5, "two_point": np.array([1.0, 0.5, 0.25])}
    peaked = {"hist": np.where(np.arange(obs.NUM_BINS) < 2, 1 / (2 * width), 0.0), "abs_order": 0.9,
              "two_point": np.array([1.0, 0.7, 0.2])}
    errors = obs.observable_errors(ising, peaked, flat)
    assert errors["order_hist_tv"] == pytest.approx(0.5 * (2 * (1 / (2 * width) - 0.5) + 18 * 0.5) * width)
    assert errors["two_point_max_abs_err"] == pytest.approx(0.2)
    assert (errors["abs_order"], errors["abs_order_reference"]) == (0.9, 0.5)


def test_magnetization_tv_against_the_exact_distribution_of_m():
    """Exact draws of a 3x3 Ising model (enumeration) have a small TV to the transfer matrix's P(m); uniform spins do not.

    Budget: 10 values of m and 20 000 draws, so the expected TV of exact draws is about 0.01.
    """
    target = jaxsamp.targets.get("ising", L=3, beta=0.4)
    states, probs = target.enumerate_states()
    draws = np.asarray(states)[np.random.default_rng(0).choice(len(probs), 20_000, p=probs)]
    assert obs.magnetization_tv(target, draws) < 0.03
    uniform = np.where(np.random.default_rng(1).random((20_000, 3, 3)) < 0.5, 1.0, -1.0)
    assert obs.magnetization_tv(target, uniform) > 0.2
    assert obs.magnetization_tv(jaxsamp.targets.get("potts", L=3, beta=0.6, q=3), draws) is None  # no P(m)
