"""Data-parallel training (:mod:`jaxsamp.core.data_parallel`): every learned family on 8 forced CPU devices equals
its one-device run (the child process says within what and why), and the wrapper's layout rules on one device."""

import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsamp.core.data_parallel import batch_constraint, batch_mesh, data_parallel, state_shardings
from jaxsamp.core.errors import InputError
from jaxsamp.core.protocols import Trainer
from jaxsamp.learned import buffer as replay


@pytest.mark.multidevice
def test_every_family_trains_on_8_devices_as_on_one():
    env = {**os.environ, "XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=8",
           "JAX_PLATFORMS": "cpu"}
    child = Path(__file__).with_name("_data_parallel_child.py")
    proc = subprocess.run([sys.executable, str(child)], env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "DATA-PARALLEL-OK" in proc.stdout


def test_batch_constraint_is_the_identity_outside_a_data_parallel_step():
    x = jnp.arange(6.0).reshape(3, 2)
    assert batch_constraint(x) is x


def test_buffers_are_split_and_everything_else_replicated():
    mesh = batch_mesh(1)
    state = {"params": jnp.zeros((4, 3)), "buffer": replay.init(jnp.zeros(2), 8), "step": jnp.int32(0)}
    layout = state_shardings(state, mesh)
    specs = jax.tree.map(lambda s: tuple(s.spec), layout)
    assert specs["params"] == () and specs["step"] == ()
    assert specs["buffer"].data == ("batch",) and specs["buffer"].position == () and specs["buffer"].size == ()


def test_the_wrapped_trainer_runs_the_same_step_on_one_device():
    def step(key, state):
        batch = batch_constraint(jax.random.normal(key, (4, 2)))
        return state + jnp.mean(batch), {"loss": jnp.sum(batch**2)}

    wrapped = data_parallel(Trainer(lambda key: jnp.zeros(()), step), batch_mesh(1))
    key = jax.random.key(0)
    bare = jax.jit(step)(key, jnp.zeros(()))
    np.testing.assert_array_equal(jax.jit(wrapped.step)(key, wrapped.init(key))[0], bare[0])
    with pytest.raises(InputError, match="no axis 'rows'"):
        data_parallel(Trainer(lambda key: 0, step), batch_mesh(1), axis="rows")


def test_data_parallel_wraps_a_learned_sampler_as_a_learned_sampler():
    """Like an optax transform: a LearnedSampler in, a LearnedSampler out, its sampling and health untouched."""
    import jaxsamp
    from jaxsamp.core.protocols import LearnedSampler
    from jaxsamp.learned.vi import elbo

    sampler = elbo.build(jaxsamp.targets.get("gaussian", dim=2), batch_size=8)
    wrapped = data_parallel(sampler)
    assert isinstance(wrapped, LearnedSampler) and wrapped.init is not sampler.init
    assert (wrapped.sample, wrapped.evaluate, wrapped.health) == (sampler.sample, sampler.evaluate, sampler.health)
    state = wrapped.init(jax.random.key(0))
    assert all(leaf.sharding.is_fully_replicated for leaf in jax.tree.leaves(state.params))
