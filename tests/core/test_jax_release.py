"""The installed JAX computes what jaxsamp's networks rely on.

jax/jaxlib 0.10.2 on CPU returns garbage (inf, nan or random values, different at each compilation) for a
jitted ``mean((x @ W) ** 2)`` when ``W`` is a closed-over constant matrix whose entries are all equal, such
as the zero-initialised last layer of a denoiser or a drift network closed over by a jitted evaluation.
0.10.1 is correct. pyproject.toml excludes 0.10.2; this test fails on any release with the same fault.
"""

import jax
import jax.numpy as jnp
import numpy as np


def test_a_jitted_dot_with_a_closed_over_constant_matrix_is_exact():
    x = jnp.asarray(np.random.default_rng(0).integers(-4, 5, size=(2000, 64)), jnp.float32)
    for value in (0.0, 1e-3, 1.0):
        w = jnp.full((64, 8), value)
        expected = float(np.mean((np.asarray(x, np.float64) @ np.full((64, 8), value)) ** 2))
        for _ in range(3):  # each jax.jit of a new lambda compiles again; the fault differed between compilations
            got = float(jax.jit(lambda x: jnp.mean((x @ w) ** 2))(x))
            assert np.isclose(got, expected, rtol=1e-5, atol=1e-6), (value, got, expected)
