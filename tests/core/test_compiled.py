"""Compiled functions that take their data as arguments: kernels made once per settings, compiled once per shapes."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsamp.core import run
from jaxsamp.core.compiled import cached_function, cached_kernel
from jaxsamp.core.errors import InputError
from jaxsamp.core.target import from_function
from jaxsamp.mcmc.ula import ula


def _gaussian(x, mean):
    return -0.5 * jnp.sum((x - mean) ** 2)


def _log_density(mean):
    return from_function(_gaussian, jnp.zeros(2), data=(mean,)).log_density


def test_kernels_of_the_same_settings_share_functions_and_compilations(compilations):
    """Two ULA kernels on new data: the same cached functions, nothing compiled for the second, other draws."""
    first = cached_kernel(ula, _log_density(jnp.zeros(2)), step_size=0.1)
    second = cached_kernel(ula, _log_density(jnp.full(2, 3.0)), step_size=0.1)
    assert first.step.func is second.step.func and first.init.func is second.init.func
    x0 = jnp.zeros(2)
    end, _ = run(first.step, first.init(x0), jax.random.key(0), 20, progress=False)
    del compilations[:]
    moved, _ = run(second.step, second.init(x0), jax.random.key(0), 20, progress=False)
    assert compilations == [], f"{len(compilations)} compilations"
    assert not np.array_equal(np.asarray(moved.position), np.asarray(end.position))
    assert cached_kernel(ula, _log_density(jnp.zeros(2)), step_size=0.2).step.func is not first.step.func
    assert cached_kernel(ula, _log_density(jnp.zeros(2)), step_size=1).step.func is not \
        cached_kernel(ula, _log_density(jnp.zeros(2)), step_size=1.0).step.func  # 1 and 1.0: other programs


def test_cached_function_binds_its_arguments_as_leaves():
    scale = cached_function(lambda factor: (lambda x: factor * x), jnp.float32(2.0))
    assert jax.tree.leaves(scale) == [jnp.float32(2.0)]
    assert float(jax.jit(lambda f, x: f(x))(scale, 3.0)) == 6.0


def test_settings_are_checked_when_the_kernel_is_made():
    with pytest.raises(InputError, match="step_size"):
        cached_kernel(ula, _log_density(jnp.zeros(2)), step_size=-1.0)
    with pytest.raises(TypeError, match="setting 'step_size' is not hashable .*pass arrays as traced arguments"):
        cached_kernel(ula, _log_density(jnp.zeros(2)), step_size=np.array([0.1]))
