"""The particle-system evaluation protocol: geometric and energy W2 of draws against the shipped reference sets.

The protocol of iDEM (Akhound-Sadegh et al. 2024) as Adjoint Sampling (Havens et al. 2025,
"Adjoint Sampling: Highly Scalable Diffusion Samplers via Adjoint Matching", ICML, Sec. 5) and
ASBS (Liu et al. 2025, "Adjoint Schrödinger Bridge Sampler", Sec. 5) report it on DW-4, LJ-13
and LJ-55: ``n`` draws of the sampler against ``n`` random configurations of the test split of
the MCMC reference set (Klein et al. 2023; ``target.reference("test")``, shipped in
``jaxsamp/targets/data``), scored by

* ``w2``: the geometric W2, E(n)-invariant (rotations, reflections and particle permutations
  factored out; :func:`~jaxsamp.diagnostics.geometric_wasserstein.geometric_w2`);
* ``energy_w2``: the 1-D W2 between the energies ``-log_prob`` of the draws and of the
  reference configurations (:func:`~jaxsamp.diagnostics.discrepancies.wasserstein2_1d`);
* ``energy_median``: the median energy of the draws (a learning curve's third figure);

and, since a finite reference set scores above 0 even against itself, their noise floor: the
same W2s of ``n`` test configurations against ``n`` validation ones (:meth:`SampleScorer.noise_floor`:
``w2_floor``, ``energy_w2_floor``). A figure is read against its floor.

Targets without particles (no ``n_particles``) take part with exact samples as the reference
and the plain W2 (:func:`~jaxsamp.diagnostics.discrepancies.wasserstein2`); they have no floor.
Draws whose state, log-weight or energy is not finite are left out of every figure (the
caller counts them).
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core.target import ReferenceUnavailableError
from jaxsamp.diagnostics import discrepancies
from jaxsamp.diagnostics.geometric_wasserstein import geometric_w2

#: Draws made per compiled call of :meth:`SampleScorer.draw` (bounds the memory of a large evaluation).
EVAL_BATCH = 1000


def is_particle_system(target) -> bool:
    """Whether ``target`` is a particle system (it has ``n_particles``): its states are defined up to E(n)."""
    return hasattr(target, "n_particles")


def reference_samples(target, key, num_samples: int) -> np.ndarray | None:
    """``num_samples`` reference configurations of ``target`` for the protocol (module docstring).

    Parameters
    ----------
    target : Target
    key : PRNG key
    num_samples : int

    Returns
    -------
    array (num_samples, d) or None
        For a particle system, a random subset (``jax.random.permutation(key, ...)``) of its
        test split (``None`` where none is shipped, e.g. LJ-55); otherwise
        ``target.sample(key, num_samples)`` where the target has exact samples, else ``None``.
    """
    if is_particle_system(target):
        try:
            ref = np.asarray(target.reference("test"))
        except ReferenceUnavailableError:
            return None
        return ref[np.asarray(jax.random.permutation(key, len(ref)))[:num_samples]]
    if target.has_exact_samples:
        return np.asarray(target.sample(key, num_samples))
    return None


def sinkhorn_to_exact(target, key, x) -> float | None:
    """SCLD's sample figure: the Sinkhorn divergence of the states ``x`` to as many exact samples (``None`` without).

    As the reference code of Chen et al. (2025) computes it (``scld_eval.py``, ``discrepancies/smc_sd``): the final
    positions of an SMC run as they stand, without their weights, against exact samples of the target, ott's
    :func:`~jaxsamp.diagnostics.discrepancies.sinkhorn_divergence` at its default epsilon (``epsilon=None``: the
    code's ``1e-3`` never reaches ott). States that are not finite are left out. The exact samples are
    :func:`reference_samples` at ``key``.
    """
    x = np.asarray(x)
    x = x.reshape(len(x), -1)
    x = x[np.all(np.isfinite(x), axis=-1)]
    reference = reference_samples(target, key, len(x)) if len(x) >= 2 and not is_particle_system(target) else None
    if reference is None:
        return None
    return float(discrepancies.sinkhorn_divergence(jnp.asarray(x), jnp.asarray(reference.reshape(len(x), -1)),
                                                   epsilon=None))


def sinkhorn_floor(target, key, num_samples: int) -> float | None:
    """:func:`sinkhorn_to_exact` of ``num_samples`` exact samples: what a perfect sampler scores (``None`` without).

    The divergence of finite sample sets is above 0, and on heavy-tailed targets (the funnel, a Student-t mixture)
    far above it, so a sampler's figure is read against this floor. The two sets are drawn at ``fold_in(key, 0)``
    and ``fold_in(key, 1)``.
    """
    if is_particle_system(target) or not target.has_exact_samples:
        return None
    return sinkhorn_to_exact(target, jax.random.fold_in(key, 1), target.sample(jax.random.fold_in(key, 0), num_samples))


def interatomic_distances(target, x: np.ndarray) -> np.ndarray:
    """All distances ``|x_i - x_j|``, ``i < j``, within each configuration of ``x`` (n, N * d), flattened.

    The histogram that Adjoint Sampling and ASBS plot beside the energy histogram.
    """
    positions = jnp.asarray(x).reshape(len(x), target.n_particles, target.spatial_dim)
    return np.asarray(jax.vmap(target.pair_distances)(positions)).ravel()


class SampleScorer:
    """The protocol's figures (module docstring) of one target's draws, compiled once for all of a run's draws.

    The batched energy ``-log_prob`` of ``target`` (and the sampler ``sample``, when given) are
    jitted here, once: a fresh ``jax.jit`` per draw would compile them again at every call, which
    a learning curve of many points pays at each point. The noise floor is computed once per
    sample size.

    Parameters
    ----------
    target : Target
    sample : callable, optional
        ``sample(key, x, n) -> WeightedSamples`` (``n`` static; ``x`` a train state or network
        parameters), for :meth:`draw`.
    """

    def __init__(self, target, sample: Callable | None = None):
        self.target = target
        self.particles = is_particle_system(target)
        self._sample = None if sample is None else jax.jit(sample, static_argnums=2)
        self._energy = jax.jit(jax.vmap(lambda z: -target.log_prob(z)))
        self._floors: dict[int, dict] = {}

    def draw(self, key, x, num_samples: int) -> tuple[np.ndarray, np.ndarray]:
        """``num_samples`` draws at ``x`` and their log-weights, :data:`EVAL_BATCH` at a time (batch ``i`` at ``fold_in(key, i)``)."""
        xs, log_ws = [], []
        for i, start in enumerate(range(0, num_samples, EVAL_BATCH)):
            ws = self._sample(jax.random.fold_in(key, i), x, min(EVAL_BATCH, num_samples - start))
            xs.append(np.asarray(ws.x))
            log_ws.append(np.asarray(ws.log_w))
        return np.concatenate(xs), np.concatenate(log_ws)

    def energy(self, x: np.ndarray) -> np.ndarray:
        """Energies ``-log_prob`` of the rows of ``x``."""
        return np.asarray(self._energy(jnp.asarray(x)))

    def score(self, x: np.ndarray, log_w: np.ndarray, reference: np.ndarray | None,
              reference_energies: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, dict]:
        """The draws' energies, their finite mask and the figures of the finite ones against ``reference``.

        Parameters
        ----------
        x : array (n, d)
            The draws.
        log_w : array (n,)
            Their log-weights (a draw with a non-finite one is left out).
        reference : array (m, d) or None
            :func:`reference_samples`; without it the figures are ``{}``.
        reference_energies : array (m,), optional
            Their energies, if already computed.

        Returns
        -------
        energies : array (n,)
        finite : bool array (n,)
            State, log-weight and energy finite.
        figures : dict
            ``w2`` (geometric for particle systems, plain otherwise), ``energy_w2`` and
            ``energy_median`` of the finite draws; ``w2`` and ``energy_w2`` are NaN with fewer
            than two finite draws, ``energy_median`` with none.
        """
        energies = self.energy(x)
        finite = np.all(np.isfinite(x), axis=1) & np.isfinite(log_w) & np.isfinite(energies)
        if reference is None:
            return energies, finite, {}
        median = float(np.median(energies[finite])) if finite.any() else float("nan")
        if finite.sum() < 2:
            return energies, finite, {"w2": float("nan"), "energy_w2": float("nan"), "energy_median": median}
        if reference_energies is None:
            reference_energies = self.energy(reference)
        if self.particles:
            w2 = geometric_w2(x[finite], reference, self.target.n_particles, self.target.spatial_dim)
        else:
            w2 = discrepancies.wasserstein2(x[finite], reference)
        energy_w2 = discrepancies.wasserstein2_1d(energies[finite], reference_energies)
        return energies, finite, {"w2": w2, "energy_w2": energy_w2, "energy_median": median}

    def noise_floor(self, num_samples: int) -> dict:
        """``w2_floor`` and ``energy_w2_floor``: the same W2s of the test split against the validation split.

        ``num_samples`` random configurations of each (a NumPy generator seeded 0, so the floor of
        a target and size is one number), as the draws are scored: what a perfect sampler would
        score at this size. Empty for a target without particles or without both splits.
        """
        if num_samples not in self._floors:
            self._floors[num_samples] = self._noise_floor(num_samples)
        return self._floors[num_samples]

    def _noise_floor(self, num_samples: int) -> dict:
        if not self.particles:
            return {}
        try:
            splits = [np.asarray(self.target.reference(split)) for split in ("test", "val")]
        except ReferenceUnavailableError:
            return {}
        rng = np.random.default_rng(0)
        test, val = (s[rng.permutation(len(s))[:num_samples]] for s in splits)
        return {
            "w2_floor": geometric_w2(test, val, self.target.n_particles, self.target.spatial_dim),
            "energy_w2_floor": discrepancies.wasserstein2_1d(self.energy(test), self.energy(val)),
        }
