"""blackjax's gradient-based kernels and their tuners, reachable by name from configs.

Thin adapters only: every kernel here IS a blackjax ``SamplingAlgorithm``
(re-wrapped as a :class:`~jaxsamp.core.Kernel`, same two functions), so it
runs through ``ensemble``, ``run`` and ``shard`` unchanged. What this module
adds:

* registry factories ``factory(target, **typed_params) -> Kernel`` for
  ``mala``, ``hmc``, ``nuts``, ``mclmc`` and ``adjusted_mclmc``. Their kernels
  are :func:`~jaxsamp.core.compiled.cached_kernel` s of the target's
  :attr:`~jaxsamp.core.target.Target.log_density` (and of tuned parameters):
  two targets of the same log density function and data shapes share their
  compilations, whatever the data values;
* tuning functions that return tuned parameters -- :func:`window_adapt`
  (``blackjax.window_adaptation``: step size and diagonal inverse mass matrix,
  Stan's windowed scheme), :func:`tune_mclmc` (``blackjax.mclmc_find_L_and_step_size``,
  Robnik et al. 2023) and :func:`tune_adjusted_mclmc`
  (``blackjax.adjusted_mclmc_find_L_and_step_size``, Robnik et al. 2025). A
  factory given ``tune_steps > 0`` (or, for the MCLMC family, no explicit
  ``L`` / ``step_size``) runs its tuner ONCE, eagerly, on one chain started
  from :func:`default_initial_position`, and returns the kernel with the tuned
  parameters (the MCLMC family's tuner is compiled once per settings, the log
  density a traced argument; the tuned parameters are traced arguments of the
  kernel);
* a default initialisation key for the kernels whose ``init`` needs one
  (MCLMC draws the initial unit momentum, dynamic adjusted MCLMC seeds its
  trajectory lengths): pass ``rng_key`` to ``init`` (``ensemble.init(x, key)``
  gives every chain its own); without one ``jax.random.key(0)`` is used, which
  gives every chain the same auxiliary draw (valid, but correlated).
"""

from __future__ import annotations

from typing import Callable

import functools

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
from blackjax.adaptation.base import get_filter_adapt_info_fn
from blackjax.mcmc import adjusted_mclmc_dynamic
from blackjax.mcmc.adjusted_mclmc_dynamic import make_random_trajectory_length_fn

from jaxsamp.core.compiled import as_partial, cached_kernel
from jaxsamp.core.errors import InputError
from jaxsamp.core.protocols import Kernel
from jaxsamp.core.registry import SAMPLERS
from jaxsamp.core.validation import (
    NonNegativeInt,
    OpenUnitFloat,
    PositiveFloat,
    PositiveInt,
)


def as_kernel(algorithm) -> Kernel:
    """A blackjax ``SamplingAlgorithm`` as a :class:`~jaxsamp.core.Kernel` (the same two functions)."""
    return Kernel(algorithm.init, algorithm.step)


def with_default_init_key(algorithm) -> Kernel:
    """Make ``rng_key`` optional in ``init`` for kernels that need it (``key(0)`` when omitted)."""

    def init(position, rng_key=None):
        return algorithm.init(position, jax.random.key(0) if rng_key is None else rng_key)

    return Kernel(init, algorithm.step)


def _event_shape(target) -> tuple[int, ...]:
    """The target's state shape; a plain function handed over without an example has none."""
    if target.event_shape is None:
        raise InputError(
            f"this sampler needs the shape of a state, and {target.name} is a plain function without one",
            "wrap it with jaxsamp.targets.from_function(log_prob, example_state)",
        )
    return tuple(target.event_shape)


def default_initial_position(target, seed: int = 0) -> jax.Array:
    """A ``N(0, I)`` draw of shape ``target.event_shape`` from ``key(seed)``: where tuners start."""
    return jax.random.normal(jax.random.key(seed), _event_shape(target))


