"""Composite kernels leave the target invariant when their parts do.

Continuous: chains start from exact samples of a correlated Gaussian; after
composite steps their first two moments must still match the exact ones
(z-tests, 5-sigma budget per coordinate at fixed seeds).
Discrete: chains on a 3-variable categorical target start from exact samples;
after composite steps the empirical distribution must pass a chi-square test
against the enumerated probabilities (p > 1e-4 at a fixed seed) while a
deliberately wrong kernel fails it.
"""

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxsamp.core import (
    Kernel,
    adaptive,
    compose,
    ensemble,
    guard_finite,
    mixture,
    on_blocks,
    position_of,
    repeat,
    robbins_monro_step_size,
    run,
    thin,
)
from jaxsamp.targets import get

N_CHAINS = 4000
TARGET = get("gaussian", dim=4, scale=1.2, correlation=0.5)


def _gaussian_invariance(kernel, num_steps=30, seed=0):
    key = jax.random.key(seed)
    x0 = TARGET.sample(jax.random.fold_in(key, 1), N_CHAINS)
    k = ensemble(kernel)
    state, _ = run(k.step, k.init(x0), key, num_steps, progress=False)
    x = np.asarray(jax.vmap(position_of)(state), np.float64)
    mean, cov = np.asarray(TARGET.mean), np.asarray(TARGET.cov)
    sd = np.sqrt(np.diag(cov))
    z_mean = (x.mean(0) - mean) / (sd / np.sqrt(N_CHAINS))
    # Var of the sample variance of a Gaussian is 2 sigma^4 / n.
    z_var = (x.var(0) - np.diag(cov)) / (np.sqrt(2.0 / N_CHAINS) * np.diag(cov))
    corr = np.corrcoef(x.T)[0, 1]
    assert np.all(np.abs(z_mean) < 5), z_mean
    assert np.all(np.abs(z_var) < 5), z_var
    assert abs(corr - 0.5) < 5 * (1 - 0.25) / np.sqrt(N_CHAINS)


def mala(step=0.4):
    return blackjax.mala(TARGET.log_prob, step)


def hmc():
    return blackjax.hmc(TARGET.log_prob, 0.3, jnp.ones(4), 5)


def test_compose_is_invariant():
    _gaussian_invariance(compose(mala(), hmc()))


def test_mixture_is_invariant():
    _gaussian_invariance(mixture([mala(), hmc()], weights=[0.3, 0.7]))


def test_repeat_and_thin_are_invariant():
    _gaussian_invariance(thin(mala(), 3), num_steps=10)
    _gaussian_invariance(repeat(mala(), 3), num_steps=10)


@pytest.mark.parametrize("order", ["random", "cyclic"])
def test_on_blocks_is_invariant(order):
    kernel = on_blocks(lambda f: blackjax.mala(f, 0.5), TARGET.log_prob, [[0, 1], [2, 3]], order=order)
    _gaussian_invariance(kernel, num_steps=40)


def test_on_blocks_unequal_sizes_is_invariant():
    kernel = on_blocks(lambda f: blackjax.mala(f, 0.5), TARGET.log_prob, [[0], [1, 2, 3]], order="cyclic")
    _gaussian_invariance(kernel, num_steps=40)


def test_adaptive_step_size_is_carried_in_state_and_tuned():
    kernel = adaptive(
        lambda step_size: blackjax.mala(TARGET.log_prob, step_size),
        {"step_size": 3.0},
        robbins_monro_step_size(target_acceptance=0.574, rate=0.5, num_adapt=400),
    )
    k = ensemble(kernel)
    state = k.init(TARGET.sample(jax.random.key(3), 256))
    state, trace = run(k.step, state, jax.random.key(4), 500, trace=lambda s, i: i.acceptance_rate.mean(), progress=False)
    h = np.asarray(state.hyper["step_size"])
    assert np.all(h < 3.0) and np.all(np.isfinite(h))
    assert abs(float(np.mean(trace[-100:])) - 0.574) < 0.1
    # the tuned step size survives a hand-off inside compose
    comp = compose(kernel, mala())
    s = comp.init(jnp.zeros(4))
    s = (s[0]._replace(hyper={"step_size": jnp.float32(0.123)}), s[1])
    s, _ = comp.step(jax.random.key(0), s)
    s, _ = comp.step(jax.random.key(1), s)
    assert float(s[0].hyper["step_size"]) != 3.0


