"""Exact references for the lattice models of :mod:`jaxsamp.targets.lattice` (numpy, float64).

Three independent computations, so each one checks the others:

* **Kaufman's formula** for the zero-field Ising partition function of an
  ``m x n`` torus (Kaufman 1949, "Crystal statistics II", Phys. Rev. 76, 1232;
  written as in Beale 1996, PRL 76, 78), with ``K = beta J > 0``::

      Z = 1/2 (2 sinh 2K)^{mn/2} (Z_1 + Z_2 + Z_3 + Z_4)
      Z_1 = prod_{r=0}^{n-1} 2 cosh(m g_{2r+1} / 2)     Z_2 = prod_{r=0}^{n-1} 2 sinh(m g_{2r+1} / 2)
      Z_3 = prod_{r=0}^{n-1} 2 cosh(m g_{2r}   / 2)     Z_4 = prod_{r=0}^{n-1} 2 sinh(m g_{2r}   / 2)
      cosh g_l = cosh 2K coth 2K - cos(pi l / n)  (l >= 1),     g_0 = 2K + ln tanh K.

  ``g_0`` is negative above the critical temperature (``K < K_c``), so ``Z_4``
  is then negative; the products are kept as (sign, log|.|) pairs.
* **Row-to-row transfer matrices** (Kramers & Wannier 1941):
  ``Z = Tr T^len`` over the ``k^w`` configurations of a row of the narrower
  side ``w``, for any field and coupling sign (Ising) and for Potts; with the
  magnetisation tracked row by row it gives the exact distribution ``P(M)``.
* **Enumeration** of all ``k^N`` states of tiny lattices.

The bond convention is that of :mod:`jaxsamp.targets.lattice`: the ``2 N``
(right, down) periodic bonds, so a side of length 2 carries double bonds; every
function here uses the same :func:`ising_energy` / :func:`potts_energy`.
"""

from __future__ import annotations

import functools

import numpy as np
from scipy.special import logsumexp

from jaxsamp.core.errors import InputError

#: Largest number of states :func:`all_states` enumerates.
MAX_ENUMERATION = 2**20
#: Largest number of row states of a transfer matrix (log Z is a dense eigvalsh of that size).
MAX_TRANSFER_STATES = 4096
#: Largest size (in float64 entries) of the array carried by :func:`ising_magnetization_distribution`.
MAX_MAGNETIZATION_DP = 2**25


class ExactReferenceUnavailable(ValueError):
    """The lattice is too large for the requested exact computation."""


# -- energies (numpy or jax.numpy; batched over leading axes) -------------------
def ising_energy(s, J: float, h: float, xp=np):
    """``-J sum_<ij> s_i s_j - h sum_i s_i`` of states ``s[..., Lx, Ly]`` over the (right, down) periodic bonds."""
    bonds = s * (xp.roll(s, -1, axis=-2) + xp.roll(s, -1, axis=-1))
    return -J * xp.sum(bonds, axis=(-2, -1)) - h * xp.sum(s, axis=(-2, -1))


def potts_energy(x, J: float, xp=np, dtype=None):
    """``-J sum_<ij> 1[x_i = x_j]`` of states ``x[..., Lx, Ly]`` over the (right, down) periodic bonds."""
    dtype = dtype or xp.float64
    same = (x == xp.roll(x, -1, axis=-2)).astype(dtype) + (x == xp.roll(x, -1, axis=-1)).astype(dtype)
    return -J * xp.sum(same, axis=(-2, -1))


# -- enumeration -----------------------------------------------------------------
def all_states(shape: tuple[int, int], k: int) -> np.ndarray:
    """Every configuration in ``{0..k-1}^{Lx x Ly}``, int8, lexicographic, shape ``(k^N, Lx, Ly)``."""
    n_sites = shape[0] * shape[1]
    count = k**n_sites
    if count > MAX_ENUMERATION:
        raise ExactReferenceUnavailable(
            f"enumeration of {k}^{n_sites} states exceeds the limit of {MAX_ENUMERATION} states"
        )
    index = np.arange(count, dtype=np.int64)
    digits = np.empty((count, n_sites), dtype=np.int8)
    for site in range(n_sites - 1, -1, -1):
        index, digits[:, site] = np.divmod(index, k)
    return digits.reshape(count, *shape)


