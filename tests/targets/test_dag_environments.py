"""GFlowNet environments: rewards by hand, enumeration, exact flows, and masks that never allow an invalid action."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import jaxsamp.targets
from jaxsamp.core.errors import ConfigError, InputError
from jaxsamp.targets.bit_sequence import BitSequence
from jaxsamp.targets.hypergrid import Hypergrid

ENVIRONMENTS = {
    "hypergrid_2x8": Hypergrid(2, 8),
    "hypergrid_3x4_hard": Hypergrid(3, 4, "hard"),
    "bits_any": BitSequence(length=6, word_length=2, num_modes=3, order="any_position"),
    "bits_ltr": BitSequence(length=6, word_length=2, num_modes=3, order="left_to_right"),
}


def test_hypergrid_reward_by_hand():
    """R0 + R1 [all |x/(H-1) - 1/2| > 0.25] + R2 [all in (0.3, 0.4)], H = 20: coordinate 16 is in the mode band."""
    grid = Hypergrid(4, 20)
    r0, r1, r2 = 1e-3, 0.5, 2.0
    cases = {
        (0, 0, 0, 0): r0 + r1,
        (10, 10, 10, 10): r0,
        (16, 16, 3, 16): r0 + r1 + r2,
        (16, 16, 3, 10): r0,
        (1, 18, 1, 18): r0 + r1,
    }
    reward_and_mode = jax.jit(jax.vmap(lambda x: (jnp.exp(grid.log_prob(x)), grid.mode_index(x))))
    points = jnp.asarray([*cases, (16, 3, 3, 16), (16, 3, 3, 10)], jnp.int32)
    rewards, modes = (np.asarray(v) for v in reward_and_mode(points))
    np.testing.assert_allclose(rewards[: len(cases)], list(cases.values()), rtol=1e-6)
    assert modes[-2] == 0b1001 and modes[-1] == -1
    assert grid.num_terminal_states == 160_000 and grid.max_trajectory_length == 77 and grid.num_modes == 16


def test_bit_sequence_reward_by_hand():
    """R = exp(-beta d_min / n): a mode has log R = 0; one flipped bit costs beta / n."""
    env = BitSequence(length=8, word_length=2, num_modes=2, beta=3.0, mode_radius=1)
    mode = env.modes[1]
    flipped = mode.copy()
    flipped[0] ^= 1
    words = np.stack([mode, flipped]).reshape(2, 4, 2) @ np.array([2, 1])
    log_r, modes = (
        np.asarray(v)
        for v in jax.jit(jax.vmap(lambda x: (env.log_prob(x), env.mode_index(x))))(jnp.asarray(words, jnp.int32))
    )
    assert log_r[0] == pytest.approx(0.0, abs=1e-7) and modes[0] == 1
    d_other = int(np.sum(flipped != env.modes[0]))
    assert log_r[1] == pytest.approx(-3.0 * min(1, d_other) / 8, abs=1e-6)
    assert modes[1] == (1 if d_other > 1 else 0)  # the nearest mode within radius 1 (ties: the first)


@pytest.mark.parametrize("name", list(ENVIRONMENTS))
def test_enumeration_matches_the_jax_reward_and_indices(name):
    env = ENVIRONMENTS[name]
    objects = jnp.asarray(env.terminal_states())
    index, log_r = jax.jit(jax.vmap(lambda x: (env.terminal_index(x), env.log_prob(x))))(objects)
    np.testing.assert_array_equal(np.asarray(index), np.arange(env.num_terminal_states))
    np.testing.assert_allclose(np.asarray(log_r), env.exact_log_rewards, atol=1e-6)
    np.testing.assert_allclose(env.exact_probabilities.sum(), 1.0, rtol=1e-12)
    np.testing.assert_allclose(env.log_Z, np.log(np.sum(np.exp(env.exact_log_rewards))), rtol=1e-12)
    states = jnp.asarray(env.all_states())
    np.testing.assert_array_equal(np.asarray(jax.jit(jax.vmap(env.state_index))(states)), np.arange(env.num_states))
    draws = np.asarray(jax.jit(jax.vmap(env.terminal_index))(env.sample(jax.random.key(0), 4)))
    assert draws.min() >= 0 and draws.max() < env.num_terminal_states


@pytest.mark.parametrize("name", list(ENVIRONMENTS))
@pytest.mark.parametrize("backward", ["uniform", "maxent"])
def test_exact_flows_sample_pi(name, backward):
    """F(s_0) = Z, the policies are normalised, and pushing probability forward through P_F ends exactly at pi.

    The forward pass (start at s_0, move by P_F, stop by its exit probability; ``terminal_distribution``) is a
    different computation from the backward dynamic programme that produced P_F.
    """
    env = ENVIRONMENTS[name]
    flows = env.exact_flows(backward)
    assert flows.log_Z == pytest.approx(env.log_Z, abs=1e-10)
    np.testing.assert_allclose(np.exp(flows.log_pf).sum(axis=1), 1.0, atol=1e-12)
    pb = np.exp(flows.log_pb)
    has_parent = pb.sum(axis=1) > 0
    np.testing.assert_allclose(pb.sum(axis=1)[has_parent], 1.0, atol=1e-12)
    pushed = env.terminal_distribution(flows.log_pf)  # probability pushed forward from s_0 through P_F
    np.testing.assert_allclose(pushed, env.exact_probabilities, atol=1e-12)
    uniform = env.terminal_distribution(np.zeros((env.num_states, env.num_actions)))
    assert np.abs(uniform - env.exact_probabilities).max() > 1e-3  # a policy that is not exact is told apart


def test_maxent_backward_policy_is_the_path_count_ratio():
    """On the hypergrid N(s) is multinomial: P_B(s - e_d | s) = s_d / sum(s)."""
    env = Hypergrid(3, 4)
    flows = env.exact_flows("maxent")
    states = env.all_states()
    total = states.sum(axis=1, keepdims=True)
    want = np.where(states > 0, states / np.maximum(total, 1), 0.0)
    np.testing.assert_allclose(np.exp(flows.log_pb), want, atol=1e-12)


def _probe(env):
    """A jitted look at ONE state: actions drawn from random logits over its mask, and every move's child and parent."""

    def probe(s, key):
        fmask = env.forward_mask(s)
        logits = jax.random.normal(key, (512, env.num_actions)) * 5.0
        drawn = jax.random.categorical(jax.random.fold_in(key, 1), jnp.where(fmask, logits, -1e30))
        moves = jnp.arange(env.num_actions - 1)
        children = jax.vmap(lambda a: env.step(s, a))(moves)
        undo = jax.vmap(env.backward_action)(moves)
        child_allows_undo = jax.vmap(lambda c, b: env.backward_mask(c)[b])(children, undo)
        back = jax.vmap(lambda c, b: env.parent(c, b))(children, undo)
        parents = jax.vmap(lambda b: env.parent(s, b))(jnp.arange(env.num_backward_actions))
        return fmask, drawn, children, child_allows_undo, back, env.backward_mask(s), parents

    return jax.jit(probe)


