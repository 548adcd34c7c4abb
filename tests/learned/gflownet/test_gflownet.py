"""GFlowNets: exact flows zero every loss and sample pi exactly; TLM's step raises the likelihood; resume; bad settings.

The exact flows come from dynamic programming over every state
(:meth:`~jaxsamp.targets.dag_environment.DagEnvironment.exact_flows`); the
rollouts, the per-transition log-probabilities and the losses are the library's.
The short trajectory-balance run on the 8 x 8 grid is in
``tests/experiments/test_gflownet_experiment.py`` (through the runner, two backward policies).
"""

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxsamp.core.errors import InputError
from jaxsamp.learned.gflownet import losses
from jaxsamp.learned.gflownet import GFlowNet, GFlowNetSettings, build
from jaxsamp.learned.gflownet.policy import (
    backward_log_probs,
    forward_log_probs,
    rollout,
    sample_objects,
)
from jaxsamp.targets.bit_sequence import BitSequence
from jaxsamp.targets.hypergrid import Hypergrid

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
from _resume_checks import assert_resumes_bit_identical

GRID = Hypergrid(2, 5)  # standard reward: R0 = 1e-3, R1 = 0.5, R2 = 2
BITS = BitSequence(length=6, word_length=2, num_modes=3, order="any_position")


def _tables(flows):
    """The exact flows as float32 arrays: ``log P_F`` (-1e30 where not allowed), ``log F`` and ``log Q = log F + log P_F``."""
    allowed = np.isfinite(flows.log_pf)
    log_pf = np.where(allowed, flows.log_pf, -1e30)
    log_q = np.where(allowed, flows.log_pf + flows.log_flow[:, None], -1e30)
    return tuple(jnp.asarray(t, jnp.float32) for t in (log_pf, flows.log_flow, log_q))


def _exact_residuals(env):
    """A jitted ``(tables, log Z, key) -> residuals`` for the exact P_F's rollouts, with P_B uniform and max-entropy.

    The tables are arguments, so one compilation serves both backward policies' flows.
    """
    all_states = jnp.asarray(env.all_states())

    def residuals(tables, log_z, key, num=256):
        log_pf_table, log_flow_table, log_q_table = tables
        logits = lambda s: log_pf_table[jax.vmap(env.state_index)(s)]
        traj = rollout(env, logits, key, num)
        index = jax.vmap(jax.vmap(env.state_index))(traj.states)
        n, log_r = traj.lengths, traj.log_rewards
        log_pf = forward_log_probs(env, log_pf_table[index[:, :-1]], traj)
        at_end = jnp.arange(index.shape[1])[None, :] == n[:, None]
        log_flow = jnp.where(at_end, log_r[:, None], log_flow_table[index])
        out = {}
        for backward in ("uniform", "maxent"):
            log_pb = backward_log_probs(env, backward, traj)
            # soft DQN with tau = 1: Q*(s, a) = log F(s) + log P_F(a | s), V*(s) = log F(s)
            states, nxt, actions = index[:, :-1].ravel(), index[:, 1:].ravel(), traj.actions.ravel()
            masks = jax.vmap(env.forward_mask)(all_states)
            next_value = losses.soft_value(log_q_table[nxt], masks[nxt], 1.0)
            log_r_t = jnp.broadcast_to(log_r[:, None], traj.actions.shape).ravel()
            td = losses.soft_dqn_residuals(
                log_q_table[states, actions], actions == env.exit_action, log_r_t, log_pb.ravel(), next_value
            )
            valid = (jnp.arange(traj.actions.shape[1])[None, :] < n[:, None]).ravel()
            out[backward] = {
                "tb": jnp.max(jnp.abs(losses.trajectory_balance_residuals(log_z, log_pf, log_pb, log_r, n))),
                "db": losses.detailed_balance(log_flow, log_pf, log_pb, n),
                "subtb": losses.subtrajectory_balance(log_flow, log_pf, log_pb, n, 0.9),
                "dqn": jnp.max(jnp.where(valid, jnp.abs(td), 0.0)),
            }
        return out

    return jax.jit(residuals)


@pytest.mark.parametrize("env", [GRID, BITS], ids=["hypergrid", "bits"])
def test_exact_flows_zero_every_loss(env):
    """With the DP flows for a P_B, TB, DB, SubTB(0.9) and the soft-DQN TD error vanish on every trajectory (float32).

    On the hypergrid the uniform and max-entropy P_B differ, and scoring one's flows with the other leaves
    residuals of order 0.1: the check has teeth. (With any-position bit filling they coincide: N(s) = j!.)
    """
    residuals = _exact_residuals(env)
    for backward in ("uniform", "maxent"):
        flows = env.exact_flows(backward)
        out = jax.tree.map(float, residuals(_tables(flows), flows.log_Z, jax.random.key(0)))
        assert out[backward]["tb"] < 1e-4 and out[backward]["dqn"] < 1e-4, out[backward]
        assert out[backward]["db"] < 1e-9 and out[backward]["subtb"] < 1e-9, out[backward]
        if env is GRID:
            other = out["maxent" if backward == "uniform" else "uniform"]
            assert other["tb"] > 0.1 and other["db"] > 1e-3 and other["dqn"] > 0.1, other


