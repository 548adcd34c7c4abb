"""Command line: ``jaxsamp run CONFIG [key=value ...] | resume RUN_DIR | list [--configs] | bench ...``.

CONFIG is a YAML file or the name of a shipped config (``jaxsamp run quickstart``).

Every expected error -- a bad config, parameter or state, a checkpoint of
another run, a file or folder that cannot be read or written, a run that failed
its health checks under ``--strict`` -- is printed as one line,
``jaxsamp: error: <Type>: <message> (hint: ...)``, with exit status 2.
``--debug`` shows the traceback instead. Anything else is a bug in jaxsamp: it
is printed as one line asking for ``--debug`` and a report, with status 1.
A warning is one line too, ``jaxsamp: warning: <message>``.

Options may come anywhere after the sub-command, among the overrides too
(``jaxsamp run quickstart --strict run.num_steps=100``). CONFIG is read by this
rule: a spec with a ``/`` or a ``.yaml`` / ``.yml`` suffix, or naming a file that
exists, is a path, so a local file wins over a shipped config of the same name;
any other spec names a shipped config. Where a spec could mean both, one line
(``jaxsamp: note: ...``) says which was used.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

#: Exit status of an expected error (bad input, unusable file, failed health check).
EXIT_ERROR = 2
#: Exit status of an unexpected error (a bug).
EXIT_BUG = 1
#: Exit status after Ctrl-C.
EXIT_INTERRUPTED = 130


def _cmd_run(args) -> int:
    from jaxsamp.experiments.config import load_config
    from jaxsamp.experiments.runner import run_experiment

    cfg = load_config(args.config, args.overrides)
    run_experiment(cfg, strict=args.strict)
    return 0


def _cmd_resume(args) -> int:
    from jaxsamp.experiments.runner import resume_experiment

    resume_experiment(args.run_dir, strict=args.strict)
    return 0


def _cmd_list(args) -> int:
    if args.configs:
        return _list_configs()
    import jaxsamp.learned.methods  # noqa: F401  (registers the methods of jaxsamp.fit)
    from jaxsamp.core.registry import EXPERIMENTS, LEARNED, SAMPLERS, TARGETS
    from jaxsamp.experiments import runner  # noqa: F401  (imports every registering module)
    from jaxsamp.experiments.shipped import shipped_configs

    for registry in (TARGETS, SAMPLERS, LEARNED, EXPERIMENTS):
        print(f"{registry.kind}s:")
        for name in registry.names():
            print(f"  {name:<22} {registry.entry(name).summary}")
    print(f"configs: {len(shipped_configs())} shipped, listed by `jaxsamp list --configs`")
    return 0


def _list_configs() -> int:
    from jaxsamp.experiments.shipped import config_dir, describe, shipped_configs

    configs = shipped_configs()
    print(f"configs ({len(configs)} in {config_dir()}; run one with `jaxsamp run NAME`):")
    width = max(map(len, configs), default=0)
    for name, path in configs.items():
        print(f"  {name:<{width}}  {describe(path)}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jaxsamp", description="Sampling experiments from YAML configs.")
    parser.add_argument("--debug", action="store_true", help="show full tracebacks instead of one-line errors")
    # the same flag after the sub-command; SUPPRESS keeps it from resetting the one given before
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", required=True)
    strict = argparse.ArgumentParser(add_help=False)
    strict.add_argument(
        "--strict", action="store_true", help="fail (exit 2) when the run ends with health warnings"
    )
    p_run = sub.add_parser(
        "run", parents=[common, strict], help="run an experiment config into runs/<name>/<timestamp>/"
    )
    p_run.add_argument(
        "config",
        help="a YAML file's path, or a shipped config's name (`jaxsamp list --configs`), e.g. quickstart; "
        "a file that exists wins over a shipped config of the same name (a note says which was used)",
    )
    p_run.add_argument(
        "overrides", nargs="*", help="key=value overrides, e.g. run.num_steps=100 (options may come before, among or after them)"
    )
    p_run.set_defaults(func=_cmd_run)
    p_resume = sub.add_parser("resume", parents=[common, strict], help="continue a killed run from its newest checkpoint")
    p_resume.add_argument("run_dir")
    p_resume.set_defaults(func=_cmd_resume)
    p_list = sub.add_parser("list", parents=[common], help="list targets, samplers, learned methods and experiment kinds")
    p_list.add_argument(
        "--configs", action="store_true", help="list the shipped configs with their descriptions instead"
    )
    p_list.set_defaults(func=_cmd_list)
    from jaxsamp.bench.command import add_parser as add_bench_parser

    add_bench_parser(sub)
    return parser


def _expected(err: BaseException) -> bool:
    """Errors a user can cause and fix: jaxsamp's own, files and folders, memory."""
    from jaxsamp.core.errors import JaxsampError

    return isinstance(err, (JaxsampError, OSError, MemoryError))


def _one_line(err: BaseException) -> str:
    if hasattr(err, "one_line"):
        return err.one_line()
    text = " ".join(str(err).split()) or "(no message)"
    return f"{type(err).__name__}: {text}"


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A Python warning as one line, ``jaxsamp: warning: <message>`` (``--debug`` shows where it was raised)."""
    print(f"jaxsamp: warning: {' '.join(str(message).split())}", file=sys.stderr, flush=True)


def _interrupted(err: KeyboardInterrupt, args) -> str:
    """What Ctrl-C left: the run folder to resume (``err.run_dir``, set by the runner), or that nothing was kept."""
    run_dir = getattr(err, "run_dir", getattr(args, "run_dir", None))
    if run_dir is None:
        return "interrupted; nothing was kept (the run had not written a checkpoint yet)"
    return f"interrupted; `jaxsamp resume {run_dir}` continues from the last checkpoint"


def parse_args(parser: argparse.ArgumentParser, argv: list[str] | None = None) -> argparse.Namespace:
    """``parser.parse_args(argv)``, with options allowed between a config and its overrides.

    argparse ends ``run CONFIG [key=value ...]``'s overrides at the first option,
    so ``run quickstart --strict run.num_steps=5`` would leave the overrides after
    ``--strict`` unrecognised. They are the overrides' continuation (an override
    never starts with ``-``), taken in their order.
    """
    args, extra = parser.parse_known_args(argv)
    if isinstance(getattr(args, "overrides", None), list):
        args.overrides += [a for a in extra if not a.startswith("-")]
        extra = [a for a in extra if a.startswith("-")]
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(build_parser(), argv)
    try:
        with warnings.catch_warnings():
            if not args.debug:
                warnings.showwarning = _show_warning
            return args.func(args)
    except KeyboardInterrupt as err:
        if args.debug:
            raise
        print(f"jaxsamp: {_interrupted(err, args)}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `jaxsamp list | head`: the reader left; not an error (the Unix convention)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error when Python flushes
        return 0
    except Exception as err:
        if args.debug:
            raise
        if _expected(err):
            print(f"jaxsamp: error: {_one_line(err)}", file=sys.stderr)
            return EXIT_ERROR
        print(
            f"jaxsamp: internal error: {_one_line(err)} (this is a bug in jaxsamp: rerun with --debug for the "
            "traceback and report it)",
            file=sys.stderr,
        )
        return EXIT_BUG


if __name__ == "__main__":
    sys.exit(main())
