"""The evaluation protocol of the diffusion samplers (PIS, DDS, Adjoint Sampling, ASBS): one function.

The Beyond-ELBOs protocol (Blessing et al. 2024, ``stochastic_oc_methods.py``), on ``n``
forward paths and ``n`` paths simulated backward from ``n`` exact target samples (or
reference samples). The canonical figures of the weights come from
:func:`jaxsamp.diagnostics.weights.figures`:

* ``log_Z_hat`` = ``logsumexp(log w) - log n`` (importance sampling, unbiased in ``Z``),
  ``elbo`` = mean forward log-weight (``<= log Z``), ``ess`` = ``(sum w)^2 / (n sum w^2)``;
* ``eubo`` = mean log-weight of the backward paths (``>= log Z``), ``log_Z_forward``
  = ``-(logsumexp(-log w) - log n)`` on them (``1/Z`` unbiased);
* their errors against the exact ``log Z`` (``log_Z_abs_err`` and ``<bound>_abs_err``), when it is known;
* with ``num_sets > 1``, the spread of ``log_Z_hat`` over disjoint sets of the forward
  paths: ``log_Z_hat_sets_mean`` / ``_sets_sd`` and ``log_Z_abs_err_sets_mean`` / ``_sets_sd``
  (Sendera et al. 2024 report the mean and sd of the error over 5 runs of 2000 paths each;
  their code scores 10 000 paths). A single ``log Z`` on 2000 paths can be as noisy as the
  spread between trained models, so the benchmark scores 10 000 paths as five sets.

The family adds:

* ``sinkhorn``: the debiased Sinkhorn divergence (``epsilon = 1e-3``, the value the Beyond-ELBOs code writes;
  its call never hands it to ott, so its published figures are at ott's default epsilon:
  :func:`~jaxsamp.diagnostics.discrepancies.sinkhorn_divergence`) between the
  sampler's states and the exact samples; not for particle systems (targets with
  ``n_particles``), whose states are defined up to rotations and permutations: the
  divergence is not E(n)-invariant, so it is left out there unless asked for;
* ``emc``: entropic mode coverage of the samples for mixture targets
  (``assign_modes``), with ``modes_visited``;
* with a :class:`~jaxsamp.diagnostics.particles.SampleScorer` (Adjoint Sampling and ASBS), the
  particle protocol of :mod:`jaxsamp.diagnostics.particles` (Havens et al. 2025; Liu et al. 2025):
  ``w2`` (geometric for particle systems), ``energy_w2`` and ``energy_median`` of the draws
  against the reference, and for particle systems the noise floors ``w2_floor`` and
  ``energy_w2_floor``.

The reference of a particle system (a target with ``n_particles``, which has no exact sampler)
is a random subset of its shipped test split
(:func:`~jaxsamp.diagnostics.particles.reference_samples`).

A sampler takes part through two functions of its network parameters, passed to
:func:`path_figures` compiled (``jax.jit``, ``n`` static) once by the sampler, so that
evaluating again, as a learning curve does, compiles nothing: ``sample_at(key, params, n) ->
WeightedSamples`` (forward paths and their exact log-weights) and
``backward_log_weights(key, params, x_target) -> log w``.
"""

from __future__ import annotations

from typing import Callable

import jax
import numpy as np

from jaxsamp.core.errors import InputError
from jaxsamp.core.protocols import WeightedSamples
from jaxsamp.diagnostics import discrepancies, weights
from jaxsamp.diagnostics.mode_coverage import entropic_mode_coverage
from jaxsamp.diagnostics.particles import SampleScorer, is_particle_system, reference_samples

#: The options of the diffusion samplers' ``evaluate`` (the keywords of :func:`path_figures` after its functions).
OPTIONS = ("reference", "forward", "sinkhorn", "num_sets")


def check_options(options: dict, extra: tuple[str, ...] = ()) -> dict:
    """``options`` if each is one of :data:`OPTIONS` or ``extra`` (a sampler's own), else an :class:`InputError`."""
    known = (*OPTIONS, *extra)
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise InputError(f"evaluate takes no option {', '.join(unknown)}", f"its options: {', '.join(known)}")
    return options


