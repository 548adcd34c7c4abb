"""Multi-device tests: run in a child process with 8 forced CPU devices."""

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.multidevice
def test_sharded_ensemble_equals_unsharded_on_8_devices():
    env = {**os.environ, "XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=8", "JAX_PLATFORMS": "cpu"}
    child = Path(__file__).with_name("_sharding_child.py")
    proc = subprocess.run([sys.executable, str(child)], env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "SHARDING-OK" in proc.stdout
