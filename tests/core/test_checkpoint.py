"""Checkpoint faults as a user meets them (issue 61): a full disk is one clean OSError with no asyncio or orbax
reports, a refused folder names what differs, the hint is in the error's text, and a finished run says that it
returns its stored result."""

import errno
import gc
import logging
import os
import re
import sys
import time
import warnings
from collections import namedtuple

import jax
import jax.numpy as jnp
import pytest

from jaxsamp.core import checkpoint as ckpt
from jaxsamp.core.driver import run
from jaxsamp.core.errors import CheckpointError

STATE = {f"x{i}": jnp.arange(1000.0) + i for i in range(8)}  # eight arrays: orbax writes them from several tasks


def _drift(scale, data=None):
    """A step that closes over ``scale`` (a literal) and ``data`` (an array constant)."""
    shift = jnp.zeros(3) if data is None else data

    def step(key, x):
        return x + scale * jax.random.normal(key, x.shape) + 0.0 * shift, None

    return step


def _full_disk_in_orbax(monkeypatch):
    """orbax's lowest Python file writes (its metadata files, from its event loop's threads) fail as a full disk does."""
    from orbax.checkpoint._src.path import async_path

    async def no_space(path, *args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(async_path, "write_text", no_space)
    monkeypatch.setattr(async_path, "write_bytes", no_space)


#: a line of XLA's C++ logging: severity, date, time, thread, file:line]
XLA_LOG = re.compile(r"[EWIF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ \S+:\d+\] ")


@pytest.fixture
def reports(monkeypatch, caplog):
    """Everything a failed write may report beside its error: stderr, asyncio/absl logs, unraisable exceptions."""
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", lambda report: unraisable.append(report.exc_value))
    caplog.set_level(logging.ERROR)
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")

        def collect(capfd):
            for _ in range(10):  # late reports: abandoned tasks collected, callbacks on a closed loop
                gc.collect()
                time.sleep(0.05)
            logs = [r for r in caplog.records if r.name in ("asyncio", "absl") and r.levelno >= logging.ERROR]
            never_awaited = [str(w.message) for w in warned if "never awaited" in str(w.message)]
            # XLA's own C++ log lines (a compiled program loaded from the persistent cache of another CPU, ...) are
            # not a report of the failed write
            err = "".join(line for line in capfd.readouterr().err.splitlines(keepends=True) if not XLA_LOG.match(line))
            return err, logs, unraisable + never_awaited

        yield collect


def test_a_full_disk_inside_orbax_is_one_oserror_with_no_asyncio_reports(tmp_path, monkeypatch, capfd, reports):
    _full_disk_in_orbax(monkeypatch)
    with pytest.raises(OSError, match=r"\[Errno 28\] No space left on device while writing checkpoint .*step_0000000010$") as err:
        ckpt.save(tmp_path, 10, STATE, None, [0, 1])
    assert type(err.value) is OSError and err.value.errno == errno.ENOSPC
    assert ckpt.list_steps(tmp_path) == []
    printed, logs, unraisable = reports(capfd)
    assert printed == "" and logs == [] and unraisable == [], (printed[:2000], logs[:3], unraisable[:3])


def test_a_disk_without_room_for_the_checkpoint_is_refused_before_writing(tmp_path, monkeypatch, capfd):
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(ckpt.shutil, "disk_usage", lambda path: usage(10**9, 10**9 - 4096, 4096))
    with pytest.raises(OSError, match=r"No space left on device while writing checkpoint .* needs about \d+ KiB, 4 KiB free"):
        ckpt.save(tmp_path / "ckpt", 10, STATE, None, [0, 1])
    assert not (tmp_path / "ckpt").exists() and capfd.readouterr().err == ""


def test_fit_on_a_full_disk_raises_one_oserror_and_prints_nothing_after_it(tmp_path, monkeypatch, capfd, reports):
    import jaxsamp

    _full_disk_in_orbax(monkeypatch)
    with pytest.raises(OSError, match="No space left on device while writing checkpoint"):
        jaxsamp.fit("pis", jaxsamp.targets.get("gaussian", dim=2), num_steps=2, batch_size=8, progress=False,
                    checkpoint=tmp_path)
    printed, logs, unraisable = reports(capfd)
    assert printed == "" and logs == [] and unraisable == [], (printed[:2000], logs[:3], unraisable[:3])


def _run(folder, scale=0.5, data=None, identity=None, x0=None, key=0):
    x0 = jnp.zeros(3) if x0 is None else x0
    return run(_drift(scale, data), x0, jax.random.key(key), 4, progress=False, health=False, checkpoint=folder,
               identity=identity)


SETTINGS = {"seed": 0, "sampler": {"name": "hmc", "params": {"step_size": 0.3}}, "run": {"num_chains": 16}}


def test_a_refused_folder_names_the_settings_that_differ_with_old_and_new_values(tmp_path):
    _run(tmp_path, identity=SETTINGS)
    other = {**SETTINGS, "sampler": {"name": "hmc", "params": {"step_size": 0.1}}, "run": {"num_chains": 32}}
    with pytest.raises(CheckpointError) as err:
        _run(tmp_path, identity=other)
    assert ("belongs to another run: settings differ (checkpoint -> this run): run.num_chains 16 -> 32, "
            "sampler.params.step_size 0.3 -> 0.1;") in err.value.message


def test_a_refused_folder_says_whether_the_program_or_the_data_differ(tmp_path):
    _run(tmp_path, data=jnp.arange(3.0))
    with pytest.raises(CheckpointError, match=r"the data differ \(array 1 of the 1 it closes over, the first float32\[3\]"):
        _run(tmp_path, data=jnp.arange(3.0) + 1)
    with pytest.raises(CheckpointError, match="its program differs"):
        _run(tmp_path, scale=0.25, data=jnp.arange(3.0))
    with pytest.raises(CheckpointError, match="initial state differs"):
        _run(tmp_path, data=jnp.arange(3.0), x0=jnp.ones(3))
    with pytest.raises(CheckpointError, match=r"with PRNG key data \[0, 0\]; this is .* with key data \[0, 1\]"):
        _run(tmp_path, data=jnp.arange(3.0), key=1)


def test_the_hint_is_in_the_errors_text_and_the_one_line_carries_it_once(tmp_path):
    _run(tmp_path, identity=SETTINGS)
    with pytest.raises(CheckpointError) as err:
        _run(tmp_path, identity={**SETTINGS, "seed": 1})
    assert err.value.hint and str(err.value).endswith(f" (hint: {err.value.hint})")
    assert err.value.one_line().count("(hint: ") == 1 and err.value.one_line().startswith("CheckpointError: ")


def test_an_identical_run_into_a_finished_folder_says_it_returns_the_stored_result(tmp_path):
    first, _ = _run(tmp_path, identity=SETTINGS)
    with pytest.warns(ckpt.CompletedRunWarning, match=r"already holds all 4 steps of this run: the stored result"):
        again, _ = _run(tmp_path, identity=SETTINGS)
    assert (again == first).all()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ckpt.CompletedRunWarning)  # a longer run resumes: no such warning
        run(_drift(0.5), jnp.zeros(3), jax.random.key(0), 6, progress=False, health=False, checkpoint=tmp_path,
            identity=SETTINGS)

