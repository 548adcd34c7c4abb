"""Particle systems DW-4, LJ-13 and LJ-55 with the iDEM / Adjoint Sampling conventions.

States are flattened ``(n_particles * spatial_dim,)`` vectors ``(x1, y1, [z1,] x2, ...)``.
Both energies depend only on pairwise distances and on positions relative to the mean,
so they are invariant under translations, rotations, reflections and permutations
(E(n) x S_n); a sampler keeps its states in the zero-centre-of-mass subspace with
:func:`remove_com`, and the reference sets are returned centred.
"""

from __future__ import annotations

import functools
import importlib.resources

import jax.numpy as jnp
import numpy as np

from jaxsamp.core.errors import InputError
from jaxsamp.core.registry import TARGETS
from jaxsamp.core.target import ReferenceUnavailableError, Target

SPLITS = ("test", "val")


def remove_com(x, n_particles: int, spatial_dim: int):
    """Project flattened particle states ``x`` (..., n * dim) onto zero centre of mass.

    Works on numpy and jax arrays, one state or a batch; the result has ``x``'s shape.
    """
    if x.shape[-1] != n_particles * spatial_dim:
        raise InputError(
            f"last axis of x has size {x.shape[-1]}, expected n_particles * spatial_dim = {n_particles * spatial_dim}"
        )
    xs = x.reshape(*x.shape[:-1], n_particles, spatial_dim)
    return (xs - xs.mean(axis=-2, keepdims=True)).reshape(x.shape)


@functools.lru_cache(maxsize=None)
def _load(filename: str) -> np.ndarray:
    path = importlib.resources.files("jaxsamp.targets") / "data" / filename
    with path.open("rb") as f:
        return np.load(f)


class ParticleTarget(Target):
    """A Boltzmann density ``exp(-E(x))`` (temperature 1) of ``n_particles`` in ``spatial_dim`` D.

    Subclasses implement :meth:`_energy` for one ``(n_particles, spatial_dim)`` array.
    ``log_Z`` is unknown; no exact sampler exists.

    Parameters
    ----------
    name : str
    n_particles, spatial_dim : int
    reference_files : dict, optional
        ``{split: filename in jaxsamp/targets/data}`` of the reference sets.
    missing_reference : str
        Why there is no reference set (used in the error when ``reference_files`` is empty).
    """

    def __init__(
        self,
        name: str,
        n_particles: int,
        spatial_dim: int,
        reference_files: dict[str, str] | None = None,
        missing_reference: str = "",
    ):
        self.name, self.n_particles, self.spatial_dim = name, n_particles, spatial_dim
        self.reference_files, self.missing_reference = dict(reference_files or {}), missing_reference
        self.event_shape = (n_particles * spatial_dim,)
        # unique pairs i < j (int32: the same gather under float32 and float64)
        self._i, self._j = (a.astype(np.int32) for a in np.triu_indices(n_particles, k=1))

    def pair_distances(self, positions, eps: float = 0.0):
        """``sqrt(|x_i - x_j|^2 + eps)`` for the unique pairs ``i < j`` of one state, shape (n(n-1)/2,)."""
        diff = positions[self._i] - positions[self._j]
        return jnp.sqrt(jnp.sum(diff**2, axis=-1) + eps)

    def energy(self, x):
        """Energy ``E(x)`` of ONE flattened state ``x`` of shape ``event_shape`` (``log_prob = -E``)."""
        return -self.log_prob(x)

    def _log_prob(self, x):
        return -self._energy(x.reshape(self.n_particles, self.spatial_dim))

    def _energy(self, positions):  # pragma: no cover - abstract
        raise TypeError(f"{type(self).__name__} must implement _energy")

    def reference(self, split: str = "test") -> np.ndarray:
        """The iDEM MCMC reference set (Klein et al. 2023), centred, shape (10000, n * dim) float32.

        Parameters
        ----------
        split : {"test", "val"}
            Published evaluations use 2000 random samples of the test split.
        """
        if split not in SPLITS:
            raise InputError(f"split must be one of {SPLITS}, got {split!r}")
        if not self.reference_files:
            raise ReferenceUnavailableError(f"no reference set is shipped for {self.name!r}: {self.missing_reference}")
        data = _load(self.reference_files[split])
        return remove_com(data, self.n_particles, self.spatial_dim).astype(np.float32)

    def describe(self) -> dict:
        out = super().describe()
        out["reference_set"] = "iDEM MCMC test/val splits" if self.reference_files else None
        return out


