"""The learned methods :func:`jaxsamp.fit` builds by name: one registration per method.

Each factory ``factory(target, settings, batch_size)`` returns a
:class:`~jaxsamp.core.Trainer` (``init``, ``step``) with ``sample(state, key, n)
-> WeightedSamples`` and ``evaluate(state, key, n) -> dict``. ``meta`` holds the
settings dataclass, the default batch size (what one training step simulates)
and ``judge_progress``: whether the loss is a fixed objective, so that a loss
that does not decrease means trouble (the run-health rule of
:func:`jaxsamp.diagnostics.health.training_warnings`), a bool or a function of
the settings when it depends on them.

So far the diffusion family (PIS, DDS, Adjoint Sampling, ASBS) and the Boltzmann
curves (``curves``; the interpolation is a setting) are registered; the other
families keep their own entry points (issue 41 lists them).
"""

from __future__ import annotations

from jaxsamp.core.registry import LEARNED
from jaxsamp.learned.diffusion.adjoint import AdjointSampling, AdjointSettings
from jaxsamp.learned.diffusion.asbs import Asbs, AsbsSettings
from jaxsamp.learned.curves.training import BoltzmannCurve, BoltzmannCurveSettings
from jaxsamp.learned.diffusion.pis_dds import DiffusionSampler, DiffusionSettings


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


# box collocation's loss is a fixed objective; trajectory collocation's points move with the flow
@LEARNED.register("curves", settings=BoltzmannCurveSettings, batch_size=256,
                  judge_progress=lambda settings: settings.fixed_objective)
def curves(target, settings: BoltzmannCurveSettings, batch_size: int) -> BoltzmannCurve:
    """Boltzmann curves (Chemseddine et al. 2025; Máté & Fleuret 2023): a PINN-trained curve and velocity, ODE samples."""
    return BoltzmannCurve(target, settings, batch_size)
