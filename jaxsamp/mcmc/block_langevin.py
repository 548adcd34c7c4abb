"""Block Langevin Monte Carlo: K ULA steps on one block of coordinates at a time.

Burns, Hou & Huang, "Provable Convergence Bounds for Hybrid Dynamical Sampling
and Optimization", ICLR 2025 (arXiv 2410.06397), Sec. 3 (RBLD / CBLD and their
discretisations RBLMC / CBLMC); code ``ur-acal/BlockLangevin``
``block_langevin/bld.py``; digest ``research/methods.md`` Sec. 4.

For ``pi ~ e^{-beta f}`` and blocks ``B_1..B_b`` partitioning the coordinates,
an update picks block ``i`` (uniformly at random, RBLMC; or ``k mod b``,
CBLMC) and repeats, the other coordinates frozen::

    x_B <- x_B - eta grad_B f(x) + sqrt(2 eta / beta) xi_B        (K times)

which is ULA on the conditional ``log pi(x_B | x_-B)`` with step
``h = eta / beta`` (``grad log pi = -beta grad f``). It is built, without new
sampler code, as :func:`jaxsamp.core.on_blocks` around
``thin(ula(conditional, h), K)``. On a Gaussian target with precision ``P`` and
``beta = 1`` the law stays Gaussian, ``C <- A C A^T + 2 h U_i`` with
``A = I - h U_i P`` and ``U_i`` the projector on block ``i``
(:func:`block_ula_moments` gives the exact mean and covariance, also for the
random order, as the mixture over block sequences).
"""

from __future__ import annotations

from typing import Annotated, Callable, Sequence

import numpy as np

from jaxsamp.core.combinators import on_blocks, thin
from jaxsamp.core.compiled import cached_kernel
from jaxsamp.core.errors import InputError
from jaxsamp.core.protocols import Kernel
from jaxsamp.core.registry import SAMPLERS
from jaxsamp.core.validation import OneOf, PositiveFloat, PositiveInt
from jaxsamp.mcmc.ula import ula


def contiguous_blocks(dim: int, num_blocks: int) -> list[np.ndarray]:
    """Split ``range(dim)`` into ``num_blocks`` contiguous blocks of near-equal size."""
    if not 1 <= num_blocks <= dim:
        raise InputError(f"num_blocks must lie in [1, {dim}], got {num_blocks}")
    return [b.astype(np.int32) for b in np.array_split(np.arange(dim), num_blocks)]


def block_langevin(
    logdensity_fn: Callable,
    step_size: float,
    blocks: Sequence[Sequence[int]],
    steps_per_block: int = 10,
    order: str = "random",
) -> Kernel:
    """RBLMC (``order="random"``) or CBLMC (``order="cyclic"``) on a flat position of shape ``(d,)``.

    Parameters
    ----------
    logdensity_fn : callable
        ``log pi`` of a flat position.
    step_size : float
        ULA step ``h = eta / beta`` on the block conditional.
    blocks : sequence of index sequences
        A partition of ``range(d)``.
    steps_per_block : int
        ``K`` ULA steps per block update (the repository uses 10).
    order : {"random", "cyclic"}

    Returns
    -------
    Kernel
        One ``step`` is one block update (``K`` ULA steps); states are
        :class:`~jaxsamp.core.BlockState`.
    """
    if steps_per_block < 1:
        raise InputError(f"steps_per_block must be >= 1, got {steps_per_block}")
    return on_blocks(lambda conditional: thin(ula(conditional, step_size), steps_per_block), logdensity_fn, blocks, order)


def block_ula_moments(precision, mean0, cov0, step_size: float, blocks, steps_per_block: int, order: str, num_updates: int):
    """Exact mean and covariance of block ULA on ``N(0, P^-1)`` after each of ``num_updates`` block updates.

    Cyclic order: the Gaussian recursion ``m <- A m``, ``C <- A C A^T + 2h U_i``
    (applied ``K`` times per update, block ``k mod b``). Random order: the law is
    a mixture over block sequences, whose first two moments follow the averaged
    linear recursions ``m <- mean_i A_i^K m`` and ``S <- mean_i T_i(S)`` on the
    raw second moment ``S = E[x x^T]``. Computed in float64 with numpy.

    Returns
    -------
    means : array (num_updates + 1, d)
    covs : array (num_updates + 1, d, d)
    """
    p = np.asarray(precision, dtype=np.float64)
    d = p.shape[0]
    projectors = []
    for b in blocks:
        u = np.zeros((d, d))
        u[np.asarray(b), np.asarray(b)] = 1.0
        projectors.append(u)

    def update(m, s, u):
        a = np.eye(d) - step_size * u @ p
        for _ in range(steps_per_block):
            m, s = a @ m, a @ s @ a.T + 2.0 * step_size * u
        return m, s

    m = np.asarray(mean0, dtype=np.float64)
    s = np.asarray(cov0, dtype=np.float64) + np.outer(m, m)
    means, covs = [m], [s - np.outer(m, m)]
    for k in range(num_updates):
        if order == "cyclic":
            m, s = update(m, s, projectors[k % len(projectors)])
        else:
            outs = [update(m, s, u) for u in projectors]
            m, s = np.mean([o[0] for o in outs], axis=0), np.mean([o[1] for o in outs], axis=0)
        means.append(m)
        covs.append(s - np.outer(m, m))
    return np.stack(means), np.stack(covs)


@SAMPLERS.register("block_langevin")
def block_langevin_sampler(
    target,
    step_size: PositiveFloat = 0.01,
    num_blocks: PositiveInt = 2,
    steps_per_block: PositiveInt = 10,
    order: Annotated[str, OneOf(("random", "cyclic"))] = "random",
) -> Kernel:
    """Block Langevin (Burns et al. 2025): K ULA steps on one contiguous block, random or cyclic order."""
    if len(target.event_shape) != 1:
        raise InputError(f"block_langevin needs a flat event shape (d,), got {target.event_shape}")
    return cached_kernel(_contiguous_block_langevin, target.log_density, dim=target.event_shape[0],
                         num_blocks=num_blocks, step_size=step_size, steps_per_block=steps_per_block, order=order)


def _contiguous_block_langevin(logdensity_fn: Callable, *, dim: int, num_blocks: int, step_size: float,
                               steps_per_block: int, order: str) -> Kernel:
    """:func:`block_langevin` on :func:`contiguous_blocks` ``(dim, num_blocks)``: the registered kernel, made per trace."""
    return block_langevin(logdensity_fn, step_size, contiguous_blocks(dim, num_blocks), steps_per_block, order)
