"""Protocols, combinators, the driver and sharding helpers."""

from jaxsamp.core.combinators import (
    CHAIN_METHODS,
    AdaptiveState,
    BlockState,
    ComposeState,
    GuardInfo,
    MixtureInfo,
    MixtureState,
    adaptive,
    compose,
    ensemble,
    guard_finite,
    mixture,
    num_chains,
    on_blocks,
    over_chains,
    position_of,
    register_position,
    repeat,
    reposition,
    robbins_monro_step_size,
    thin,
)
from jaxsamp.core.driver import run
from jaxsamp.core.lazy import submodule_getattr
from jaxsamp.core.protocols import Kernel, LearnedSampler, SMCProposal, Trainer, TrainingHealth, WeightedSamples
from jaxsamp.core.sharding import chain_mesh, map_chains, shard, shard_state
from jaxsamp.core.target import (
    REAL,
    SPIN,
    AnnealingPath,
    Domain,
    GeometricPath,
    ReferenceUnavailableError,
    Target,
    categorical,
)

__all__ = [
    "CHAIN_METHODS", "AdaptiveState", "AnnealingPath", "BlockState", "ComposeState", "Domain", "GeometricPath", "GuardInfo",
    "Kernel", "LearnedSampler", "MixtureInfo", "MixtureState", "REAL", "ReferenceUnavailableError", "SMCProposal", "SPIN",
    "Target", "Trainer", "TrainingHealth", "WeightedSamples", "adaptive", "categorical", "chain_mesh", "compose", "ensemble",
    "guard_finite", "map_chains", "mixture", "num_chains", "on_blocks", "over_chains", "position_of",
    "register_position", "repeat", "reposition", "robbins_monro_step_size", "run", "shard", "shard_state", "thin",
]

__getattr__ = submodule_getattr(__name__)  # submodules on first use
