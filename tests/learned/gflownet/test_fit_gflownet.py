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
