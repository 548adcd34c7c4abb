"""Learned samplers, one subpackage per family and one file per method inside it.

Subpackages
-----------
diffusion
    Controlled-SDE samplers: the shared SDE core, path losses, PIS/DDS, SCLD/CMCD, Adjoint Sampling, ASBS, TPS-DPS,
    evaluation.
leaps
    LEAPS: CTMC simulation with exact weights, and its PINN training (``build``, and ``Leaps``: its numerics).
gflownet
    GFlowNets with a choice of backward policy (TLM among them): trainer, weighted sampling, losses, policy network.
curves
    Boltzmann curves: interpolations, PINN training, ODE sampling.
binary
    Bernoulli-noise denoising of binary data (the denoiser learned from samples) and its samplers.
vi
    Variational inference on distrax: the families, the objectives (SoftCVI, ELBO, SNIS forward KL) and the
    semi-implicit AISIVI and BSIVI.

Shared modules
--------------
buffer
    The FIFO replay buffer PyTree (LEAPS, Adjoint Sampling, ASBS, TPS-DPS, GFlowNets).
prioritized_buffer
    The prioritised replay buffer on the same slots (GFlowNets' DQN losses).
"""

from jaxsamp.core.lazy import submodule_getattr

__getattr__ = submodule_getattr(__name__)  # submodules on first use
