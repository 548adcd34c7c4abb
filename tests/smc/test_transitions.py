"""The controlled Langevin transition: its weight is the formula written out, its draws use it, it is differentiable.

Exact checks (no statistics): ``langevin_log_increment`` against the Gaussian log
densities of ``F`` and ``B`` written out here with ``jax.scipy.stats.norm``, on an
affine (geometric) and a non-affine path, with a control and a time-dependent step
size; the transition's increments against the recomputed ones; its gradient in the
control's parameter against central finite differences. That ``E[w] = Z_{t'}/Z_t``
is tested through SMC in ``test_annealing.py``.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.scipy.stats import norm

from jaxsamp.core.errors import InputError
from jaxsamp.core.target import AnnealingPath
from jaxsamp.smc import langevin_log_increment, langevin_transition

from _paths import SquaredTime, gaussian_path

SHIFT = jnp.array([0.3, -0.7])


def _control(theta):
    """An affine control with a time-dependent offset: ``u(x, t) = theta x + t SHIFT``."""
    return lambda x, t: theta * x + t * SHIFT


def _step_size(t):
    return 0.05 * (1.0 + t)


def _explicit_log_increment(path, x, x_next, t, t_next, control):
    """``log pi_t'(x') + log B(x | x') - log pi_t(x) - log F(x' | x)``, each Gaussian written out."""
    h = _step_size(t)
    score = jax.grad(path.log_prob)
    mean_F = x + h * (score(x, t) + control(x, t))
    mean_B = x_next + h * (score(x_next, t) - control(x_next, t_next))
    log_F = norm.logpdf(x_next, mean_F, jnp.sqrt(2.0 * h)).sum()
    log_B = norm.logpdf(x, mean_B, jnp.sqrt(2.0 * h)).sum()
    return path.log_prob(x_next, t_next) + log_B - path.log_prob(x, t) - log_F


@pytest.mark.parametrize("path_kind", ["affine", "not_affine"])
@pytest.mark.parametrize("with_control", [False, True], ids=["u0", "affine_u"])
def test_log_increment_is_the_gaussian_kernels_formula(path_kind, with_control):
    path = gaussian_path() if path_kind == "affine" else SquaredTime(gaussian_path())
    control = _control(0.4) if with_control else None
    explicit_control = control or (lambda x, t: jnp.zeros_like(x))
    keys = jax.random.split(jax.random.key(0), 2)
    x = jax.random.normal(keys[0], (16, 2))
    x_next = x + 0.3 * jax.random.normal(keys[1], (16, 2))
    t, t_next = jnp.float32(0.3), jnp.float32(0.45)
    got = jax.vmap(lambda a, b: langevin_log_increment(path, a, b, t, t_next, _step_size, control))(x, x_next)
    want = jax.vmap(lambda a, b: _explicit_log_increment(path, a, b, t, t_next, explicit_control))(x, x_next)
    assert np.ptp(np.asarray(want)) > 1.0  # the pairs are far from the forward mean: large, varied terms
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("path_kind", ["affine", "not_affine"])
def test_transition_draws_from_F_and_returns_its_exact_weights(path_kind):
    """The transition's increments are ``langevin_log_increment`` of the pairs it drew; its count is 2n or 3n."""
    path = gaussian_path() if path_kind == "affine" else SquaredTime(gaussian_path())
    control = _control(-0.2)
    transition = langevin_transition(path, _step_size, control=control)
    x = jax.random.normal(jax.random.key(1), (4096, 2))
    t, t_next = jnp.float32(0.5), jnp.float32(0.6)
    x_next, log_increment, evals = jax.jit(transition)(jax.random.key(2), x, t, t_next)
    assert int(evals) == 4096 * (2 if path_kind == "affine" else 3)
    recomputed = jax.vmap(lambda a, b: langevin_log_increment(path, a, b, t, t_next, _step_size, control))(x, x_next)
    np.testing.assert_allclose(np.asarray(log_increment), np.asarray(recomputed), rtol=1e-5, atol=1e-5)
    # x' - mean_F is N(0, 2h I): 4096 x 2 standardised draws, mean within 5 standard errors of 0, variance of 1
    h = _step_size(t)
    mean_F = x + h * (jax.vmap(jax.grad(path.log_prob), in_axes=(0, None))(x, t) + jax.vmap(control, (0, None))(x, t))
    noise = np.asarray((x_next - mean_F) / jnp.sqrt(2.0 * h)).ravel()
    assert abs(noise.mean()) < 5 / np.sqrt(noise.size) and abs(noise.var() - 1.0) < 5 * np.sqrt(2 / noise.size)


def test_transition_is_differentiable_in_the_control_parameters():
    """d/dtheta of the mean log increment (fixed key: reparameterised draws) matches central differences."""
    path = gaussian_path()
    x = jax.random.normal(jax.random.key(3), (256, 2))
    t, t_next = jnp.float32(0.2), jnp.float32(0.3)

    def mean_log_increment(theta):
        transition = langevin_transition(path, 0.05, control=_control(theta))
        return jnp.mean(transition(jax.random.key(4), x, t, t_next)[1])

    theta, eps = 0.3, 1e-2
    grad = float(jax.grad(mean_log_increment)(theta))
    central = float((mean_log_increment(theta + eps) - mean_log_increment(theta - eps)) / (2 * eps))
    assert abs(grad) > 1e-2
    np.testing.assert_allclose(grad, central, rtol=2e-2)


class _SplitStatePath(AnnealingPath):
    """``inner`` on states given as ``{"a": x[:1], "b": x[1:]}``: a PyTree per particle."""

    def __init__(self, inner):
        self.inner, self.base, self.target, self.log_Z0 = inner, inner.base, inner.target, inner.log_Z0

    def log_prob(self, x, t):
        return self.inner.log_prob(jnp.concatenate([x["a"], x["b"]]), t)

    def dlog_prob_dt(self, x, t):
        return self.inner.dlog_prob_dt(jnp.concatenate([x["a"], x["b"]]), t)


def test_pytree_positions():
    """Positions may be any PyTree per particle: the move and weight are those of the flattened state."""
    path = gaussian_path()
    tree_path = _SplitStatePath(path)
    x = jax.random.normal(jax.random.key(5), (8, 2))
    tree = {"a": x[:, :1], "b": x[:, 1:]}
    t, t_next = jnp.float32(0.1), jnp.float32(0.2)
    tree_next, tree_increment, evals = langevin_transition(tree_path, 0.1)(jax.random.key(6), tree, t, t_next)
    flat_next, flat_increment, _ = langevin_transition(path, 0.1)(jax.random.key(6), x, t, t_next)
    np.testing.assert_allclose(np.concatenate([tree_next["a"], tree_next["b"]], 1), np.asarray(flat_next), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(tree_increment), np.asarray(flat_increment), rtol=1e-5, atol=1e-5)
    assert int(evals) == 8 * 2


def test_step_size_must_be_positive():
    with pytest.raises(InputError, match="step_size"):
        langevin_transition(gaussian_path(), 0.0)
