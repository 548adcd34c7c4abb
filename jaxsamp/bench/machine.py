"""The machine record kept with every recorded seed, and the label that keeps machines apart.

XLA's CPU code differs with the vector width (AVX-512 or AVX2), and so does its round-off: a long training run
on one seed can end elsewhere on another host. So every seed's figures carry the machine that produced them, and
the aggregation never pools seeds, nor forms a ratio, across machines (:func:`machine_label`).
"""

from __future__ import annotations

import json
import os
import platform
import re
from pathlib import Path


def cpu_model() -> dict:
    """The CPU's model name and its widest vector extension (Linux; empty elsewhere)."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    fields = dict(line.split(":", 1) for line in info.splitlines() if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    flags = set(fields.get("flags", "").split())
    vector = next((f for f in ("avx512f", "avx2", "avx", "sse4_2") if f in flags), "")
    return {"cpu_model": fields.get("model name", ""), "cpu_vector": vector}


def machine() -> dict:
    """This machine: platform, CPU model and vector extension, core count, Python, jax/jaxlib, devices."""
    import jax
    import jaxlib

    devices = jax.devices()
    return {
        "platform": platform.platform(),
        "processor": platform.machine(),
        **cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "device_kind": devices[0].device_kind if devices else "",
        "devices": [str(d) for d in devices],
    }


def machine_label(record: dict) -> str:
    """What must match for two seeds to be pooled: CPU model and vector width, cores, jax/jaxlib, device kind.

    A record without a CPU model (the old scripts' records did not keep it) is told by its platform string, whose
    kernel build is the only trace of the host left in it, so that such seeds of different hosts are not pooled.

    >>> machine_label({"cpu_model": "Xeon", "cpu_vector": "avx2", "cpu_count": 2, "jax": "0.7.0",
    ...                "jaxlib": "0.7.0", "device_kind": "cpu"})
    'Xeon (avx2), 2 cores, jax 0.7.0/0.7.0, cpu'
    >>> machine_label({"platform": "Linux-6.18-fc-v1045-x86_64", "processor": "x86_64", "cpu_count": 2,
    ...                "jax": "0.10.1", "devices": ["cpu:0"]})
    'Linux-6.18-fc-v1045-x86_64, 2 cores, jax 0.10.1/?, cpu'
    """
    cpu = record.get("cpu_model") or record.get("platform") or record.get("processor") or "unknown CPU"
    vector = f" ({record['cpu_vector']})" if record.get("cpu_vector") else ""
    device = record.get("device_kind") or (record.get("devices") or ["unknown device"])[0].split(":")[0]
    return (f"{cpu}{vector}, {record.get('cpu_count', '?')} cores, jax {record.get('jax', '?')}/"
            f"{record.get('jaxlib', '?')}, {device}")


def accelerator(record: dict) -> str:
    """The device kind of a machine record as a file-name part (``"nvidia-h200"``), or ``""`` on a CPU.

    A suite's seeds run on an accelerator go to their own results file, ``<suite>.<accelerator>.json``: a seed
    recorded there never replaces a CPU seed of the same cell, and each device kind keeps what it has run.

    >>> accelerator({"device_kind": "NVIDIA H200", "devices": ["cuda:0"]})
    'nvidia-h200'
    >>> accelerator({"device_kind": "cpu", "devices": ["TFRT_CPU_0"]})
    ''
    """
    kind = record.get("device_kind", "")
    if not kind or kind.lower() == "cpu":
        return ""
    return re.sub(r"[^a-z0-9]+", "-", kind.lower()).strip("-")


if __name__ == "__main__":  # the record as JSON, for a process that must not hold the accelerator itself
    print(json.dumps(machine()))