PROBES = {name: _probe(env) for name, env in ENVIRONMENTS.items()}


def _valid_state(env, s) -> bool:
    if isinstance(env, Hypergrid):
        return bool(np.all((s >= 0) & (s < env.side)))
    filled = s >= 0
    ok = np.all((s >= -1) & (s < env.num_words))
    if env.order == "left_to_right":  # a prefix: filled slots first
        ok &= np.all(filled[: filled.sum()])
    return bool(ok)


def _check_moves(name, state, seed):
    """Drawn actions lie in the forward mask; every allowed move leads to a valid state whose backward mask allows
    undoing it, and undoing it returns; every allowed backward move leads to a valid state."""
    env = ENVIRONMENTS[name]
    s = np.asarray(state, np.int32)
    fmask, drawn, children, allows_undo, back, bmask, parents = (
        np.asarray(v) for v in PROBES[name](jnp.asarray(s), jax.random.key(seed))
    )
    assert fmask[drawn].all(), "an action outside the forward mask was drawn"
    assert fmask.any(), "a state with no allowed action"
    for a in np.flatnonzero(fmask[:-1]):
        assert _valid_state(env, children[a]) and allows_undo[a]
        np.testing.assert_array_equal(back[a], s)
    for b in np.flatnonzero(bmask):
        assert _valid_state(env, parents[b])


@given(state=st.lists(st.integers(0, 3), min_size=3, max_size=3), seed=st.integers(0, 2**16))
def test_hypergrid_masks_never_allow_an_invalid_action(state, seed):
    _check_moves("hypergrid_3x4_hard", state, seed)


@given(state=st.lists(st.integers(-1, 3), min_size=3, max_size=3), seed=st.integers(0, 2**16))
def test_bit_sequence_masks_never_allow_an_invalid_action(state, seed):
    _check_moves("bits_any", state, seed)
    prefix = sorted(state, key=lambda v: v < 0)  # filled slots first: a left-to-right state
    _check_moves("bits_ltr", prefix, seed)


