"""Local equivariance of the LEAPS networks: G_i(flip_i x) = -G_i(x) and its categorical analogue; the deep LEC layer
against its defining formula."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from hypothesis import given
from hypothesis import strategies as st

from jaxsamp.nets.locally_equivariant import NETWORKS, _StateDependentConv, neighbourhood_index

SHAPE = (4, 5)  # not square, so a transposed axis would show
Q = 3
KWARGS = {
    "conv": dict(kernel_sizes=(3, 5, 7), channels=6, time_hidden=16),
    "mlp": dict(hidden=(32, 32)),
    "attention": dict(features=16, num_heads=2, num_layers=2),
}
CASES = [(name, q) for name in NETWORKS for q in (None, Q)]


@pytest.fixture(scope="module")
def forward():
    """One jitted forward per (network, domain), with random N(0, 0.3^2) parameters.

    The networks are built abstractly (``nnx.eval_shape``) and their parameters
    drawn with NumPy, so no part is at a symmetric init and nothing is compiled
    before the forward passes themselves.
    """
    out = {}
    rng = np.random.default_rng(1)
    for name, q in CASES:
        graphdef, shapes = nnx.split(nnx.eval_shape(lambda: NETWORKS[name](SHAPE, q, **KWARGS[name], rngs=nnx.Rngs(0))))
        params = jax.tree.map(lambda s: jnp.asarray(0.3 * rng.standard_normal(s.shape), s.dtype), shapes)
        out[(name, q)] = jax.jit(lambda x, t, g=graphdef, p=params: nnx.merge(g, p)(x, t))
    return out


def _state(seed, q):
    key = jax.random.key(seed)
    if q is None:
        return jax.random.rademacher(key, SHAPE, dtype=jnp.float32)
    return jax.random.randint(key, SHAPE, 0, q)


sites = st.tuples(st.integers(0, SHAPE[0] - 1), st.integers(0, SHAPE[1] - 1))
times = st.floats(0.0, 1.0, width=32)


@pytest.mark.parametrize("name", list(NETWORKS))
@given(seed=st.integers(0, 2**16), site=sites, t=times)
def test_spin_local_equivariance(forward, name, seed, site, t):
    f = forward[(name, None)]
    x = _state(seed, None)
    G = np.asarray(f(x, t))
    G_flip = np.asarray(f(x.at[site].set(-x[site]), t))
    assert G.shape == SHAPE
    np.testing.assert_allclose(G_flip[site], -G[site], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", list(NETWORKS))
@given(seed=st.integers(0, 2**16), site=sites, shift=st.integers(1, Q - 1), t=times)
def test_categorical_local_equivariance(forward, name, seed, site, shift, t):
    f = forward[(name, Q)]
    x = _state(seed, Q)
    c = (int(x[site]) + shift) % Q
    G = np.asarray(f(x, t))
    G_moved = np.asarray(f(x.at[site].set(c), t))
    assert G.shape == (*SHAPE, Q)
    assert G[site][int(x[site])] == 0.0
    np.testing.assert_allclose(G_moved[site][int(x[site])], -G[site][c], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name,q", CASES)
def test_output_depends_on_the_other_sites_and_time(forward, name, q):
    """The equivariance tests are not vacuous: G is non-zero and reads neighbours and t."""
    f = forward[(name, q)]
    x = _state(3, q)
    G = np.asarray(f(x, 0.4))
    assert np.abs(G).max() > 1e-3
    nbr = (1, 2)
    moved = x.at[nbr].set(-x[nbr] if q is None else (x[nbr] + 1) % q)
    G_nbr = np.asarray(f(moved, 0.4))
    assert np.abs(G_nbr[1, 1] - G[1, 1]).max() > 1e-6  # site (1, 1) sees its neighbour (1, 2)
    assert np.abs(np.asarray(f(x, 0.9)) - G).max() > 1e-6


@pytest.mark.parametrize("name", ["conv", "attention"])
@pytest.mark.parametrize("q", [None, Q])
def test_translation_equivariance(forward, name, q):
    """Circular padding everywhere (conv) and relative positions (attention): G(roll x) = roll G(x)."""
    f = forward[(name, q)]
    x = _state(7, q)
    shift = (1, 3)
    G = np.asarray(f(x, 0.3))
    G_rolled = np.asarray(f(jnp.roll(x, shift, axis=(0, 1)), 0.3))
    np.testing.assert_allclose(G_rolled, np.roll(G, shift, axis=(0, 1)), rtol=1e-4, atol=1e-5)


def test_batched_with_vmap(forward):
    f = forward[("conv", None)]
    xs = jnp.stack([_state(s, None) for s in range(3)])
    ts = jnp.array([0.0, 0.5, 1.0])
    batched = np.asarray(jax.vmap(f)(xs, ts))
    np.testing.assert_allclose(batched[1], np.asarray(f(xs[1], ts[1])), rtol=1e-5, atol=1e-6)


def test_kernel_that_wraps_onto_the_centre_is_rejected():
    with pytest.raises(ValueError, match="K // 2"):
        neighbourhood_index((4, 4), 9)
    with pytest.raises(ValueError, match="K // 2"):
        NETWORKS["conv"]((3, 3), None, kernel_sizes=(3, 7), rngs=nnx.Rngs(0))


def test_wrong_state_shape_is_a_clear_error(forward):
    with pytest.raises(AssertionError, match="one lattice state"):
        forward[("mlp", None)](jnp.ones((5, 4)), 0.1)


@pytest.mark.parametrize("depthwise", [False, True])
def test_state_dependent_layer_matches_its_formula(depthwise):
    """The LEC layer (LEAPS, deep LEC layers) against its definition written out in float64: the per-site kernel
    ``k_{c,o}(p) = SiLU(sum_d A_{c,o,d} a_d(p) + b1_{c,o}) + b2_{c,o} + tau(t)_o``, centre offset zeroed, then
    ``h_c(p) = sum_o k_{c,o}(p) u_o(p)`` (spins) or ``u_{o,c}(p)`` (categorical, depthwise). The layer sums offset by
    offset without storing the kernel; the two must agree to float64 round-off."""
    with jax.enable_x64(True):
        n, k, c = 7, 5, 4
        graphdef, params = nnx.split(_StateDependentConv(k, c, 8, rngs=nnx.Rngs(0)))
        rng = np.random.default_rng(2)
        params = jax.tree.map(lambda v: jnp.asarray(rng.standard_normal(v.shape)), params)  # O(1), float64
        layer = nnx.merge(graphdef, params)
        a = jnp.asarray(rng.standard_normal((n, c)))
        patches = jnp.asarray(rng.standard_normal((n, k * k, c) if depthwise else (n, k * k)))
        t = jnp.asarray(0.3)
        pre = jnp.einsum("nd,cod->nco", a, layer.A[...]) + layer.b1[...]
        kernel = (jax.nn.silu(pre) + layer.b2[...] + layer.tau(t[None])) * (jnp.arange(k * k) != k * k // 2)
        expected = jnp.einsum("nco,noc->nc", kernel, patches) if depthwise else jnp.einsum("nco,no->nc", kernel, patches)
        np.testing.assert_allclose(np.asarray(layer(a, patches, t)), np.asarray(expected), rtol=1e-12, atol=1e-12)
