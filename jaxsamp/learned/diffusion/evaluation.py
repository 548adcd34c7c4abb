"""The evaluation protocol of the diffusion samplers (PIS, DDS, Adjoint Sampling): one function.

The Beyond-ELBOs protocol (Blessing et al. 2024, ``stochastic_oc_methods.py``;
research/paths.md §D4), on ``n`` forward paths and ``n`` paths simulated backward
from ``n`` exact target samples:

* ``elbo`` = mean forward log-weight (``<= log Z``), ``log_Z_reverse`` =
  ``logsumexp(log w) - log n`` (importance sampling, unbiased in ``Z``), ``ess`` =
  ``(sum w)^2 / (n sum w^2)``;
* ``eubo`` = mean log-weight of the backward paths (``>= log Z``), ``log_Z_forward``
  = ``-(logsumexp(-log w) - log n)`` on them (``1/Z`` unbiased);
* their errors against the exact ``log Z`` (``_abs_err``), when it is known;
* ``sinkhorn``: the debiased Sinkhorn divergence (``epsilon = 1e-3``) between the
  sampler's states and the exact samples;
* ``emc``: entropic mode coverage of the samples for mixture targets
  (``assign_modes``), with ``modes_visited``;
* with ``num_sets > 1``, the spread of ``log_Z_reverse`` over disjoint sets of the
  forward paths: ``log_Z_reverse_sets_mean`` / ``_sets_sd`` and their
  ``log_Z_reverse_abs_err_sets_mean`` / ``_sets_sd`` (Sendera et al. 2024 report
  the mean and sd of the error over 5 runs of 2000 paths each; their code scores
  10 000 paths). A single ``log Z`` on 2000 paths can be as noisy as the spread
  between trained models, so the benchmark scores 10 000 paths as five sets.

A sampler takes part by providing ``sample_with(params, key, n) -> WeightedSamples`` and
``backward_log_weights(params, key, x_target) -> log w``; :class:`TrainedPathSampler` then gives
it the train-state methods every learned method has, ``sample(state, key, n)`` and
``evaluate(state, key, n)``.
"""

from __future__ import annotations

import math

import jax
import numpy as np

from jaxsamp.core.errors import InputError
from jaxsamp.core.protocols import WeightedSamples
from jaxsamp.diagnostics import discrepancies
from jaxsamp.diagnostics.mode_coverage import entropic_mode_coverage


def _lse(a: np.ndarray) -> float:
    m = np.max(a)
    return float(m + np.log(np.sum(np.exp(a - m))))


def _log_mean_exp(a: np.ndarray) -> float:
    """``log mean exp(a)``: NaN for an empty set."""
    return _lse(a) - math.log(a.size) if a.size else float("nan")


