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

* ``sinkhorn``: the debiased Sinkhorn divergence (``epsilon = 1e-3``) between the
  sampler's states and the exact samples; not for particle systems (targets with
  ``n_particles``), whose states are defined up to rotations and permutations: the
  divergence is not E(n)-invariant, so it is left out there unless asked for;
* ``emc``: entropic mode coverage of the samples for mixture targets
  (``assign_modes``), with ``modes_visited``.

A sampler takes part through two functions of its network parameters, passed to
:func:`path_figures`: ``sample_at(key, params, n) -> WeightedSamples`` (forward paths and their
exact log-weights) and ``backward_log_weights(key, params, x_target) -> log w``.
"""

from __future__ import annotations

from typing import Callable

import jax
import numpy as np

from jaxsamp.core.errors import InputError
from jaxsamp.core.protocols import WeightedSamples
from jaxsamp.diagnostics import discrepancies, weights
from jaxsamp.diagnostics.mode_coverage import entropic_mode_coverage
from jaxsamp.learned.diffusion.sde import state_space

#: The options of the diffusion samplers' ``evaluate`` (the keywords of :func:`path_figures` after its functions).
OPTIONS = ("reference", "forward", "sinkhorn", "num_sets")


def check_options(options: dict) -> dict:
    """``options`` if :func:`path_figures` takes each of them, else an :class:`InputError` naming the first others."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise InputError(f"evaluate takes no option {', '.join(unknown)}", f"its options: {', '.join(OPTIONS)}")
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
        their exact log-weights (compiled here with ``n`` static).
    backward_log_weights : callable
        ``backward_log_weights(key, params, x_target) -> (m,)``: the log-weights of paths
        simulated backward from the target samples ``x_target`` (the EUBO's paths).
    reference : array (n, d), optional
        Target samples to use instead of ``target.sample`` (for targets with a
        reference set but no exact sampler); without either, the backward figures
        and the Sinkhorn divergence are left out.
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

    Returns
    -------
    dict
        :func:`jaxsamp.diagnostics.weights.figures` of the forward log-weights (with the
        backward ones as the target's, the exact ``log Z`` and ``num_sets``), and where
        possible ``sinkhorn``, ``emc`` and ``modes_visited``. A path whose end state or
        log-weight is not finite is counted in ``nonfinite_samples`` and left out (of its
        set too).
    """
    if isinstance(num_sets, bool) or not isinstance(num_sets, int) or not 1 <= num_sets <= num_samples:
        raise InputError(f"num_sets must be an int in [1, num_samples={num_samples}], got {num_sets!r}")
    if sinkhorn is None:
        sinkhorn = not state_space(target).centred
    set_size = num_samples // num_sets
    k_fwd, k_ref, k_bwd = jax.random.split(key, 3)
    if forward is None:
        forward = jax.jit(sample_at, static_argnums=2)(k_fwd, params, num_samples)
    x, log_w = np.asarray(forward.x), np.asarray(forward.log_w, np.float64)
    finite = np.isfinite(log_w) & np.all(np.isfinite(x), axis=-1)
    backward = None
    if reference is None and target.has_exact_samples:
        reference = np.asarray(target.sample(k_ref, num_samples))
    if reference is not None:
        backward = jax.jit(backward_log_weights)(k_bwd, params, reference)
    out = weights.figures(WeightedSamples(x, np.where(finite, log_w, np.nan), forward.log_Z0),
                          log_Z_exact=target.log_Z, target_log_w=backward, num_sets=num_sets)
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
