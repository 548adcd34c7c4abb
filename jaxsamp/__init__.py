"""jaxsamp: sampling from distributions known up to a constant, in JAX.

Every sampler is a pair of pure functions over PyTree states (``Kernel`` for
Markov kernels, ``Trainer`` for learned samplers), composed by combinators and
run by one driver, :func:`~jaxsamp.run`. :func:`~jaxsamp.sample` is the one-call path for MCMC,
:func:`~jaxsamp.fit` for the learned samplers. :func:`~jaxsamp.shard` puts chains on a device mesh,
:func:`~jaxsamp.data_parallel` trains any Trainer with its batch split over one.

>>> import jax, blackjax, jaxsamp
>>> posterior = jaxsamp.sample(lambda x: -0.5 * (x ** 2).sum(), init=jax.numpy.zeros(3), progress=False)
>>> target = jaxsamp.targets.get("gaussian", dim=2)
>>> kernel = jaxsamp.ensemble(blackjax.mala(target.log_prob, step_size=0.5))
>>> state = kernel.init(jax.numpy.zeros((128, 2)))
>>> state, trace = jaxsamp.run(kernel.step, state, jax.random.key(0), 100, progress=False)

The subpackages (``targets``, ``mcmc``, ``smc``, ``diagnostics``, ``learned``,
``selection``, ``nets``, ``experiments``) are imported on first use, so ``import jaxsamp``
stays fast.
"""

import importlib

from jaxsamp.core import (
    AnnealingPath,
    GeometricPath,
    Kernel,
    LearnedSampler,
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
    register_position,
    repeat,
    robbins_monro_step_size,
    run,
    shard,
    shard_state,
    thin,
)
from jaxsamp.core.data_parallel import batch_mesh, data_parallel
from jaxsamp.core.lazy import submodule

__version__ = "0.1.0"

_SUBPACKAGES = ("core", "diagnostics", "experiments", "learned", "mcmc", "nets", "selection", "smc", "targets")
_LAZY = {
    "sample": ("jaxsamp.mcmc.sample", "sample"), "Posterior": ("jaxsamp.mcmc.sample", "Posterior"),
    "fit": ("jaxsamp.learned.fit", "fit"), "Fitted": ("jaxsamp.learned.fit", "Fitted"),
}

__all__ = [
    "AnnealingPath", "Fitted", "GeometricPath", "Kernel", "LearnedSampler", "Posterior", "Target", "Trainer", "WeightedSamples",
    "adaptive", "batch_mesh", "chain_mesh", "compose", "data_parallel", "ensemble", "guard_finite", "map_chains", "mixture",
    "on_blocks", "position_of", "register_position", "repeat", "robbins_monro_step_size", "run", "sample", "fit",
    "shard", "shard_state", "thin", *_SUBPACKAGES,
]


def __getattr__(name: str):
    """Import a subpackage (``jaxsamp.mcmc``), a module or a lazily loaded name (``jaxsamp.sample``) on first use."""
    if name in _SUBPACKAGES:
        module = importlib.import_module(f"jaxsamp.{name}")
    elif name in _LAZY:
        module_name, attribute = _LAZY[name]
        module = getattr(importlib.import_module(module_name), attribute)
    else:
        module = submodule(__name__, name)  # a module (``jaxsamp.cli``), or AttributeError
    globals()[name] = module
    return module


def __dir__():
    return sorted(set(globals()) | set(__all__))
