"""Health checks of a finished run (MCMC chains, a learned sampler's training): silent failures that look like success.

A sampler with degenerate settings often returns normally: HMC with zero
integration steps accepts every "proposal" without moving, MALA with a negative
step size rejects everything, chains started in a NaN region never leave it.
These functions turn such runs into warnings that name what happened; the
experiment runner writes them to ``metrics.json`` and stderr and, under
``--strict``, fails the run.

All functions work on host arrays (NumPy), after the run; nothing here runs
inside ``jit``.
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.tree_util import Partial

from jaxsamp.core.compiled import as_partial, batched

#: Training steps from which a loss that did not improve is flagged (shorter runs: noise and warm-up).
MIN_STEPS_FOR_PROGRESS = 200
#: Growth of the loss's magnitude (its level at the end of training against its level at the start) called an
#: explosion.
LOSS_EXPLOSION_FACTOR = 1e3
#: Steps at the end of training whose median is the loss's final level in the explosion rule (the last tenth of
#: the steps when that is shorter): a divergence in the last tenth of a long run is seen, one noisy batch is not.
EXPLOSION_END_STEPS = 10
#: Effective samples (normalised ESS times the sample count) below which one sample carries nearly all the
#: importance weight: the ESS floor of a trained sampler's weights and of AISIVI's inner weights.
ESS_FLOOR_SAMPLES = 1.5
#: Fraction of non-finite (NaN/inf) proposals above which a run is flagged.
NONFINITE_THRESHOLD = 0.01
#: R-hat above which the chains are said to disagree, once they are long enough to tell (Vehtari,
#: Gelman, Simpson, Carpenter & Bürkner 2021, "Rank-normalization, folding, and localization", Sec. 4:
#: rank-normalised split R-hat < 1.01).
RHAT_WARNING = 1.01
#: Bulk ESS per chain (of the worst coordinate) from which :data:`RHAT_WARNING` applies. Well-mixed
#: chains have R-hat near ``1 + 1 / (ESS per chain)`` plus noise: measured on AR(1) chains (10
#: coordinates, 10 seeds), 4 chains at 220 per chain reach 1.014, 512 chains at 100 per chain sit at
#: 1.008, 4 chains at 900 per chain stay below 1.003. Shorter runs are judged by
#: :data:`RHAT_WARNING_SHORT_CHAINS`.
ESS_PER_CHAIN_FOR_RHAT_WARNING = 400
#: R-hat above which chains with fewer effective draws than :data:`ESS_PER_CHAIN_FOR_RHAT_WARNING`
#: are said to disagree: well above the noise of 4 chains at 50 per chain (up to 1.03).
RHAT_WARNING_SHORT_CHAINS = 1.05


def convergence_warnings(r_hat, ess_bulk, num_chains: int) -> list[str]:
    """Warnings about the chains' R-hat and bulk ESS: a NaN/inf diagnostic, or chains that disagree.

    The rule: R-hat above :data:`RHAT_WARNING` (1.01) warns when every coordinate has a
    bulk ESS of at least :data:`ESS_PER_CHAIN_FOR_RHAT_WARNING` (400) per chain, above
    :data:`RHAT_WARNING_SHORT_CHAINS` (1.05) otherwise; an infinite R-hat (split chains
    each constant, not all equal) always warns. A NaN R-hat (constant or NaN draws) or a
    NaN/inf ESS is a warning of its own: the run cannot be judged by it.

    Parameters
    ----------
    r_hat, ess_bulk : array
        Per-coordinate rank-normalised split R-hat and bulk ESS
        (:func:`~jaxsamp.diagnostics.mcmc.convergence_diagnostics`), any shape.
    num_chains : int
        Chains the diagnostics were computed on (at least 2).

    Returns
    -------
    list of str
        Empty for a healthy run.
    """
    r_hat = np.ravel(np.asarray(r_hat, np.float64))
    ess_bulk = np.ravel(np.asarray(ess_bulk, np.float64))
    out = []
    if np.any(np.isnan(r_hat)):
        out.append(
            f"R-hat is NaN for {int(np.sum(np.isnan(r_hat)))} of {r_hat.size} coordinates "
            "(NaN draws, or draws constant over every chain): convergence cannot be judged there"
        )
    if not np.all(np.isfinite(ess_bulk)):
        out.append(
            f"the bulk ESS is NaN/inf for {int(np.sum(~np.isfinite(ess_bulk)))} of {ess_bulk.size} coordinates "
            "(NaN draws): convergence cannot be judged there"
        )
    defined = r_hat[~np.isnan(r_hat)]
    finite_ess = ess_bulk[np.isfinite(ess_bulk)]
    if not defined.size:
        return out
    long_enough = finite_ess.size > 0 and finite_ess.min() / num_chains >= ESS_PER_CHAIN_FOR_RHAT_WARNING
    threshold = RHAT_WARNING if long_enough else RHAT_WARNING_SHORT_CHAINS
    if defined.max() > threshold:
        out.append(
            f"the chains disagree: max R-hat {defined.max():.3f} > {threshold} "
            f"({'' if long_enough else 'under '}{ESS_PER_CHAIN_FOR_RHAT_WARNING} effective draws per chain; "
            "run longer, discard more burn-in, or look for modes the chains do not share)"
        )
    return out


def training_warnings(loss, *, ess: float | None = None, num_samples: int | None = None,
                      judge_progress: bool = True, steps=None, label: str | None = None) -> list[str]:
    """Warnings about a learned sampler's training run, the same for every family; each one line.

    The rules, on the per-step training loss (finite values only):

    * a NaN/inf loss at any step;
    * an exploding loss: its level at the end (the median of the last
      :data:`EXPLOSION_END_STEPS` steps, or of the last tenth when shorter) above
      :data:`LOSS_EXPLOSION_FACTOR` (1e3) times its level at the start in magnitude (or
      1, whichever is larger); the start is the first step's loss, the untrained
      sampler's, or the median of the first tenth of the steps if that is smaller in
      magnitude, so that a divergence at the first updates is seen as one later is;
    * no improvement: the median of the last tenth of the steps not below the first
      tenth's, judged only for runs of at
      least :data:`MIN_STEPS_FOR_PROGRESS` (200) steps and when ``judge_progress`` (a
      loss whose regression target moves with training, as adjoint matching's, may
      rise while the sampler improves);
    * the importance-sampling ESS at its floor: ``ess * num_samples < 1.5``, one of the
      ``num_samples`` samples carrying nearly all the weight; or NaN/inf (non-finite weights).

    Parameters
    ----------
    loss : array, shape (num_steps,) or (num_steps, ...)
        The training loss of every step (trailing axes are averaged).
    ess : float, optional
        The trained sampler's normalised ESS ``(sum w)^2 / (n sum w^2)`` in ``(0, 1]``.
    num_samples : int, optional
        The number of weighted samples ``ess`` was computed on (needed with ``ess``).
    judge_progress : bool
        Flag a loss that did not decrease.
    steps : bool array, shape (num_steps,), optional
        The steps that count (those after a warm-up in which no update is made, or
        one of two alternating stages, judged as a run of its own); default all.
    label : str, optional
        Prefixed to each warning (``"label: ..."``), to name one of several stages.

    Returns
    -------
    list of str
        Empty for a healthy run.
    """
    loss = np.asarray(loss, np.float64)
    if steps is not None:
        loss = loss[np.asarray(steps, bool)]
    loss = loss.reshape(len(loss), -1).mean(axis=1) if loss.ndim > 1 else loss
    out = []
    nonfinite = int(np.sum(~np.isfinite(loss)))
    if nonfinite:
        out.append(
            f"the training loss was NaN/inf at {nonfinite} of {loss.size} steps: training diverged "
            "(lower the learning rate, clip the gradients)"
        )
    window = max(1, loss.size // 10)
    first, last = _finite_median(loss[:window]), _finite_median(loss[-window:])
    if np.isfinite(first) and np.isfinite(last):
        start, start_where = _start_level(loss, first)
        end_steps = min(window, EXPLOSION_END_STEPS)
        end = _finite_median(loss[-end_steps:])
        if abs(end) > LOSS_EXPLOSION_FACTOR * max(abs(start), 1.0):
            end_where = "last tenth" if end_steps == window else f"median of the last {end_steps} steps"
            out.append(
                f"the training loss exploded from {start:.3g} ({start_where}) to {end:.3g} ({end_where}): "
                "training diverged (lower the learning rate)"
            )
        elif judge_progress and loss.size >= MIN_STEPS_FOR_PROGRESS and last >= first:
            out.append(
                f"the training loss did not improve: {first:.4g} in the first tenth of the {loss.size} steps, "
                f"{last:.4g} in the last (check the learning rate and the loss)"
            )
    if ess is not None and num_samples and not np.isfinite(float(ess)):
        out.append(
            f"the ESS is {float(ess)}: the importance weights are NaN/inf, the trained sampler cannot be judged "
            "by them"
        )
    elif ess is not None and num_samples and not float(ess) * num_samples >= ESS_FLOOR_SAMPLES:
        out.append(
            f"the ESS is {float(ess):.3g}, at its floor 1/{num_samples}: one sample carries nearly all the "
            "importance weight, the trained sampler misses the target"
        )
    return [f"{label}: {w}" for w in out] if label else out


def _finite_median(values) -> float:
    """The median of the finite entries of ``values`` (NaN when there are none)."""
    values = np.asarray(values, np.float64)
    values = values[np.isfinite(values)]
    return float(np.median(values)) if values.size else float("nan")


def _start_level(loss: np.ndarray, first_tenth: float) -> tuple[float, str]:
    """The loss's level at the start of training and where it was read: the first finite step's loss (the untrained
    sampler's) or the median of the first tenth ``first_tenth``, whichever is smaller in magnitude."""
    initial = float(loss[np.isfinite(loss)][0])
    if abs(initial) < abs(first_tenth):
        return initial, "first step" if np.isfinite(loss[0]) else "first finite step"
    return first_tenth, "first tenth of the steps"


def final_level(values) -> float:
    """A per-step training metric's level at the end of training: the median of its finite values over the last
    tenth of the steps (NaN when there are none).

    One step's value is one batch's, noisy (an importance-sampling ESS of one batch of 256
    paths can read 0.35 where the trained sampler's is 0.78); this is what
    :meth:`jaxsamp.learned.fit.Fitted.summary` reports and the ESS-floor rule of
    :func:`jaxsamp.fit` judges. Trailing axes are averaged first.

    Parameters
    ----------
    values : array, shape (num_steps,) or (num_steps, ...)
    """
    values = np.asarray(values, np.float64)
    values = values.reshape(len(values), -1).mean(axis=1) if values.ndim > 1 else values
    return _finite_median(values[-max(1, values.size // 10):])


def inner_ess_warnings(inner_ess, num_inner: int) -> list[str]:
    """A warning when a reverse model's importance weights sat on one of their ``num_inner`` draws at the end of training.

    AISIVI (Pielok, Bischl & Ruegamer 2025) estimates the score of its semi-implicit ``q`` by
    self-normalised importance sampling of ``num_inner`` draws from its reverse model ``tau``. When
    ``tau`` loses ``q(eps | z)``, one draw carries each estimate, which is then the score of a single
    conditional, and ``q`` drifts away from the target while the run returns normally. The rule: the
    mean normalised inner ESS over the last tenth of the steps (finite values only; pretraining steps
    are NaN) times ``num_inner`` below :data:`ESS_FLOOR_SAMPLES`, the floor rule of :func:`training_warnings`.

    Parameters
    ----------
    inner_ess : array, shape (num_steps,)
        The per-step mean normalised ESS of the inner weights (AISIVI's ``inner_ess`` metric).
    num_inner : int
        Inner draws per point, ``K``.

    Returns
    -------
    list of str
        Empty for a healthy run.
    """
    inner_ess = np.asarray(inner_ess, np.float64).reshape(-1)
    last = inner_ess[-max(1, inner_ess.size // 10):]
    last = last[np.isfinite(last)]
    if not last.size or float(np.mean(last)) * num_inner >= ESS_FLOOR_SAMPLES:
        return []
    return [
        f"the reverse model collapsed: the inner ESS in the last tenth of the steps was {float(np.mean(last)):.3g}, "
        f"at its floor 1/{num_inner}, so one inner draw carried each score estimate and q is not fitted to the "
        "target (raise num_inner, lower the learning rates or lengthen pretrain_steps; BSIVI cannot fail this way)"
    ]


def count_nonfinite_log_prob(log_prob: Callable, positions, *, gradient: bool = False) -> int:
    """Number of states in the batch ``positions`` where ``log_prob`` (with ``gradient``: it or its gradient) is NaN or inf.

    One compiled program per function and shapes (:func:`~jaxsamp.core.compiled.batched`).
    """
    if not gradient:
        return int(jnp.sum(~jnp.isfinite(batched(log_prob)(positions))))
    values, grads = batched(Partial(_value_and_gradient, as_partial(log_prob)))(positions)
    finite = jnp.isfinite(values) & jnp.all(jnp.isfinite(jnp.reshape(grads, (len(values), -1))), axis=1)
    return int(jnp.sum(~finite))


def _value_and_gradient(log_prob: Callable, x):
    return jax.value_and_grad(log_prob)(x)


def chain_warnings(
    *,
    num_chains: int,
    start: np.ndarray | None = None,
    end: np.ndarray | None = None,
    moved: np.ndarray | None = None,
    acceptance: np.ndarray | None = None,
    nonfinite: np.ndarray | None = None,
    burn_in: int = 0,
    continuous: bool = True,
    metropolis: bool = False,
    nonfinite_threshold: float = NONFINITE_THRESHOLD,
) -> list[str]:
    """Warnings about a multi-chain run that did not sample, each one line.

    Parameters
    ----------
    num_chains : int
        Chains (or particles) in the run.
    start, end : array, shape (num_chains, ...), optional
        Chain positions before the first and after the last step.
    moved : array, shape (num_steps,), optional
        Number of chains whose position changed in each step
        (``GuardInfo.moved`` summed over chains).
    acceptance : array, shape (num_steps,), optional
        Mean acceptance rate of each step (NaN for kernels that report none).
    nonfinite : array, shape (num_steps,), optional
        Number of chains whose proposal was rejected as non-finite in each step
        (``GuardInfo.rejected_nonfinite`` summed over chains).
    burn_in : int
        Leading steps left out of the acceptance checks.
    continuous : bool
        Real-valued states: a chain that ends exactly where it started never
        moved (on a discrete space it may have returned, so this rule is off).
    metropolis : bool
        The kernel accepts or rejects proposals, so an acceptance of exactly 0
        or 1 in every step means it does not sample.
    nonfinite_threshold : float
        Flag the run when more than this fraction of proposals was non-finite.

    Returns
    -------
    list of str
        Empty for a healthy run.
    """
    out: list[str] = []
    n = num_chains
    if moved is not None and moved.size and int(np.sum(moved)) == 0:
        out.append(
            f"no chain moved in any of the {moved.size} steps: the kernel does not sample with these settings "
            "(step size, number of integration steps) or every proposal was rejected"
        )
    elif continuous and start is not None and end is not None:
        stuck = int(np.sum(np.all(start.reshape(n, -1) == end.reshape(n, -1), axis=1)))
        if stuck:
            out.append(f"{stuck} of {n} chains never left their starting point")
    if metropolis and acceptance is not None:
        acc = np.asarray(acceptance, dtype=np.float64)[burn_in:]
        if acc.size and np.all(np.isfinite(acc)):
            if np.all(acc == 0.0):
                out.append(f"acceptance is exactly 0 in all {acc.size} steps: every proposal was rejected")
            elif np.all(acc == 1.0):
                out.append(
                    f"acceptance is exactly 1 in all {acc.size} steps: the proposals are probably identical to "
                    "the current state (for example zero integration steps)"
                )
    if nonfinite is not None and nonfinite.size:
        total = int(np.sum(nonfinite))
        frac = total / (n * nonfinite.size)
        if frac > nonfinite_threshold:
            what = "every proposal" if total == n * nonfinite.size else f"{100 * frac:.3g}% of proposals"
            out.append(
                f"{what} ({total} of {n * nonfinite.size}) had a NaN/inf log density and was rejected "
                "(guard_finite); the chains may be stuck at the edge of the support"
            )
    return out


def sample_warnings(num_nonfinite: int, num_samples: int, threshold: float = NONFINITE_THRESHOLD) -> list[str]:
    """A warning when more than ``threshold`` of a learned sampler's samples (or their weights) are NaN/inf."""
    if num_nonfinite <= threshold * num_samples:
        return []
    return [
        f"{num_nonfinite} of {num_samples} samples are NaN/inf and were left out of the metrics; "
        "the trained sampler diverges (lower the learning rate or the noise scale)"
    ]


def initial_warnings(num_nonfinite: int, num_chains: int) -> list[str]:
    """A warning when some chains start where the log density is NaN or inf (all of them is an error upstream)."""
    if num_nonfinite == 0:
        return []
    return [
        f"{num_nonfinite} of {num_chains} chains started where log_prob is NaN/inf; "
        "they cannot move until a proposal lands at a finite point"
    ]
