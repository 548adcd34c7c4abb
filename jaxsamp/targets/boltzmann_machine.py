"""A fully visible Boltzmann machine on +-1 spins, fitted to data by maximum pseudo-likelihood.

The classical baseline for binary data (Ackley, Hinton & Sejnowski 1985): an
Ising model with arbitrary couplings and fields on ``d`` spins,

    log p(x) = 1/2 x^T W x + b . x - log Z,      W symmetric, zero diagonal,

fitted by maximising Besag's (1975) pseudo-likelihood
``sum_n sum_i log p(x_i^n | x_-i^n)``, where every conditional is a logistic
regression, ``p(x_i | x_-i) = sigmoid(2 x_i (W_i . x + b_i))``. The fit is a
full-batch optax optimisation (Adam) of ``(W, b)`` with an optional L2 penalty
on ``W``.

The model gives the log-probability change of every single-spin flip in one
call (:meth:`FullyVisibleBoltzmannMachine.flip_log_ratios`,
``log p(flip_i x) - log p(x) = -2 x_i (W_i . x + b_i)``), the contract of the
discrete kernels of :mod:`jaxsamp.mcmc.discrete`, so Gibbs sampling (the heat
bath) is ``discrete.heat_bath(model.flip_log_ratios)``. States may have any
event shape (8x8 images); they are flattened for the couplings.
"""

from __future__ import annotations

import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxsamp.core.errors import InputError
from jaxsamp.core.target import SPIN, Target
from jaxsamp.core.validation import check_array


class FullyVisibleBoltzmannMachine(Target):
    """``log p(x) = 1/2 x^T W x + b . x`` (unnormalised) on +-1 spins of ``event_shape``.

    Parameters
    ----------
    couplings : array (d, d)
        ``W``; symmetrised, and its diagonal set to 0.
    fields : array (d,)
        ``b``.
    event_shape : tuple, optional
        Shape of one state (default ``(d,)``); ``prod(event_shape) = d``.
    """

    domain = SPIN

    def __init__(self, couplings, fields, event_shape: tuple | None = None):
        W = check_array("couplings", couplings, ndim=2)
        b = check_array("fields", fields, ndim=1)
        d = b.shape[0]
        if W.shape != (d, d):
            raise InputError(f"couplings must have shape ({d}, {d}) for {d} fields, got {W.shape}")
        W = 0.5 * (W + W.T)
        np.fill_diagonal(W, 0.0)
        self.couplings = jnp.asarray(W, jnp.float32)
        self.fields = jnp.asarray(b, jnp.float32)
        self.event_shape = (d,) if event_shape is None else tuple(int(n) for n in event_shape)
        if math.prod(self.event_shape) != d:
            raise InputError(f"event_shape {self.event_shape} does not hold {d} spins")
        self.name = f"fvbm_d{d}"

    def _local_fields(self, x):
        flat = x.reshape(-1).astype(jnp.float32)
        return flat, self.couplings @ flat + self.fields

    def _log_prob(self, x):
        flat, _ = self._local_fields(x)
        return 0.5 * flat @ self.couplings @ flat + self.fields @ flat

    def flip_log_ratios(self, x: jax.Array) -> jax.Array:
        """``log p(flip_i x) - log p(x) = -2 x_i (W_i . x + b_i)`` for every spin, shape ``x.shape``. One evaluation."""
        chex.assert_shape(x, self.event_shape)
        flat, local = self._local_fields(x)
        return (-2.0 * flat * local).reshape(x.shape)


def pseudo_log_likelihood(couplings: jax.Array, fields: jax.Array, data: jax.Array) -> jax.Array:
    """Mean over data and spins of ``log p(x_i | x_-i) = log sigmoid(2 x_i (W_i . x + b_i))``.

    Parameters
    ----------
    couplings : (d, d), symmetric with zero diagonal
    fields : (d,)
    data : (n, d) +-1

    Returns
    -------
    scalar
    """
    local = data @ couplings + fields
    return jnp.mean(jax.nn.log_sigmoid(2.0 * data * local))


def fit_pseudo_likelihood(
    data,
    num_steps: int = 2000,
    learning_rate: float = 0.02,
    l2: float = 1e-4,
    key=None,
) -> tuple[FullyVisibleBoltzmannMachine, dict]:
    """Fit a fully visible Boltzmann machine to +-1 ``data`` by maximum pseudo-likelihood (Besag 1975).

    ``W = (A + A^T) / 2`` with the diagonal masked, ``b`` free; Adam on
    ``-PL(W, b) + l2 ||W||^2 / 2`` over the full data set, starting from
    ``W = 0`` and ``b`` at the independent-bits optimum ``atanh(mean x)``.

    Parameters
    ----------
    data : array ``(n, *event_shape)`` of +-1
    num_steps : int
        Adam steps (full batch).
    learning_rate, l2 : float
    key : unused (the fit is deterministic); accepted for a uniform call signature.

    Returns
    -------
    model : FullyVisibleBoltzmannMachine
        With the data's event shape.
    info : dict
        ``pseudo_log_likelihood`` per spin at the start (independent bits) and at the end.
    """
    arr = check_array("data", data)
    if arr.ndim < 2 or arr.shape[0] < 2:
        raise InputError(f"data must be (n >= 2, *event_shape), got shape {arr.shape}")
    if not np.all(np.abs(arr) == 1):
        raise InputError("data must hold +-1 spins")
    event_shape = arr.shape[1:]
    x = jnp.asarray(arr.reshape(arr.shape[0], -1), jnp.float32)
    d = x.shape[1]
    mask = 1.0 - jnp.eye(d)
    mean = jnp.clip(jnp.mean(x, axis=0), -0.999, 0.999)
    params = {"A": jnp.zeros((d, d)), "b": jnp.arctanh(mean)}

    def couplings(p):
        return 0.5 * (p["A"] + p["A"].T) * mask

    def loss(p):
        W = couplings(p)
        return -pseudo_log_likelihood(W, p["b"], x) + 0.5 * l2 * jnp.sum(W**2)

    optimizer = optax.adam(learning_rate)

    @jax.jit
    def fit(p):
        def step(carry, _):
            p, opt = carry
            grads = jax.grad(loss)(p)
            updates, opt = optimizer.update(grads, opt)
            return (optax.apply_updates(p, updates), opt), None

        (p, _), _ = jax.lax.scan(step, (p, optimizer.init(p)), None, length=num_steps)
        return p

    start = float(pseudo_log_likelihood(couplings(params), params["b"], x))
    params = fit(params)
    W = couplings(params)
    info = {
        "pseudo_log_likelihood_start": start,
        "pseudo_log_likelihood": float(pseudo_log_likelihood(W, params["b"], x)),
    }
    return FullyVisibleBoltzmannMachine(np.asarray(W), np.asarray(params["b"]), event_shape), info
