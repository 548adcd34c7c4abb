"""The training budget's clock (:mod:`jaxsamp.learned.training_budget`); the budgets themselves (updates, seconds,
target evaluations, a resumed fit counting on) are tested through ``jaxsamp.fit`` in ``test_fit.py``."""

import pytest

from jaxsamp.learned import training_budget


def test_nested_and_overlapping_compile_events_are_counted_once(monkeypatch):
    """JAX reports a jitted function's trace inside its caller's, each with its duration at its end: the clock
    keeps the union of the intervals (summing them counted the nested time twice, and a training run could read
    more compile time than wall time, hence zero training seconds)."""
    now = [0.0]
    monkeypatch.setattr(training_budget.time, "perf_counter", lambda: now[0])
    clock = training_budget.CompileClock()
    now[0] = 2.0
    clock.add(1.0)   # an inner trace, [1, 2]
    now[0] = 3.0
    clock.add(2.5)   # its caller's trace, [0.5, 3], around it
    now[0] = 3.5
    clock.add(1.0)   # a compilation that overlaps the end, [2.5, 3.5]
    now[0] = 10.0
    clock.add(1.0)   # a later one, [9, 10]
    assert clock.seconds == pytest.approx(3.0 + 1.0)


def test_the_timer_counts_a_compilation_and_nothing_once_it_is_cached():
    import time

    import jax
    import jax.numpy as jnp

    f = jax.jit(lambda x: jnp.sin(x) * jnp.cos(x) + x**3)
    start = time.perf_counter()
    with training_budget.compile_timer() as compiling:
        f(jnp.ones(7)).block_until_ready()
    assert 0 < compiling.seconds <= time.perf_counter() - start
    with training_budget.compile_timer() as again:
        f(jnp.ones(7)).block_until_ready()
    assert again.seconds == 0.0
