"""The run-health check of every learned experiment kind: one call from its traced loss and evaluated ESS.

Each learned kind (``diffusion``, ``vi``, ``adjoint``, ``leaps``, ``gflownet``,
``tps_dps``, ``bernoulli_denoising``, ``boltzmann_curves``) hands the per-step
loss its trainer already reports, the ESS its evaluation already computes (with
the number of samples it was computed on) and whether the loss can be judged for
progress, to :func:`learned_run_warnings`; the rules themselves are
:func:`jaxsamp.diagnostics.health.training_warnings`. The warnings go into the
kind's ``metrics["warnings"]``, which the runner writes to ``metrics.json`` and
stderr and turns into an error under ``--strict``.
"""

from __future__ import annotations

import numpy as np

from jaxsamp.diagnostics import health


def learned_run_warnings(loss, *, judge_progress: bool, steps=None, ess: float | None = None,
                         num_samples: int | None = None, label: str | None = None) -> list[str]:
    """The training-health warnings of one learned run (NaN/inf or exploding loss, no progress, ESS at its floor).

    Parameters
    ----------
    loss : array, shape (num_steps,) or (num_steps, ...)
        The per-step training loss from the driver's trace (a quantity to minimise;
        negate one to maximise).
    judge_progress : bool
        Flag a loss that did not decrease over the run (runs of at least
        :data:`~jaxsamp.diagnostics.health.MIN_STEPS_FOR_PROGRESS` steps). False where the
        loss's target or data move with training, so a rising loss need not mean failure.
    steps : bool array, shape (num_steps,), optional
        The steps that count (e.g. those after a warm-up in which no update is made, or
        one of two alternating stages); default all.
    ess : float, optional
        The trained sampler's normalised importance-sampling ESS.
    num_samples : int, optional
        The number of weighted samples ``ess`` was computed on.
    label : str, optional
        Prefixed to each warning (``"label: ..."``), to name one of several runs or stages.

    Returns
    -------
    list of str
        Empty for a healthy run.
    """
    loss = np.asarray(loss, np.float64)
    if steps is not None:
        loss = loss[np.asarray(steps, bool)]
    out = health.training_warnings(loss, ess=ess, num_samples=num_samples, judge_progress=judge_progress)
    return [f"{label}: {w}" for w in out] if label else out
