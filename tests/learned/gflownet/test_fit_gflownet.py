"""``jaxsamp.fit("gflownet", env)`` on an 8 x 8 hypergrid (exact pi and log Z by enumeration), the weights' invariant,
and the target forms a GFlowNet refuses."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsamp
from jaxsamp.core.errors import InputError
from jaxsamp.learned.gflownet import sampling
from jaxsamp.learned.gflownet.policy import PolicyModel
from jaxsamp.targets.hypergrid import Hypergrid

GRID = Hypergrid(2, 8)  # 64 objects, trajectories of up to 15 transitions; standard reward
N = 4000


def test_fit_on_a_small_hypergrid_gives_consistent_weights_and_a_learned_policy():
    """SubTB with a jointly trained P_B, 300 iterations of 16 trajectories (about 10 s on 2 cores).

    Budget: the importance estimate of log Z from N draws is within 5 delta-method standard deviations
    ``sqrt((1/ESS - 1) / N)`` plus 0.02 of the exact value, at an ESS above 0.3 (the trained policy's is
    about 0.8; the untrained one's 1e-3, at which the delta method does not hold). The trained forward
    policy's exact terminal distribution has ``policy_l1`` below 0.01 (untrained: 0.026; reached: 0.006).
    """
    fitted = jaxsamp.fit("gflownet", GRID, num_steps=300, key=0, loss="subtb", backward_policy="naive",
                         hidden=(64, 64), history_size=1000, progress=False)
    assert fitted.warnings == [] and len(fitted.history["loss"]) == 300
    samples = fitted.sample(1, N)
    assert samples.x.shape == (N, 2) and samples.x.dtype == jnp.int32
    assert np.all((np.asarray(samples.x) >= 0) & (np.asarray(samples.x) < 8))
    ess, log_z = float(samples.ess), float(samples.log_Z)
    assert 0.3 < ess <= 1.0 and np.isfinite(log_z)
    assert abs(log_z - GRID.log_Z) < 5 * np.sqrt((1 / ess - 1) / N) + 0.02
    figures = fitted.evaluate(2, N)
    assert figures["log_Z_exact"] == pytest.approx(GRID.log_Z)
    assert figures["policy_l1"] < 0.01 and np.isfinite(figures["policy_kl"])
    assert figures["elbo"] <= figures["log_Z_hat"] and np.isfinite(figures["log_Z_learned_abs_err"])
    assert "gflownet on hypergrid" in fitted.summary()


@pytest.mark.parametrize("backward_policy", ["uniform", "maxent"])
def test_the_exact_forward_policy_has_every_log_weight_equal_to_log_z(backward_policy):
    """With the P_F that dynamic programming makes consistent with a fixed P_B, log R(x) + log P_B(tau | x) -
    log P_F(tau) = log Z on every trajectory (float32: 1e-4). The uniform P_B's flows scored with the
    max-entropy P_B (and back) are off by more than 0.1 on the grid, so the check sees which P_B is used."""
    flows = GRID.exact_flows(backward_policy)
    table = jnp.asarray(np.where(np.isfinite(flows.log_pf), flows.log_pf, -1e30), jnp.float32)
    logits = lambda s: table[jax.vmap(GRID.state_index)(s)]  # noqa: E731
    model = PolicyModel(GRID, (8,))  # a fixed P_B reads no parameters
    out = {}
    for scored_with in ("uniform", "maxent"):
        backward = sampling.backward_log_prob(model, scored_with, None, None)
        draws = sampling.weighted_draws(GRID, logits, backward, jax.random.key(1), 2000)
        out[scored_with] = np.asarray(draws.log_w)
    np.testing.assert_allclose(out[backward_policy], flows.log_Z, atol=1e-4)
    other = out["maxent" if backward_policy == "uniform" else "uniform"]
    assert np.max(np.abs(other - flows.log_Z)) > 0.1


def test_a_gflownet_needs_a_dag_environment():
    with pytest.raises(InputError, match="method 'gflownet': a GFlowNet needs a DAG environment, got 'gaussian'"):
        jaxsamp.fit("gflownet", jaxsamp.targets.get("gaussian", dim=2), num_steps=2)
    with pytest.raises(InputError, match="takes no init="):
        jaxsamp.fit("gflownet", lambda x: -jnp.sum(x**2), init=jnp.zeros(2), num_steps=2)


def test_an_optimizer_replaces_the_forward_loss_adam():
    """``optimizer=`` replaces the network's optimiser: SGD at rate 0 with a fixed P_B leaves the network as built,
    while TB's log Z keeps its own Adam and moves."""
    import optax

    fitted = jaxsamp.fit("gflownet", Hypergrid(2, 4), num_steps=3, hidden=(8,), history_size=64,
                         backward_policy="uniform", optimizer=optax.sgd(0.0), progress=False)
    untouched = jax.jit(fitted.sampler.init)(jax.random.split(jax.random.key(0))[0])
    for a, b in zip(jax.tree.leaves(fitted.state.params.network), jax.tree.leaves(untouched.params.network)):
        np.testing.assert_array_equal(a, b)
    assert float(fitted.state.params.log_z) != 0.0


def ring(x):
    """A user's log reward on the 6 x 6 grid (none of the built-ins): high on a ring of radius 2 around the centre."""
    return -2.0 * (jnp.sqrt(jnp.sum((x - 2.5) ** 2)) - 2.0) ** 2


def runs(bits):
    """A user's log reward on 6-bit strings (none of the built-ins): equal neighbours pay, ones cost."""
    return 0.8 * jnp.sum(bits[1:] == bits[:-1]) - 0.3 * jnp.sum(bits)


USER_ENVIRONMENTS = {
    "hypergrid": lambda: jaxsamp.targets.get("hypergrid", dim=2, side=6, log_reward=ring),  # 36 objects
    "bit_sequence": lambda: jaxsamp.targets.get("bit_sequence", length=6, word_length=2, log_reward=runs),  # 64
}
WINDOW = 1000  # history_size: the empirical distribution is that of the last 1000 objects built in training


@pytest.mark.parametrize("name", list(USER_ENVIRONMENTS))
def test_fit_on_a_user_reward_reaches_the_exact_distribution(name):
    """TB with the uniform P_B, 300 iterations of 16 trajectories (4800 objects) at seed 0, on a user's reward.

    Budget. ``empirical_l1`` (the window of the last 1000 training objects against the exact pi enumerated from the
    user's function) below 3 times the L1 that exact sampling itself has at that window (its noise floor: the mean
    over 100 fixed-seed multinomial windows drawn from pi, 0.0037 on the grid and 0.0027 on the bits): reached 0.0069
    and 0.0045; with the network frozen (``optimizer=optax.sgd(0.0)``, the untrained policy) 0.033 and 0.012, above
    the bound. ``policy_kl``, the trained forward policy's exact KL(pi || pi_theta), free of sampling noise, below
    0.1: reached 0.037 and 0.047, frozen 1.09 and 0.49.
    """
    env = USER_ENVIRONMENTS[name]()
    fitted = jaxsamp.fit("gflownet", env, num_steps=300, key=0, loss="tb", backward_policy="uniform", hidden=(64, 64),
                         history_size=WINDOW, eval_every=300, progress=False)
    pi = env.exact_probabilities
    rng = np.random.default_rng(0)
    noise_floor = np.mean([np.mean(np.abs(rng.multinomial(WINDOW, pi) / WINDOW - pi)) for _ in range(100)])
    assert float(fitted.history["empirical_l1"][-1]) < 3 * noise_floor
    figures = fitted.evaluate(2, 1000)
    assert figures["log_Z_exact"] == pytest.approx(env.log_Z) and figures["policy_kl"] < 0.1


def standard_hypergrid_reward(x):
    """The 8 x 8 hypergrid's built-in standard reward as a user writes it: R = 1e-3 + 0.5 [outer] + 2 [mode band]."""
    d = jnp.abs(2 * x - 7)  # |x / 7 - 1/2| = d / 14
    outer = jnp.prod(2 * d > 7)
    band = jnp.prod((5 * d > 21) & (5 * d < 28))
    return jnp.log(1e-3 + 0.5 * outer + 2.0 * band)


def test_the_builtin_reward_as_a_user_function_trains_as_the_builtin_environment():
    """The same fit on the built-in 8 x 8 grid and on the grid given its reward as a user function: every step's loss
    and learned log Z, and the trained network, bit for bit; the empirical L1 against the exact pi agrees to float32
    rounding of the enumeration (1e-5: the built-in's is float64, the user's is the function's float32)."""
    builtin, user = (
        jaxsamp.fit("gflownet", env, num_steps=20, key=3, loss="subtb", backward_policy="naive", hidden=(16,),
                    history_size=64, eval_every=10, progress=False)
        for env in (Hypergrid(2, 8), Hypergrid(2, 8, log_reward=standard_hypergrid_reward))
    )
    for metric in ("loss", "log_Z_learned", "mean_length"):
        np.testing.assert_array_equal(builtin.history[metric], user.history[metric])
    for a, b in zip(jax.tree.leaves(builtin.state.params), jax.tree.leaves(user.state.params)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(builtin.history["empirical_l1"], user.history["empirical_l1"], rtol=1e-5)


def test_a_user_reward_that_is_not_finite_is_refused_before_training():
    """NaN at one object is found by the enumeration that a GFlowNet's build runs: one line, naming the object."""
    env = Hypergrid(2, 5, log_reward=lambda x: jnp.where(jnp.all(x == 3), jnp.nan, 0.0))
    with pytest.raises(InputError, match=r"^method 'gflownet': hypergrid: log_reward is nan at 1 of 25 objects, "
                                         r"first at \[3, 3\](?: \(hint: .*\))?(?: \(hint: .*\))?$"):
        jaxsamp.fit("gflownet", env, num_steps=2, progress=False)