@pytest.mark.parametrize("env", [Hypergrid(2, 8, (0.1, 0.5, 2.0)), BITS], ids=["hypergrid", "bits"])
def test_exact_forward_policy_samples_pi(env):
    """Chi-square of 40 000 draws of the exact P_F against pi: p > 1e-6 (fixed seed); the uniform policy fails it.

    Rewards are kept away from zero (R0 = 0.1) so that every expected count is > 100.
    """
    n = 40_000
    expected = n * env.exact_probabilities
    assert expected.min() > 100

    @jax.jit
    def objects(table, key):
        logits = lambda s: table[jax.vmap(env.state_index)(s)]
        return jax.vmap(env.terminal_index)(sample_objects(env, logits, key, n).objects)

    def pvalue(table, key):
        counts = np.bincount(np.asarray(objects(table, key)), minlength=env.num_terminal_states)
        return stats.chisquare(counts, expected).pvalue

    exact = _tables(env.exact_flows("uniform"))[0]
    assert pvalue(exact, jax.random.key(1)) > 1e-6
    assert pvalue(jnp.zeros_like(exact), jax.random.key(2)) < 1e-6


def test_tlm_step_raises_the_likelihood_of_the_trajectories_it_is_fed():
    """Each TLM step lowers -sum log P_B of its batch; P_B starts uniform; the target moves at the Polyak rate 0.25."""
    env = Hypergrid(2, 8)
    sampler = GFlowNet(env, GFlowNetSettings(loss="tb", backward_policy="tlm", hidden=(64, 64)), 16)
    state = sampler.init(jax.random.key(0))

    @jax.jit
    def one(state, key):
        traj = sampler.sample_trajectories(state.params.network, key, 16)
        before = sampler.backward_nll(state.params.network, traj)
        uniform = -jnp.sum(backward_log_probs(env, "uniform", traj))
        params, target, opt, _ = sampler._backward_step(
            key, state.params, state.target, state.backward_optimizer, state.replay, traj
        )
        after = sampler.backward_nll(params.network, traj)
        polyak = jax.tree.map(
            lambda t, o, new: jnp.max(jnp.abs(0.75 * t + 0.25 * o - new)), state.target, params.network, target
        )
        new = state._replace(params=params, target=target, backward_optimizer=opt)
        return new, before, after, uniform, jnp.max(jnp.stack(jax.tree.leaves(polyak)))

    for k in range(6):
        first = k == 0
        state, before, after, uniform, polyak_err = one(state, jax.random.key(k + 1))
        assert float(after) < float(before), k
        assert float(polyak_err) < 1e-6
        if first:
            assert float(before) == pytest.approx(float(uniform), rel=1e-6)


def test_stopped_training_run_resumes_bit_identically(tmp_path):
    """A checkpointed Munchausen-DQN run with a TLM backward policy, stopped half way, resumes bit for bit.

    The state with the most parts: the network, its Polyak target, two Adam states
    (forward, and TLM's with its decaying learning rate), the prioritised replay
    buffer (wrapping around, priorities rewritten every update) and the terminal
    history; updates start after 2 iterations, so the stop falls after they began.
    """
    settings = GFlowNetSettings(loss="munchausen_dqn", backward_policy="tlm", hidden=(16, 16), buffer_size=300,
                                batch_size=32, learning_starts=2, history_size=64, eval_every=4)
    sampler = GFlowNet(Hypergrid(2, 4), settings, num_trajectories=8)
    assert_resumes_bit_identical(sampler.step, sampler.init(jax.random.key(0)), 12, 3, tmp_path, min_arrays=20)


def test_bad_settings_and_environments():
    with pytest.raises(InputError, match="loss"):
        GFlowNetSettings(loss="fm")
    with pytest.raises(InputError, match="backward_policy"):
        GFlowNetSettings(backward_policy="optimistic")
    with pytest.raises(InputError, match="target_rate"):
        GFlowNetSettings(target_rate=0.0)
    from jaxsamp.targets.gaussian import Gaussian

    with pytest.raises(InputError, match="DAG environment"):
        build(Gaussian([0.0], [[1.0]]))
    with pytest.raises(InputError, match="history_size"):
        build(GRID, GFlowNetSettings(history_size=8))
    with pytest.raises(InputError, match="buffer_size"):
        build(GRID, GFlowNetSettings(loss="soft_dqn", buffer_size=100))
