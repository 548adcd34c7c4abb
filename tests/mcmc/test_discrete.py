"""Exactness of the discrete kernels against enumerated lattice distributions.

Every kernel is run on many independent chains started from exact samples (all
k^N states enumerated); after several sweeps the chains' states must still follow
the exact distribution (pi-invariance), checked by a chi-square test on the full
state space (cells with an expected count below 5 pooled).

Error budget: at a fixed seed a correct kernel passes when p > 1e-4 (a false
alarm rate of 1e-4 per test); the power of each test is shown by a negative
control on the same samples: the exact distribution at a 10% wrong beta must be
rejected with p < 1e-8.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxsamp.core import ensemble, run
from jaxsamp.core.registry import SAMPLERS
from jaxsamp.mcmc import discrete
from jaxsamp.targets import get
from jaxsamp.targets.lattice import UniformLattice

NUM_CHAINS = 20_000
NUM_SWEEPS = 10
P_PASS = 1e-4
P_REJECT = 1e-8


def _codes(states: np.ndarray, k: int) -> np.ndarray:
    """Integer code of each state (base-k digits of its sites); spins -1/+1 map to 0/1."""
    flat = np.asarray(states).reshape(len(states), -1)
    digits = (flat > 0).astype(np.int64) if k == 2 and flat.min() < 0 else flat.astype(np.int64)
    return digits @ (k ** np.arange(flat.shape[1], dtype=np.int64))


def _chi_square_p(samples, target) -> float:
    states, probs = target.enumerate_states()
    k = target.num_states_per_site
    order = np.argsort(_codes(states, k))
    sorted_codes = _codes(states, k)[order]
    idx = np.searchsorted(sorted_codes, _codes(samples, k))
    assert np.all(sorted_codes[idx] == _codes(samples, k)), "a sample is not a lattice state"
    observed = np.bincount(idx, minlength=len(states)).astype(float)
    expected = probs[order] * len(samples)
    small = expected < 5
    obs = np.append(observed[~small], observed[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    return stats.chisquare(obs, exp).pvalue


def _final_states(kernel, target, seed=0, num_steps=NUM_SWEEPS):
    states, probs = target.enumerate_states()
    x0 = states[np.random.default_rng(seed).choice(len(states), NUM_CHAINS, p=probs)]
    chains = ensemble(kernel)
    key_run = jax.random.key(seed)
    state, _ = run(chains.step, chains.init(x0), key_run, num_steps, chunk=num_steps, progress=False)
    return np.asarray(state.position)


def _check_exact(samples, target, wrong):
    p = _chi_square_p(samples, target)
    p_wrong = _chi_square_p(samples, wrong)
    assert p > P_PASS, f"chi-square rejects the kernel: p = {p:.2e}"
    assert p_wrong < P_REJECT, f"negative control not rejected: p = {p_wrong:.2e} (test lacks power)"


RANDOM_SCAN_CASES = [
    ("ising", {"L": 3, "beta": 0.3}, "metropolis"),
    ("ising", {"L": 3, "beta": 0.3}, "heat_bath"),
    ("potts", {"L": [2, 3], "beta": 0.5, "q": 3}, "metropolis"),
    ("potts", {"L": [2, 3], "beta": 0.5, "q": 3}, "heat_bath"),
]


@pytest.mark.parametrize("name,params,rule", RANDOM_SCAN_CASES)
def test_random_scan_matches_enumeration(name, params, rule):
    target = get(name, **params)
    q = discrete.lattice_categories(target)
    kernel = discrete.random_scan(target.flip_log_ratios, rule, q, num_updates=target.num_sites)
    samples = _final_states(kernel, target)
    _check_exact(samples, target, get(name, **{**params, "beta": 1.1 * params["beta"]}))


@pytest.mark.parametrize("name,params,rule", RANDOM_SCAN_CASES)
def test_random_scan_with_site_log_ratios_is_the_same_chain(name, params, rule):
    """Reading one site's ratios from its neighbours changes nothing: the chains are equal draw for draw."""
    target = get(name, **params)
    q = discrete.lattice_categories(target)
    whole = ensemble(discrete.random_scan(target.flip_log_ratios, rule, q, num_updates=50))
    local = ensemble(
        discrete.random_scan(target.flip_log_ratios, rule, q, num_updates=50, site_log_ratios=target.site_log_ratios)
    )
    x0 = UniformLattice(target).sample(jax.random.key(1), 64)
    ends = [run(k.step, k.init(x0), jax.random.key(2), 5, progress=False)[0].position for k in (whole, local)]
    np.testing.assert_array_equal(np.asarray(ends[0]), np.asarray(ends[1]))
    assert not np.array_equal(np.asarray(ends[0]), np.asarray(x0))


CHECKERBOARD_CASES = [
    ("ising", {"L": [2, 4], "beta": 0.3}, "heat_bath"),
    ("ising", {"L": [2, 4], "beta": 0.3}, "metropolis"),
    ("potts", {"L": [2, 4], "beta": 0.6, "q": 3}, "heat_bath"),
    ("potts", {"L": [2, 4], "beta": 0.6, "q": 3}, "metropolis"),
    ("ising", {"L": 3, "beta": 0.4}, "heat_bath"),  # odd sides: three colours
    ("potts", {"L": [3, 2], "beta": 0.6, "q": 3}, "heat_bath"),
]


