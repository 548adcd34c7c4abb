"""The learned methods :func:`jaxsamp.fit` builds by name: one registration per method.

Each factory ``factory(target, settings, batch_size)`` returns a
:class:`~jaxsamp.core.Trainer` (``init``, ``step``) with ``sample(state, key, n)
-> WeightedSamples`` and ``evaluate(state, key, n) -> dict``. ``meta`` holds the
settings dataclass, the default batch size (what one training step simulates)
and ``judge_progress``: whether the loss is a fixed objective, so that a loss
that does not decrease means trouble (the run-health rule of
:func:`jaxsamp.diagnostics.health.training_warnings`), a bool or a function of
the settings when it depends on them.

Every family is registered: diffusion (PIS, DDS, Adjoint Sampling, ASBS,
TPS-DPS), LEAPS, the variational family (SoftCVI, ELBO, SNIS forward KL, AISIVI,
BSIVI; its batch is the draws of ``q`` per step), GFlowNets (``gflownet``),
Bernoulli denoising (``bernoulli``) and the Boltzmann curves (``curves``; the
interpolation is a setting). A method that does not take a log density declares
the form it takes with ``as_target`` (a function that returns the target as the
method takes it, or raises an InputError saying what is needed), or its class
checks the target and says what it needs (TPS-DPS: a 2-D transition-path
target).
"""

from __future__ import annotations

from jaxsamp.core.registry import LEARNED
from jaxsamp.learned.binary.bernoulli_denoising import BernoulliDenoiser, DenoiserSettings, training_source
from jaxsamp.learned.curves.training import BoltzmannCurve, BoltzmannCurveSettings
from jaxsamp.learned.diffusion.adjoint import AdjointSampling, AdjointSettings
from jaxsamp.learned.diffusion.asbs import Asbs, AsbsSettings
from jaxsamp.learned.diffusion.pis_dds import DiffusionSampler, DiffusionSettings
from jaxsamp.learned.diffusion.tps_dps import TpsDps, TpsDpsSettings
from jaxsamp.learned.gflownet.training import GFlowNet, GFlowNetSettings, as_environment
from jaxsamp.learned.leaps.training import Leaps, LeapsSettings, as_lattice_path
from jaxsamp.vi.aisivi import AISIVI, BSIVI, AISIVISettings
from jaxsamp.vi.elbo import ELBO, ELBOSettings
from jaxsamp.vi.snis_forward_kl import SNISForwardKL, SNISForwardKLSettings
from jaxsamp.vi.softcvi import SoftCVI, SoftCVISettings


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


# the variational objectives: only the ELBO's loss is a fixed objective of q (vi_experiment.training_warnings says why)
@LEARNED.register("softcvi", settings=SoftCVISettings, batch_size=8, judge_progress=False)
def softcvi(target, settings: SoftCVISettings, batch_size: int) -> SoftCVI:
    """SoftCVI (Ward, Beaumont & Fasiolo 2025): a variational family fitted as a soft-label classifier, K = batch."""
    return SoftCVI(target, settings, batch_size)


@LEARNED.register("elbo", settings=ELBOSettings, batch_size=8, judge_progress=True)
def elbo(target, settings: ELBOSettings, batch_size: int) -> ELBO:
    """The reparameterised ELBO (reverse KL) on a variational family, optionally sticking the landing."""
    return ELBO(target, settings, batch_size)


@LEARNED.register("snis_fkl", settings=SNISForwardKLSettings, batch_size=8, judge_progress=False)
def snis_fkl(target, settings: SNISForwardKLSettings, batch_size: int) -> SNISForwardKL:
    """Forward KL by self-normalised importance sampling from the variational family itself."""
    return SNISForwardKL(target, settings, batch_size)


@LEARNED.register("aisivi", settings=AISIVISettings, batch_size=128, judge_progress=False)
def aisivi(target, settings: AISIVISettings, batch_size: int) -> AISIVI:
    """AISIVI (Pielok, Bischl & Ruegamer 2025): semi-implicit VI with a reverse model's importance-sampled score."""
    return AISIVI(target, settings, batch_size)


@LEARNED.register("bsivi", settings=AISIVISettings, batch_size=128, judge_progress=False)
def bsivi(target, settings: AISIVISettings, batch_size: int) -> BSIVI:
    """BSIVI, AISIVI's baseline: semi-implicit VI with SIVI's prior-draw score estimate, no reverse model."""
    return BSIVI(target, settings, batch_size)


@LEARNED.register("gflownet", settings=GFlowNetSettings, batch_size=16, as_target=as_environment,
                  judge_progress=lambda settings: settings.judge_progress)
def gflownet(target, settings: GFlowNetSettings, batch_size: int) -> GFlowNet:
    """GFlowNet on a DAG environment (TB/DB/SubTB/soft DQN; P_B by TLM, Gritsaev et al. 2025); exact pi and log Z."""
    return GFlowNet(target, settings, batch_size)


# the denoiser's cross-entropy on a fixed training set is a fixed objective: judged for progress
@LEARNED.register("bernoulli", settings=DenoiserSettings, batch_size=256, as_target=training_source,
                  judge_progress=True)
def bernoulli(target, settings: DenoiserSettings, batch_size: int) -> BernoulliDenoiser:
    """Bernoulli-noise denoising (Bach & Saremi 2025): a denoiser learned from +-1 samples, then noisy chains."""
    return BernoulliDenoiser(target, settings, batch_size)


# box collocation's loss is a fixed objective; trajectory collocation's points move with the flow
@LEARNED.register("curves", settings=BoltzmannCurveSettings, batch_size=256,
                  judge_progress=lambda settings: settings.fixed_objective)
def curves(target, settings: BoltzmannCurveSettings, batch_size: int) -> BoltzmannCurve:
    """Boltzmann curves (Chemseddine et al. 2025; Máté & Fleuret 2023): a PINN-trained curve and velocity, ODE samples."""
    return BoltzmannCurve(target, settings, batch_size)


# the log-variance loss is taken on a buffer of paths rolled out at an annealed behaviour temperature
@LEARNED.register("tps_dps", settings=TpsDpsSettings, batch_size=512, judge_progress=False)
def tps_dps(target, settings: TpsDpsSettings, batch_size: int) -> TpsDps:
    """TPS-DPS (Seong et al. 2025): transition paths of a 2-D system; batch_size = paths per rollout, samples are paths."""
    return TpsDps(target, settings, batch_size)


# the PINN loss is taken on a buffer of the walkers' own states over a curriculum that lengthens the horizon
@LEARNED.register("leaps", settings=LeapsSettings, batch_size=200, as_target=as_lattice_path, judge_progress=False)
def leaps(target, settings: LeapsSettings, batch_size: int) -> Leaps:
    """LEAPS (Holderrieth, Albergo & Jaakkola 2025): a CTMC with locally equivariant rates on an Ising/Potts lattice."""
    return Leaps(target, settings, batch_size)
