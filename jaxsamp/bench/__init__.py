"""Benchmarks as a library: protocols stored as data, a resumable runner, aggregation with decision rules,
and reports generated from the results.

``jaxsamp bench list | run SUITE | report`` on the command line; in Python::

    from jaxsamp import bench
    bench.run_suite(bench.suite("paths"), cells=["pis-kl/gmm"], seeds=[0])

A suite is a :class:`Protocol` (cells, seeds, budgets, evaluation, goals) in ``jaxsamp/bench/suites/``; its
results go to ``benchmarks/results/<suite>.json`` (:mod:`jaxsamp.bench.store`).
"""

from jaxsamp.bench.protocol import Budget, Cell, Comparison, Goal, Protocol
from jaxsamp.bench.runner import run_suite
from jaxsamp.bench.suites import SUITES, suite
from jaxsamp.core.lazy import submodule_getattr

__all__ = ["SUITES", "Budget", "Cell", "Comparison", "Goal", "Protocol", "run_suite", "suite"]

__getattr__ = submodule_getattr(__name__)  # submodules on first use
