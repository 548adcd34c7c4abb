"""EGNN drift: E(n) and permutation equivariance, zero centre of mass, near-zero start."""

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxsamp.nets.egnn import EGNN

N, D, BATCH = 5, 3, 4


def _trained_like_model():
    """An EGNN whose coordinate heads are scaled up, so the output is O(1), not ~1e-3."""
    model = EGNN(N, D, hidden=16, num_layers=2, rngs=nnx.Rngs(0))
    for layer in model.layers:
        layer.coord_out.kernel.value = layer.coord_out.kernel.value * 1e3
    return model


MODEL = _trained_like_model()
GRAPHDEF, PARAMS = nnx.split(MODEL)
APPLY = jax.jit(lambda t, x: nnx.merge(GRAPHDEF, PARAMS)(t, x))
X = jax.random.normal(jax.random.key(1), (BATCH, N * D)) * 1.5
T = jnp.linspace(0.1, 0.9, BATCH)


def _orthogonal(seed: int, reflect: bool) -> np.ndarray:
    q, r = np.linalg.qr(np.random.default_rng(seed).normal(size=(D, D)))
    q = q * np.sign(np.diag(r))
    if (np.linalg.det(q) < 0) != reflect:
        q[:, 0] = -q[:, 0]
    return q


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
    """The coordinate heads are Xavier-initialised with gain 1e-3, so u_0 ~ 1e-3 |x|."""
    model = EGNN(N, D, hidden=32, num_layers=5, rngs=nnx.Rngs(3))
    out = model(T, X)
    assert out.shape == X.shape
    assert 0 < float(jnp.abs(out).max()) < 1e-2 * float(jnp.abs(X).max())
