"""The learned methods :func:`jaxsamp.fit` builds by name: one registration per method.

Each registration is the method's ``build(target, settings, *, batch_size,
optimizer)``, which returns a :class:`~jaxsamp.core.LearnedSampler`; ``meta`` holds
the settings dataclass and the default batch size (what one training step
simulates). How the method's training is judged is part of what ``build``
returns (its :class:`~jaxsamp.core.TrainingHealth`).

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

from jaxsamp.core.errors import InputError
from jaxsamp.core.protocols import LearnedSampler, TrainingHealth
from jaxsamp.core.registry import LEARNED
from jaxsamp.learned.binary.bernoulli_denoising import BernoulliDenoiser, DenoiserSettings, training_source
from jaxsamp.learned.curves import training as curves_training
from jaxsamp.learned.curves.training import CurvesSettings
from jaxsamp.learned.diffusion.adjoint import AdjointSampling, AdjointSettings
from jaxsamp.learned.diffusion.asbs import Asbs, AsbsSettings
from jaxsamp.learned.diffusion.pis_dds import DiffusionSampler, DiffusionSettings
from jaxsamp.learned.diffusion import tps_dps as tps_dps_numerics
from jaxsamp.learned.diffusion.tps_dps import TpsDpsSettings
from jaxsamp.learned.gflownet.training import GFlowNet, GFlowNetSettings, as_environment
from jaxsamp.learned.leaps import training as leaps_training
from jaxsamp.learned.leaps.training import LeapsSettings, as_lattice_path
from jaxsamp.vi.aisivi import AISIVI, BSIVI, AISIVISettings
from jaxsamp.vi.elbo import ELBO, ELBOSettings
from jaxsamp.vi.snis_forward_kl import SNISForwardKL, SNISForwardKLSettings
from jaxsamp.vi.softcvi import SoftCVI, SoftCVISettings



def _legacy(obj, judge_progress: bool, optimizer) -> LearnedSampler:
    """A family class not yet converted to its own ``build``, as a LearnedSampler (removed when the last one is)."""
    if optimizer is not None:
        raise InputError(f"{type(obj).__name__} takes no optimizer= yet")
    import inspect

    accepted = inspect.signature(obj.evaluate).parameters
    known = [n for n in list(accepted)[3:] if accepted[n].kind is not inspect.Parameter.VAR_KEYWORD]
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values())

    def evaluate(key, state, num_samples, **options):
        unknown = sorted(set(options) - set(known))
        if unknown and not takes_any:
            raise InputError(f"evaluate takes no option {', '.join(unknown)}", f"its options: {', '.join(known) or 'none'}")
        return obj.evaluate(state, key, num_samples, **options)

    return LearnedSampler(obj.init, obj.step, lambda key, state, n: obj.sample(state, key, n), evaluate,
                          TrainingHealth(judge_progress, checks=getattr(obj, "health_warnings", None)),
                          jit_sample=not getattr(obj, "samples_through_the_driver", False))

@LEARNED.register("pis", settings=DiffusionSettings, batch_size=256)
def pis(target, settings: DiffusionSettings, *, batch_size: int, optimizer=None) -> LearnedSampler:
    """PIS, the Path Integral Sampler (Zhang & Chen 2022): a learned drift from a point, exact path weights."""
    return _legacy(DiffusionSampler("pis", target, settings, batch_size, optimizer), True, None)


@LEARNED.register("dds", settings=DiffusionSettings, batch_size=256)
def dds(target, settings: DiffusionSettings, *, batch_size: int, optimizer=None) -> LearnedSampler:
    """DDS, the Denoising Diffusion Sampler (Vargas et al. 2023): a learned drift of an OU process, exact path weights."""
    return _legacy(DiffusionSampler("dds", target, settings, batch_size, optimizer), True, None)


# adjoint matching regresses on targets that move with the drift: a rising loss is no sign of failure
@LEARNED.register("adjoint", settings=AdjointSettings, batch_size=256)
def adjoint(target, settings: AdjointSettings, *, batch_size: int, optimizer=None) -> LearnedSampler:
    """Adjoint Sampling (Havens et al. 2025): reciprocal adjoint matching, one energy gradient per path."""
    return _legacy(AdjointSampling(target, settings, batch_size), False, optimizer)


@LEARNED.register("asbs", settings=AsbsSettings, batch_size=256)
def asbs(target, settings: AsbsSettings, *, batch_size: int, optimizer=None) -> LearnedSampler:
    """ASBS, Adjoint Schrödinger Bridge Sampler (Liu et al. 2025): adjoint and corrector matching from a prior."""
    return _legacy(Asbs(target, settings, batch_size), False, optimizer)


# the variational objectives: only the ELBO's loss is a fixed objective of q (vi_experiment.training_warnings says why)
@LEARNED.register("softcvi", settings=SoftCVISettings, batch_size=8)
def softcvi(target, settings: SoftCVISettings, *, batch_size: int, optimizer=None) -> LearnedSampler:
    """SoftCVI (Ward, Beaumont & Fasiolo 2025): a variational family fitted as a soft-label classifier, K = batch."""
    return _legacy(SoftCVI(target, settings, batch_size), False, optimizer)


@LEARNED.register("elbo", settings=ELBOSettings, batch_size=8)
def elbo(target, settings: ELBOSettings, *, batch_size: int, optimizer=None) -> LearnedSampler:
    """The reparameterised ELBO (reverse KL) on a variational family, optionally sticking the landing."""
    return _legacy(ELBO(target, settings, batch_size), True, optimizer)


@LEARNED.register("snis_fkl", settings=SNISForwardKLSettings, batch_size=8)
def snis_fkl(target, settings: SNISForwardKLSettings, *, batch_size: int, optimizer=None) -> LearnedSampler:
    """Forward KL by self-normalised importance sampling from the variational family itself."""
    return _legacy(SNISForwardKL(target, settings, batch_size), False, optimizer)


@LEARNED.register("aisivi", settings=AISIVISettings, batch_size=128)
def aisivi(target, settings: AISIVISettings, *, batch_size: int, optimizer=None) -> LearnedSampler:
    """AISIVI (Pielok, Bischl & Ruegamer 2025): semi-implicit VI with a reverse model's importance-sampled score."""
    return _legacy(AISIVI(target, settings, batch_size), False, optimizer)