def _flat_dim(target) -> int:
    d = 1
    for n in _event_shape(target):
        d *= n
    return d


# --------------------------------------------------------------------------
# tuners
# --------------------------------------------------------------------------


def window_adapt(
    algorithm,
    logdensity_fn: Callable,
    position,
    rng_key,
    num_steps: int,
    target_acceptance: float = 0.8,
    **algorithm_params,
):
    """Run ``blackjax.window_adaptation`` for ``num_steps`` steps; return ``(state, parameters)``.

    Parameters
    ----------
    algorithm : blackjax algorithm
        ``blackjax.hmc`` or ``blackjax.nuts``.
    logdensity_fn, position, rng_key
        Target, starting point (one chain) and key.
    num_steps : int
        Warm-up length.
    target_acceptance : float
        Step-size dual-averaging target (blackjax default 0.8).
    **algorithm_params
        Fixed parameters of the algorithm, e.g. ``num_integration_steps`` for HMC.

    Returns
    -------
    state
        The chain's state at the end of warm-up.
    parameters : dict
        ``step_size``, ``inverse_mass_matrix`` and ``algorithm_params``: build the
        kernel with ``algorithm(logdensity_fn, **parameters)``.
    """
    warmup = blackjax.window_adaptation(
        algorithm,
        logdensity_fn,
        target_acceptance_rate=target_acceptance,
        adaptation_info_fn=get_filter_adapt_info_fn(),
        **algorithm_params,
    )
    (state, parameters), _ = warmup.run(rng_key, position, num_steps)
    return state, parameters


def tune_mclmc(
    logdensity_fn: Callable,
    position,
    rng_key,
    num_steps: int,
    diagonal_preconditioning: bool = True,
    desired_energy_var: float = 5e-4,
):
    """Tune unadjusted MCLMC with ``blackjax.mclmc_find_L_and_step_size``; return ``(state, params)``.

    The three tuning phases (step size, ``L`` from the variance, ``L`` from the
    ESS) each take a third of ``num_steps`` integrator steps. ``params`` is a
    ``MCLMCAdaptationState(L, step_size, inverse_mass_matrix)``.
    """
    key_init, key_tune = jax.random.split(rng_key)
    state = blackjax.mcmc.mclmc.init(position, logdensity_fn, key_init)
    third = 1.0 / 3.0
    state, params, _ = blackjax.mclmc_find_L_and_step_size(
        mclmc_kernel=blackjax.mcmc.mclmc.build_kernel(),
        num_steps=num_steps,
        state=state,
        rng_key=key_tune,
        logdensity_fn=logdensity_fn,
        frac_tune1=third,
        frac_tune2=third,
        frac_tune3=third,
        desired_energy_var=desired_energy_var,
        diagonal_preconditioning=diagonal_preconditioning,
    )
    return state, params


_random_trajectory_length = make_random_trajectory_length_fn(True)


def tune_adjusted_mclmc(
    logdensity_fn: Callable,
    position,
    rng_key,
    num_steps: int,
    target_acceptance: float = 0.9,
    diagonal_preconditioning: bool = True,
):
    """Tune adjusted MCLMC (MAMS, random trajectory lengths) with ``blackjax.adjusted_mclmc_find_L_and_step_size``.

    Dual averaging of the step size towards ``target_acceptance`` and the
    ``L`` estimate each take half of ``num_steps`` steps. Returns
    ``(state, params)`` with ``params = MCLMCAdaptationState(L, step_size,
    inverse_mass_matrix)``; the sampler uses on average ``L / step_size``
    integration steps per proposal.
    """
    key_init, key_tune = jax.random.split(rng_key)
    state = adjusted_mclmc_dynamic.init(position, logdensity_fn, key_init)
    state, params, _ = blackjax.adjusted_mclmc_find_L_and_step_size(
        mclmc_kernel=adjusted_mclmc_dynamic.build_kernel(integration_steps_fn=_random_trajectory_length),
        logdensity_fn=logdensity_fn,
        num_steps=num_steps,
        state=state,
        rng_key=key_tune,
        target=target_acceptance,
        frac_tune1=0.5,
        frac_tune2=0.5,
        diagonal_preconditioning=diagonal_preconditioning,
    )
    return state, params


