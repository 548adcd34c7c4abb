"""Diffusion samplers: controlled SDEs from a simple start to the target, trained on path measures.

Papers: the Path Integral Sampler (Zhang & Chen 2022, ICLR), the Denoising Diffusion
Sampler (Vargas, Grathwohl & Doucet 2023, ICLR), SCLD (Chen et al. 2025, ICLR) and CMCD (Vargas et al.
2024, ICLR), Adjoint Sampling (Havens et al.
2025, ICML), the Adjoint Schrödinger Bridge Sampler (Liu et al. 2025), TPS-DPS
(Seong et al. 2025, ICLR) and the Beyond-ELBOs evaluation protocol (Blessing et al.
2024, ICML).

Files
-----
sde
    Controlled SDEs on a time grid: schedules, integrators, exact Girsanov path weights (shared).
path_losses
    Losses from path log-weights: reverse KL, log-variance, trajectory balance.
pis_dds
    PIS and DDS: their settings and constructors (``build_pis``, ``build_dds``) on one numerics class, ``PisDds``.
scld
    SCLD and CMCD: controlled Langevin diffusions on a learned geometric path, run as SMC (``build_scld``,
    ``build_cmcd``, on one numerics class, ``Scld``).
adjoint
    Adjoint Sampling: reciprocal adjoint matching from a point mass, replay buffer, EMA.
asbs
    ASBS: adjoint matching from a Gaussian or harmonic prior, with a learned corrector.
tps_dps
    TPS-DPS: transition paths by overdamped dynamics with a learned bias force.
evaluation
    The diffusion samplers' evaluation protocol: the canonical weight figures (ELBO, EUBO, both log Z
    estimates, ESS) and the family's Sinkhorn divergence and EMC.
"""

from jaxsamp.core.lazy import submodule_getattr

__getattr__ = submodule_getattr(__name__)  # submodules on first use
