"""Entropic mode coverage (EMC) of samples of a mixture.

Beyond-ELBOs (Blessing et al. 2024, Sec. 4 and ``targets/gmm40.py::entropy``):
assign every sample to its most likely component, take the empirical frequencies
``p_k`` over the ``K`` components and report the normalised entropy
``EMC = -sum_k p_k log p_k / log K`` in ``[0, 1]``: 1 when all modes are visited
equally, 0 when one mode holds every sample.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from jaxsamp.core.errors import InputError


def entropic_mode_coverage(assignments: jax.Array, num_modes: int, log_w: jax.Array | None = None) -> jax.Array:
    """Normalised entropy of the mode frequencies.

    Parameters
    ----------
    assignments : int array (n,)
        Component of each sample, e.g. ``GaussianMixture.assign_modes(x)``.
    num_modes : int
        ``K >= 2``.
    log_w : array (n,), optional
        Importance log-weights: the frequencies become self-normalised weighted ones.

    Returns
    -------
    scalar
        ``-sum_k p_k log p_k / log K`` with ``0 log 0 = 0``.
    """
    chex.assert_rank(assignments, 1)
    if num_modes < 2:
        raise InputError("entropic mode coverage needs at least two modes")
    w = jnp.ones(assignments.shape[0]) if log_w is None else jax.nn.softmax(log_w)
    p = jnp.zeros(num_modes, w.dtype).at[assignments].add(w)
    p = p / jnp.sum(p)
    return -jnp.sum(jax.scipy.special.xlogy(p, p)) / jnp.log(num_modes)