class DoubleWellParticles(ParticleTarget):
    """DW-n: ``E(x) = sum_{i<j} a (d_ij - d0)^4 + b (d_ij - d0)^2``, ``d_ij = sqrt(|x_i - x_j|^2 + 1e-8)``.

    With ``a = 0.9, b = -4, d0 = 4`` (c = 0) and 4 particles in 2-D this is DW-4 exactly as
    coded in bgflow's ``MultiDoubleWellPotential`` and used by iDEM, Adjoint Sampling and
    ASBS (Köhler, Klein, Noé 2020, "Equivariant flows: exact likelihood generative learning
    for symmetric densities", ICML; the ASBS appendix's
    ``exp(...)`` and ``d0 = 1`` are typos — ../shared/research/adjoint.md §2).
    """

    def __init__(self, a: float = 0.9, b: float = -4.0, d0: float = 4.0):
        super().__init__("dw4", 4, 2, {"test": "test_split_DW4.npy", "val": "val_split_DW4.npy"})
        self.a, self.b, self.d0 = float(a), float(b), float(d0)

    def _energy(self, positions):
        r = self.pair_distances(positions, eps=1e-8) - self.d0
        return jnp.sum(self.a * r**4 + self.b * r**2)


class LennardJones(ParticleTarget):
    """LJ-n: ``E(x) = sum_{i != j} [r_ij^-12 - 2 r_ij^-6] + (1/2) sum_i |x_i - mean(x)|^2``.

    The Lennard-Jones sum runs over ORDERED pairs (twice the unique-pair sum), with
    ``epsilon = r_m = temperature = 1``, no cutoff, plus a harmonic term of scale 1 about
    the centre of mass: the code of iDEM / Adjoint Sampling (``lennard_jones_energy``,
    ``energy_factor = 1``), which is what matches the Klein et al. (2023) MCMC data; the
    papers' ``epsilon / (2 tau)`` is a typo (../shared/research/adjoint.md §2).
    """

    def __init__(self, n_particles: int, name: str, reference_files: dict[str, str] | None = None, missing_reference: str = ""):
        super().__init__(name, n_particles, 3, reference_files, missing_reference)

    def _energy(self, positions):
        inv6 = self.pair_distances(positions) ** -6
        lj = 2.0 * jnp.sum(inv6**2 - 2.0 * inv6)  # ordered pairs = 2 x unique pairs
        centred = positions - positions.mean(axis=0)
        return lj + 0.5 * jnp.sum(centred**2)


@TARGETS.register("dw4")
def dw4() -> DoubleWellParticles:
    """DW-4 (4 particles in 2-D, pairwise double wells, iDEM conventions); reference set: iDEM MCMC test/val."""
    return DoubleWellParticles()


@TARGETS.register("lj13")
def lj13() -> LennardJones:
    """LJ-13 (13 particles in 3-D, ordered-pair LJ + harmonic, iDEM conventions); reference set: iDEM MCMC test/val."""
    return LennardJones(13, "lj13", {"test": "test_split_LJ13-1000.npy", "val": "val_split_LJ13-1000.npy"})


@TARGETS.register("lj55")
def lj55() -> LennardJones:
    """LJ-55 (55 particles in 3-D, iDEM conventions); no reference set shipped, nothing exact."""
    return LennardJones(
        55, "lj55", missing_reference="iDEM's LJ-55 test split (test_split_LJ55-1000-part1.npy) is not in this package"
    )
