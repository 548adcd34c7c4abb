"""Shared test settings: XLA compiled for compile speed, and a fixed hypothesis profile sized for CI.

Compiling dominates most tests. XLA's CPU backend at optimisation level 0, without its
fusion emitters and expensive LLVM passes, compiles the suite's many small programs two to
three times faster (a DDS training scan: 4.9 s -> 1.4 s). Compiled code runs slower but means
the same, so every tolerance stands. Child processes inherit the flags through ``XLA_FLAGS``,
which is set here, before any test module imports JAX.
"""

import os

from hypothesis import HealthCheck, settings

FAST_COMPILE = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true --xla_cpu_use_fusion_emitters=false"
if FAST_COMPILE not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {FAST_COMPILE}".strip()

settings.register_profile(
    "ci", max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