# ---------------------------------------------------------------- discrete


Q = 3
COUPLING = np.array([[0.0, 0.8, -0.5], [0.8, 0.0, 0.3], [-0.5, 0.3, 0.0]])
FIELD = np.array([[0.2, -0.1, 0.0], [0.0, 0.4, -0.3], [0.1, 0.0, 0.0]])


def discrete_log_prob(x):
    same = (x[:, None] == x[None, :]).astype(jnp.float32)
    return 0.5 * jnp.sum(jnp.asarray(COUPLING) * same) + jnp.sum(jnp.asarray(FIELD)[jnp.arange(3), x])


def exact_discrete():
    states = np.array(np.meshgrid(*[np.arange(Q)] * 3, indexing="ij")).reshape(3, -1).T
    lp = np.array([float(discrete_log_prob(jnp.asarray(s))) for s in states])
    p = np.exp(lp - lp.max())
    return states, p / p.sum()


def site_metropolis(site, log_prob=discrete_log_prob):
    """Metropolis update of one site with a uniform proposal over the other q-1 values."""

    def init(position, rng_key=None):
        return _DState(position)

    def step(key, state):
        k1, k2 = jax.random.split(key)
        x = state.position
        new = x.at[site].set((x[site] + jax.random.randint(k1, (), 1, Q)) % Q)
        accept = jnp.log(jax.random.uniform(k2)) < log_prob(new) - log_prob(x)
        return _DState(jnp.where(accept, new, x)), accept

    return Kernel(init, step)


from typing import NamedTuple  # noqa: E402


class _DState(NamedTuple):
    position: jax.Array


def _chi_square_pvalue(kernel, num_steps=12, seed=0):
    states, p = exact_discrete()
    key = jax.random.key(seed)
    idx = jax.random.choice(jax.random.fold_in(key, 7), len(p), (N_CHAINS,), p=jnp.asarray(p))
    k = ensemble(kernel)
    state, _ = run(k.step, k.init(jnp.asarray(states)[idx]), key, num_steps, progress=False)
    final = np.asarray(jax.vmap(position_of)(state))
    codes = final @ np.array([Q * Q, Q, 1])
    counts = np.bincount(codes, minlength=len(p))
    return stats.chisquare(counts, N_CHAINS * p).pvalue


def test_discrete_compose_and_mixture_are_invariant():
    sites = [site_metropolis(i) for i in range(3)]
    assert _chi_square_pvalue(compose(*sites)) > 1e-4
    assert _chi_square_pvalue(mixture(sites)) > 1e-4


def test_discrete_chi_square_detects_a_wrong_kernel():
    wrong = [site_metropolis(i, lambda x: 2.0 * discrete_log_prob(x)) for i in range(3)]
    assert _chi_square_pvalue(compose(*wrong)) < 1e-6


# ---------------------------------------------------------------- guards


def test_guard_finite_rejects_nan_and_counts_it():
    def bad_log_prob(x):
        # NaN for x[0] > 1, +inf for x[0] < -1: both would poison an unguarded chain
        lp = -0.5 * jnp.sum(x**2)
        return jnp.where(x[0] > 1.0, jnp.nan, jnp.where(x[0] < -1.0, jnp.inf, lp))

    kernel = ensemble(guard_finite(blackjax.mala(bad_log_prob, 1.0)))
    state = kernel.init(jnp.zeros((64, 2)))
    state, trace = run(
        kernel.step, state, jax.random.key(0), 200, trace=lambda s, i: i.rejected_nonfinite.sum(), progress=False
    )
    x = np.asarray(state.position)
    assert np.all(np.isfinite(x)) and np.all(np.isfinite(np.asarray(state.logdensity)))
    assert np.all(np.abs(x[:, 0]) <= 1.0)
    assert int(np.sum(trace)) > 0


def test_unguarded_chain_is_poisoned_by_inf():
    # documents why guard_finite exists: an +inf proposal is always accepted
    def inf_log_prob(x):
        return jnp.where(x[0] < -1.0, jnp.inf, -0.5 * jnp.sum(x**2))

    kernel = ensemble(blackjax.mala(inf_log_prob, 1.0))
    from jaxsamp.core.errors import RunHealthWarning

    with pytest.warns(RunHealthWarning, match=r"ended where the log density is \+inf \(64 of them were absorbed"):
        state, _ = run(kernel.step, kernel.init(jnp.zeros((64, 2))), jax.random.key(0), 200, progress=False)
    assert not np.all(np.isfinite(np.asarray(state.logdensity)))


