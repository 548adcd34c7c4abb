"""A lattice energy of your own (``jaxsamp.targets.lattice_energy``): single-site differences, log Z, checks, kernels.

Oracles: brute force in numpy with the couplings written out site by site (not the
``jnp.roll`` code of the user functions under test), enumeration of every state,
and the closed-form fast paths of the built-in Ising and Potts models.
"""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import logsumexp

import jaxsamp
from jaxsamp.core.errors import InputError
from jaxsamp.mcmc import discrete
from jaxsamp.targets import LatticeEnergy, lattice_energy
from jaxsamp.targets.lattice import Ising, LatticePath, Potts


# -- two energies that are not Ising / Potts, as a user writes them ----------------------
def nnn_ising(s):
    """Nearest-neighbour ferromagnet, antiferromagnetic diagonal (next-nearest) bonds and a field."""
    nn = s * (jnp.roll(s, 1, 0) + jnp.roll(s, 1, 1))
    diag = s * (jnp.roll(s, (1, 1), (0, 1)) + jnp.roll(s, (1, -1), (0, 1)))
    return -jnp.sum(nn) + 0.5 * jnp.sum(diag) - 0.3 * jnp.sum(s)


def clock_plaquette(x, q=3):
    """A q-state clock model with a field on category 0 and a four-site plaquette term."""
    angle = 2 * jnp.pi * x / q
    bonds = jnp.cos(angle - jnp.roll(angle, 1, 0)) + jnp.cos(angle - jnp.roll(angle, 1, 1))
    right, down = jnp.roll(x, -1, 1), jnp.roll(x, -1, 0)
    plaquette = (x == right) & (x == down) & (x == jnp.roll(right, -1, 0))
    return -jnp.sum(bonds) - 0.7 * jnp.sum(x == 0) - 0.5 * jnp.sum(plaquette)


def site(shape, i, j):
    return (i % shape[0]) * shape[1] + j % shape[1]


def brute_nnn_ising(states):
    """The same energy, every bond listed by hand, float64; ``states`` (n, Lx, Ly)."""
    shape = states.shape[1:]
    s = np.asarray(states, np.float64).reshape(len(states), -1)
    cells = list(itertools.product(range(shape[0]), range(shape[1])))
    nn = [(site(shape, i, j), site(shape, i - 1, j)) for i, j in cells] + [(site(shape, i, j), site(shape, i, j - 1)) for i, j in cells]
    diag = [(site(shape, i, j), site(shape, i - 1, j - 1)) for i, j in cells] + [(site(shape, i, j), site(shape, i - 1, j + 1)) for i, j in cells]
    pair = lambda bonds: sum(s[:, a] * s[:, b] for a, b in bonds)  # noqa: E731
    return -pair(nn) + 0.5 * pair(diag) - 0.3 * s.sum(1)


def brute_clock_plaquette(states, q=3):
    shape = states.shape[1:]
    x = np.asarray(states).reshape(len(states), -1)
    energy = np.zeros(len(states))
    for i, j in itertools.product(range(shape[0]), range(shape[1])):
        here = x[:, site(shape, i, j)]
        for other in (site(shape, i - 1, j), site(shape, i, j - 1)):
            energy -= np.cos(2 * np.pi * (here - x[:, other]) / q)
        square = [x[:, site(shape, i, j + 1)], x[:, site(shape, i + 1, j)], x[:, site(shape, i + 1, j + 1)]]
        energy -= 0.5 * np.all([here == corner for corner in square], axis=0)
    return energy - 0.7 * np.sum(x == 0, axis=1)


CASES = {  # name: (energy, brute force, shape, num_states, beta)
    "nnn_ising_3x3": (nnn_ising, brute_nnn_ising, (3, 3), 2, 0.4),
    "clock_plaquette_2x3": (clock_plaquette, brute_clock_plaquette, (2, 3), 3, 0.8),
}


def all_states(shape, values):
    return np.array(list(itertools.product(values, repeat=shape[0] * shape[1]))).reshape(-1, *shape)


def moves(x, values):
    """Every single-site move of ``x``: (N, Lx, Ly) flips for spins, (N, q, Lx, Ly) settings for categories."""
    out = []
    for i in range(x.size):
        row = []
        for v in ([None] if len(values) == 2 else values):
            y = x.reshape(-1).copy()
            y[i] = -y[i] if v is None else v
            row.append(y.reshape(x.shape))
        out.append(row)
    return np.array(out)


