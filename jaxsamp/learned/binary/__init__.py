"""Learned samplers of binary data: Bernoulli-noise denoising, the denoiser as a trainer and its samplers.

Paper: Bach & Saremi (2025), "Sampling binary data by denoising through score functions", ICML.

Files
-----
bernoulli_denoising
    The bit-flip noise model, its exact identities (``E[x | y] = alpha^-1 grad log q_alpha(y)``), the learned denoiser,
    and ``build``, the method's constructor (``jaxsamp.fit("bernoulli_denoising", ...)``).
bernoulli_samplers
    Samplers of the noisy variable (one-stage, two-stage, multi-measurement) and the final denoising.
"""

from jaxsamp.core.lazy import submodule_getattr

__getattr__ = submodule_getattr(__name__)  # submodules on first use