def normalised(log_weights: np.ndarray) -> np.ndarray:
    """``exp(log_weights) / sum exp(log_weights)`` in float64."""
    return np.exp(log_weights - logsumexp(log_weights))


# -- Kaufman ---------------------------------------------------------------------
def _log_prod_2cosh(x: np.ndarray) -> float:
    a = np.abs(x)
    return float(np.sum(a + np.log1p(np.exp(-2.0 * a))))


def _signed_log_prod_2sinh(x: np.ndarray) -> tuple[float, float]:
    """``(sign, log|prod_i 2 sinh x_i|)``; sign 0 when a factor vanishes."""
    if np.any(x == 0):
        return 0.0, -np.inf
    a = np.abs(x)
    return float(np.prod(np.sign(x))), float(np.sum(a + np.log1p(-np.exp(-2.0 * a))))


def kaufman_log_Z(shape: tuple[int, int], beta: float, J: float = 1.0) -> float:
    """Exact zero-field Ising ``log Z`` of an ``m x n`` torus by Kaufman's (1949) formula.

    Parameters
    ----------
    shape : (m, n)
        Lattice sides; the products run over ``n`` and ``m`` is the exponent.
        The result is symmetric in ``(m, n)``.
    beta, J : float
        ``K = beta J`` must be > 0 (the formula's ``ln tanh K``).

    Returns
    -------
    float
        ``log Z``; see the module docstring for the formula (Beale 1996, eq. 2-4).
    """
    m, n = shape
    K = beta * J
    if not K > 0:
        raise InputError(f"Kaufman's formula needs beta J > 0, got {K}")
    c = np.cosh(2 * K) / np.tanh(2 * K)
    l_odd = 2 * np.arange(n) + 1
    l_even = 2 * np.arange(n)
    g_odd = np.arccosh(c - np.cos(np.pi * l_odd / n))
    g_even = np.arccosh(c - np.cos(np.pi * l_even / n))
    g_even[0] = 2 * K + np.log(np.tanh(K))
    terms = [
        (1.0, _log_prod_2cosh(m * g_odd / 2)),
        _signed_log_prod_2sinh(m * g_odd / 2),
        (1.0, _log_prod_2cosh(m * g_even / 2)),
        _signed_log_prod_2sinh(m * g_even / 2),
    ]
    signs = np.array([t[0] for t in terms])
    logs = np.array([t[1] for t in terms])
    keep = signs != 0
    log_sum, sign = logsumexp(logs[keep], b=signs[keep], return_sign=True)
    if sign <= 0:
        raise FloatingPointError("Kaufman's four-term sum is not positive (loss of precision)")
    return float(-np.log(2.0) + 0.5 * m * n * np.log(2 * np.sinh(2 * K)) + log_sum)


# -- transfer matrices -----------------------------------------------------------
def _row_problem(shape, k):
    """Width ``w`` (the narrower side), length and all ``k^w`` row configurations ``(k^w, w)``."""
    w, length = min(shape), max(shape)
    if k**w > MAX_TRANSFER_STATES:
        raise ExactReferenceUnavailable(
            f"a transfer matrix for a {shape[0]}x{shape[1]} lattice has {k}^{w} row states, "
            f"over the limit of {MAX_TRANSFER_STATES}"
        )
    return w, length, all_states((1, w), k)[:, 0, :]


def _ising_rows(shape, J, h):
    w, length, digits = _row_problem(shape, 2)
    rows = 2.0 * digits - 1.0
    e_row = -J * np.sum(rows * np.roll(rows, -1, axis=1), axis=1) - h * np.sum(rows, axis=1)
    e_inter = -J * rows @ rows.T
    return length, rows, e_row, e_inter


def _potts_rows(shape, q, J):
    w, length, rows = _row_problem(shape, q)
    e_row = -J * np.sum(rows == np.roll(rows, -1, axis=1), axis=1)
    e_inter = -J * np.sum(rows[:, None, :] == rows[None, :, :], axis=2)
    return length, rows, e_row, e_inter