@pytest.mark.parametrize("case", CASES)
def test_single_site_differences_and_log_z_match_brute_force(case):
    """flip_log_ratios, site_log_ratios, log_prob and log Z of every state, against the hand-written energy.

    Budget: float32 energies of at most ~30 in size, so 1e-5 relative (20 ulp) on every difference.
    """
    energy, brute, shape, k, beta = CASES[case]
    target = lattice_energy(energy, shape, k, beta=beta)
    values = (-1.0, 1.0) if k == 2 else tuple(range(k))
    states = all_states(shape, values)
    e = brute(states)
    assert target.log_Z == pytest.approx(logsumexp(-beta * e), abs=1e-5)  # 512 or 729 states
    x = jnp.asarray(states, jnp.float32 if k == 2 else jnp.int32)
    np.testing.assert_allclose(np.asarray(jax.jit(jax.vmap(target.log_prob))(x)), -beta * e, atol=1e-5)

    rng = np.random.default_rng(0)
    for index in rng.choice(len(states), 20, replace=False):
        moved = moves(states[index], values)
        expected = -beta * (brute(moved.reshape(-1, *shape)) - e[index]).reshape(*shape, *(() if k == 2 else (k,)))
        got = np.asarray(target.flip_log_ratios(x[index]))
        np.testing.assert_allclose(got, expected, atol=1e-5, rtol=1e-5)
        one_site = jax.vmap(target.site_log_ratios, in_axes=(None, 0))(x[index], jnp.arange(states[0].size))
        np.testing.assert_allclose(np.asarray(one_site).reshape(got.shape), expected, atol=1e-5, rtol=1e-5)
        if k > 2:
            assert np.all(np.take_along_axis(got, states[index][..., None], axis=-1) == 0)
    # the annealing path LEAPS takes: exact log Z_t at t beta by the same enumeration
    assert LatticePath(target).exact_log_Z(0.5) == pytest.approx(logsumexp(-0.5 * beta * e), abs=1e-5)
    assert target.nearest_neighbour is False and target.domain.kind == ("spin" if k == 2 else "categorical")


@pytest.mark.parametrize("shape", [(4, 4), (2, 3), (3, 5)])
def test_the_generic_differences_equal_the_ising_and_potts_fast_paths(shape):
    """The built-in models through the generic vmap path give their closed-form differences (double bonds included).

    Budget: 1e-5 absolute, float32 differences of energies of at most 2 N (|J|, |h| <= 1.3).
    """
    rng = np.random.default_rng(1)
    ising, potts = Ising(list(shape), 0.37, J=1.3, h=-0.4), Potts(list(shape), 1.1, q=4, J=0.6)
    generic_ising = lattice_energy(ising.energy, shape, 2, beta=ising.beta)
    generic_potts = lattice_energy(potts.energy, shape, 4, beta=potts.beta)
    for _ in range(5):
        s = jnp.asarray(rng.choice([-1.0, 1.0], size=shape), jnp.float32)
        y = jnp.asarray(rng.integers(0, 4, size=shape), jnp.int32)
        np.testing.assert_allclose(generic_ising.flip_log_ratios(s), ising.flip_log_ratios(s), atol=1e-5)
        np.testing.assert_allclose(generic_potts.flip_log_ratios(y), potts.flip_log_ratios(y), atol=1e-5)
    if 2 ** np.prod(shape) <= 2**16:
        assert generic_ising.log_Z == pytest.approx(ising.log_Z, abs=1e-4)  # enumeration against Kaufman


def test_a_local_energy_difference_is_used_after_its_check():
    """Ising's closed form given as the local differences: accepted, used (a jit counts no energy calls), equal."""
    ising = Ising(4, 0.4, h=0.2)
    calls = []

    def counted_energy(s):
        calls.append(1)
        return ising.energy(s)

    target = lattice_energy(counted_energy, 4, beta=0.4, local_energy_difference=lambda s: -ising.flip_log_ratios(s) / 0.4)
    assert target.describe()["local_energy_difference"] is True
    s = jnp.asarray(np.random.default_rng(2).choice([-1.0, 1.0], size=(4, 4)), jnp.float32)
    calls.clear()
    got = jax.jit(target.flip_log_ratios)(s)
    assert calls == []
    np.testing.assert_allclose(got, ising.flip_log_ratios(s), rtol=1e-6)
    np.testing.assert_allclose(target.site_log_ratios(s, 5), ising.flip_log_ratios(s).reshape(-1)[5], rtol=1e-6)


def _nan_somewhere(s):
    return jnp.where(s[0, 0] > 0, jnp.nan, jnp.sum(s))


