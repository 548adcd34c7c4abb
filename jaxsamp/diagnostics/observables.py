"""Physical observables of lattice models, from plain or importance-weighted samples.

The observables of LEAPS (Holderrieth, Albergo & Jaakkola 2025, Sec. 6 and the
``ising_magnetization_and_corr`` notebook): for the Ising model the magnetisation
``m = L^-2 sum_i s_i``, ``<|m|>`` and the histogram of ``m``, and the connected
two-point function ``G(r)``; for the q-state Potts model ``|M|`` with
``M = N^-1 sum_i exp(2 pi i sigma_i / q)``.

States follow the lattice-target contract: Ising ``(n, L, L)`` arrays of +-1, Potts
``(n, L, L)`` integer arrays in ``{0..q-1}``. Every average takes optional
importance log-weights and is then the self-normalised estimate
``sum_i w_i f(x_i) / sum_i w_i`` (``w = softmax(log_w)``).
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp


def self_normalized_mean(values: jax.Array, log_w: jax.Array | None = None) -> jax.Array:
    """``sum_i w_i f_i / sum_i w_i`` over the leading axis (the plain mean without weights).

    Parameters
    ----------
    values : array (n, ...)
    log_w : array (n,), optional

    Returns
    -------
    array (...)
    """
    if log_w is None:
        return jnp.mean(values, axis=0)
    chex.assert_rank(log_w, 1)
    chex.assert_axis_dimension(values, 0, log_w.shape[0])
    w = jax.nn.softmax(log_w)
    return jnp.tensordot(w, values, axes=1)


def _lattice(states: jax.Array) -> jax.Array:
    chex.assert_rank(states, 3)
    return states


def magnetization(states: jax.Array) -> jax.Array:
    """Ising magnetisation per configuration, ``m = L^-2 sum_i s_i``; shape (n,)."""
    return jnp.mean(_lattice(states).astype(jnp.float32), axis=(-1, -2))


def mean_abs_magnetization(states: jax.Array, log_w: jax.Array | None = None) -> jax.Array:
    """``<|m|>`` (self-normalised when ``log_w`` is given)."""
    return self_normalized_mean(jnp.abs(magnetization(states)), log_w)


def magnetization_histogram(
    states: jax.Array, log_w: jax.Array | None = None, bins: int = 20
) -> tuple[jax.Array, jax.Array]:
    """Density histogram of ``m`` on ``[-1, 1]`` (LEAPS uses 20 bins).

    Returns
    -------
    density : array (bins,)
        Integrates to 1 over the bin widths; weighted by ``softmax(log_w)`` when given.
    edges : array (bins + 1,)
    """
    m = magnetization(states)
    w = None if log_w is None else jax.nn.softmax(log_w)
    return jnp.histogram(m, bins=bins, range=(-1.0, 1.0), weights=w, density=True)


def connected_two_point(states: jax.Array, log_w: jax.Array | None = None) -> jax.Array:
    """Connected two-point function ``G(r)``, ``r = 0..L//2``, on the periodic lattice.

    Per configuration, with ``ds = s - mean(s)`` (its own mean subtracted),
    ``C(dx, dy) = N^-1 sum_i ds_i ds_{i + (dx, dy)}``, computed as the FFT
    autocorrelation ``ifft2(|fft2(ds)|^2) / N`` (LEAPS ``ising_magnetization_and_corr``).
    ``G(r)`` averages ``C`` at displacements ``(r, 0)`` and ``(0, r)`` (equal in
    expectation by lattice symmetry; LEAPS reads one axis), then over samples.
    For +-1 spins ``G(0) = 1 - <m^2>``.

    Parameters
    ----------
    states : array (n, L, L)
    log_w : array (n,), optional

    Returns
    -------
    array (min(Lx, Ly) // 2 + 1,)
    """
    s = _lattice(states).astype(jnp.float32)
    size = s.shape[-1] * s.shape[-2]
    ds = s - jnp.mean(s, axis=(-1, -2), keepdims=True)
    f = jnp.fft.fft2(ds)
    corr = jnp.fft.ifft2(f * jnp.conj(f)).real / size  # (n, L, L)
    half = min(s.shape[-2], s.shape[-1]) // 2 + 1
    per_sample = 0.5 * (corr[:, :half, 0] + corr[:, 0, :half])
    return self_normalized_mean(per_sample, log_w)


def potts_magnetization(states: jax.Array, q: int) -> jax.Array:
    """Potts order parameter per configuration, ``|M|`` with ``M = N^-1 sum_i exp(2 pi i sigma_i / q)``; shape (n,)."""
    angle = 2.0 * jnp.pi * _lattice(states).astype(jnp.result_type(float)) / q
    return jnp.hypot(jnp.mean(jnp.cos(angle), axis=(-1, -2)), jnp.mean(jnp.sin(angle), axis=(-1, -2)))


def mean_potts_magnetization(states: jax.Array, q: int, log_w: jax.Array | None = None) -> jax.Array:
    """``<|M|>`` of the q-state Potts model (self-normalised when ``log_w`` is given)."""
    return self_normalized_mean(potts_magnetization(states, q), log_w)
