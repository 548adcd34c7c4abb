"""Reference observables of lattice targets: exact by enumeration, else Glauber chains (with Ising's exact P(m)).

Error budget of the Glauber checks: 200 chains, the second half of 200 sweeps thinned to one in one
(about 20 000 correlated draws); 0.05 on ``<|m|>`` and on ``G(r)`` is several standard errors at these
sizes (the measured errors are below 0.01).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsamp.diagnostics import observables as obs
from jaxsamp.mcmc.lattice_reference import glauber_observables, reference_observables
from jaxsamp.targets.lattice import ising, potts


def _enumerated(target):
    states, probs = target.enumerate_states()
    return obs.lattice_observables(target, jnp.asarray(states), jnp.log(jnp.asarray(probs, jnp.float32)))


def test_potts_reference_is_exact_on_a_tiny_lattice_and_glauber_agrees():
    target = potts(3, 1.0, q=3)
    exact = _enumerated(target)
    assert "two_point" not in exact and 0 < exact["abs_order"] < 1
    ref, source = reference_observables(target, jax.random.key(0), num_chains=200, num_sweeps=200)
    assert source == "exact" and ref["abs_order"] == pytest.approx(exact["abs_order"])
    # an odd lattice: random-scan heat-bath sweeps
    glauber = glauber_observables(target, jax.random.key(1), 200, 200)
    assert abs(glauber["abs_order"] - exact["abs_order"]) < 0.05


def test_glauber_matches_exact_ising():
    target = ising(4, 0.4407)
    exact = _enumerated(target)
    glauber = glauber_observables(target, jax.random.key(0), 200, 200)  # checkerboard sweeps
    assert abs(glauber["abs_order"] - exact["abs_order"]) < 0.05
    np.testing.assert_allclose(glauber["two_point"], exact["two_point"], atol=0.05)


def test_ising_beyond_enumeration_takes_the_exact_law_of_m_and_glauber_g():
    """6x6 (2^36 states): the histogram and <|m|> are the transfer matrix's, G(r) the chains'."""
    target = ising(6, 0.4407)
    ref, source = reference_observables(target, jax.random.key(2), num_chains=100, num_sweeps=100, progress=False)
    assert source == "exact P(m), glauber G(r)"
    exact = obs.exact_magnetization_observables(target)
    assert ref["abs_order"] == exact["abs_order"] and np.array_equal(ref["hist"], exact["hist"])
    assert ref["two_point"].shape == (4,) and 0 < ref["two_point"][0] < 1
