"""The run fingerprint: equal for the same computation in another process, different for any change of what
determines the numbers (a closed-over literal, a closed-over array's values, the arguments' layout)."""

import subprocess
import sys
import textwrap

import blackjax
import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core import fingerprint as fp

NUTS_STEP = textwrap.dedent(
    """
    import blackjax, jax, jax.numpy as jnp
    from jaxsamp.core import fingerprint as fp
    log_prob = lambda x: -0.5 * jnp.sum(x**2) + jax.nn.logsumexp(x)
    nuts = blackjax.nuts(log_prob, 0.3, jnp.ones(3))
    print(fp.of_computation(nuts.step, jax.random.key(0), nuts.init(jnp.zeros(3))))
    """
)


def test_the_same_computation_in_two_processes_has_one_fingerprint():
    # custom_jvp rules (logsumexp) carry Python functions in the jaxpr's parameters: no memory address may leak in
    prints = [subprocess.run([sys.executable, "-c", NUTS_STEP], capture_output=True, text=True, check=True).stdout
              for _ in range(2)]
    assert prints[0] == prints[1] and len(prints[0].strip()) == 64


def test_a_closed_over_literal_changes_the_fingerprint():
    state = blackjax.hmc(lambda x: -0.5 * jnp.sum(x**2), 0.3, jnp.ones(2), 5).init(jnp.zeros(2))
    key = jax.random.key(0)
    step = lambda size, n: blackjax.hmc(lambda x: -0.5 * jnp.sum(x**2), size, jnp.ones(2), n).step
    base = fp.of_computation(step(0.3, 5), key, state)
    assert base == fp.of_computation(step(0.3, 5), key, state)
    assert base != fp.of_computation(step(0.05, 5), key, state)
    assert base != fp.of_computation(step(0.3, 6), key, state)


def test_a_closed_over_arrays_values_change_the_fingerprint():
    def make(data):
        return lambda x: -0.5 * jnp.sum((x - data) ** 2)

    data = np.linspace(0.0, 1.0, 100).astype(np.float32)
    x = jnp.zeros(100)
    base = fp.of_computation(make(jnp.asarray(data)), x)
    assert base == fp.of_computation(make(jnp.asarray(data.copy())), x)
    data[37] += 1e-6
    assert base != fp.of_computation(make(jnp.asarray(data)), x)


def test_the_arguments_layout_is_part_of_the_computation():
    f = lambda x: jnp.sum(x**2)
    assert fp.of_computation(f, jnp.zeros(3)) != fp.of_computation(f, jnp.zeros(4))
    assert fp.of_computation(f, jnp.zeros(3)) != fp.of_computation(f, jnp.zeros(3, jnp.int32))


def test_values():
    tree = {"x": jnp.arange(4.0), "key": jax.random.key(3)}
    assert fp.of_values(tree) == fp.of_values({"x": jnp.arange(4.0), "key": jax.random.key(3)})
    assert fp.of_values(tree) != fp.of_values({"x": jnp.arange(4.0), "key": jax.random.key(4)})
    assert fp.of_values(tree) != fp.of_values({"x": jnp.arange(4.0) + 1, "key": jax.random.key(3)})
    assert fp.of_values(tree) != fp.of_values({"x": jnp.arange(5.0), "key": jax.random.key(3)})
    assert fp.combine({"a": "1", "b": "2"}) == fp.combine({"b": "2", "a": "1"}) != fp.combine({"a": "1", "b": "3"})
