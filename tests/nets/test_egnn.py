"""EGNN drift: one layer against the paper's equations edge by edge, E(n) and permutation equivariance, zero centre
of mass, near-zero start."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxsamp.nets.egnn import EGNN, EquivariantLayer, other_particles

N, D, BATCH = 5, 3, 4


GRAPHDEF, FRESH = nnx.split(EGNN(N, D, hidden=16, num_layers=2, rngs=nnx.Rngs(0)))
# Coordinate heads scaled up, so that the output is O(1) like a trained network's, not ~1e-3.
PARAMS = jax.tree_util.tree_map_with_path(
    lambda path, v: v * 1e3 if "coord_out" in jax.tree_util.keystr(path) else v, FRESH
)
_APPLY = jax.jit(lambda params, t, x: nnx.merge(GRAPHDEF, params)(t, x))
APPLY = lambda t, x: _APPLY(PARAMS, t, x)  # noqa: E731
X = jax.random.normal(jax.random.key(1), (BATCH, N * D)) * 1.5
T = jnp.linspace(0.1, 0.9, BATCH)


def _orthogonal(seed: int, reflect: bool) -> np.ndarray:
    q, r = np.linalg.qr(np.random.default_rng(seed).normal(size=(D, D)))
    q = q * np.sign(np.diag(r))
    if (np.linalg.det(q) < 0) != reflect:
        q[:, 0] = -q[:, 0]
    return q


@pytest.mark.gpu
@settings(max_examples=15)
@given(
    seed=st.integers(0, 2**31 - 1),
    reflect=st.booleans(),
    perm=st.permutations(range(N)),
    shift=st.lists(st.floats(-5, 5), min_size=D, max_size=D),
)
def test_output_is_rotation_reflection_translation_and_permutation_equivariant(seed, reflect, perm, shift):
    """output(R x + b, permuted) == R output(x), permuted, for R in O(3) (det +1 and -1)."""
    rot = _orthogonal(seed, reflect)
    perm = np.asarray(perm)
    pos = np.asarray(X).reshape(BATCH, N, D)
    moved = (pos @ rot.T + np.asarray(shift))[:, perm].reshape(BATCH, N * D)
    out = np.asarray(APPLY(T, X)).reshape(BATCH, N, D)
    expected = (out @ rot.T)[:, perm].reshape(BATCH, N * D)
    got = np.asarray(APPLY(T, jnp.asarray(moved, jnp.float32)))
    assert np.abs(out).max() > 0.1  # the check is not trivially passed by a ~0 output
    np.testing.assert_allclose(got, expected, atol=2e-4 * np.abs(out).max())


def test_output_has_zero_centre_of_mass_and_depends_on_time():
    out = np.asarray(APPLY(T, X)).reshape(BATCH, N, D)
    np.testing.assert_allclose(out.mean(axis=1), 0.0, atol=1e-5)
    later = np.asarray(APPLY(T + 0.05, X)).reshape(BATCH, N, D)
    assert np.abs(later - out).max() > 1e-3


def test_fresh_network_starts_near_the_zero_control():
    """Coordinate heads Xavier-initialised with gain 1e-3: the initial control is a few % of |x|,
    over 100x smaller than with the heads scaled to a trained network's size."""
    out = float(jnp.abs(_APPLY(FRESH, T, X)).max())
    assert 0 < out < 0.05 * float(jnp.abs(X).max())
    assert out < 0.01 * float(jnp.abs(APPLY(T, X)).max())


def test_gradient_is_finite_when_particles_coincide():
    """At X_t = 0 (the bridge at t = 0) every pair distance is 0, where sqrt has an infinite slope."""
    grad = jax.jit(jax.grad(lambda p, x: jnp.sum(nnx.merge(GRAPHDEF, p)(jnp.zeros(2), x) ** 2)))
    for x in (jnp.zeros((2, N * D)), jnp.full((2, N * D), 1e-30)):
        assert all(bool(jnp.all(jnp.isfinite(g))) for g in jax.tree.leaves(grad(PARAMS, x)))


@pytest.mark.gpu
def test_layer_matches_the_papers_equations_edge_by_edge():
    """One E_GCL layer (Satorras et al. 2021, eqs. 3-6, with the attention gate and the normalised coordinate
    update of the "dynamics" form) written as plain loops over the edges j != i, against the layer's gathered
    off-diagonal computation, in float64: equal to round-off."""
    with jax.enable_x64(True):
        n, d, hidden, coords_range = 5, 3, 8, 2.0
        graphdef, params = nnx.split(EquivariantLayer(hidden, coords_range, rngs=nnx.Rngs(3)))
        layer = nnx.merge(graphdef, jax.tree.map(lambda v: v.astype(jnp.float64), params))
        layer.coord_out.kernel.value = jax.random.normal(jax.random.key(4), (hidden, 1), dtype=jnp.float64)
        keys = jax.random.split(jax.random.key(5), 3)
        h = jax.random.normal(keys[0], (n, hidden), dtype=jnp.float64)
        x = jax.random.normal(keys[1], (n, d), dtype=jnp.float64)
        x0 = x + 0.3 * jax.random.normal(keys[2], (n, d), dtype=jnp.float64)
        others = other_particles(n)
        edge_attr = jnp.sum((x0[:, None, :] - x0[others, :]) ** 2, axis=-1, keepdims=True)
        h_new, x_new = layer(h, x, edge_attr, others)

        silu = jax.nn.silu
        for i in range(n):
            x_i, aggregate = x[i], jnp.zeros(hidden)
            for j in range(n):
                if j == i:
                    continue
                radial = jnp.sum((x[i] - x[j]) ** 2)
                attr = jnp.sum((x0[i] - x0[j]) ** 2)
                m = silu(layer.edge_source(h[i]) + layer.edge_target(h[j]) + layer.edge_distances(jnp.stack([radial, attr])))
                m = silu(layer.edge_out(m))
                m = m * jax.nn.sigmoid(layer.attention(m))
                coef = jnp.tanh(layer.coord_out(silu(layer.coord_in(m)))) * coords_range
                x_i = x_i + (x[i] - x[j]) / (jnp.sqrt(radial) + 1.0) * coef
                aggregate = aggregate + m
            h_i = h[i] + layer.node_out(silu(layer.node_in(jnp.concatenate([h[i], aggregate]))))
            np.testing.assert_allclose(np.asarray(x_new[i]), np.asarray(x_i), rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(np.asarray(h_new[i]), np.asarray(h_i), rtol=1e-12, atol=1e-12)
        assert float(jnp.max(jnp.abs(x_new - x))) > 0.1  # the coordinate update is not negligible
