"""The far, badly scaled Gaussian of the warm-up tests, shared with their child process.

Centred at 50 in 20 dimensions with standard deviations from 1e-2 to 1e2.
"""

import jax
import jax.numpy as jnp
import numpy as np

DIM = 20
SCALES = np.logspace(-2, 2, DIM).astype(np.float32)
CENTRE = 50.0


def far_gaussian(x):
    return -0.5 * jnp.sum(((x - CENTRE) / SCALES) ** 2)


def users_points():
    """The negative control's starting points: N(0, I), far from the mode."""
    return jax.random.normal(jax.random.key(3), (8, DIM))
