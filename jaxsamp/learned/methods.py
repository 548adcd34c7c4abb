"""The learned methods :func:`jaxsamp.fit` builds by name: one registration per method.

Each registration is the method's ``build(target, settings, *, batch_size,
optimizer)``, which returns a :class:`~jaxsamp.core.LearnedSampler`; ``meta`` holds
the settings dataclass and the default batch size (what one training step
simulates). How the method's training is judged is part of what ``build``
returns (its :class:`~jaxsamp.core.TrainingHealth`).

Every family is registered: diffusion (PIS, DDS, Adjoint Sampling, ASBS,
TPS-DPS), LEAPS, the variational family (SoftCVI, ELBO, SNIS forward KL, AISIVI,
BSIVI; its batch is the draws of ``q`` per step), GFlowNets (``gflownet``),
Bernoulli denoising (``bernoulli_denoising``) and the Boltzmann curves (``curves``; the
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
from jaxsamp.learned.binary import bernoulli_denoising
from jaxsamp.learned.curves.training import BoltzmannCurve, BoltzmannCurveSettings
from jaxsamp.learned.diffusion import adjoint, asbs, pis_dds
from jaxsamp.learned.diffusion.tps_dps import TpsDps, TpsDpsSettings
from jaxsamp.learned.gflownet import training as gflownet_training
from jaxsamp.learned.leaps.training import Leaps, LeapsSettings, as_lattice_path
from jaxsamp.learned.vi import aisivi, bsivi, elbo, snis_forward_kl, softcvi



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


LEARNED.register("pis", settings=pis_dds.PisSettings, batch_size=pis_dds.BATCH_SIZE)(pis_dds.build_pis)
LEARNED.register("dds", settings=pis_dds.DdsSettings, batch_size=pis_dds.BATCH_SIZE)(pis_dds.build_dds)
LEARNED.register("adjoint", settings=adjoint.AdjointSettings, batch_size=adjoint.BATCH_SIZE)(adjoint.build)
LEARNED.register("asbs", settings=asbs.AsbsSettings, batch_size=adjoint.BATCH_SIZE)(asbs.build)


# the variational family: each method's build declares its health (only the ELBO's loss is a fixed objective of q)
LEARNED.register("softcvi", settings=softcvi.SoftCVISettings, batch_size=softcvi.BATCH_SIZE)(softcvi.build)
LEARNED.register("elbo", settings=elbo.ELBOSettings, batch_size=elbo.BATCH_SIZE)(elbo.build)
LEARNED.register("snis_forward_kl", settings=snis_forward_kl.SNISForwardKLSettings,
                 batch_size=snis_forward_kl.BATCH_SIZE)(snis_forward_kl.build)
LEARNED.register("aisivi", settings=aisivi.AISIVISettings, batch_size=aisivi.BATCH_SIZE)(aisivi.build)
LEARNED.register("bsivi", settings=bsivi.BSIVISettings, batch_size=bsivi.BATCH_SIZE)(bsivi.build)


LEARNED.register(
    "gflownet", "GFlowNet on a DAG environment (TB/DB/SubTB/soft DQN; P_B by TLM, Gritsaev et al. 2025); exact pi and "
    "log Z", settings=gflownet_training.GFlowNetSettings, batch_size=gflownet_training.BATCH_SIZE,
    as_target=gflownet_training.as_environment,
)(gflownet_training.build)


LEARNED.register(
    "bernoulli_denoising", "Bernoulli-noise denoising (Bach & Saremi 2025): a denoiser learned from +-1 samples, then "
    "noisy chains", settings=bernoulli_denoising.BernoulliDenoisingSettings, batch_size=bernoulli_denoising.BATCH_SIZE,
    as_target=bernoulli_denoising.training_source,
)(bernoulli_denoising.build)


# box collocation's loss is a fixed objective; trajectory collocation's points move with the flow
@LEARNED.register("curves", settings=BoltzmannCurveSettings, batch_size=256)
def curves(target, settings: BoltzmannCurveSettings, *, batch_size: int, optimizer=None) -> LearnedSampler:
    """Boltzmann curves (Chemseddine et al. 2025; Máté & Fleuret 2023): a PINN-trained curve and velocity, ODE samples."""
    return _legacy(BoltzmannCurve(target, settings, batch_size), settings.fixed_objective, optimizer)


# the log-variance loss is taken on a buffer of paths rolled out at an annealed behaviour temperature
@LEARNED.register("tps_dps", settings=TpsDpsSettings, batch_size=512)
def tps_dps(target, settings: TpsDpsSettings, *, batch_size: int, optimizer=None) -> LearnedSampler:
    """TPS-DPS (Seong et al. 2025): transition paths of a 2-D system; batch_size = paths per rollout, samples are paths."""
    return _legacy(TpsDps(target, settings, batch_size), False, optimizer)


# the PINN loss is taken on a buffer of the walkers' own states over a curriculum that lengthens the horizon
@LEARNED.register("leaps", settings=LeapsSettings, batch_size=200, as_target=as_lattice_path)
def leaps(target, settings: LeapsSettings, *, batch_size: int, optimizer=None) -> LearnedSampler:
    """LEAPS (Holderrieth, Albergo & Jaakkola 2025): a CTMC with locally equivariant rates on an Ising/Potts lattice."""
    return _legacy(Leaps(target, settings, batch_size), False, optimizer)