def mclmc_kernel(logdensity_fn: Callable, step_size, L, inverse_mass_matrix=1.0) -> Kernel:
    """``blackjax.mclmc`` (unadjusted microcanonical Langevin) with an optional ``rng_key`` in ``init``."""
    return with_default_init_key(
        blackjax.mclmc(logdensity_fn, L=L, step_size=step_size, inverse_mass_matrix=inverse_mass_matrix)
    )


def adjusted_mclmc_kernel(logdensity_fn: Callable, step_size, L, inverse_mass_matrix=1.0) -> Kernel:
    """``blackjax.adjusted_mclmc_dynamic`` with uniformly random trajectory lengths of mean ``~L / step_size``."""
    return with_default_init_key(
        blackjax.adjusted_mclmc_dynamic(
            logdensity_fn,
            step_size,
            inverse_mass_matrix=inverse_mass_matrix,
            integration_steps_fn=_random_trajectory_length,
            integration_steps_params=(L / step_size,),
        )
    )


# --------------------------------------------------------------------------
# registry factories
# --------------------------------------------------------------------------


@functools.partial(jax.jit, static_argnums=(0, 4, 5))
def _tuned_parameters(tuner, logdensity_fn, position, rng_key, num_steps: int, settings: tuple):
    """``tuner``'s parameters, compiled once per tuner and settings: the log density is a traced argument."""
    return tuner(logdensity_fn, position, rng_key, num_steps, *settings)[1]


def _mclmc_family(make, tuner, target, L, step_size, seed: int, num_steps: int, *settings) -> Kernel:
    """``make(log_density, step_size, L, inverse_mass_matrix)`` with ``L`` and ``step_size`` as given (unit mass), or tuned.

    Given values are settings of the kernel (fixed in its compilation); tuned
    ones, found by the MCLMC-family ``tuner`` from :func:`default_initial_position`,
    are its traced arguments, so that new data (hence new tuned values) reuse
    the compilation.
    """
    if (L is None) != (step_size is None):
        raise InputError("give both L and step_size, or neither (then they are tuned)")
    if L is not None:
        return cached_kernel(make, target.log_density, L=L, step_size=step_size, inverse_mass_matrix=1.0)
    params = _tuned_parameters(tuner, as_partial(target.log_density), default_initial_position(target, seed),
                               jax.random.key(seed), num_steps, settings)
    return cached_kernel(make, target.log_density, params.step_size, params.L, params.inverse_mass_matrix)


#: The blackjax algorithms the factories build, by name (a kernel's cached settings name them).
_ALGORITHMS = {"mala": blackjax.mala, "hmc": blackjax.hmc, "nuts": blackjax.nuts}


def _window_adapted(algorithm: str, target, seed: int, num_steps: int, target_acceptance: float, **fixed) -> Kernel:
    """blackjax ``algorithm`` with the parameters found by :func:`window_adapt` from :func:`default_initial_position`."""
    _, params = window_adapt(
        _ALGORITHMS[algorithm], target.log_prob, default_initial_position(target, seed), jax.random.key(seed), num_steps,
        target_acceptance, **fixed,
    )
    return cached_kernel(_blackjax_kernel, target.log_density, params["step_size"], params["inverse_mass_matrix"],
                         algorithm=algorithm, **fixed)


def _blackjax_kernel(logdensity_fn, *args, algorithm: str, **params) -> Kernel:
    """``blackjax.<algorithm>(logdensity_fn, *args, **params)`` as a Kernel: what :func:`cached_kernel` makes."""
    return as_kernel(_ALGORITHMS[algorithm](logdensity_fn, *args, **params))


