"""Bayesian deep ensembles by NUTS (BDE): NUTS chains started from a deep ensemble's members, window-adapted.

The baseline of Sommer et al. (2025, ICLR; reference config
``experiments/replicate_uci/nuts.yaml``: 12 chains, 100 warm-up steps, 1000
draws, no thinning), run through the same pieces as MILE
(:func:`jaxsamp.mcmc.mile.sample_mile`): member ``k`` starts chain ``k`` exactly,
Stan's windowed adaptation (step size and diagonal inverse mass per chain,
:func:`jaxsamp.mcmc.warmup`) warms every chain up at once through the
driver, and the adapted chains sample through :func:`jaxsamp.run` with
progress, checkpoints and bit-identical resume. Gradient evaluations are the
NUTS trajectories' integration steps summed over chains (vmapped chains wait
for the longest trajectory of a step, so the wall time follows the maximum).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Annotated

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core.driver import run
from jaxsamp.core.validation import Interval, OpenUnitFloat, PositiveInt, check_fields
from jaxsamp.mcmc.mile import EnsembleDraws, _phase_options, _timed, check_members, settings_fingerprint
from jaxsamp.mcmc.warmup import warmup


@dataclasses.dataclass(frozen=True)
class BdeSettings:
    """NUTS-ensemble budgets (defaults: the reference's ``nuts.yaml``).

    Attributes
    ----------
    warmup_steps : int
        Window-adaptation steps per chain (100; at least 20).
    num_samples : int
        Draws kept per chain (1000), every NUTS step kept.
    max_num_doublings : int
        NUTS tree depth limit (blackjax's 10).
    target_acceptance : float
        Dual-averaging target (0.8).
    """

    warmup_steps: Annotated[int, Interval(ge=20)] = 100
    num_samples: Annotated[int, Interval(ge=4)] = 1000
    max_num_doublings: PositiveInt = 10
    target_acceptance: OpenUnitFloat = 0.8

    def __post_init__(self):
        check_fields(self)


def sample_bde(
    logdensity_fn: Callable,
    members,
    key,
    settings: BdeSettings = BdeSettings(),
    *,
    progress: bool = True,
    checkpoint_dir=None,
    checkpoint_every: int | None = None,
    chunk: int | None = None,
    identity: str | None = None,
) -> EnsembleDraws:
    """Window-adapt NUTS on every member and sample, all members at once, through :func:`jaxsamp.run`.

    Parameters are those of :func:`~jaxsamp.mcmc.mile.sample_mile`; the phases
    checkpoint into ``bde_warmup`` and ``bde_sample`` under ``checkpoint_dir``.
    ``parameters`` holds each chain's adapted ``step_size``; ``tuning_trace`` the
    warm-up's :class:`~jaxsamp.mcmc.WarmupInfo`.
    """
    members = check_members(members)
    if identity is None:
        identity = settings_fingerprint(settings, list(members.shape))
    options = lambda name: _phase_options(checkpoint_dir, name, progress, checkpoint_every, chunk, identity)
    k_warmup, k_sample = jax.random.split(key)

    def tune():
        opts = options("bde_warmup")
        del opts["chunk"], opts["checkpoint_every"], opts["desc"]  # warmup() takes the driver's other options
        return warmup(
            logdensity_fn,
            members,
            k_warmup,
            settings.warmup_steps,
            method="window",
            algorithm="nuts",
            target_acceptance=settings.target_acceptance,
            max_num_doublings=settings.max_num_doublings,
            **opts,
        )

    (warm, trace), tuning_seconds = _timed(tune)
    kernel = warm.sampling_kernel(logdensity_fn)

    def sample():
        return run(
            kernel.step,
            kernel.init(warm),
            k_sample,
            settings.num_samples,
            trace=lambda s, info: (s.position, info.inner.num_integration_steps),
            **options("bde_sample"),
        )

    (_, (draws, steps)), sampling_seconds = _timed(sample)
    num_members = members.shape[0]
    return EnsembleDraws(
        draws=np.asarray(draws),
        cumulative_grad_evals=np.cumsum(np.asarray(steps, np.float64).sum(axis=1)),
        tuning_grad_evals=float(num_members + np.asarray(trace.num_integration_steps, np.float64).sum()),
        tuning_seconds=tuning_seconds,
        sampling_seconds=sampling_seconds,
        parameters={"step_size": np.asarray(jnp.broadcast_to(warm.parameters["step_size"], (num_members,)))},
        tuning_trace=jax.tree.map(np.asarray, trace),
    )
