"""LEAPS: rates and the Jarzynski integrand, Euler jumps, unbiased Z with G = 0, training, observables, resume.

Oracles: the generator definition of ``K_t`` (d + 1 forward passes, against the
one-pass formula), exact Bernoulli/categorical jump laws, and exact enumeration
of 3x3 lattices (``Z``, ``P(m)``) from :mod:`jaxsamp.targets.lattice`.
"""

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _kill_resume import assert_kill_resume_bit_identical
from flax import nnx

from jaxsamp.core import WeightedSamples
from jaxsamp.learned import leaps
from jaxsamp.learned.leaps_training import curriculum_grid, curriculum_schedule
from jaxsamp.nets.locally_equivariant import LocallyEquivariantMLP
from jaxsamp.targets.lattice import LatticePath, ising, potts

HERE = Path(__file__).parent
BETA = 0.4407


def _zero_rates(num_categories):
    def rate_fn(x, t):
        return jnp.zeros(x.shape if num_categories is None else (*x.shape, num_categories))

    return rate_fn


# --------------------------------------------------------------------------
# the integrand and the jumps
# --------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["ising", "potts"])
def test_one_pass_integrand_equals_the_generator_definition(model):
    """K_t(x) = d_t log pi_t - sum_y Q(y->x) pi_t(y)/pi_t(x) - Q(x, x), with Q(y->x) from a pass at y."""
    target = ising(3, BETA) if model == "ising" else potts(3, 1.0, q=3)
    q = None if model == "ising" else 3
    path = LatticePath(target)
    net = jax.jit(LocallyEquivariantMLP((3, 3), q, hidden=(16,), rngs=nnx.Rngs(0)).__call__)
    x = path.sample_base(jax.random.key(1), 1)[0]
    t = jnp.float32(0.6)
    G = net(x, t)
    log_ratios = path.flip_log_ratios(x, t)
    fast = leaps.jarzynski_integrand(G, log_ratios, path.dlog_prob_dt(x, t))

    inflow = 0.0
    for i in np.ndindex(3, 3):
        if q is None:
            y = x.at[i].set(-x[i])
            inflow += jax.nn.relu(net(y, t)[i]) * jnp.exp(log_ratios[i])
        else:
            for c in range(q):
                if c != int(x[i]):
                    y = x.at[i].set(c)
                    inflow += jax.nn.relu(net(y, t)[i][int(x[i])]) * jnp.exp(log_ratios[i][c])
    slow = path.dlog_prob_dt(x, t) - (inflow - jnp.sum(jax.nn.relu(G)))
    assert float(jnp.abs(G).max()) > 1e-3  # non-trivial rates
    np.testing.assert_allclose(float(fast), float(slow), rtol=1e-5, atol=1e-5)


def test_euler_jump_laws():
    """Spins flip w.p. clip(h ReLU(G)); Potts sites jump w.p. 1 - exp(-h sum ReLU(G)) to c ∝ ReLU(G_c)."""
    n = 20000
    keys = jax.random.split(jax.random.key(0), n)
    jump = jax.jit(jax.vmap(leaps.euler_jump, in_axes=(0, None, None, None)))
    # spins: flip probabilities 0.15, 0.6, 0, 0 (G = 0.5, 2, -1, 0 with h = 0.3), and 1 (clipped)
    x = jnp.ones((1, 5))
    G = jnp.array([[0.5, 2.0, -1.0, 0.0, 10.0]])
    flips = np.asarray(jump(keys, x, G, 0.3) < 0).mean(0)[0]
    p = np.array([0.15, 0.6, 0.0, 0.0, 1.0])
    # 5 sigma of a Bernoulli frequency over n draws
    assert np.all(np.abs(flips - p) <= 5 * np.sqrt(p * (1 - p) / n) + 1e-12)

    # Potts q = 3, x = (0, 1): site 0 out-rates (.., 1, 2), site 1 out-rates (0, .., 0.5)
    xc = jnp.array([[0, 1]], jnp.int32)
    Gc = jnp.array([[[0.0, 1.0, 2.0], [-1.0, 0.0, 0.5]]])
    new = np.asarray(jump(keys, xc, Gc, 0.4))[:, 0]
    jump0 = 1 - np.exp(-0.4 * 3.0)
    probs0 = {0: 1 - jump0, 1: jump0 / 3, 2: 2 * jump0 / 3}
    probs1 = {1: np.exp(-0.4 * 0.5), 2: 1 - np.exp(-0.4 * 0.5), 0: 0.0}
    for site, probs in ((0, probs0), (1, probs1)):
        for c, pc in probs.items():
            freq = (new[:, site] == c).mean()
            assert abs(freq - pc) <= 5 * np.sqrt(pc * (1 - pc) / n) + 1e-12, (site, c, freq, pc)


