"""The learned methods :func:`jaxsamp.fit` builds by name: one registration per method.

Each factory ``factory(target, settings, batch_size)`` returns a
:class:`~jaxsamp.core.Trainer` (``init``, ``step``) with ``sample(state, key, n)
-> WeightedSamples`` and ``evaluate(state, key, n) -> dict``. ``meta`` holds the
settings dataclass, the default batch size (what one training step simulates)
and ``judge_progress``: whether the loss is a fixed objective, so that a loss
that does not decrease means trouble (the run-health rule of
:func:`jaxsamp.diagnostics.health.training_warnings`).

So far the diffusion family is registered (PIS, DDS, Adjoint Sampling, ASBS,
TPS-DPS) and LEAPS; the other families keep their own entry points (issue 41
lists them). LEAPS takes an Ising or Potts lattice target and TPS-DPS a 2-D
transition-path target; each class checks its target and says what it needs.
"""

from __future__ import annotations

from jaxsamp.core.registry import LEARNED
from jaxsamp.learned.diffusion.adjoint import AdjointSampling, AdjointSettings
from jaxsamp.learned.diffusion.asbs import Asbs, AsbsSettings
from jaxsamp.learned.diffusion.pis_dds import DiffusionSampler, DiffusionSettings
from jaxsamp.learned.diffusion.tps_dps import TpsDps, TpsDpsSettings
from jaxsamp.learned.leaps.training import Leaps, LeapsSettings


@LEARNED.register("pis", settings=DiffusionSettings, batch_size=256, judge_progress=True)
def pis(target, settings: DiffusionSettings, batch_size: int) -> DiffusionSampler:
    """PIS, the Path Integral Sampler (Zhang & Chen 2022): a learned drift from a point, exact path weights."""
    return DiffusionSampler("pis", target, settings, batch_size)


@LEARNED.register("dds", settings=DiffusionSettings, batch_size=256, judge_progress=True)
def dds(target, settings: DiffusionSettings, batch_size: int) -> DiffusionSampler:
    """DDS, the Denoising Diffusion Sampler (Vargas et al. 2023): a learned drift of an OU process, exact path weights."""
    return DiffusionSampler("dds", target, settings, batch_size)


# adjoint matching regresses on targets that move with the drift: a rising loss is no sign of failure
@LEARNED.register("adjoint", settings=AdjointSettings, batch_size=256, judge_progress=False)
def adjoint(target, settings: AdjointSettings, batch_size: int) -> AdjointSampling:
    """Adjoint Sampling (Havens et al. 2025): reciprocal adjoint matching, one energy gradient per path."""
    return AdjointSampling(target, settings, batch_size)


@LEARNED.register("asbs", settings=AsbsSettings, batch_size=256, judge_progress=False)
def asbs(target, settings: AsbsSettings, batch_size: int) -> Asbs:
    """ASBS, Adjoint Schrödinger Bridge Sampler (Liu et al. 2025): adjoint and corrector matching from a prior."""
    return Asbs(target, settings, batch_size)


# the log-variance loss is taken on a buffer of paths rolled out at an annealed behaviour temperature
@LEARNED.register("tps_dps", settings=TpsDpsSettings, batch_size=512, judge_progress=False)
def tps_dps(target, settings: TpsDpsSettings, batch_size: int) -> TpsDps:
    """TPS-DPS (Seong et al. 2025): transition paths of a 2-D system; batch_size = paths per rollout, samples are paths."""
    return TpsDps(target, settings, batch_size)


# the PINN loss is taken on a buffer of the walkers' own states over a curriculum that lengthens the horizon
@LEARNED.register("leaps", settings=LeapsSettings, batch_size=200, judge_progress=False)
def leaps(target, settings: LeapsSettings, batch_size: int) -> Leaps:
    """LEAPS (Holderrieth, Albergo & Jaakkola 2025): a CTMC with locally equivariant rates on an Ising/Potts lattice."""
    return Leaps(target, settings, batch_size)
