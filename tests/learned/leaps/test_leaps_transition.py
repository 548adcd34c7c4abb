"""LEAPS' Euler steps as an SMC transition: its increments are LEAPS' exact path weight, SMC with it is unbiased in Z,
and ``Fitted.smc`` runs it from a trained LEAPS in one call.

Oracles: :func:`~jaxsamp.learned.leaps.simulation.simulate`'s exact log-weight on the same draws (the increments must
sum to it), and the exact ``Z`` of 3x3 lattices by enumeration (:mod:`jaxsamp.targets.lattice`).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import jaxsamp
from jaxsamp.core.registry import SAMPLERS
from jaxsamp.learned.leaps import LeapsSettings, leaps_transition, simulation
from jaxsamp.nets.locally_equivariant import LocallyEquivariantMLP
from jaxsamp.smc import linear_schedule, path_member, smc, weighted_samples
from jaxsamp.targets.lattice import LatticePath, ising, potts

BETA = 0.4407


def _random_rates(shape, q, scale=3.0, seed=1):
    """An untrained LE-MLP's rates (LEAPS' network at init), scaled so that the jumps are far from the floor's."""
    net = LocallyEquivariantMLP(shape, q, hidden=(16,), rngs=nnx.Rngs(seed))
    return lambda x, t: scale * net(x, t)


@pytest.mark.parametrize("model", ["ising", "potts"])
def test_the_increments_sum_to_the_exact_weight_of_simulate_on_the_same_jumps(model):
    """Step k of simulate() draws its jumps with split(fold_in(key, k), 3)[0]; the transition given that key makes
    the same jumps, and its increments add up to simulate's exact log-weight (which defers each backward kernel
    to the next step's network pass) to float32 round-off. Dropping the backward term changes the sum by
    several nats: the comparison has power."""
    target = ising(3, BETA) if model == "ising" else potts(3, 0.5, q=3)
    q = None if model == "ising" else 3
    path = LatticePath(target)
    rate_fn = _random_rates((3, 3), q)
    ts = simulation.uniform_grid(6)
    x0 = path.sample_base(jax.random.key(0), 256)
    key = jax.random.key(1)
    rollout = jax.jit(lambda x: simulation.simulate(key, rate_fn, path, x, ts, jump_floor=0.02))(x0)
    transition = jax.jit(leaps_transition(rate_fn, path, jump_floor=0.02))
    x, log_w = x0, jnp.zeros(256)
    for k in range(6):
        key_jump = jax.random.split(jax.random.fold_in(key, k), 3)[0]
        x, increment, evals = transition(key_jump, x, ts[k], ts[k + 1])
        log_w = log_w + increment
        assert int(evals) == 3 * 256
    np.testing.assert_array_equal(np.asarray(x), np.asarray(rollout.x))
    np.testing.assert_allclose(np.asarray(log_w), np.asarray(rollout.log_w), rtol=1e-4, atol=1e-4)
    assert float(jnp.std(log_w)) > 0.5  # the weights are far from trivial


def _log_z_hats(transition, path, schedule, num_runs, num_particles, ess_threshold, moves):
    """``num_runs`` independent SMC runs along ``schedule`` (vmapped): their log Z-hat."""
    make_kernel = lambda t: SAMPLERS.get("checkerboard", path_member(path, t))  # noqa: E731
    kernel = smc(path, make_kernel, schedule=schedule, transition=transition, ess_threshold=ess_threshold,
                 num_mcmc_steps=1 if moves else 0)

    def one_run(key):
        key_init, key_run = jax.random.split(key)
        state = kernel.init(path.sample_base(key_init, num_particles))
        state, trace = jax.lax.scan(lambda s, i: kernel.step(jax.random.fold_in(key_run, i), s), state,
                                    jnp.arange(len(schedule) - 1))
        return weighted_samples(state, path).log_Z, trace.resampled

    return jax.jit(jax.vmap(one_run))(jax.random.split(jax.random.key(7), num_runs))