@LEARNED.register("bsivi", settings=AISIVISettings, batch_size=128)
def bsivi(target, settings: AISIVISettings, *, batch_size: int, optimizer=None) -> LearnedSampler:
    """BSIVI, AISIVI's baseline: semi-implicit VI with SIVI's prior-draw score estimate, no reverse model."""
    return _legacy(BSIVI(target, settings, batch_size), False, optimizer)


@LEARNED.register("gflownet", settings=GFlowNetSettings, batch_size=16, as_target=as_environment)
def gflownet(target, settings: GFlowNetSettings, *, batch_size: int, optimizer=None) -> LearnedSampler:
    """GFlowNet on a DAG environment (TB/DB/SubTB/soft DQN; P_B by TLM, Gritsaev et al. 2025); exact pi and log Z."""
    return _legacy(GFlowNet(target, settings, batch_size), settings.judge_progress, optimizer)


# the denoiser's cross-entropy on a fixed training set is a fixed objective: judged for progress
@LEARNED.register("bernoulli", settings=DenoiserSettings, batch_size=256, as_target=training_source)
def bernoulli(target, settings: DenoiserSettings, *, batch_size: int, optimizer=None) -> LearnedSampler:
    """Bernoulli-noise denoising (Bach & Saremi 2025): a denoiser learned from +-1 samples, then noisy chains."""
    return _legacy(BernoulliDenoiser(target, settings, batch_size), True, optimizer)


# each build declares how its training is judged (its TrainingHealth)
LEARNED.register("curves", settings=CurvesSettings, batch_size=curves_training.BATCH_SIZE)(curves_training.build)
LEARNED.register("tps_dps", settings=TpsDpsSettings, batch_size=tps_dps_numerics.BATCH_SIZE)(tps_dps_numerics.build)
LEARNED.register("leaps", settings=LeapsSettings, batch_size=leaps_training.BATCH_SIZE,
                 as_target=as_lattice_path)(leaps_training.build)
