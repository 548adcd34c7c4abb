"""Resampled estimates from a trained sampler with a path: the SMC run of :meth:`jaxsamp.Fitted.smc` and its figures.

A trained LEAPS, Boltzmann curve, SCLD or CMCD moves particles along a path of intermediate
targets with an exact incremental weight per step (its :class:`~jaxsamp.core.SMCProposal`);
:func:`smc_kernel` makes that a sequential Monte Carlo sampler (Del Moral, Doucet & Jasra 2006,
JRSS B 68, Sec. 3) with adaptive resampling and optional MCMC moves, and :func:`smc_figures`
scores one run with the figures every learned method reports
(:func:`jaxsamp.diagnostics.weights.figures`), so that ``Fitted.evaluate(key, n, smc=...)``,
a config's ``evaluate.smc`` and a benchmark cell's ``params["evaluate"]["smc"]`` all read the
same. :func:`smc_options` checks the options those take.
"""

from __future__ import annotations

from typing import Callable

import jax
import numpy as np

from jaxsamp.core.errors import InputError
from jaxsamp.core.protocols import Kernel, SMCProposal, WeightedSamples
from jaxsamp.core.registry import SAMPLERS
from jaxsamp.diagnostics import weights
from jaxsamp.smc.annealing import AnnealResult, path_member, smc

#: The options of :meth:`jaxsamp.Fitted.smc` (beside the key and the number of particles), which
#: ``evaluate(..., smc={...})`` and a config's ``evaluate.smc`` take.
SMC_OPTIONS = ("resample_threshold", "resampler", "moves", "num_moves", "segment_length")


def smc_options(value) -> dict | None:
    """The SMC options of an evaluation: ``None`` (no SMC run), or a dict of :data:`SMC_OPTIONS`.

    Parameters
    ----------
    value : None, bool or dict
        None or False: the method's own sampling; True: an SMC run with :meth:`jaxsamp.Fitted.smc`'s
        defaults; a dict: those of its options.

    Raises
    ------
    InputError
        Another type, or a key that is not one of :data:`SMC_OPTIONS` (the message names them).
    """
    if value is None or value is False:
        return None
    if value is True:
        return {}
    if not isinstance(value, dict):
        raise InputError(f"smc must be True or a dict of Fitted.smc's options, got {type(value).__name__}",
                         f"for example smc={{'moves': 'checkerboard'}}; its options: {', '.join(SMC_OPTIONS)}")
    unknown = sorted(set(value) - set(SMC_OPTIONS))
    if unknown:
        raise InputError(f"smc takes no option {', '.join(map(str, unknown))}",
                         f"its options (those of Fitted.smc): {', '.join(SMC_OPTIONS)}")
    return dict(value)


def smc_kernel(proposal: SMCProposal, *, resample_threshold: float, resampler: str, moves,
               num_moves: int, segment_length: int) -> Kernel:
    """:func:`jaxsamp.smc.smc`'s kernel along ``proposal.path`` with the learned moves and the given options.

    ``moves``: None (no MCMC moves), a registered sampler's name built with its default
    parameters on :func:`~jaxsamp.smc.path_member` ``(path, t)``, or ``make_kernel(t) -> Kernel``
    (:meth:`jaxsamp.Fitted.smc` documents them and checks that it is one of these).
    """
    make_kernel: Callable | None
    if moves is None:
        make_kernel, num_moves = None, 0
    elif isinstance(moves, str):
        import jaxsamp.mcmc  # noqa: F401  (registers the samplers)

        SAMPLERS.entry(moves)  # an unknown name fails here, naming the known ones

        def make_kernel(t):
            return SAMPLERS.get(moves, path_member(proposal.path, t))
    else:
        make_kernel = moves
    return smc(proposal.path, make_kernel, schedule=proposal.schedule, transition=proposal.transition,
               segment_length=segment_length, ess_threshold=resample_threshold, resampling_fn=resampler,
               num_mcmc_steps=num_moves)


def smc_figures(result: AnnealResult, *, log_Z_exact: float | None, segment_length: int = 1) -> dict[str, float]:
    """The figures of one SMC run: the weight figures of its final particles, its resamplings and its cost.

    :func:`~jaxsamp.diagnostics.weights.figures` of the final particles with their weights since the
    last resampling and ``log Z0`` the resamplings' normalisers, so ``log_Z_hat`` is the SMC estimate
    (unbiased in ``Z``), ``ess`` the final weights' and ``elbo`` the cashed normalisers plus the final
    mean log weight; with ``log_Z_exact``, their errors. A particle with a NaN/inf coordinate counts
    in ``nonfinite_samples`` and is left out. Added, as SCLD's ``evaluate`` names them:
    ``segment_ess_min`` (the smallest normalised ESS at a level where resampling was checked, every
    ``segment_length``-th and the last, before resampling), ``num_resamplings`` and
    ``sample_target_evals`` (the run's target evaluations, moves included).
    """
    samples = result.samples
    log_w = np.asarray(samples.log_w, np.float64)
    finite = np.isfinite(log_w)
    for leaf in jax.tree.leaves(samples.x):
        leaf = np.asarray(leaf)
        if np.issubdtype(leaf.dtype, np.inexact):
            finite &= np.all(np.isfinite(leaf.reshape(len(log_w), -1)), axis=1)
    out = weights.figures(WeightedSamples(None, np.where(finite, log_w, np.nan), samples.log_Z0),
                          log_Z_exact=log_Z_exact)
    trace = result.trace
    levels = np.arange(1, result.num_levels + 1)
    checked = (levels % segment_length == 0) | (levels == result.num_levels)
    out.update(segment_ess_min=float(np.min(np.asarray(trace.ess)[:result.num_levels][checked])),
               num_resamplings=float(np.sum(np.asarray(trace.resampled)[:result.num_levels])),
               sample_target_evals=float(result.num_target_evals))
    return out


__all__ = ["SMC_OPTIONS", "smc_figures", "smc_kernel", "smc_options"]
