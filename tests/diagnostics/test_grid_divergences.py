"""Forward KL by quadrature against the closed-form KL of two Gaussians; grid checks."""

import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import multivariate_normal

from jaxsamp.core.errors import InputError
from jaxsamp.diagnostics.grid_divergences import forward_kl_on_grid, grid_points


def _gaussian_kl(m0, c0, m1, c1):
    inv1 = np.linalg.inv(c1)
    d = m1 - m0
    return 0.5 * (np.trace(inv1 @ c0) + d @ inv1 @ d - 2 + np.log(np.linalg.det(c1) / np.linalg.det(c0)))


def test_forward_kl_of_two_gaussians_matches_the_closed_form():
    """A 400^2 midpoint rule on a box 8 sd wide: the smooth integrand's error is far below 1e-4."""
    m0, c0 = np.array([0.5, -1.0]), np.array([[1.0, 0.6], [0.6, 2.0]])
    m1, c1 = np.array([0.0, 0.0]), np.array([[2.0, -0.3], [-0.3, 1.5]])
    p, q = multivariate_normal(m0, c0), multivariate_normal(m1, c1)
    out = forward_kl_on_grid(lambda z: jnp.asarray(p.logpdf(np.asarray(z))), lambda z: jnp.asarray(q.logpdf(np.asarray(z))),
                             (-8.0, 8.0, -10.0, 8.0), 400)
    assert out["forward_kl"] == pytest.approx(_gaussian_kl(m0, c0, m1, c1), abs=1e-4)
    assert out["p_mass"] == pytest.approx(1.0, abs=1e-5) and out["q_mass"] == pytest.approx(1.0, abs=1e-5)


def test_grid_is_midpoints_and_bad_boxes_are_refused():
    points, area = grid_points((0.0, 1.0, 0.0, 2.0), 2)
    np.testing.assert_allclose(points, [[0.25, 0.5], [0.75, 0.5], [0.25, 1.5], [0.75, 1.5]])
    assert area == pytest.approx(0.5)
    with pytest.raises(InputError, match="x1 > x0"):
        grid_points((1.0, 0.0, 0.0, 1.0), 10)
    with pytest.raises(InputError, match="num_points"):
        grid_points((0.0, 1.0, 0.0, 1.0), 1)