# --------------------------------------------------------------------------
# G = 0: importance sampling from the uniform base, and AIS / SMC with a kernel
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "model,weight_point", [("ising", w) for w in leaps.WEIGHT_POINTS] + [("potts", "pre")]
)
def test_zero_rates_is_unbiased_importance_sampling(model, weight_point):
    """With G = 0 and no kernel, walkers stay at x0 ~ uniform and A = log p~(x0) exactly; Z-hat is unbiased."""
    target = ising(3, BETA) if model == "ising" else potts(3, 1.0, q=3)
    q = None if model == "ising" else 3
    path = LatticePath(target)
    n = 20000
    ws = jax.jit(lambda k: leaps.sample(k, _zero_rates(q), path, n, leaps.uniform_grid(4), weight_point=weight_point))(
        jax.random.key(3)
    )
    np.testing.assert_allclose(np.asarray(ws.log_w), np.asarray(jax.vmap(target.log_prob)(ws.x)), rtol=1e-4, atol=1e-4)
    # exact relative standard deviation of Z-hat: sqrt((E_u[w^2] / E_u[w]^2 - 1) / n), w = p~ under uniform u
    states, probs = target.enumerate_states()
    log_p = np.log(probs)  # = log p~ - log Z
    rel_sd = np.sqrt((np.mean(np.exp(2 * log_p)) / np.mean(np.exp(log_p)) ** 2 - 1) / n)
    ratio = np.exp(float(ws.log_Z) - target.exact_log_Z())
    assert abs(ratio - 1) < 5 * rel_sd, (ratio, rel_sd)  # 5 sigma


@pytest.mark.parametrize("resample_threshold", [None, 0.8])
def test_zero_rates_with_metropolis_is_ais_or_smc(resample_threshold):
    """G = 0 plus a pi_t-invariant Metropolis correction is AIS (SMC with resampling): E[Z-hat] = Z."""
    target = ising(3, BETA)
    path = LatticePath(target)
    correction = leaps.metropolis_correction(path, num_updates=3)
    reps, n = 16, 1000

    @jax.jit
    def one_run(key):
        key_x0, key_sim = jax.random.split(key)
        out = leaps.simulate(
            key_sim, _zero_rates(None), path, path.sample_base(key_x0, n), leaps.uniform_grid(8),
            correction=correction, resample_threshold=resample_threshold,
        )
        return WeightedSamples(out.x, out.log_w, path.log_Z0).log_Z, out.num_resampled

    out = [one_run(jax.random.key(10 + r)) for r in range(reps)]
    ratios = np.exp(np.array([float(z) for z, _ in out]) - target.exact_log_Z())
    # mean of 16 independent unbiased Z-hat / Z within 5 standard errors (estimated from the replicates)
    assert abs(ratios.mean() - 1) < 5 * ratios.std(ddof=1) / np.sqrt(reps) + 1e-3, ratios
    resampled = [int(r) for _, r in out]
    assert (min(resampled) > 0) if resample_threshold is not None else (max(resampled) == 0)


# --------------------------------------------------------------------------
# curriculum
# --------------------------------------------------------------------------


def test_curriculum_schedule_grows_with_linearly_increasing_repeats():
    ks = curriculum_schedule(1, 10, 200, warm_up=5)
    assert len(ks) == 206 and ks[0] == 1 and ks[-1] == 10
    assert np.all(np.diff(ks) >= 0) and set(ks.tolist()) == set(range(1, 11))
    counts = np.bincount(ks[5:-1])[1:]
    assert counts.sum() == 200 and counts[-1] > 3 * counts[0]
    assert np.all(np.diff(counts) >= -1)  # rounding may shave one off


def test_curriculum_grid_is_sorted_and_padded():
    ts = np.asarray(curriculum_grid(jax.random.key(0), jnp.int32(4), 10))
    assert ts.shape == (11,) and ts[0] == 0.0
    np.testing.assert_allclose(ts[4:], 0.4, rtol=1e-6)
    assert np.all(np.diff(ts) >= 0) and np.all(ts[1:4] < 0.4)


# --------------------------------------------------------------------------
# training (the trained-sampler checks on 3x3 lattices are in tests/experiments/test_leaps_experiment.py)
# --------------------------------------------------------------------------


def test_killed_training_run_resumes_bit_identically(tmp_path):
    """SIGKILL a checkpointing training run after its first checkpoint, resume it, compare every array."""
    assert_kill_resume_bit_identical(HERE / "_leaps_resume_child.py", tmp_path, min_arrays=10)