def _two_arguments(s, field):
    return jnp.sum(s) * field


BAD = {  # what the user gives: (kwargs of lattice_energy, text of the message)
    "not a function": (dict(energy=3.0), "energy must be a function of one configuration, got float"),
    "output per site": (dict(energy=lambda s: -s), r"energy must return one real scalar .* got shape \(3, 3\)"),
    "complex output": (dict(energy=lambda s: jnp.sum(s) * 1j), "energy must return one real scalar .* complex64"),
    "boolean output": (dict(energy=lambda s: jnp.all(s > 0)), "energy must return one real scalar .* bool"),
    "NaN energy": (dict(energy=_nan_somewhere), "energy is nan at a random configuration"),
    "wrong arguments": (dict(energy=_two_arguments), "energy _two_arguments cannot be called on one configuration"),
    "local of the wrong shape": (dict(energy=nnn_ising, local_energy_difference=lambda s: jnp.sum(s)),
                                 r"local_energy_difference must return .* shape \(3, 3\), got shape \(\)"),
    "local that disagrees": (dict(energy=nnn_ising, local_energy_difference=lambda s: 2.0 * s),
                             r"local_energy_difference disagrees with the energy at a random configuration: at site"),
    "local not a function": (dict(energy=nnn_ising, local_energy_difference="fast"), "local_energy_difference must be"),
    "one state per site": (dict(energy=nnn_ising, num_states=1), "num_states must be an int >= 2"),
    "a float of states": (dict(energy=nnn_ising, num_states=2.5), "num_states must be an int >= 2"),
    "negative beta": (dict(energy=nnn_ising, beta=-1.0), "beta must be finite and >= 0"),
    "a one-dimensional lattice": (dict(energy=nnn_ising, shape=[9]), "L must be an int >= 2 or a pair"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_functions_are_one_line_input_errors(case):
    kwargs, message = BAD[case]
    kwargs = {"shape": (3, 3), **kwargs}
    with pytest.raises(InputError, match=message) as err:
        lattice_energy(**kwargs)
    assert "\n" not in str(err.value)


def test_a_potts_local_difference_that_disagrees_names_the_move():
    potts = Potts([2, 3], 1.0, q=3)
    own_two = lambda x: (x[..., None] == 2) & (jnp.arange(3) == 2)  # noqa: E731  category 2's own entry
    wrong = lambda x: -potts.flip_log_ratios(x) + 0.1 * own_two(x)  # noqa: E731  not zero where c = x_i
    with pytest.raises(InputError, match=r"at site \(\d, \d\) set to 2 it gives 0.1, energy\(moved\) - energy\(x\) = 0"):
        lattice_energy(potts.energy, (2, 3), 3, local_energy_difference=wrong)


def test_the_single_site_kernels_sample_it_and_the_checkerboard_refuses_it():
    """Glauber (heat bath) on the 2x3 clock-plaquette model: mean energy and P(x_0 = 0) against enumeration, 5 sigma.

    2000 independent chains, 100 sweeps from uniform states, the last state of each: sigma = sd /
    sqrt(2000) of each statistic. At beta = 0.3 the 729-state model mixes in a few sweeps (at the
    0.8 of the other tests the chains stay for hundreds of sweeps in the ordered state they reach first).
    """
    energy, brute, shape, k, _ = CASES["clock_plaquette_2x3"]
    target = lattice_energy(energy, shape, k, beta=0.3)
    kernel = discrete.glauber_sampler(target)
    states, probs = target.enumerate_states()
    e = brute(states)
    x0 = LatticePath(target).sample_base(jax.random.key(0), 2000)

    @jax.jit
    def run(x0):
        def sweep(state, key):
            return jax.vmap(kernel.step)(jax.random.split(key, x0.shape[0]), state)[0], None

        return jax.lax.scan(sweep, jax.vmap(kernel.init)(x0), jax.random.split(jax.random.key(1), 100))[0].position

    x = np.asarray(run(x0))
    for got, exact in ((brute(x), np.sum(probs * e)), (x[:, 0, 0] == 0, np.sum(probs * (states[:, 0, 0] == 0)))):
        assert abs(got.mean() - exact) < 5 * got.std() / np.sqrt(len(got)), (got.mean(), exact)
    with pytest.raises(InputError, match="checkerboard kernel needs nearest-neighbour couplings"):
        jaxsamp.mcmc.discrete.checkerboard_sampler(target)
    assert isinstance(target.with_beta(0.1), LatticeEnergy) and target.with_beta(0.1).beta == 0.1