def path_figures(
    key,
    params,
    num_samples: int,
    *,
    target,
    sample_at: Callable,
    backward_log_weights: Callable,
    reference: np.ndarray | None = None,
    forward: WeightedSamples | None = None,
    sinkhorn: bool | None = None,
    num_sets: int = 1,
    scorer: SampleScorer | None = None,
    raw_params=None,
) -> dict:
    """The protocol's figures of a path sampler at network parameters ``params``, as plain floats (module docstring).

    Parameters
    ----------
    key : PRNG key
    params
        The network parameters the sampler draws with.
    num_samples : int
        Forward paths, exact samples and backward paths, each.
    target : Target
        Its ``log_Z`` (when known), exact sampler, ``assign_modes`` (mixtures) and
        ``n_particles`` (particle systems) are used where it has them.
    sample_at : callable
        ``sample_at(key, params, n) -> WeightedSamples``: ``n`` forward paths' end states and
        their exact log-weights (compiled by the sampler, ``n`` static).
    backward_log_weights : callable
        ``backward_log_weights(key, params, x_target) -> (m,)``: the log-weights of paths
        simulated backward from the target samples ``x_target`` (the EUBO's paths; compiled).
    reference : array (n, d), optional
        Target samples to use instead of the default,
        :func:`~jaxsamp.diagnostics.particles.reference_samples` (exact samples, or a subset of
        a particle system's test split); without either, the backward figures, the Sinkhorn
        divergence and the scorer's figures are left out.
    forward : WeightedSamples, optional
        Forward samples already drawn (for example in memory-bounded batches);
        default ``sample_at(key, params, num_samples)``.
    sinkhorn : bool, optional
        Compute the Sinkhorn divergence, the costliest figure. Default: unless the target
        is a particle system (module docstring). With ``num_sets > 1`` it is computed on
        the first ``num_samples // num_sets`` states and exact samples (its value depends
        on the sample size; the protocol's is 2000).
    num_sets : int
        Also score ``log_Z_hat`` on this many disjoint, equal sets of the forward paths
        (in drawing order; a remainder is left out of the sets) and report their mean
        and sd. ``log_Z_hat``, ``elbo``, ``ess`` and the backward figures use all paths.
    scorer : SampleScorer, optional
        Score the draws by the particle protocol as well
        (:meth:`~jaxsamp.diagnostics.particles.SampleScorer.score` against the reference:
        ``w2``, ``energy_w2``, ``energy_median``; for particle systems
        :meth:`~jaxsamp.diagnostics.particles.SampleScorer.noise_floor` at ``num_samples``).
    raw_params : optional
        With ``scorer``: other parameters of the same network (the raw parameters of a sampler
        that draws with their running average), whose draws, made with the key of the
        default forward draws, are scored against the same reference as ``raw_w2``, ``raw_energy_w2`` and
        ``raw_energy_median``: the two sets of figures differ by the parameters alone.

    Returns
    -------
    dict
        :func:`jaxsamp.diagnostics.weights.figures` of the forward log-weights (with the
        backward ones as the target's, the exact ``log Z`` and ``num_sets``), and where
        possible ``sinkhorn``, ``emc`` and ``modes_visited``, and the ``scorer``'s figures. A
        path whose end state or log-weight is not finite is counted in ``nonfinite_samples``
        and left out (of its set too).
    """
    if isinstance(num_sets, bool) or not isinstance(num_sets, int) or not 1 <= num_sets <= num_samples:
        raise InputError(f"num_sets must be an int in [1, num_samples={num_samples}], got {num_sets!r}")
    if sinkhorn is None:
        sinkhorn = not is_particle_system(target)
    set_size = num_samples // num_sets
    k_fwd, k_ref, k_bwd = jax.random.split(key, 3)
    if forward is None:
        forward = sample_at(k_fwd, params, num_samples)
    x, log_w = np.asarray(forward.x), np.asarray(forward.log_w, np.float64)
    finite = np.isfinite(log_w) & np.all(np.isfinite(x), axis=-1)
    backward = None
    if reference is None:
        reference = reference_samples(target, k_ref, num_samples)
    if reference is not None:
        backward = backward_log_weights(k_bwd, params, reference)
    out = weights.figures(WeightedSamples(x, np.where(finite, log_w, np.nan), forward.log_Z0),
                          log_Z_exact=target.log_Z, target_log_w=backward, num_sets=num_sets)
    if scorer is not None and reference is not None:
        _, _, scored = scorer.score(x, log_w, reference)
        out.update(scored, **scorer.noise_floor(num_samples))
        if raw_params is not None:
            raw = sample_at(k_fwd, raw_params, num_samples)
            _, _, scored = scorer.score(np.asarray(raw.x), np.asarray(raw.log_w), reference)
            out.update({f"raw_{name}": value for name, value in scored.items()})
    x = x[finite]
    if reference is not None and sinkhorn and len(x) >= 2:
        first = slice(None) if num_sets == 1 else slice(set_size)
        out["sinkhorn"] = float(discrepancies.sinkhorn_divergence(jax.numpy.asarray(x[first]),
                                                                  jax.numpy.asarray(reference[first])))
    if hasattr(target, "assign_modes") and len(x):
        modes = target.assign_modes(jax.numpy.asarray(x))
        out["emc"] = float(entropic_mode_coverage(modes, len(target.weights_np)))
        out["modes_visited"] = int(np.unique(np.asarray(modes)).size)
    return out

