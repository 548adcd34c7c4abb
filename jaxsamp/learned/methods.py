"""The learned methods :func:`jaxsamp.fit` builds by name: one registration per method.

Each registration is the method's ``build(target, settings, *, batch_size,
optimizer)``, which returns a :class:`~jaxsamp.core.LearnedSampler`; ``meta`` holds
the settings dataclass and the default batch size (what one training step
simulates). How the method's training is judged is part of what ``build``
returns (its :class:`~jaxsamp.core.TrainingHealth`).

Every family is registered: diffusion (PIS, DDS, Adjoint Sampling, ASBS,
SCLD and CMCD, TPS-DPS), LEAPS, the variational family (SoftCVI, ELBO, SNIS forward KL, AISIVI,
BSIVI; its batch is the draws of ``q`` per step), GFlowNets (``gflownet``),
Bernoulli denoising (``bernoulli_denoising``) and the Boltzmann curves (``curves``; the
interpolation is a setting). A method that does not take a log density declares
the form it takes with ``as_target`` (a function that returns the target as the
method takes it, or raises an InputError saying what is needed), or its ``build``
checks the target and says what it needs (TPS-DPS: a 2-D transition-path
target). What ``build`` returns names the Target whose log density training
follows (:attr:`~jaxsamp.core.LearnedSampler.density`), which :func:`jaxsamp.fit`
checks at a few starting points before training. ``smc_proposal=True`` marks a method whose ``build`` gives the
sampler's learned moves along a path (:class:`~jaxsamp.core.SMCProposal`, run by
:meth:`~jaxsamp.learned.fit.Fitted.smc`).
"""

from __future__ import annotations

from jaxsamp.core.registry import LEARNED
from jaxsamp.learned.binary import bernoulli_denoising
from jaxsamp.learned.curves import training as curves
from jaxsamp.learned.diffusion import adjoint, asbs, pis_dds, scld, tps_dps
from jaxsamp.learned.gflownet import training as gflownet
from jaxsamp.learned.leaps import training as leaps
from jaxsamp.learned.vi import aisivi, bsivi, elbo, snis_forward_kl, softcvi

LEARNED.register("pis", settings=pis_dds.PisSettings, batch_size=pis_dds.BATCH_SIZE)(pis_dds.build_pis)
LEARNED.register("dds", settings=pis_dds.DdsSettings, batch_size=pis_dds.BATCH_SIZE)(pis_dds.build_dds)
LEARNED.register("adjoint", settings=adjoint.AdjointSettings, batch_size=adjoint.BATCH_SIZE)(adjoint.build)
LEARNED.register("asbs", settings=asbs.AsbsSettings, batch_size=adjoint.BATCH_SIZE)(asbs.build)
LEARNED.register("scld", settings=scld.ScldSettings, batch_size=scld.BATCH_SIZE, smc_proposal=True)(scld.build_scld)
LEARNED.register("cmcd", settings=scld.CmcdSettings, batch_size=scld.BATCH_SIZE, smc_proposal=True)(scld.build_cmcd)


# the variational family: each method's build declares its health (only the ELBO's loss is a fixed objective of q)
LEARNED.register("softcvi", settings=softcvi.SoftCVISettings, batch_size=softcvi.BATCH_SIZE)(softcvi.build)
LEARNED.register("elbo", settings=elbo.ELBOSettings, batch_size=elbo.BATCH_SIZE)(elbo.build)
LEARNED.register("snis_forward_kl", settings=snis_forward_kl.SNISForwardKLSettings,
                 batch_size=snis_forward_kl.BATCH_SIZE)(snis_forward_kl.build)
LEARNED.register("aisivi", settings=aisivi.AISIVISettings, batch_size=aisivi.BATCH_SIZE)(aisivi.build)
LEARNED.register("bsivi", settings=bsivi.BSIVISettings, batch_size=bsivi.BATCH_SIZE)(bsivi.build)


LEARNED.register(
    "gflownet", "GFlowNet on a DAG environment (TB/DB/SubTB/soft DQN; P_B by TLM, Gritsaev et al. 2025); exact pi and "
    "log Z", settings=gflownet.GFlowNetSettings, batch_size=gflownet.BATCH_SIZE,
    as_target=gflownet.as_environment,
)(gflownet.build)


LEARNED.register(
    "bernoulli_denoising", "Bernoulli-noise denoising (Bach & Saremi 2025): a denoiser learned from +-1 samples, then "
    "noisy chains", settings=bernoulli_denoising.BernoulliDenoisingSettings, batch_size=bernoulli_denoising.BATCH_SIZE,
    as_target=bernoulli_denoising.training_source,
)(bernoulli_denoising.build)


LEARNED.register("curves", settings=curves.CurvesSettings, batch_size=curves.BATCH_SIZE, smc_proposal=True)(
    curves.build)
LEARNED.register("tps_dps", settings=tps_dps.TpsDpsSettings, batch_size=tps_dps.BATCH_SIZE)(tps_dps.build)
LEARNED.register("leaps", settings=leaps.LeapsSettings, batch_size=leaps.BATCH_SIZE,
                 as_target=leaps.as_lattice_path, smc_proposal=True)(leaps.build)
