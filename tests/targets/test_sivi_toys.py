"""The SIVI toy targets: normalised (quadrature) and their exact samples have the closed-form moments."""

import jax
import numpy as np
import pytest

import jaxsamp
from jaxsamp.diagnostics.grid_divergences import grid_points

# name: (box holding all but ~1e-6 of the mass, exact mean, exact covariance)
MOMENTS = {
    # x1 = y1, x2 = y2 - y1^2 - 1: E x2 = -2, Var x2 = 1 + 2 = 3, Cov(x1, x2) = 0.9
    "banana": ((-6.0, 6.0, -40.0, 6.0), [0.0, -2.0], [[1.0, 0.9], [0.9, 3.0]]),
    "x_shaped": ((-9.0, 9.0, -9.0, 9.0), [0.0, 0.0], [[2.0, 0.0], [0.0, 2.0]]),
    "multimodal": ((-9.0, 9.0, -7.0, 7.0), [0.0, 0.0], [[5.0, 0.0], [0.0, 1.0]]),
}


@pytest.mark.parametrize("name", sorted(MOMENTS))
def test_density_is_normalised_and_samples_have_the_exact_moments(name):
    """Mass by a 400^2 midpoint rule within 1e-3 of 1 (log Z = 0); the mean of 100 000 exact samples
    within 5 standard errors of the closed form, and each covariance entry within 5 % of its scale."""
    target = jaxsamp.targets.get(name)
    box, mean, cov = MOMENTS[name]
    points, area = grid_points(box, 400)
    mass = float(np.exp(np.asarray(jax.jit(jax.vmap(target.log_prob))(points), np.float64)).sum() * area)
    assert target.log_Z == 0.0 and mass == pytest.approx(1.0, abs=1e-3)
    x = np.asarray(target.sample(jax.random.key(0), 100_000), np.float64)
    cov = np.asarray(cov)
    se = np.sqrt(np.diag(cov) / len(x))
    assert np.all(np.abs(x.mean(0) - mean) < 5 * se)
    scale = np.sqrt(np.outer(np.diag(cov), np.diag(cov)))
    assert np.all(np.abs(np.cov(x.T) - cov) < 0.05 * scale)