def _unit_mass(logdensity_fn, *, algorithm: str, step_size, dim: int, **params) -> Kernel:
    """``blackjax.<algorithm>`` with a unit inverse mass matrix of ``dim`` entries (a constant of the compilation)."""
    return _blackjax_kernel(logdensity_fn, step_size, np.ones(dim, jnp.result_type(float)), algorithm=algorithm,
                            **params)


def _hmc_family(algorithm, target, step_size, tune_steps, target_acceptance, seed, **params) -> Kernel:
    """blackjax ``algorithm`` (``"hmc"`` or ``"nuts"``) with a unit inverse mass, or window-adapted when ``tune_steps > 0``."""
    if tune_steps > 0:
        return _window_adapted(algorithm, target, seed, tune_steps, target_acceptance, **params)
    return cached_kernel(_unit_mass, target.log_density, algorithm=algorithm, step_size=step_size,
                         dim=_flat_dim(target), **params)


@SAMPLERS.register("mala", metropolis=True)
def mala_sampler(target, step_size: PositiveFloat = 0.1) -> Kernel:
    """blackjax MALA (Metropolis-adjusted Langevin)."""
    return cached_kernel(_blackjax_kernel, target.log_density, algorithm="mala", step_size=step_size)


@SAMPLERS.register("hmc", metropolis=True)
def hmc_sampler(
    target,
    step_size: PositiveFloat = 0.1,
    num_integration_steps: PositiveInt = 10,
    tune_steps: NonNegativeInt = 0,
    target_acceptance: OpenUnitFloat = 0.8,
    seed: NonNegativeInt = 0,
) -> Kernel:
    """blackjax HMC; tune_steps > 0 runs blackjax.window_adaptation (step size, diagonal mass) first."""
    return _hmc_family("hmc", target, step_size, tune_steps, target_acceptance, seed,
                       num_integration_steps=num_integration_steps)


@SAMPLERS.register("nuts", metropolis=True)
def nuts_sampler(
    target,
    step_size: PositiveFloat = 0.1,
    max_num_doublings: PositiveInt = 10,
    tune_steps: NonNegativeInt = 0,
    target_acceptance: OpenUnitFloat = 0.8,
    seed: NonNegativeInt = 0,
) -> Kernel:
    """blackjax NUTS; tune_steps > 0 runs blackjax.window_adaptation (step size, diagonal mass) first."""
    return _hmc_family("nuts", target, step_size, tune_steps, target_acceptance, seed,
                       max_num_doublings=max_num_doublings)


@SAMPLERS.register("mclmc")
def mclmc_sampler(
    target,
    L: PositiveFloat | None = None,
    step_size: PositiveFloat | None = None,
    tune_steps: PositiveInt = 2000,
    diagonal_preconditioning: bool = True,
    seed: NonNegativeInt = 0,
) -> Kernel:
    """blackjax MCLMC (unadjusted microcanonical Langevin); tuned by mclmc_find_L_and_step_size unless L and step_size are given."""
    return _mclmc_family(mclmc_kernel, tune_mclmc, target, L, step_size, seed, tune_steps, diagonal_preconditioning)


@SAMPLERS.register("adjusted_mclmc", metropolis=True)
def adjusted_mclmc_sampler(
    target,
    L: PositiveFloat | None = None,
    step_size: PositiveFloat | None = None,
    tune_steps: PositiveInt = 2000,
    target_acceptance: OpenUnitFloat = 0.9,
    diagonal_preconditioning: bool = True,
    seed: NonNegativeInt = 0,
) -> Kernel:
    """blackjax adjusted MCLMC (MAMS, random trajectory lengths); tuned by adjusted_mclmc_find_L_and_step_size unless given."""
    return _mclmc_family(adjusted_mclmc_kernel, tune_adjusted_mclmc, target, L, step_size, seed, tune_steps,
                         target_acceptance, diagonal_preconditioning)