def test_bad_parameters():
    with pytest.raises(InputError, match="side"):
        Hypergrid(2, 1)
    with pytest.raises(InputError, match="reward"):
        Hypergrid(2, 8, "medium")
    with pytest.raises(InputError, match="R0 > 0"):
        Hypergrid(2, 8, (0.0, 1.0, 1.0))
    with pytest.raises(InputError, match="length"):
        BitSequence(length=24)
    with pytest.raises(InputError, match="word_length"):
        BitSequence(length=10, word_length=3)
    with pytest.raises(ConfigError, match="R0, R1, R2"):
        jaxsamp.targets.get("hypergrid", dim=2, side=4, R0=0.1)
    with pytest.raises(InputError, match="too many to enumerate"):
        _ = Hypergrid(8, 20).exact_probabilities
    with pytest.raises(InputError, match="backward_policy"):
        Hypergrid(2, 4).exact_flows("naive")


# -- a user's reward -----------------------------------------------------------------------------------------------
def ring(x):
    """A user's log reward on the 5 x 5 grid (none of the built-ins): high on a ring of radius 1.5 around (2, 2)."""
    return -2.0 * (jnp.sqrt(jnp.sum((x - 2.0) ** 2)) - 1.5) ** 2


def ring_by_hand(point) -> float:
    return -2.0 * (np.sqrt(np.sum((np.asarray(point, float) - 2.0) ** 2)) - 1.5) ** 2


def runs(bits):
    """A user's log reward on bit strings (none of the built-ins): equal neighbours pay, ones cost."""
    return 0.8 * jnp.sum(bits[1:] == bits[:-1]) - 0.3 * jnp.sum(bits)


def runs_by_hand(bits) -> float:
    b = np.asarray(bits)
    return 0.8 * np.sum(b[1:] == b[:-1]) - 0.3 * np.sum(b)


USER_REWARDS = {  # environment, then every object in terminal_index order with its log reward in float64 by hand
    "hypergrid_5x5": (lambda: Hypergrid(2, 5, log_reward=ring), itertools.product(range(5), repeat=2), ring_by_hand),
    "bits_any_k2": (lambda: BitSequence(6, 2, log_reward=runs), itertools.product((0, 1), repeat=6), runs_by_hand),
    "bits_ltr_k3": (lambda: BitSequence(6, 3, order="left_to_right", log_reward=runs),
                    itertools.product((0, 1), repeat=6), runs_by_hand),
}


@pytest.mark.parametrize("name", list(USER_REWARDS))
def test_a_user_reward_is_enumerated_as_brute_force_finds_it(name):
    """Every object's log R, pi, log Z and the exact flows' F(s_0) from the user's function equal brute force: the
    function applied by hand (float64) to every object listed in order, a grid's points or a sequence's bits (float32
    evaluation: 1e-5); pushing P_F of the exact flows forward ends at that pi. The objects have no modes."""
    build, objects, by_hand = USER_REWARDS[name]
    env = build()
    objects = list(objects)
    want = np.array([by_hand(o) for o in objects])
    assert env.num_terminal_states == len(objects)
    np.testing.assert_allclose(env.exact_log_rewards, want, rtol=1e-5, atol=1e-5)
    inputs = jax.vmap(env.reward_input)(jnp.asarray(env.terminal_states()))
    np.testing.assert_array_equal(np.asarray(inputs), np.asarray(objects))  # fn sees the objects as listed
    log_z = np.log(np.sum(np.exp(want)))
    assert env.log_Z == pytest.approx(log_z, abs=1e-5)
    np.testing.assert_allclose(env.exact_probabilities, np.exp(want - log_z), rtol=1e-4)
    flows = env.exact_flows("uniform")
    assert flows.log_Z == pytest.approx(log_z, abs=1e-5)
    np.testing.assert_allclose(env.terminal_distribution(flows.log_pf), env.exact_probabilities, atol=1e-12)
    log_r, modes = jax.jit(jax.vmap(lambda x: (env.log_prob(x), env.mode_index(x))))(jnp.asarray(env.terminal_states()))
    np.testing.assert_array_equal(np.asarray(log_r, np.float64), env.exact_log_rewards)
    assert env.num_modes == 0 and np.all(np.asarray(modes) == -1)


def standard_hypergrid_reward(x, side=8):
    """The built-in standard hypergrid reward as a user writes it (integer bands): R = 1e-3 + 0.5 [outer] + 2 [band]."""
    d = jnp.abs(2 * x - (side - 1))
    outer = jnp.prod(2 * d > side - 1)
    band = jnp.prod((5 * d > 3 * (side - 1)) & (5 * d < 4 * (side - 1)))
    return jnp.log(1e-3 + 0.5 * outer + 2.0 * band)


BUILTIN_BITS = BitSequence(6, 2, num_modes=3)


def builtin_bit_sequence_reward(bits):
    """The built-in bit-sequence reward, written as a user would: -beta min_j Hamming(bits, mode_j) / n, beta = 3."""
    return -3.0 * jnp.min(jnp.sum(bits[None, :] != jnp.asarray(BUILTIN_BITS.modes), axis=-1)).astype(jnp.float32) / 6