@pytest.mark.parametrize("ess_threshold,moves,checkerboard", [
    (1.0, False, False),  # resampling at every level
    (0.5, True, False),   # adaptive resampling, with heat-bath checkerboard moves at every level
    (1.0, True, True),    # the colour-class sub-steps
])
def test_smc_with_leaps_steps_is_unbiased_in_z_by_enumeration(ess_threshold, moves, checkerboard):
    """The mean of Z-hat (not of log Z-hat) over 4000 independent runs of 32 particles on the critical 3x3 Ising
    torus, 5 levels of an untrained LEAPS' rates (the floor 0.05), is within 4 standard errors of the exact Z
    (enumeration of the 512 states); the standard error is the runs' sample sd over sqrt(4000), 0.014-0.024 here
    (measured means 1.028, 0.987, 1.007 for the three cases). Unbiasedness holds for any rates, so untrained ones
    test it; the rates are kept at the network's scale, since rates 3 times larger make Z-hat so heavy-tailed
    (sd 4.6 per run) that the mean of 4000 runs no longer resolves a bias. Power (checked by hand when the test was
    written): dropping the backward kernel's term puts the mean at 1e11 or more; dropping the forward kernel's
    probability at 1.5 to 2.1 (9 to 15 standard errors)."""
    target = ising(3, BETA)
    path = LatticePath(target)
    states, _ = target.enumerate_states()
    exact = float(jax.scipy.special.logsumexp(jax.vmap(target.log_prob)(jnp.asarray(states))))
    assert target.log_Z == pytest.approx(exact, abs=1e-4)
    transition = leaps_transition(_random_rates((3, 3), None, scale=1.0), path, jump_floor=0.05,
                                  checkerboard=checkerboard)
    log_z, resampled = _log_z_hats(transition, path, linear_schedule(5), 4000, 32, ess_threshold, moves)
    ratio = np.exp(np.asarray(log_z, np.float64) - exact)
    standard_error = ratio.std() / np.sqrt(len(ratio))
    assert abs(ratio.mean() - 1.0) < 4 * standard_error, (ratio.mean(), standard_error)
    assert standard_error < 0.03  # the test resolves a bias of about 10 %
    resampled = np.asarray(resampled)
    if ess_threshold == 1.0:
        assert resampled.all()
    else:
        assert 0.0 < resampled.mean() < 1.0  # adaptive: some levels resample, some do not


#: a tiny LEAPS (an LE-MLP, 20-step rollouts and sampler): a few seconds of training
SMALL = LeapsSettings(
    network="mlp", network_params={"hidden": [32]}, free_energy_hidden=[16], loss_batch=64, learning_rate=1e-2,
    rollout_steps=20, curriculum_steps=40, rollout_every=2, buffer_rollouts=5, states_per_walker=4, mcmc_updates=3,
    eval_steps=20, compare_weight_points=False,
)


def test_fitted_smc_runs_a_trained_leaps_as_smc():
    """``Fitted.smc`` on a briefly trained LEAPS (3x3 Ising): one level per step of the evaluation grid, resampling as
    asked, the moves' evaluations counted, the trace's increments adding up to log Z-hat, and log Z-hat near the exact
    value. Budget: 0.1 around the exact log Z, for the median of three runs with moves. A single run is heavy-tailed
    after 100 updates (the floor 1e-4 makes a jump the network gives no rate rare and heavily weighted): measured
    errors -0.09 to +0.01 over six runs resampling at every level; with moves and adaptive resampling 0.055, 0.009 and
    0.65 at keys 0, 1, 2 (the last with one such jump at the third level: ESS 0.008 there). A lost base log Z is 6.2,
    a dropped weight term more than 0.5 in every run."""
    target = jaxsamp.targets.get("ising", L=3, beta=BETA)
    fitted = jaxsamp.fit("leaps", target, num_steps=100, key=0, settings=SMALL, batch_size=32, progress=False)
    proposal = fitted.smc_proposal()
    assert proposal.schedule[0] == 0.0 and proposal.schedule[-1] == 1.0 and len(proposal.schedule) == 21
    n = 1024
    every = fitted.smc(1, n, resample_threshold=1.0)
    assert every.num_levels == 20 and every.samples.x.shape == (n, 3, 3)
    assert np.asarray(every.trace.resampled).all()
    assert every.num_target_evals == 20 * 3 * n  # log pi_t(x), log pi_t'(x'), the ratios at x': 3 per walker-step
    assert np.isnan(np.asarray(every.trace.acceptance_rate)).all()
    assert abs(float(every.samples.log_Z) - target.log_Z) < 0.1

    errors = []
    for key in range(3):  # adaptive resampling at 0.5, two heat-bath checkerboard sweeps per level
        moved = fitted.smc(key, n, moves="checkerboard", num_moves=2)
        # a checkerboard sweep of the 3x3 torus calls the ratios once per colour class (3), none at its init
        assert moved.num_target_evals == every.num_target_evals + 20 * 2 * 3 * n
        assert np.all(np.asarray(moved.trace.acceptance_rate) > 0)
        increments = np.asarray(moved.trace.log_Z_increment)
        assert float(moved.samples.log_Z) == pytest.approx(target.log_Z0 + increments.sum(), abs=1e-3)
        errors.append(float(moved.samples.log_Z) - target.log_Z)
    assert np.median(np.abs(errors)) < 0.1, errors
