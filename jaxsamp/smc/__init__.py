"""Annealing: AIS and SMC along an annealing path, with adaptive tempering, blackjax resamplers and transitions."""

from jaxsamp.core.lazy import submodule_getattr
from jaxsamp.smc.annealing import (
    AnnealResult,
    SMCInfo,
    SMCState,
    anneal,
    inner_target_evals,
    linear_schedule,
    path_member,
    run_smc,
    smc,
    weighted_samples,
)
from jaxsamp.smc.tempering import conditional_ess, next_temperature
from jaxsamp.smc.transitions import langevin_log_increment, langevin_transition

__all__ = [
    "AnnealResult", "SMCInfo", "SMCState", "anneal", "conditional_ess", "inner_target_evals",
    "langevin_log_increment", "langevin_transition", "linear_schedule", "next_temperature", "path_member", "run_smc", "smc",
    "weighted_samples",
]

__getattr__ = submodule_getattr(__name__)  # submodules on first use