def evaluate_path_sampler(
    sampler,
    params,
    key,
    num_samples: int,
    reference: np.ndarray | None = None,
    forward: WeightedSamples | None = None,
    sinkhorn: bool = True,
    num_sets: int = 1,
) -> dict:
    """The protocol's figures for ``sampler`` at ``params``, as plain floats (see the module docstring).

    Parameters
    ----------
    sampler
        Has ``target``, ``sample`` and ``backward_log_weights``.
    params
        The trained network parameters.
    key : PRNG key
    num_samples : int
        Forward paths, exact samples and backward paths, each.
    reference : array (n, d), optional
        Target samples to use instead of ``target.sample`` (for targets with a
        reference set but no exact sampler); without either, the backward figures
        and the Sinkhorn divergence are left out.
    forward : WeightedSamples, optional
        Forward samples already drawn (for example in memory-bounded batches);
        default ``sampler.sample_with(params, key, num_samples)``.
    sinkhorn : bool
        Compute the Sinkhorn divergence (not E(n)-invariant: particle systems use
        their geometric W2 instead). With ``num_sets > 1`` it is computed on the
        first ``num_samples // num_sets`` states and exact samples (its value
        depends on the sample size; the protocol's is 2000).
    num_sets : int
        Also score ``log_Z_reverse`` on this many disjoint, equal sets of the
        forward paths (in drawing order; a remainder is left out of the sets)
        and report their mean and sd. ``log_Z_reverse``, ``elbo``, ``ess`` and
        the backward figures use all paths.

    Returns
    -------
    dict
        ``elbo``, ``log_Z_reverse``, ``ess``, ``nonfinite_paths`` and, where
        possible, ``eubo``, ``log_Z_forward``, ``sinkhorn``,
        ``log_Z_exact`` with the ``_abs_err`` of each estimate, ``emc``,
        ``modes_visited``, and the ``_sets_`` figures. Non-finite paths are
        counted and left out (of their set too).
    """
    if isinstance(num_sets, bool) or not isinstance(num_sets, int) or not 1 <= num_sets <= num_samples:
        raise InputError(f"num_sets must be an int in [1, num_samples={num_samples}], got {num_sets!r}")
    target = sampler.target
    set_size = num_samples // num_sets
    k_fwd, k_ref, k_bwd = jax.random.split(key, 3)
    if forward is None:
        forward = jax.jit(sampler.sample_with, static_argnums=2)(params, k_fwd, num_samples)
    x, log_w = np.asarray(forward.x), np.asarray(forward.log_w, np.float64)
    finite = np.isfinite(log_w) & np.all(np.isfinite(x), axis=-1)
    set_log_z = [_log_mean_exp(log_w[i * set_size:(i + 1) * set_size][finite[i * set_size:(i + 1) * set_size]])
                 for i in range(num_sets)]
    x, log_w = x[finite], log_w[finite]
    n = len(log_w)
    out = {"nonfinite_paths": int(num_samples - n)}
    if n:
        out.update(
            elbo=float(np.mean(log_w)),
            log_Z_reverse=_lse(log_w) - math.log(n),
            ess=float(WeightedSamples(None, jax.numpy.asarray(log_w)).ess),
        )
    if reference is None and target.has_exact_samples:
        reference = np.asarray(target.sample(k_ref, num_samples))
    if reference is not None:
        backward = np.asarray(jax.jit(sampler.backward_log_weights)(params, k_bwd, reference), np.float64)
        backward = backward[np.isfinite(backward)]
        if backward.size:
            out.update(
                eubo=float(np.mean(backward)),
                log_Z_forward=-(_lse(-backward) - math.log(backward.size)),
            )
        if sinkhorn and n >= 2:
            first = slice(None) if num_sets == 1 else slice(set_size)
            out["sinkhorn"] = float(discrepancies.sinkhorn_divergence(jax.numpy.asarray(x[first]),
                                                                      jax.numpy.asarray(reference[first])))
    if num_sets > 1:
        out["log_Z_reverse_sets_mean"] = float(np.mean(set_log_z))
        out["log_Z_reverse_sets_sd"] = float(np.std(set_log_z, ddof=1))
    if target.log_Z is not None:
        out["log_Z_exact"] = float(target.log_Z)
        for name in ("elbo", "eubo", "log_Z_reverse", "log_Z_forward"):
            if name in out:
                out[f"{name}_abs_err"] = abs(out[name] - float(target.log_Z))
        if num_sets > 1:
            errors = np.abs(np.asarray(set_log_z) - float(target.log_Z))
            out["log_Z_reverse_abs_err_sets_mean"] = float(np.mean(errors))
            out["log_Z_reverse_abs_err_sets_sd"] = float(np.std(errors, ddof=1))
    if hasattr(target, "assign_modes") and n:
        modes = target.assign_modes(jax.numpy.asarray(x))
        out["emc"] = float(entropic_mode_coverage(modes, len(target.weights_np)))
        out["modes_visited"] = int(np.unique(np.asarray(modes)).size)
    return out


class TrainedPathSampler:
    """``sample`` and ``evaluate`` from a train state, for the path samplers (PIS, DDS, Adjoint Sampling, ASBS).

    A subclass defines ``sampling_params(state)`` (the parameters the trained sampler
    draws with: the network's, or their running average where the method keeps one),
    ``sample_with(params, key, n)`` and ``backward_log_weights(params, key, x)``.
    """

    def sample(self, state, key, num_samples: int) -> WeightedSamples:
        """``num_samples`` terminal states of the trained sampler with their path log-weights (``.log_Z`` estimates log Z)."""
        return self.sample_with(self.sampling_params(state), key, num_samples)

    def evaluate(self, state, key, num_samples: int, **options) -> dict:
        """The protocol's figures (:func:`evaluate_path_sampler`, whose keyword ``options`` it takes) of the trained sampler."""
        return evaluate_path_sampler(self, self.sampling_params(state), key, num_samples, **options)
