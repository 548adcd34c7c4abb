"""``jaxsamp bench list | run SUITE | merge SUITE DIR | reproduce SUITE CELL --seed K | report | docs [--check] | convert SUITE``: the benchmark suites on the command line."""

from __future__ import annotations

import argparse
import functools
from pathlib import Path


def add_parser(sub) -> None:
    """Add ``bench`` and its sub-commands to the ``jaxsamp`` parser's sub-parsers ``sub``."""
    p_bench = sub.add_parser("bench", help="benchmark suites: list, run, report (results in benchmarks/results)")
    bench = p_bench.add_subparsers(dest="bench_command", required=True)
    p_list = bench.add_parser("list", help="list the suites with their cells and what is recorded")
    p_list.add_argument("--results-dir", type=Path, default=None, help=argparse.SUPPRESS)
    p_list.set_defaults(func=_list)
    p_run = bench.add_parser("run", help="run a suite's cells and seeds, each seed recorded as it lands")
    p_run.add_argument("suite")
    p_run.add_argument("--cells", nargs="+", help="shell-style patterns of cell names (default every cell)")
    p_run.add_argument("--seeds", nargs="+", type=int, help="default the suite's seeds")
    p_run.add_argument("--budget-scale", type=int, default=1, help="train K times each cell's updates (cells 'NAME xK')")
    p_run.add_argument("--quick", action="store_true", help="the test size, into <suite>_quick.json (numbers not meaningful)")
    p_run.add_argument("--rerun", action="store_true", help="run recorded seeds again from the start (their checkpoints removed), replacing their records")
    p_run.add_argument("--results-dir", type=Path, default=None, help="default benchmarks/results")
    p_run.add_argument("--device-budget", type=float, metavar="SECONDS",
                       help="run the suite's device cells not yet recorded for this device kind, most valuable first, "
                            "each in its own process, within SECONDS of wall time (--cells and --seeds narrow them)")
    p_run.set_defaults(func=_run)
    p_merge = bench.add_parser("merge", help="copy the records another run wrote to DIR (--results-dir DIR) into the "
                                             "suite's results files, each with its machine")
    p_merge.add_argument("suite")
    p_merge.add_argument("source", type=Path, help="the folder the other run wrote to")
    p_merge.add_argument("--cells", nargs="+", help="shell-style patterns of the records to merge (default every one)")
    p_merge.add_argument("--results-dir", type=Path, default=None, help="default benchmarks/results")
    p_merge.set_defaults(func=_merge)
    p_report = bench.add_parser("report", help="print the markdown tables of recorded suites")
    p_report.add_argument("suites", nargs="*", help="default every suite with results")
    p_report.add_argument("--quick", action="store_true", help="report the quick-size results")
    p_report.add_argument("--results-dir", type=Path, default=None, help="default benchmarks/results")
    p_report.set_defaults(func=_report)
    p_again = bench.add_parser("reproduce", help="run one recorded cell and seed again from its stored definition "
                                                 "and compare its figures with the record (nothing is written)")
    p_again.add_argument("suite")
    p_again.add_argument("cell", help="the recorded cell's name ('NAME xK' for a budget-scaled one)")
    p_again.add_argument("--seed", type=int, required=True)
    p_again.add_argument("--quick", action="store_true", help="a record of the quick-size file")
    p_again.add_argument("--results-dir", type=Path, default=None, help="default benchmarks/results")
    p_again.set_defaults(func=_reproduce)
    p_docs = bench.add_parser("docs", help="write the marked figures of the README, docs and notebooks from the results")
    p_docs.add_argument("files", nargs="*", type=Path, help="default README.md, docs/**/*.md, notebooks/*.ipynb")
    p_docs.add_argument("--check", action="store_true", help="change nothing; fail (exit 2) when a figure is stale")
    p_docs.set_defaults(func=_docs)
    p_convert = bench.add_parser("convert", help="convert a suite's results file of the old scripts, once")
    p_convert.add_argument("suite")
    p_convert.add_argument("--results-dir", type=Path, default=None, help="default benchmarks/results")
    p_convert.set_defaults(func=_convert)


def _list(args) -> int:
    from jaxsamp.bench import store
    from jaxsamp.bench.suites import SUITES, suite

    for name in sorted(SUITES):
        protocol = suite(name)
        recorded = store.read(store.results_path(name, results_dir=args.results_dir))["records"]
        devices = {d: store.read(p)["records"] for d, p in store.device_files(name, results_dir=args.results_dir).items()}
        seeds = sum(len(s) for s in recorded.values())
        print(f"{name}: {protocol.summary}")
        print(f"  {len(protocol.cells)} cells x seeds {list(protocol.seeds)}; {seeds} cell-seeds recorded"
              + "".join(f"; {sum(map(len, r.values()))} on {d}" for d, r in devices.items()))
        for cell in protocol.cells:
            done = sorted(int(s) for s in recorded.get(cell.name, {}))
            line = f"    {cell.name:<40} recorded seeds {done if done else '-'}"
            for device, records in devices.items():
                if cell.name in records:
                    line += f"; {device} {sorted(int(s) for s in records[cell.name])}"
            print(line + ("  (device cell)" if cell.name in protocol.device else ""))
    return 0


