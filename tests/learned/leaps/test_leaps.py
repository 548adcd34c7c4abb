"""LEAPS: rates and the Jarzynski integrand, Euler jumps, unbiased Z with G = 0, training, observables, resume.

Oracles: the generator definition of ``K_t`` (d + 1 forward passes, against the
one-pass formula), exact Bernoulli/categorical jump laws, and exact enumeration
of 3x3 lattices (``Z``, ``P(m)``) from :mod:`jaxsamp.targets.lattice`.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _resume_checks import assert_resumes_bit_identical
from flax import nnx

from jaxsamp.core import WeightedSamples
from jaxsamp.core.errors import InputError
from jaxsamp.learned.leaps import simulation
from jaxsamp.learned.leaps.training import Leaps, LeapsSettings
from jaxsamp.mcmc import discrete
from jaxsamp.nets.locally_equivariant import LocallyEquivariantMLP
from jaxsamp.targets.lattice import LatticePath, ising, potts

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
    fast = simulation.jarzynski_integrand(G, log_ratios, path.dlog_prob_dt(x, t))

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
    jump = jax.jit(jax.vmap(simulation.euler_jump, in_axes=(0, None, None, None)))
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
    "model,weight_point", [("ising", w) for w in simulation.WEIGHT_POINTS] + [("potts", "pre")]
)
def test_zero_rates_is_unbiased_importance_sampling(model, weight_point):
    """With G = 0 and no kernel, walkers stay at x0 ~ uniform and A = log p~(x0) exactly; Z-hat is unbiased."""
    target = ising(3, BETA) if model == "ising" else potts(3, 1.0, q=3)
    q = None if model == "ising" else 3
    path = LatticePath(target)
    n = 20000
    ws = jax.jit(lambda k: simulation.sample(k, _zero_rates(q), path, n, simulation.uniform_grid(4), weight_point=weight_point))(
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
    correction = simulation.metropolis_correction(path, num_updates=3)
    reps, n = 16, 1000

    @jax.jit
    def one_run(key):
        key_x0, key_sim = jax.random.split(key)
        out = simulation.simulate(
            key_sim, _zero_rates(None), path, path.sample_base(key_x0, n), simulation.uniform_grid(8),
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
# the exact discrete-time weights
# --------------------------------------------------------------------------


def _random_net(shape, q, seed=0):
    """An untrained locally equivariant MLP with rates of order one (biases lifted so most G are not ~0)."""
    net = LocallyEquivariantMLP(shape, q, hidden=(16,), rngs=nnx.Rngs(seed))
    return lambda x, t: 3.0 * net(x, t)


@pytest.mark.gpu
@pytest.mark.parametrize("model,shape", [("ising", (3, 3)), ("potts", (2, 3))])
def test_exact_weights_have_expectation_z_by_enumeration(model, shape):
    """Every path of 5 Euler steps, by transition matrices over all states: E[prod_k w_k] = Z_1 / Z_0.

    F_k and B_k are built from the library's step probabilities for every pair of states
    (3x3 Ising: 512 states; Potts q = 3 on 2x3: 729), with an untrained network's rates. Both are
    normalised (rows sum to 1) and the forward recursion m_{k+1}(x') = sum_x m_k(x) F_k(x -> x') w_k
    gives Z_1 / Z_0 to the float32 round-off of the kernels' entries (tolerance 1e-6). The floor is
    0.05 so that the kernels are far from the identity. (Any normalised B_k gives this identity;
    that simulate() uses the intended B_k at the right states is the next test's job.)
    """
    target = ising(list(shape), BETA) if model == "ising" else potts(list(shape), 1.0, q=3)
    q = None if model == "ising" else 3
    path = LatticePath(target)
    states, _ = target.enumerate_states()
    states = jnp.asarray(states)
    net = _random_net(shape, q)
    ts = np.linspace(0.0, 1.0, 6)
    floor = 0.05

    def step_matrix(x_from, rates, h):
        probs = jax.vmap(simulation.jump_probabilities, in_axes=(0, 0, None, None))(x_from, rates, h, floor)
        log_p = jax.vmap(lambda xf, pr: jax.vmap(lambda y: simulation.log_jump_probability(xf, y, pr))(states))(x_from, probs)
        return np.exp(np.asarray(log_p, np.float64))

    log_pi = lambda t: np.asarray(jax.vmap(path.log_prob, in_axes=(0, None))(states, t), np.float64)  # noqa: E731
    m = np.full(len(states), 1.0 / len(states))  # pi_0 / Z_0: uniform
    for k in range(5):
        t, t_next, h = ts[k], ts[k + 1], ts[k + 1] - ts[k]
        G = jax.vmap(net, in_axes=(0, None))(states, t)
        F = step_matrix(states, jax.nn.relu(G), h)
        G_next = jax.vmap(net, in_axes=(0, None))(states, t_next)
        ratios = jax.vmap(path.flip_log_ratios, in_axes=(0, None))(states, t_next)
        B = step_matrix(states, jax.vmap(simulation.backward_rates)(G_next, ratios), h)  # B[x', x]
        np.testing.assert_allclose(F.sum(1), 1.0, rtol=1e-5)
        np.testing.assert_allclose(B.sum(1), 1.0, rtol=1e-5)
        assert float(jnp.abs(G).max()) > 0.5 and np.all(F > 0)
        w = np.exp(log_pi(t_next)[None, :] - log_pi(t)[:, None]) * B.T / F  # w[x, x']
        m = m @ (F * w)
    log_z1 = np.log(np.sum(np.exp(log_pi(1.0))))
    np.testing.assert_allclose(np.log(m.sum()), log_z1 - target.log_Z0, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(log_z1, target.exact_log_Z(), rtol=1e-6)


@pytest.mark.parametrize("model", ["ising", "potts"])
def test_exact_weights_from_the_simulation_estimate_z(model):
    """simulate() with the exact rule on 3x3 lattices, an untrained network, 5 steps: Z-hat / Z within 5 sigma.

    This checks what enumeration cannot: that the jumps follow F_k and that each step's
    backward kernel is evaluated at the right states and times (deferred to the next
    pass). 200 000 walkers (Ising) or 50 000 (Potts); sigma is the relative standard error of
    the mean weight. The same test has power: the ``pre`` quadrature rule on the same draws is
    off by more than 4 sigma (by -12 % for Ising, about +40 % for Potts at these seeds). A run with an identity
    "correction" (which makes the backward pass immediate instead of deferred) gives the
    same log-weights to float32 round-off.
    """
    target = ising(3, BETA) if model == "ising" else potts(3, 0.5, q=3)
    q = None if model == "ising" else 3
    path = LatticePath(target)
    net = LocallyEquivariantMLP((3, 3), q, hidden=(16,), rngs=nnx.Rngs(1))
    x0 = path.sample_base(jax.random.key(4), 200_000 if model == "ising" else 50_000)
    run = jax.jit(lambda c, rule: simulation.simulate(jax.random.key(5), net, path, x0, simulation.uniform_grid(5),
                                                correction=c, weight_point=rule, jump_floor=0.01), static_argnums=(0, 1))

    def z_score(log_w):
        w = np.exp(np.asarray(log_w, np.float64))
        rel_se = w.std() / w.mean() / np.sqrt(len(w))
        return (np.exp(np.log(w.mean()) + target.log_Z0 - target.exact_log_Z()) - 1) / rel_se

    deferred = run(None, "exact")
    assert abs(z_score(deferred.log_w)) < 5
    assert abs(z_score(run(None, "pre").log_w)) > 4
    immediate = run(lambda key, x, t: x, "exact")
    np.testing.assert_allclose(np.asarray(immediate.log_w), np.asarray(deferred.log_w), rtol=1e-4, atol=1e-4)


def test_exact_weights_with_zero_rates_are_importance_weights_of_the_final_state():
    """G = 0: the floored jumps keep the uniform base and B_k / F_k = 1, so A = log p~(X_K) exactly."""
    target = potts(3, 1.0, q=3)
    path = LatticePath(target)
    out = jax.jit(lambda k: simulation.simulate(k, _zero_rates(3), path, path.sample_base(jax.random.key(0), 500),
                                           simulation.uniform_grid(6), jump_floor=0.1))(jax.random.key(1))
    np.testing.assert_allclose(np.asarray(out.log_w), np.asarray(jax.vmap(target.log_prob)(out.x)), rtol=1e-4, atol=1e-4)
    x0 = path.sample_base(jax.random.key(0), 500)
    assert np.mean(np.asarray(out.x) != np.asarray(x0)) > 0.3  # the floor moved the walkers


def test_exact_weights_refuse_a_floor_outside_its_range():
    path = LatticePath(potts(3, 1.0, q=3))
    x0 = path.sample_base(jax.random.key(0), 4)
    for floor in (0.0, 0.4):
        with pytest.raises(InputError, match="jump_floor"):
            simulation.simulate(jax.random.key(1), _zero_rates(3), path, x0, simulation.uniform_grid(2), jump_floor=floor)
        with pytest.raises(InputError, match="jump_floor_rate"):
            simulation.simulate(jax.random.key(1), _zero_rates(3), path, x0, simulation.uniform_grid(2), jump_floor_rate=floor)


@pytest.mark.parametrize("num_steps", [5, 50])
def test_a_floor_per_unit_time_makes_as_many_floor_moves_at_any_number_of_steps_and_matches_backward(num_steps):
    """G = 0 on 3x3 Ising, the cubic-exponential grid: a site flips with probability rate * h at each step, so the
    flips per walker average 9 * rate at 5 steps and at 50 (5 sigma of the mean over 4000 walkers). A floor of
    rate / 5 per step would make 10x as many flips at 50 steps as at 5. The backward kernel uses the same step's
    floor, so B_k / F_k = 1 and A = log p~(X_K) exactly, as with a floor per step."""
    rate, walkers = 0.3, 4000
    path = LatticePath(ising(3, BETA))
    x0 = path.sample_base(jax.random.key(0), walkers)
    out = jax.jit(lambda k: simulation.simulate(k, _zero_rates(None), path, x0, simulation.cubic_exponential_grid(num_steps),
                                           jump_floor_rate=rate, record=True))(jax.random.key(1))
    traj = np.asarray(out.trajectory)
    flips = (traj[1:] != traj[:-1]).reshape(num_steps, walkers, -1).sum(axis=(0, 2))
    assert abs(flips.mean() - 9 * rate) < 5 * flips.std(ddof=1) / np.sqrt(walkers), flips.mean()
    log_p = jax.vmap(path.target.log_prob)(out.x)
    np.testing.assert_allclose(np.asarray(out.log_w), np.asarray(log_p), rtol=1e-4, atol=1e-4)


def test_exact_weights_with_a_floor_per_unit_time_estimate_z():
    """The per-unit-time floor on a non-uniform grid (each step its own floor, the deferred backward kernel the
    previous step's): Z-hat / Z within 5 sigma on 3x3 Ising, 100 000 walkers, 5 steps, an untrained network; the
    immediate backward pass (an identity correction) gives the same log-weights."""
    target = ising(3, BETA)
    path = LatticePath(target)
    net = LocallyEquivariantMLP((3, 3), None, hidden=(16,), rngs=nnx.Rngs(1))
    x0 = path.sample_base(jax.random.key(4), 100_000)
    run = jax.jit(lambda c: simulation.simulate(jax.random.key(5), net, path, x0, simulation.cubic_exponential_grid(5),
                                           correction=c, jump_floor_rate=0.05), static_argnums=0)
    deferred = run(None)
    w = np.exp(np.asarray(deferred.log_w, np.float64))
    rel_se = w.std() / w.mean() / np.sqrt(len(w))
    assert abs((np.exp(np.log(w.mean()) + target.log_Z0 - target.exact_log_Z()) - 1) / rel_se) < 5
    immediate = run(lambda key, x, t: x)
    np.testing.assert_allclose(np.asarray(immediate.log_w), np.asarray(deferred.log_w), rtol=1e-4, atol=1e-4)


# --------------------------------------------------------------------------
# checkerboard sub-steps
# --------------------------------------------------------------------------


@pytest.mark.parametrize("model,shape,num_colours", [("ising", (3, 3), 3), ("potts", (4, 4), 2)])
def test_checkerboard_sub_steps_move_one_colour_class_at_a_time(model, shape, num_colours):
    """Each step becomes one sub-step per colour of ``checkerboard_colours`` (3 on a 3x3 torus, 2 on 4x4), and
    sub-step j changes only sites of colour j mod C -- never two neighbours; a floor of 0.2 makes moves likely."""
    target = ising(list(shape), BETA) if model == "ising" else potts(list(shape), 0.5, q=3)
    q = None if model == "ising" else 3
    path = LatticePath(target)
    colours = discrete.checkerboard_colours(shape)
    out = simulation.simulate(jax.random.key(1), _random_net(shape, q), path, path.sample_base(jax.random.key(0), 64),
                              simulation.uniform_grid(4), jump_floor=0.2, checkerboard=True, record=True)
    traj = np.asarray(out.trajectory)
    assert traj.shape[0] == 4 * num_colours + 1
    for j in range(4 * num_colours):
        moved = traj[j + 1] != traj[j]
        assert moved.any() and not moved[:, colours != j % num_colours].any(), j


@pytest.mark.parametrize("model", ["ising", "potts"])
def test_checkerboard_exact_weights_estimate_z(model):
    """The checkerboard sub-steps keep the exact weights unbiased: on 3x3 lattices (3 colours), an untrained
    network, 5 steps (15 sub-steps), floor 0.01, Z-hat / Z within 5 sigma of the enumerated Z (sigma: the relative
    standard error of the mean weight; 100 000 walkers for Ising, 50 000 for Potts). Measured z: -0.39 and -2.4."""
    target = ising(3, BETA) if model == "ising" else potts(3, 0.5, q=3)
    q = None if model == "ising" else 3
    path = LatticePath(target)
    net = LocallyEquivariantMLP((3, 3), q, hidden=(16,), rngs=nnx.Rngs(1))
    x0 = path.sample_base(jax.random.key(4), 100_000 if model == "ising" else 50_000)
    out = jax.jit(lambda: simulation.simulate(jax.random.key(5), net, path, x0, simulation.uniform_grid(5),
                                              jump_floor=0.01, checkerboard=True))()
    w = np.exp(np.asarray(out.log_w, np.float64))
    rel_se = w.std() / w.mean() / np.sqrt(len(w))
    states, _ = target.enumerate_states()
    log_z = float(jax.scipy.special.logsumexp(jax.vmap(target.log_prob)(jnp.asarray(states))))
    assert abs((np.exp(np.log(w.mean()) + target.log_Z0 - log_z) - 1) / rel_se) < 5


def test_checkerboard_refuses_what_it_cannot_do():
    path = LatticePath(ising(4, BETA))
    x0 = path.sample_base(jax.random.key(0), 4)
    ts = simulation.uniform_grid(2)
    for kwargs in ({"weight_point": "pre"}, {"quadrature": "post"}, {"correction": lambda key, x, t: x}):
        with pytest.raises(InputError, match="checkerboard=True needs"):
            simulation.simulate(jax.random.key(1), _zero_rates(None), path, x0, ts, checkerboard=True, **kwargs)


# --------------------------------------------------------------------------
# the paper's quadrature on the exact rule's draws
# --------------------------------------------------------------------------


@pytest.mark.parametrize("model,point", [("ising", "post"), ("potts", "pre")])
def test_the_quadrature_rides_on_the_exact_draws(model, point):
    """By construction: the paired run's walkers and exact log-weights are those of the exact rule alone (same key),
    and its quadrature is ``sum_k h_k K(X, t_k)`` recomputed from the recorded trajectory -- at the state before the
    jump (``pre``) or after it (``post``) -- with the floored chain's rates ``(1 - q f) ReLU(±G) + f / h``."""
    target = ising(3, BETA) if model == "ising" else potts(3, 0.5, q=3)
    q = None if model == "ising" else 3
    path = LatticePath(target)
    net = _random_net((3, 3), q)
    x0 = path.sample_base(jax.random.key(0), 200)
    ts = simulation.cubic_exponential_grid(6)
    floor = 0.01
    run = jax.jit(lambda quad: simulation.simulate(jax.random.key(1), net, path, x0, ts, jump_floor=floor,
                                                   quadrature=quad, record=True), static_argnums=0)
    paired, alone = run(point), run(None)
    assert alone.log_w_quadrature is None
    np.testing.assert_array_equal(np.asarray(paired.trajectory), np.asarray(alone.trajectory))
    np.testing.assert_array_equal(np.asarray(paired.log_w), np.asarray(alone.log_w))

    traj, ts_np, num_q = np.asarray(paired.trajectory), np.asarray(ts), q or 2
    expected = np.zeros(200)
    for k in range(6):
        t, h = ts_np[k], ts_np[k + 1] - ts_np[k]
        states = jnp.asarray(traj[k] if point == "pre" else traj[k + 1])
        K = jax.vmap(lambda x: simulation.jarzynski_integrand(
            net(x, t), path.flip_log_ratios(x, t), path.dlog_prob_dt(x, t), 1.0 - num_q * floor, floor / h))(states)
        expected += h * np.asarray(K, np.float64)
    assert np.std(expected) > 0.1  # non-trivial weights
    np.testing.assert_allclose(np.asarray(paired.log_w_quadrature), expected, rtol=1e-4, atol=1e-4)


def test_the_checkerboard_setting_samples_the_exact_rule_in_sub_steps_and_keeps_the_unsplit_pair():
    """``LeapsSettings.checkerboard``: the evaluation's ``exact`` walkers are ``sample_with(..., checkerboard=True)``'s
    (one batch, ``fold_in(key, 0)``), its ``exact_unsplit`` and ``quadrature_paper`` are the paired unsplit walkers, the quadrature rules
    are drawn unsplit, and the figures name each. An untrained LE-MLP on 4x4 Ising (2 colours): the split changes
    the walkers, so a setting that did nothing would fail the first comparison."""
    base = dict(network="mlp", network_params={"hidden": [8]}, free_energy_hidden=[8], eval_steps=4, eval_batch=64,
                compare_weight_points=False)
    plain = Leaps(ising(4, BETA), LeapsSettings(**base), batch_size=8)
    split = Leaps(ising(4, BETA), LeapsSettings(**base, checkerboard=True), batch_size=8)
    state = jax.jit(plain.init)(jax.random.key(0))
    key, n = jax.random.key(3), 64
    samples = split.evaluation_samples(key, state, n)
    assert set(samples) == {"exact", "exact_unsplit", "quadrature_paper"}
    by_hand = split.sample_with(jax.random.fold_in(key, 0), state.params, n, checkerboard=True)  # one batch: key 0
    np.testing.assert_array_equal(np.asarray(samples["exact"].x), np.asarray(by_hand.x))
    np.testing.assert_allclose(np.asarray(samples["exact"].log_w), np.asarray(by_hand.log_w), rtol=1e-5)  # jit round-off
    paired = plain.sample_paired(key, state, n)
    for rule, name in (("exact", "exact_unsplit"), ("quadrature_paper", "quadrature_paper")):
        np.testing.assert_array_equal(np.asarray(samples[name].log_w), np.asarray(paired[rule].log_w))
    assert not np.array_equal(np.asarray(samples["exact"].x), np.asarray(paired["exact"].x))
    unsplit_pre = split.sample(key, state, n, weight_point="pre")  # a quadrature rule: never split
    np.testing.assert_array_equal(np.asarray(unsplit_pre.x), np.asarray(plain.sample(key, state, n, "pre").x))
    figures = split.evaluate(key, state, n)
    assert figures["ess"] == pytest.approx(float(by_hand.ess), rel=1e-4) and "ess_exact_unsplit" in figures
    for bad, match in (({"weight_point": "pre"}, "weight_point='exact'"), ({"eval_mcmc_updates": 5}, "eval_mcmc_updates=0")):
        with pytest.raises(InputError, match=match):
            LeapsSettings(checkerboard=True, **bad)


def test_the_paired_sample_refuses_what_it_cannot_do():
    path = LatticePath(ising(3, BETA))
    x0 = path.sample_base(jax.random.key(0), 4)
    ts = simulation.uniform_grid(2)
    with pytest.raises(InputError, match="quadrature must be one of"):
        simulation.simulate(jax.random.key(1), _zero_rates(None), path, x0, ts, quadrature="trapezoid")
    with pytest.raises(InputError, match="weight_point='exact'"):
        simulation.simulate(jax.random.key(1), _zero_rates(None), path, x0, ts, weight_point="pre", quadrature="pre")
    with pytest.raises(InputError, match="resample_threshold"):
        simulation.simulate(jax.random.key(1), _zero_rates(None), path, x0, ts, quadrature="pre", resample_threshold=0.5)


def test_the_quadrature_converges_to_the_exact_weights_and_log_z_as_steps_grow():
    """3x3 Ising, an untrained network, the floor 0.05 per unit time (one chain at every step count), 50 000 walkers,
    the paper's Ising (post-jump) quadrature beside the exact weights on the same walkers at 4, 16 and 64 steps.

    Pathwise, a step's exact log-weight and ``h K`` agree to higher order in ``h`` (for one flip the target ratio
    cancels against the reverse kernel's), so the mean |A_quadrature - A_exact| over the walkers falls with the
    steps: measured 6.5, 3.8 and 1.4 at these seeds; asserted decreasing and below 0.3x the 4-step value at 64.
    The quadrature's log Z is off the enumerated log Z by more than 4 standard errors at 4 steps (measured -0.36,
    about 7) and within 5 at 64 (-0.10, about 1.7); the standard error is the relative one of the mean weight.
    """
    target = ising(3, BETA)
    path = LatticePath(target)
    net = LocallyEquivariantMLP((3, 3), None, hidden=(16,), rngs=nnx.Rngs(1))
    exact_log_z = target.exact_log_Z()
    gaps, z_scores = [], []
    for steps in (4, 16, 64):
        exact, quad = jax.jit(lambda k, n=steps: simulation.sample_paired(
            k, net, path, 50_000, simulation.uniform_grid(n), "post", jump_floor_rate=0.05))(jax.random.key(0))
        np.testing.assert_array_equal(np.asarray(exact.x), np.asarray(quad.x))
        gaps.append(float(np.mean(np.abs(np.asarray(quad.log_w) - np.asarray(exact.log_w)))))
        log_w = np.asarray(quad.log_w, np.float64)
        w = np.exp(log_w - log_w.max())
        z_scores.append((float(quad.log_Z) - exact_log_z) / (w.std() / w.mean() / np.sqrt(len(w))))
    assert gaps[0] > gaps[1] > gaps[2] and gaps[2] < 0.3 * gaps[0], gaps
    assert abs(z_scores[0]) > 4 and abs(z_scores[2]) < 5, z_scores


# --------------------------------------------------------------------------
# training (the trained-sampler checks on 3x3 lattices are in tests/experiments/test_leaps_experiment.py)
# --------------------------------------------------------------------------


def test_stopped_training_run_resumes_bit_identically(tmp_path):
    """A checkpointed LEAPS training run on a 3x3 Ising lattice, stopped half way, resumes bit for bit.

    A tiny LE-MLP, rollouts every 2 updates into a buffer of 3 rollouts (so the FIFO
    wraps around) and a curriculum that is still growing at the stop.
    """
    settings = LeapsSettings(
        network="mlp", network_params={"hidden": [16]}, free_energy_hidden=[8], loss_batch=32,
        rollout_steps=8, curriculum_steps=30, rollout_every=2, buffer_rollouts=3, states_per_walker=2,
        mcmc_updates=3, learning_rate=1e-2,
    )
    trainer = Leaps(ising(3, 0.4407), settings, batch_size=8)
    assert_resumes_bit_identical(trainer.step, jax.jit(trainer.init)(jax.random.key(0)), 40, 4, tmp_path,
                                 min_arrays=10)
