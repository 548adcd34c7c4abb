"""MCMC convergence diagnostics through ``blackjax.diagnostics``, and ArviZ export.

The statistics are blackjax's (not re-implemented): the multi-chain ESS of
Geyer / Stan (``effective_sample_size``) and the rank-normalised split-R-hat of
Vehtari et al. (2021) (``rhat``). The functions accept a whole PyTree trace as
returned by :func:`jaxsamp.core.run` with an ``ensemble`` kernel, whose leaves have
shape ``(num_steps, num_chains, ...)``, hence the default axes.
"""

from __future__ import annotations

from typing import Any

import blackjax.diagnostics as bjd
import jax
import numpy as np


def chain_ess(trace: Any, *, chain_axis: int = 1, sample_axis: int = 0) -> Any:
    """Effective sample size of every leaf of a multi-chain trace.

    ``ESS = M N / tau`` with ``tau = -1 + 2 sum_t rho_t`` summed over Geyer's initial
    positive sequence (blackjax ``effective_sample_size``; Stan reference manual).

    Parameters
    ----------
    trace : PyTree of arrays
        Leaves with a chain axis and a sample axis (at least 2 chains).
    chain_axis, sample_axis : int
        Default: the driver's ``(num_steps, num_chains, ...)`` layout.

    Returns
    -------
    PyTree
        Same structure, each leaf with the two axes removed.
    """
    return jax.tree.map(lambda a: bjd.effective_sample_size(a, chain_axis=chain_axis, sample_axis=sample_axis), trace)


def chain_rhat(trace: Any, *, chain_axis: int = 1, sample_axis: int = 0) -> Any:
    """Rank-normalised split-R-hat of every leaf (blackjax ``rhat``, Vehtari et al. 2021, Sec. 4).

    ``max(R_bulk, R_tail)`` of the split, rank-normalised (and folded) draws; values
    above 1.01 flag non-convergence. Needs at least 2 chains of 4 draws.

    Parameters
    ----------
    trace : PyTree of arrays
    chain_axis, sample_axis : int

    Returns
    -------
    PyTree
    """
    return jax.tree.map(lambda a: bjd.rhat(a, chain_axis=chain_axis, sample_axis=sample_axis), trace)


def to_inference_data(trace: Any, *, chain_axis: int = 1, sample_axis: int = 0):
    """Export a multi-chain trace to an ``arviz.InferenceData`` posterior group.

    Leaves become variables named by their PyTree path (``"x"`` for a bare array),
    transposed to ArviZ's ``(chain, draw, ...)``. ArviZ is optional (the ``arviz``
    extra) and imported here.

    Parameters
    ----------
    trace : PyTree of arrays
    chain_axis, sample_axis : int

    Returns
    -------
    arviz.InferenceData
    """
    import arviz

    leaves = jax.tree_util.tree_flatten_with_path(trace)[0]
    posterior = {}
    for path, leaf in leaves:
        name = jax.tree_util.keystr(path, simple=True, separator=".") or "x"
        posterior[name] = np.moveaxis(np.asarray(leaf), (chain_axis, sample_axis), (0, 1))
    return arviz.from_dict(posterior=posterior)
