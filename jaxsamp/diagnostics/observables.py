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

:func:`lattice_observables` gathers what LEAPS reports of a lattice target's
(weighted) samples -- the histogram of the order parameter, its mean absolute
value and ``G(r)`` -- and :func:`observable_errors` scores them against a
reference: the exact values (enumeration, or the transfer matrix's ``P(m)``:
:func:`exact_magnetization_observables`) or long Glauber chains
(:func:`jaxsamp.mcmc.lattice_reference.reference_observables`).
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.targets.lattice_exact import ExactReferenceUnavailable


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


# --------------------------------------------------------------------------
# the observables of a lattice target, and their errors against a reference
# --------------------------------------------------------------------------

#: bins of the order parameter's histogram (LEAPS' ``ising_magnetization_and_corr`` notebook uses 20)
NUM_BINS = 20


def order_parameter_axis(target) -> tuple[tuple[float, float], str]:
    """Histogram range and label of ``target``'s order parameter: ``m`` on ``[-1, 1]`` (Ising), ``|M|`` on ``[0, 1]`` (Potts)."""
    return ((-1.0, 1.0), "m") if target.domain.kind == "spin" else ((0.0, 1.0), "|M|")


def order_parameter(target, states: jax.Array) -> jax.Array:
    """Per-configuration order parameter of ``states`` ``(n, Lx, Ly)``: :func:`magnetization` ``m`` (Ising) or
    :func:`potts_magnetization` ``|M|`` (Potts, ``q`` categories); shape ``(n,)``."""
    if target.domain.kind == "spin":
        return magnetization(states)
    return potts_magnetization(states, target.domain.num_categories)


def lattice_observables(target, states: jax.Array, log_w: jax.Array | None = None, bins: int = NUM_BINS) -> dict:
    """The observables LEAPS reports (Holderrieth, Albergo & Jaakkola 2025, Sec. 6) of a lattice target's samples.

    Parameters
    ----------
    target : Ising or Potts
        Its ``domain`` says which order parameter (:func:`order_parameter`).
    states : array (n, Lx, Ly)
    log_w : array (n,), optional
        Importance log-weights: every figure is then self-normalised with ``softmax(log_w)``
        (exact probabilities as ``log_w`` make it the exact expectation).
    bins : int

    Returns
    -------
    dict
        ``hist``: the order parameter's density histogram on :func:`order_parameter_axis`'s range
        (``bins`` values); ``abs_order``: the mean of its absolute value, ``<|m|>`` or ``<|M|>``;
        for Ising, ``two_point``: the connected two-point function :func:`connected_two_point`.
    """
    values, (value_range, _) = order_parameter(target, states), order_parameter_axis(target)
    w = None if log_w is None else np.asarray(jax.nn.softmax(log_w), np.float64)
    density, _ = np.histogram(np.asarray(values), bins=bins, range=value_range, weights=w, density=True)
    out = {"hist": density, "abs_order": float(self_normalized_mean(jnp.abs(values), log_w))}
    if target.domain.kind == "spin":
        out["two_point"] = np.asarray(connected_two_point(states, log_w))
    return out


def _exact_magnetization_law(target) -> tuple[np.ndarray, np.ndarray] | None:
    if target.domain.kind != "spin" or not hasattr(target, "exact_magnetization_distribution"):
        return None
    try:
        return target.exact_magnetization_distribution()
    except ExactReferenceUnavailable:
        return None


def exact_magnetization_observables(target, bins: int = NUM_BINS) -> dict | None:
    """``hist`` and ``abs_order`` of :func:`lattice_observables` from an Ising target's exact law of ``m``.

    The law ``P(m)`` is the target's ``exact_magnetization_distribution()`` (transfer
    matrix, lattices up to about ``min(Lx, Ly) = 9``), so these are exact where
    enumeration is out of reach. None for a target without it (Potts, a lattice too
    wide, a spin model that is not Ising).
    """
    law = _exact_magnetization_law(target)
    if law is None:
        return None
    m, p = law
    density, _ = np.histogram(m, bins=bins, range=(-1.0, 1.0), weights=p, density=True)
    return {"hist": density, "abs_order": float(np.sum(np.abs(m) * p))}


def magnetization_tv(target, states) -> float | None:
    """Total variation between the samples' law of ``m`` and an Ising target's exact ``P(m)``.

    Over the ``N + 1`` values ``m`` takes (no binning), the samples ``states`` ``(n, *event_shape)``
    of +-1 spins counted without weights. None for a target without an exact ``P(m)``
    (:func:`exact_magnetization_observables`).
    """
    law = _exact_magnetization_law(target)
    if law is None:
        return None
    flat = np.asarray(states).reshape(len(states), -1)
    ups = np.sum(flat > 0, axis=1)
    p_hat = np.bincount(ups, minlength=flat.shape[1] + 1) / len(flat)
    return 0.5 * float(np.abs(p_hat - law[1]).sum())


def observable_errors(target, got: dict, reference: dict) -> dict[str, float]:
    """The errors of :func:`lattice_observables` ``got`` against a reference of the same form.

    Returns
    -------
    dict
        ``abs_order`` and ``abs_order_reference``; ``order_hist_tv``, the total variation
        between the two histograms of the order parameter (``0.5 sum |p - q| width``);
        and for Ising ``two_point_max_abs_err``, the largest ``|G(r) - G_ref(r)|``.
    """
    value_range = order_parameter_axis(target)[0]
    width = np.diff(np.linspace(*value_range, len(got["hist"]) + 1))
    out = {
        "abs_order": float(got["abs_order"]),
        "abs_order_reference": float(reference["abs_order"]),
        "order_hist_tv": float(0.5 * np.sum(np.abs(got["hist"] - reference["hist"]) * width)),
    }
    if "two_point" in got:
        out["two_point_max_abs_err"] = float(np.max(np.abs(got["two_point"] - reference["two_point"])))
    return out
