"""A cell run in a child process: the child's environment, and a child that fails is one error naming the cell and
the child's last line (the success path runs in the scaling suite's quick test, on 2 forced devices)."""

import pytest

from jaxsamp.bench import cells, child
from jaxsamp.bench.protocol import Cell
from jaxsamp.core.errors import RunHealthError


def test_forced_cpu_devices_appends_the_count_to_the_caller_s_xla_flags(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false")
    env = child.forced_cpu_devices(4)
    assert env == {"XLA_FLAGS": "--xla_cpu_enable_fast_math=false --xla_force_host_platform_device_count=4",
                   "JAX_PLATFORMS": "cpu"}
    monkeypatch.delenv("XLA_FLAGS")
    assert child.forced_cpu_devices(2)["XLA_FLAGS"] == "--xla_force_host_platform_device_count=2"
    assert not child.in_child()


def test_a_child_that_fails_is_one_error_naming_the_cell_and_its_last_line():
    cell = Cell("pis/no_budget", "fit", {"name": "funnel", "dim": 2}, {"method": "pis"})  # no budget.updates
    with pytest.raises(RunHealthError, match=r"pis/no_budget.*child process failed.*needs budget\.updates"):
        child.run_in_child(cells.fit_cell, cell, 0, env={})