@pytest.mark.parametrize("name,params,rule", CHECKERBOARD_CASES)
def test_checkerboard_matches_enumeration(name, params, rule):
    target = get(name, **params)
    kernel = discrete.checkerboard(target.flip_log_ratios, rule, discrete.lattice_categories(target))
    samples = _final_states(kernel, target)
    _check_exact(samples, target, get(name, **{**params, "beta": 1.1 * params["beta"]}))


@pytest.mark.parametrize("shape", [(4, 6), (3, 3), (5, 4), (15, 15), (7,), (3, 5, 2)])
def test_checkerboard_colours_never_give_neighbours_one_colour(shape):
    """Two colours when every side is even, three otherwise; no periodic nearest neighbours share one."""
    colours = discrete.checkerboard_colours(shape)
    assert colours.shape == shape
    assert colours.max() + 1 == (2 if all(n % 2 == 0 for n in shape) else 3)
    for axis in range(len(shape)):
        assert np.all(colours != np.roll(colours, 1, axis=axis))


def test_checkerboard_needs_sides_of_at_least_two():
    kernel = discrete.checkerboard(get("ising", L=4, beta=0.3).flip_log_ratios)
    with pytest.raises(ValueError, match=">= 2"):
        kernel.init(jnp.ones((1, 4)))


def test_bad_rule_and_ratio_shape_are_errors():
    target = get("potts", L=2, beta=0.5, q=3)
    with pytest.raises(ValueError, match="rule"):
        discrete.random_scan(target.flip_log_ratios, "gibbs")
    # a Potts target read as spins: flip_log_ratios has a trailing q axis
    kernel = discrete.heat_bath(target.flip_log_ratios, num_categories=None)
    with pytest.raises(AssertionError, match="flip_log_ratios"):
        kernel.step(jax.random.key(0), kernel.init(jnp.zeros((2, 2), jnp.int32)))
    local = discrete.random_scan(  # wrong q for the site's row
        target.flip_log_ratios, "heat_bath", num_categories=2, site_log_ratios=target.site_log_ratios
    )
    with pytest.raises(AssertionError, match="site_log_ratios"):
        local.step(jax.random.key(0), local.init(jnp.zeros((2, 2), jnp.int32)))


def test_info_counts_and_dtypes():
    ising = get("ising", L=4, beta=0.4)
    spins = jnp.ones((4, 4), jnp.int8)
    kernel = discrete.checkerboard(ising.flip_log_ratios)
    state, info = jax.jit(kernel.step)(jax.random.key(0), kernel.init(spins))
    assert state.position.dtype == jnp.int8 and set(np.unique(state.position)) <= {-1, 1}
    assert int(info.num_flip_attempts) == 16 and int(info.num_target_evals) == 2
    odd = get("ising", L=3, beta=0.4)
    _, info = jax.jit(discrete.checkerboard(odd.flip_log_ratios).step)(jax.random.key(0), discrete.DiscreteState(jnp.ones((3, 3))))
    assert int(info.num_target_evals) == 3  # three colours
    assert 0.0 <= float(info.acceptance_rate) <= 1.0
    potts = get("potts", L=4, beta=0.4, q=5)
    x = jnp.zeros((4, 4), jnp.int8)
    kernel = discrete.metropolis(potts.flip_log_ratios, 5, num_updates=7)
    state, info = jax.jit(kernel.step)(jax.random.key(1), kernel.init(x))
    assert state.position.dtype == jnp.int8 and int(state.position.max()) < 5
    assert int(info.num_flip_attempts) == 7 and int(info.num_target_evals) == 7


def test_metropolis_proposes_only_other_categories():
    """At beta = 0 every Potts Metropolis proposal is accepted, so every update changes the site."""
    potts = get("potts", L=4, beta=0.0, q=3)
    kernel = discrete.metropolis(potts.flip_log_ratios, 3, num_updates=50)
    _, info = jax.jit(kernel.step)(jax.random.key(2), kernel.init(jnp.zeros((4, 4), jnp.int32)))
    assert float(info.acceptance_rate) == 1.0


@pytest.mark.parametrize(
    "name,target",
    [
        ("metropolis_site", get("potts", L=4, beta=0.8, q=3)),
        ("glauber", get("ising", L=4, beta=0.4)),
        ("checkerboard", get("potts", L=4, beta=0.8, q=3)),
    ],
)
def test_registered_samplers_run_on_lattices(name, target):
    kernel = SAMPLERS.get(name, target)
    x0 = UniformLattice(target).sample(jax.random.key(0), 1)[0]
    state, info = jax.jit(kernel.step)(jax.random.key(1), kernel.init(x0))
    assert state.position.shape == (4, 4)
    assert int(info.num_flip_attempts) == 16  # one sweep per step by default
    with pytest.raises(ValueError, match="spin or categorical"):
        SAMPLERS.get(name, get("gaussian", dim=2))
