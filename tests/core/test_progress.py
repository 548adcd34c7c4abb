"""The driver's bar says it is compiling and times compiled steps only; phases show a clock."""

import time

import jax
import jax.numpy as jnp

import jaxsamp
from jaxsamp.core.progress import StepBar, phase


def test_the_bar_reads_compiling_until_the_first_chunk_then_restarts_its_clock(capsys):
    bar = StepBar(100, 0, "run", enabled=True)
    time.sleep(1.2)  # the compilation: it must not count in the rate
    assert "compiling the step" in capsys.readouterr().err
    bar.update(10)
    started = bar.bar.start_t
    bar.update(10)
    assert bar.bar.n == 20 and bar.bar.initial == 10 and time.time() - started < 1.0
    bar.close()


def test_the_driver_shows_compiling_and_progress_false_prints_nothing(capsys):
    step = lambda key, x: (x + jax.random.normal(key, x.shape), None)  # noqa: E731
    jaxsamp.run(step, jnp.zeros(3), jax.random.key(0), 20, chunk=5, desc="demo")
    err = capsys.readouterr().err
    assert "demo: compiling the step" in err and "20/20" in err
    jaxsamp.run(step, jnp.zeros(3), jax.random.key(0), 20, chunk=5, progress=False)
    assert capsys.readouterr().err == ""


def test_a_phase_ticks_and_says_when_it_is_done(capsys):
    with phase("evaluating", enabled=True):
        time.sleep(1.5)
    err = capsys.readouterr().err
    assert "evaluating: 00:01" in err and "evaluating: done in 00:01" in err
    with phase("evaluating", enabled=False):
        pass
    assert capsys.readouterr().err == ""
