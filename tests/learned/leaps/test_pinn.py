"""LEAPS' PINN loss and curriculum (:mod:`jaxsamp.learned.leaps.pinn`).

Oracle for the loss: with zero rates the Jarzynski integrand is ``d_t log pi~_t(x)``, whose mean under ``pi_t`` is
``d_t log Z_t``; so with the exact free energy ``F(t) = -log Z_t`` (enumeration of a 3x3 lattice) the residual has
mean zero under ``pi_t`` at every ``t``, and a wrong free energy moves that mean by exactly its error in ``d_t F``.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsamp.learned.leaps.pinn import curriculum_grid, curriculum_schedule, free_energy_log_Z, pinn_residuals
from jaxsamp.targets.lattice import LatticePath, ising, potts


class _Exact:
    """A stand-in for a trained model: zero rates and the free energy ``-log Z_t + shift * t``, ``log Z_t`` summed
    over every state of the lattice (differentiable in ``t``)."""

    def __init__(self, path, states, shift=0.0):
        self.path, self.states, self.shift = path, jnp.asarray(states), shift

    def rate_fn(self, params):
        q = self.path.target.num_states_per_site
        return lambda x, t: jnp.zeros(x.shape if self.path.target.domain.kind == "spin" else (*x.shape, q))

    def free_energy_fn(self, params):
        def free_energy(t):
            log_Z = jax.nn.logsumexp(jax.vmap(lambda x: self.path.log_prob(x, t))(self.states))
            return -(log_Z - self.path.log_Z0) + self.shift * t  # F(0) = 0

        return free_energy


@pytest.mark.parametrize("model", ["ising", "potts"])
@pytest.mark.parametrize("t", [0.0, 0.37, 1.0])
def test_the_residual_has_mean_zero_under_pi_t_at_the_exact_free_energy(model, t):
    path = LatticePath(ising(3, 0.4407) if model == "ising" else potts(3, 1.0, q=3))
    states, _ = path.target.enumerate_states()
    times = jnp.full(len(states), t, jnp.float32)
    pi_t = jax.nn.softmax(jax.vmap(path.log_prob)(jnp.asarray(states), times))

    exact = pinn_residuals(_Exact(path, states), None, path, jnp.asarray(states), times)
    assert float(jnp.std(exact)) > 0.1  # per state the residual is not zero: only its mean is
    assert abs(float(jnp.sum(pi_t * exact))) < 1e-4
    shifted = pinn_residuals(_Exact(path, states, shift=0.25), None, path, jnp.asarray(states), times)
    np.testing.assert_allclose(float(jnp.sum(pi_t * shifted)), 0.25, atol=1e-4)


def test_the_free_energy_estimate_of_log_z_is_exact_at_the_exact_free_energy():
    path = LatticePath(ising(3, 0.4407))
    states, _ = path.target.enumerate_states()
    estimate = free_energy_log_Z(_Exact(path, states), None, path)
    np.testing.assert_allclose(float(estimate), path.target.exact_log_Z(), rtol=1e-5)


def test_curriculum_schedule_grows_with_linearly_increasing_repeats():
    ks = curriculum_schedule(1, 10, 200, warm_up=5)
    assert len(ks) == 206 and ks[0] == 1 and ks[-1] == 10
    assert np.all(np.diff(ks) >= 0) and set(ks.tolist()) == set(range(1, 11))
    counts = np.bincount(ks[5:-1])[1:]
    assert counts.sum() == 200 and counts[-1] > 3 * counts[0]
    assert np.all(np.diff(counts) >= -1)  # rounding may shave one off


def test_curriculum_grid_is_sorted_and_padded():
    ts = np.asarray(curriculum_grid(jax.random.key(0), jnp.int32(4), 10))
    assert ts.shape == (11,) and ts[0] == 0.0
    np.testing.assert_allclose(ts[4:], 0.4, rtol=1e-6)
    assert np.all(np.diff(ts) >= 0) and np.all(ts[1:4] < 0.4)
