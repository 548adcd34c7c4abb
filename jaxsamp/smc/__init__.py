"""Annealing: AIS and SMC along an annealing path, with adaptive tempering and blackjax resamplers."""

from jaxsamp.core.lazy import submodule_getattr
from jaxsamp.smc.annealing import (
    AnnealResult,
    SMCInfo,
    SMCState,
    anneal,
    inner_target_evals,
    linear_schedule,
    path_member,
    smc,
    weighted_samples,
)
from jaxsamp.smc.tempering import conditional_ess, next_temperature

__all__ = [
    "AnnealResult", "SMCInfo", "SMCState", "anneal", "conditional_ess", "inner_target_evals",
    "linear_schedule", "next_temperature", "path_member", "smc", "weighted_samples",
]

__getattr__ = submodule_getattr(__name__)  # submodules on first use
