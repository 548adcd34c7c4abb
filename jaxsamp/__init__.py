"""jaxsamp: sampling from distributions known up to a constant, in JAX.

Every sampler is a pair of pure functions over PyTree states (``Kernel`` for
Markov kernels, ``Trainer`` for learned samplers), composed by combinators and
run by one driver, :func:`run`.

>>> import jax, blackjax, jaxsamp
>>> target = jaxsamp.targets.get("gaussian", dim=2)
>>> kernel = jaxsamp.ensemble(blackjax.mala(target.log_prob, step_size=0.5))
>>> state = kernel.init(jax.numpy.zeros((128, 2)))
>>> state, trace = jaxsamp.run(kernel.step, state, jax.random.key(0), 100, progress=False)
"""

from jaxsamp import targets
from jaxsamp.core import (
    AnnealingPath,
    GeometricPath,
    Kernel,
    Target,
    Trainer,
    WeightedSamples,
    adaptive,
    chain_mesh,
    compose,
    ensemble,
    guard_finite,
    map_chains,
    mixture,
    on_blocks,
    position_of,
    repeat,
    robbins_monro_step_size,
    run,
    shard,
    shard_state,
    thin,
)

__version__ = "0.1.0"

__all__ = [
    "AnnealingPath", "GeometricPath", "Kernel", "Target", "Trainer", "WeightedSamples",
    "adaptive", "chain_mesh", "compose", "ensemble", "guard_finite", "map_chains", "mixture",
    "on_blocks", "position_of", "repeat", "robbins_monro_step_size", "run", "shard",
    "shard_state", "targets", "thin",
]
