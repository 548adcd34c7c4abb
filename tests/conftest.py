"""Shared test settings: XLA compiled for compile speed, and a fixed hypothesis profile sized for CI.

Compiling dominates most tests. XLA's CPU backend without its fusion emitters, at LLVM
optimisation level 1, compiles the suite's programs about twice as fast (a DDS training scan:
about 8 s -> 4.5 s on a loaded 2-core machine) and runs them as fast as the defaults do (level 0
compiles a little faster still, but the long-running statistical tests then run 20-40 % slower).
Also skipping LLVM's expensive passes (``--xla_llvm_disable_expensive_passes=true``) was tried and left out:
four one-run comparisons of user CPU time gave -6, -17, -2 and +7 %, within this machine's noise.
XLA also splits each program's LLVM module into parts compiled on parallel threads; with two test workers on
two cores that buys no wall time and costs CPU, so the split is off (``--xla_cpu_parallel_codegen_split_count=1``):
user CPU time, alternating runs on a loaded machine, 2026-12-06: the 8-device data-parallel child 40.6, 40.9,
41.5, 40.8 s with the split against 37.0, 37.9 s without; the ASBS and AISIVI test modules 56.7, 60.9 s against
54.6, 52.6 s (about 8 % less). Results do not change: 20 ASBS epochs on DW-4 end with the same
parameters and W2, to the last digit, either way.
Results mean the same, so every tolerance stands; only round-off may differ. Child processes
inherit the flags through ``XLA_FLAGS``, which is set here, before any test module imports JAX.
"""

import gc
import os
import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, settings

FAST_COMPILE = "--xla_backend_optimization_level=1 --xla_cpu_use_fusion_emitters=false --xla_cpu_parallel_codegen_split_count=1"
# CPU-backend flags: an XLA built for another platform aborts on a flag it does not know, so a run that
# names another platform (JAX_PLATFORMS=cuda, as scripts/device_check.sh does) goes without them
ON_CPU = os.environ.get("JAX_PLATFORMS", "cpu") in ("", "cpu")
if ON_CPU and FAST_COMPILE not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {FAST_COMPILE}".strip()

# One on-disk compilation cache for the whole session: its test workers, their child processes (the
# 8-device and two-process tests, the notebooks' kernels, the benchmark scripts) and the modules after
# _release_compiled_programs below load a program another one compiled instead of compiling it again.
# Measured on the notebooks and the docs' examples (66 tests, 2 workers): 405 -> 384 CPU-seconds. The
# controller makes the folder before it starts the workers, which inherit it; it is removed at the end.
_OWN_CACHE = "JAX_COMPILATION_CACHE_DIR" not in os.environ
if _OWN_CACHE:
    os.environ["JAX_COMPILATION_CACHE_DIR"] = tempfile.mkdtemp(prefix="jaxsamp-tests-jit-cache-")
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.5")


def pytest_unconfigure(config):
    if _OWN_CACHE:
        shutil.rmtree(os.environ["JAX_COMPILATION_CACHE_DIR"], ignore_errors=True)


settings.register_profile(
    "ci", max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Drop JAX's compiled programs after each test module.

    Every XLA CPU executable keeps its machine code in memory mappings of its own. A test worker that
    compiled the suite's programs without ever releasing them reached about 20 000 mappings in 5 minutes
    (measured) and, late in a 15-minute run, the kernel's limit of 65 530 (vm.max_map_count): LLVM then
    crashed the worker with a segmentation fault while compiling. Modules rarely share programs, so
    recompiling the few that are is cheap.
    """
    yield
    import jax  # after XLA_FLAGS is set above

    jax.clear_caches()
    gc.collect()


@pytest.fixture
def compilations():
    """The backend compilations (event names) that happen while the test runs: ``[]`` means nothing compiled."""
    import jax

    seen: list[str] = []

    def listen(event, duration, **kwargs):
        if event.endswith("backend_compile_duration"):
            seen.append(event)

    jax.monitoring.register_event_duration_secs_listener(listen)
    yield seen
    jax.monitoring.unregister_event_duration_listener(listen)
