"""Many hosts, tested: two local JAX processes (coordinator on localhost) give the one-process numbers (MCMC bit for bit).

The README documents ``jax.distributed.initialize()`` for several hosts. This
test starts two CPU processes that join one cluster, builds ``chain_mesh()``
across both, runs a sharded ensemble through the driver with a checkpoint
(written by both processes through orbax, manifest by process 0), resumes from
it, and compares the gathered final positions with a single process on the same
four devices; then trains PIS data-parallel over the two processes' four devices
with a checkpoint, stopped and resumed, and compares its parameters and losses.
"""

import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

CHILD = Path(__file__).with_name("_multihost_child.py")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


@pytest.mark.multidevice
def test_two_processes_match_one_process(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_PLATFORMS")}
    port = str(_free_port())
    procs = [
        subprocess.Popen([sys.executable, str(CHILD), port, str(i), str(tmp_path)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for i in range(2)
    ]
    single = subprocess.run([sys.executable, str(CHILD), "single", str(tmp_path)], env=env,
                            capture_output=True, text=True, timeout=600)
    outputs = [p.communicate(timeout=600)[0] for p in procs]
    for i, (p, text) in enumerate(zip(procs, outputs)):
        assert p.returncode == 0, f"process {i}:\n{text[-3000:]}"
        assert f"MULTIHOST-OK process {i} of 2" in text
    assert single.returncode == 0, single.stdout[-2000:] + single.stderr[-2000:]

    multi, one = np.load(tmp_path / "multihost.npz"), np.load(tmp_path / "single.npz")
    assert int(multi["processes"]) == 2 and int(one["processes"]) == 1
    assert multi["positions"].shape == (64, 5)
    np.testing.assert_array_equal(multi["positions"], one["positions"])
    np.testing.assert_array_equal(multi["accepted"], one["accepted"])
    # the checkpoint was written once, with a manifest, at steps 20 and 50
    steps = sorted(p.name for p in (tmp_path / "ckpt_multihost").iterdir())
    assert steps == ["step_0000000020", "step_0000000050"]
    assert all((tmp_path / "ckpt_multihost" / s / "manifest.json").is_file() for s in steps)
    # the data-parallel trainer, stopped and resumed: the one-process numbers, within float32 round-off of its
    # gradient's all-reduce (two processes reduce across them through gloo; one process inside XLA)
    assert sorted(p.name for p in (tmp_path / "pis_multihost").iterdir()) == ["step_0000000004", "step_0000000008"]
    params = sorted(k for k in one.files if k.startswith("p") and k[1:].isdigit())
    assert params and sorted(k for k in multi.files if k.startswith("p") and k[1:].isdigit()) == params
    for k in [*params, "losses"]:
        np.testing.assert_allclose(multi[k], one[k], rtol=1e-5, atol=1e-6, err_msg=k)