def transfer_log_Z(e_row: np.ndarray, e_inter: np.ndarray, beta: float, length: int) -> float:
    """``log Tr T^length`` with ``T_ab = exp(-beta (e_row[a]/2 + e_inter[a, b] + e_row[b]/2))``.

    ``T`` is symmetric, so ``Tr T^len = sum_i lambda_i^len`` from ``eigvalsh``;
    the exponent is shifted by its maximum and the eigenvalues are scaled by
    the largest one, so nothing overflows.
    """
    expo = -beta * (0.5 * e_row[:, None] + e_inter + 0.5 * e_row[None, :])
    shift = expo.max()
    lam = np.linalg.eigvalsh(np.exp(expo - shift))
    top = lam[-1]
    rel_sum = np.sum((lam / top) ** length)
    return float(length * (shift + np.log(top)) + np.log(rel_sum))


def ising_transfer_log_Z(shape, beta: float, J: float = 1.0, h: float = 0.0) -> float:
    """Exact Ising ``log Z`` (any field) by the row-to-row transfer matrix (``2^min(Lx, Ly)`` states)."""
    length, _, e_row, e_inter = _ising_rows(shape, J, h)
    return transfer_log_Z(e_row, e_inter, beta, length)


def potts_transfer_log_Z(shape, beta: float, q: int = 3, J: float = 1.0) -> float:
    """Exact Potts ``log Z`` by the row-to-row transfer matrix (``q^min(Lx, Ly)`` states)."""
    length, _, e_row, e_inter = _potts_rows(shape, q, J)
    return transfer_log_Z(e_row, e_inter, beta, length)


def ising_magnetization_distribution(shape, beta: float, J: float = 1.0, h: float = 0.0):
    """Exact distribution of ``m = (1/N) sum_i s_i`` by a transfer matrix that counts up spins.

    Computed once per ``(shape, beta, J, h)`` in a process (13 s at 8 x 8; a run asks for it
    from several figures) and returned as fresh copies.

    With the first row ``a`` fixed, ``F[a, k, b]`` is the weight of the rows so
    far ending in row ``b`` with ``k`` up spins; each new row is a matrix
    product with the inter-row Boltzmann factors followed by a shift of ``k``;
    the trace closes the torus. Cost ``O(4^w N len)``.

    Returns
    -------
    m : ndarray (N + 1,)
        ``(2k - N) / N`` for ``k = 0..N`` up spins.
    p : ndarray (N + 1,) float64
        ``P(m)``, summing to one.
    """
    m, p = _ising_magnetization_distribution(tuple(int(n) for n in shape), float(beta), float(J), float(h))
    return m.copy(), p.copy()


@functools.lru_cache(maxsize=16)
def _ising_magnetization_distribution(shape: tuple, beta: float, J: float, h: float):
    """:func:`ising_magnetization_distribution`, computed (the cache holds at most 16 lattices)."""
    length, rows, e_row, e_inter = _ising_rows(shape, J, h)
    n_rows, w = rows.shape
    n_sites = w * length
    if n_rows * n_rows * (n_sites + 1) > MAX_MAGNETIZATION_DP:
        raise ExactReferenceUnavailable(
            f"exact P(m) for a {shape[0]}x{shape[1]} lattice needs {n_rows}^2 x {n_sites + 1} entries, "
            f"over the limit of {MAX_MAGNETIZATION_DP}"
        )
    ups = np.sum(rows > 0, axis=1)
    log_d = -beta * e_row
    log_w = -beta * e_inter
    d = np.exp(log_d - log_d.max())
    W = np.exp(log_w - log_w.max())
    F = np.zeros((n_rows, n_sites + 1, n_rows))
    F[np.arange(n_rows), ups, np.arange(n_rows)] = d
    for r in range(1, length):
        G = (F[:, : r * w + 1] @ W) * d  # r rows placed so far: at most r w up spins
        F = np.zeros_like(F)
        for u in range(w + 1):
            cols = ups == u
            F[:, u : u + r * w + 1, cols] = G[:, :, cols]
        F /= F.max()
    weights = np.einsum("akb,ba->k", F, W)
    p = weights / weights.sum()
    k = np.arange(n_sites + 1)
    return (2 * k - n_sites) / n_sites, p
