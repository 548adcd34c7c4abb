"""Block Langevin: the exact Gaussian covariance recursion C <- A C A^T + 2h U_i (5-sigma z-tests)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _moment_checks import assert_iid_moments

import jaxsamp.mcmc  # noqa: F401  (registers)
from jaxsamp.core import ensemble, run, shard
from jaxsamp.core.registry import SAMPLERS
from jaxsamp.mcmc.block_langevin import block_langevin, block_ula_moments, contiguous_blocks
from jaxsamp.mcmc.ula import ula_gaussian_stationary_cov
from jaxsamp.targets import Gaussian

COV = np.array(
    [[1.0, 0.5, 0.2, 0.0], [0.5, 1.5, 0.3, 0.1], [0.2, 0.3, 0.8, -0.2], [0.0, 0.1, -0.2, 1.2]]
)
PREC = np.linalg.inv(COV)
BLOCKS = [np.array([0, 2]), np.array([1, 3])]


def test_one_full_block_is_ula_and_converges_to_its_stationary_covariance():
    h = 0.1
    _, covs = block_ula_moments(PREC, np.ones(4), np.eye(4), h, [np.arange(4)], 10, "cyclic", 100)
    np.testing.assert_allclose(covs[-1], ula_gaussian_stationary_cov(PREC, h), rtol=1e-6)


@pytest.mark.parametrize("order", ["cyclic", "random"])
def test_replica_moments_follow_the_exact_block_recursion(order):
    # 4000 replicas from N(m0, I), 5 block updates of K = 10 ULA steps (h = 0.05) on blocks
    # {0,2}, {1,3}: the empirical mean and covariance match the exact recursion (for the random
    # order, the mixture over block sequences). Budget: 5 sigma.
    h, k, updates, n = 0.05, 10, 5, 4000
    m0 = np.array([2.0, -1.0, 1.0, 0.5])
    kernel = shard(ensemble(block_langevin(Gaussian(np.zeros(4), COV).log_prob, h, BLOCKS, k, order)))
    x0 = m0 + jax.random.normal(jax.random.key(0), (n, 4))
    state, infos = run(kernel.step, kernel.init(x0), jax.random.key(1), updates, trace=lambda s, i: i.block, progress=False)
    means, covs = block_ula_moments(PREC, m0, np.eye(4), h, BLOCKS, k, order, updates)
    assert_iid_moments(state.position, means[-1], covs[-1])
    blocks = np.asarray(infos)
    if order == "cyclic":
        np.testing.assert_array_equal(blocks, np.arange(updates)[:, None] % 2 * np.ones((1, n), int))
    else:
        assert 0.3 < blocks.mean() < 0.7  # both blocks are drawn
    # the recursion's answer is far from the start, so the test has power
    assert np.max(np.abs(covs[-1] - np.eye(4))) > 0.1


def test_registered_block_langevin_splits_contiguously():
    assert [b.tolist() for b in contiguous_blocks(5, 2)] == [[0, 1, 2], [3, 4]]
    kernel = SAMPLERS.get("block_langevin", Gaussian(np.zeros(5), np.eye(5)), step_size=0.05, num_blocks=2, order="cyclic")
    state = kernel.init(jnp.zeros(5))
    state, info = kernel.step(jax.random.key(2), state)
    moved = np.asarray(state.position) != 0.0
    np.testing.assert_array_equal(moved, [True, True, True, False, False])
