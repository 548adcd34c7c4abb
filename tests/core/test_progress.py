"""The driver's bar says it is compiling and times compiled steps only; phases show a clock; in a log, plain lines."""

import time

import jax
import jax.numpy as jnp
import pytest

import jaxsamp
from jaxsamp.core import progress
from jaxsamp.core.progress import StepBar, phase


@pytest.fixture
def terminal(monkeypatch):
    """stderr as a terminal: tqdm bars redrawn in place."""
    monkeypatch.setattr(progress, "_interactive", lambda: True)


def test_the_bar_reads_compiling_until_the_first_chunk_then_restarts_its_clock(capsys, terminal):
    bar = StepBar(100, 0, "run", enabled=True)
    time.sleep(1.2)  # the compilation: it must not count in the rate
    assert "compiling the step" in capsys.readouterr().err
    bar.update(10)
    started = bar.bar.start_t
    bar.update(10)
    assert bar.bar.n == 20 and bar.bar.initial == 10 and time.time() - started < 1.0
    bar.close()


def test_the_driver_shows_compiling_and_progress_false_prints_nothing(capsys, terminal):
    step = lambda key, x: (x + jax.random.normal(key, x.shape), None)  # noqa: E731
    jaxsamp.run(step, jnp.zeros(3), jax.random.key(0), 20, chunk=5, desc="demo")
    err = capsys.readouterr().err
    assert "demo: compiling the step" in err and "20/20" in err
    jaxsamp.run(step, jnp.zeros(3), jax.random.key(0), 20, chunk=5, progress=False)
    assert capsys.readouterr().err == ""


def test_a_phase_ticks_and_says_when_it_is_done(capsys, terminal):
    with phase("evaluating", enabled=True):
        time.sleep(1.5)
    err = capsys.readouterr().err
    assert "evaluating: 00:01" in err and "evaluating: done in 00:01" in err
    with phase("evaluating", enabled=False):
        pass
    assert capsys.readouterr().err == ""


def test_in_a_log_the_bar_writes_a_line_at_each_tenth_and_when_it_has_been_silent_too_long(capsys, monkeypatch):
    """No carriage returns: a line after the compiling chunk, one per tenth of the run (not one per chunk), with
    the rate of the compiled steps only and the time left, and one after ``LOG_EVERY`` seconds of silence."""
    clock = iter([0.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0, 36.0, 700.0, 701.0])
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(clock))
    bar = StepBar(100, 0, "run", enabled=True)
    bar.update(5)  # t = 30: the compiling chunk
    for _ in range(4):  # t = 31 .. 34: 25 steps, the next tenth at 20
        bar.update(5)
    lines = capsys.readouterr().err.splitlines()
    assert lines == ["run: compiling the step (0/100 done)", "run: compiled and ran the first 5 steps in 00:30",
                     "run: 10/100 steps (10%) in 00:01 at 5 steps/s, about 00:18 left",
                     "run: 20/100 steps (20%) in 00:03 at 5 steps/s, about 00:16 left"]
    bar.update(1)  # t = 35: 26, inside the third tenth: silent
    bar.update(1)  # t = 36: silent
    bar.update(1)  # t = 700: 28, still inside it, but silent for more than LOG_EVERY
    assert capsys.readouterr().err.splitlines() == ["run: 28/100 steps (28%) in 11:10 at 0.0343 steps/s, about 34:57 left"]
    bar.close()
    assert "\r" not in capsys.readouterr().err


def test_in_a_log_a_phase_is_a_line_when_it_starts_and_one_when_it_ends(capsys):
    with phase("evaluating", enabled=True):
        pass
    assert capsys.readouterr().err.splitlines() == ["evaluating ...", "evaluating: done in 00:00"]