# ---------------------------------------------------------------- the position protocol


def plain_tuple_rwm(step=0.8):
    """A user kernel whose state is a plain tuple (position, log density): random-walk Metropolis."""

    def init(x, rng_key=None):
        return (x, TARGET.log_prob(x))

    def step_fn(key, state):
        x, lp = state
        k1, k2 = jax.random.split(key)
        y = x + step * jax.random.normal(k1, x.shape)
        lq = TARGET.log_prob(y)
        accept = jnp.log(jax.random.uniform(k2)) < lq - lp
        return (jnp.where(accept, y, x), jnp.where(accept, lq, lp)), accept

    return Kernel(init, step_fn)


def test_a_plain_tuple_state_composes_and_stays_invariant():
    """Once 'cannot find a position in state of type BatchTracer': the first element is the position."""
    _gaussian_invariance(compose(plain_tuple_rwm(), mala()))
    _gaussian_invariance(mixture([mala(), plain_tuple_rwm()]))


def test_position_of_reads_batched_mixture_and_compose_states():
    """position_of on a many-chain mixture state once raised 'Branch index must be scalar'."""
    x0 = TARGET.sample(jax.random.key(3), 16)
    for kernel in (mixture([mala(), hmc()]), compose(mala(), hmc())):
        k = ensemble(kernel)
        state, _ = run(k.step, k.init(x0), jax.random.key(4), 5, progress=False)
        np.testing.assert_array_equal(np.asarray(position_of(state)), np.asarray(jax.vmap(position_of)(state)))
    assert position_of(state).shape == (16, 4)


def test_register_position_for_a_custom_state_type():
    class Walker(NamedTuple):
        where: jax.Array

    kernel = Kernel(lambda x, rng_key=None: Walker(x), lambda key, s: (Walker(s.where + 1.0), None))
    with pytest.raises(TypeError, match="register a getter with jaxsamp.register_position"):
        position_of(Walker(jnp.zeros(2)))
    from jaxsamp.core import register_position

    register_position(Walker, lambda s: s.where)
    state, _ = compose(mala(), kernel).step(jax.random.key(0), compose(mala(), kernel).init(jnp.zeros(4)))
    assert position_of(state).shape == (4,)


def _acceptance(kernel, x0, steps, key):
    k = ensemble(kernel)
    _, acc = run(k.step, k.init(x0), key, steps, trace=lambda s, i: i.acceptance_rate, progress=False)
    return np.asarray(acc)


def test_mixture_reports_the_chosen_kernels_acceptance():
    """Zero-filled infos once made the averaged acceptance read 0.23 / 0.38 where the truth was 0.46 / 0.77.

    Each kernel's own rate is measured alone on exact samples; the mixture's
    chosen-kernel rate must average to the weighted mean and each child's NaN-filled
    info to its own rate. Error budget: 5 standard errors of a mean of 0/1-valued
    chain-steps over 2000 chains x 40 steps (se <= 0.5 / sqrt(80000)).
    """
    x0 = TARGET.sample(jax.random.key(5), 2000)
    small, large = mala(0.3), mala(1.6)
    rate_small = float(_acceptance(small, x0, 40, jax.random.key(6)).mean())
    rate_large = float(_acceptance(large, x0, 40, jax.random.key(7)).mean())
    assert rate_large < rate_small - 0.2  # the two rates are distinguishable

    k = ensemble(mixture([small, large], [0.5, 0.5]))
    _, info = run(k.step, k.init(x0), jax.random.key(8), 40, trace=lambda s, i: i, progress=False)
    budget = 5 * 0.5 / np.sqrt(2000 * 40 * 0.5)  # each child gets half of the chain-steps
    chosen = np.asarray(info.index)
    assert abs(np.mean(chosen) - 0.5) < 5 * 0.5 / np.sqrt(chosen.size)
    assert abs(float(np.mean(info.acceptance_rate)) - 0.5 * (rate_small + rate_large)) < 2 * budget
    per_kernel = [float(np.nanmean(np.asarray(info.infos[j].acceptance_rate))) for j in range(2)]
    assert abs(per_kernel[0] - rate_small) < budget and abs(per_kernel[1] - rate_large) < budget
    assert np.all(np.isnan(np.asarray(info.infos[1].acceptance_rate))[chosen == 0])