BUILTIN_AS_USER = {
    "hypergrid_2x8": (Hypergrid(2, 8), lambda: Hypergrid(2, 8, log_reward=standard_hypergrid_reward)),
    "bits_any": (BUILTIN_BITS, lambda: BitSequence(6, 2, log_reward=builtin_bit_sequence_reward)),
}


@pytest.mark.parametrize("name", list(BUILTIN_AS_USER))
def test_the_builtin_reward_as_a_user_function_is_the_builtin_environment(name):
    """The same log R bit for bit (float32, as the sampler sees it) at every object; the enumeration from it matches
    the built-in's float64 one to float32 rounding (1e-6)."""
    builtin, build = BUILTIN_AS_USER[name]
    user = build()
    objects = jnp.asarray(builtin.terminal_states())
    for_both = [jax.jit(jax.vmap(env.log_prob))(objects) for env in (builtin, user)]
    np.testing.assert_array_equal(*(np.asarray(v) for v in for_both))
    np.testing.assert_allclose(user.exact_log_rewards, builtin.exact_log_rewards, atol=1e-6)
    assert user.log_Z == pytest.approx(builtin.log_Z, abs=1e-6)
    np.testing.assert_allclose(user.exact_probabilities, builtin.exact_probabilities, rtol=1e-5)


def test_a_bad_user_reward_is_a_one_line_error_naming_it():
    """Not a function, not callable on one object, a non-scalar output, NaN or inf at enumeration or at one object,
    and a built-in reward's setting beside it: each an InputError of one line, before any enumeration or training."""
    cases = [
        (lambda: Hypergrid(2, 5, log_reward=3.0), r"^log_reward must be a function of one object, got float(?: \(hint: .*\))?(?: \(hint: .*\))?$"),
        (lambda: jaxsamp.targets.get("hypergrid", dim=2, side=5, log_reward="ring"), r"log_reward must be Callable"),
        (lambda: Hypergrid(2, 5, log_reward=lambda x: -x * 1.0),
         r"^log_reward must return one real number for one object of shape \(2,\) int32, got shape \(2,\) float32(?: \(hint: .*\))?(?: \(hint: .*\))?$"),
        (lambda: BitSequence(6, 2, log_reward=lambda bits: bits[:3] * 1.0),
         r"one object of shape \(6,\) int32, got shape \(3,\)"),
        (lambda: Hypergrid(2, 5, log_reward=lambda x, scale: scale * x[0]),
         r"^log_reward cannot be called on one object"),
        (lambda: Hypergrid(2, 5, log_reward=lambda x: 1.0 if x[0] > 1 else 0.0),
         r"^log_reward cannot be called on one object of shape \(2,\) int32: Attempted boolean conversion"),
        (lambda: jaxsamp.targets.get("hypergrid", dim=2, side=5, R0=1.0, R1=1.0, R2=1.0, log_reward=ring),
         r"log_reward replaces the built-in reward: give R0, R1, R2 or log_reward, not both"),
        (lambda: Hypergrid(2, 5, "hard", log_reward=ring), r"leave reward at 'standard', got 'hard'"),
        (lambda: BitSequence(6, 2, beta=1.0, mode_seed=3, log_reward=runs), r"leave beta, mode_seed at the default"),
    ]
    for build, message in cases:
        with pytest.raises(InputError, match=message) as caught:
            build()
        assert "\n" not in str(caught.value)

    def log_of_first(x):  # log R = log x_0: -inf on the first column
        return jnp.log(x[0].astype(jnp.float32))

    grid = Hypergrid(2, 5, log_reward=log_of_first)  # built: the function is checked abstractly only
    with pytest.raises(InputError, match=r"^hypergrid: log_reward log_of_first is -inf at 5 of 25 objects, first at "
                                         r"\[0, 0\](?: \(hint: .*\))?(?: \(hint: .*\))?$") as caught:
        _ = grid.log_Z
    assert "finite log R" in caught.value.hint
    with pytest.raises(InputError, match=r"^hypergrid: log_reward log_of_first is -inf at \[0, 3\](?: \(hint: .*\))?(?: \(hint: .*\))?$"):
        grid.log_prob(jnp.array([0, 3]))  # a concrete object
    assert float(grid.log_prob(jnp.array([2, 3]))) == pytest.approx(np.log(2.0))
    bits = BitSequence(6, 3, log_reward=lambda b: jnp.where(b[5] == 1, jnp.nan, 0.0))
    with pytest.raises(InputError, match=r"^bit_sequence: log_reward is nan at 32 of 64 objects, first at "
                                         r"\[0, 0, 0, 0, 0, 1\](?: \(hint: .*\))?(?: \(hint: .*\))?$"):
        bits.exact_flows()  # named by the bits the function saw