def _run(args) -> int:
    from jaxsamp.bench import run_suite
    from jaxsamp.bench.runner import run_device_budget
    from jaxsamp.bench.store import RESULTS_DIR
    from jaxsamp.bench.suites import module
    from jaxsamp.core.errors import ConfigError

    suite = module(args.suite)
    results_dir = args.results_dir or RESULTS_DIR
    if args.device_budget is not None:
        if not suite.PROTOCOL.device:
            raise ConfigError(f"suite {args.suite!r} declares no device cells",
                              "`jaxsamp bench run device --device-budget SECONDS` runs the accelerator's suite")
        if args.rerun or args.budget_scale != 1:
            raise ConfigError("--device-budget runs what is not yet recorded at the declared budgets: it takes "
                              "neither --rerun nor --budget-scale")
        outcome = run_device_budget(suite.PROTOCOL, args.device_budget, cells=args.cells, seeds=args.seeds,
                                    quick=args.quick, results_dir=args.results_dir)
        return 1 if outcome["failed"] else 0
    hook = getattr(suite, "after_seed", None)
    run_suite(suite.PROTOCOL, cells=args.cells, seeds=args.seeds, budget_scale=args.budget_scale, quick=args.quick,
              results_dir=results_dir, rerun=args.rerun,
              after_seed=hook and functools.partial(hook, results_dir=results_dir, quick=args.quick))
    return 0


def _merge(args) -> int:
    from jaxsamp.bench.runner import merge
    from jaxsamp.bench.suites import suite

    merge(suite(args.suite), args.source, cells=args.cells, results_dir=args.results_dir)
    return 0


def _report(args) -> int:
    from jaxsamp.bench import store
    from jaxsamp.bench.report import suite_tables
    from jaxsamp.bench.suites import SUITES, suite

    names = args.suites or sorted(SUITES)
    for name in names:
        paths = [store.results_path(name, args.quick, args.results_dir),
                 *store.device_files(name, args.quick, args.results_dir).values()]
        for path in filter(Path.exists, paths):
            print(suite_tables(store.read_current(path, suite(name))))
        if args.suites and not any(p.exists() for p in paths):
            print(f"{name}: nothing recorded in {paths[0]}")
    return 0


def _convert(args) -> int:
    import json

    from jaxsamp.bench import legacy, store
    from jaxsamp.bench.machine import accelerator
    from jaxsamp.bench.suites import module

    suite = module(args.suite)
    old = Path(args.results_dir or store.RESULTS_DIR) / suite.LEGACY_FILE
    device = accelerator(json.loads(old.read_text()).get("machine", {})) if old.exists() else ""
    new = store.results_path(args.suite, results_dir=args.results_dir, device=device)
    data = legacy.convert(suite.PROTOCOL, old, suite.legacy_key, new,
                          legacy_machine=getattr(suite, "legacy_machine", None),
                          left_out=getattr(suite, "LEGACY_LEFT_OUT", frozenset()),
                          derived=getattr(suite, "derived_figures", None),
                          legacy_single=getattr(suite, "legacy_single", None))
    seeds = sum(len(s) for s in data["records"].values())
    print(f"{old} -> {new}: {seeds} cell-seeds in {len(data['records'])} cells")
    return 0


def _docs(args) -> int:
    from jaxsamp.bench.docs import update
    from jaxsamp.core.errors import InputError

    changes = update(args.files or None, check=args.check)
    for line in changes:
        print(("stale: " if args.check else "updated: ") + line)
    if args.check and changes:
        raise InputError(f"{len(changes)} documented figures differ from their results",
                         "run `jaxsamp bench docs` to write them")
    if not changes:
        print("every marked figure matches its results")
    return 0


def _reproduce(args) -> int:
    from jaxsamp.bench.runner import reproduce
    from jaxsamp.bench.suites import suite

    compared = reproduce(suite(args.suite), args.cell, args.seed, quick=args.quick, results_dir=args.results_dir)
    width = max(map(len, compared), default=0)
    print(f"{'figure':<{width}}  {'recorded':>14}  {'again':>14}  relative difference")
    for name, (recorded, again) in compared.items():
        if again is None or isinstance(recorded, (list, dict)):
            print(f"{name:<{width}}  {recorded!s:>14}  {'(not produced)':>14}")
            continue
        scale = max(abs(recorded), abs(again), 1e-300)
        print(f"{name:<{width}}  {recorded:>14.6g}  {again:>14.6g}  {abs(recorded - again) / scale:.2e}")
    return 0
