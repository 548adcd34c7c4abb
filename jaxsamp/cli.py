"""Command line: ``jaxsamp run CONFIG [key=value ...] | resume RUN_DIR | list``."""

from __future__ import annotations

import argparse
import sys


def _cmd_run(args) -> int:
    from jaxsamp.experiments.config import load_config
    from jaxsamp.experiments.runner import run_experiment

    cfg = load_config(args.config, args.overrides)
    run_experiment(cfg)
    return 0


def _cmd_resume(args) -> int:
    from jaxsamp.experiments.runner import resume_experiment

    resume_experiment(args.run_dir)
    return 0


def _cmd_list(args) -> int:
    import jaxsamp.targets  # noqa: F401  (registers targets)
    from jaxsamp.experiments import kinds as _kinds  # noqa: F401
    from jaxsamp.experiments.registry import EXPERIMENTS, SAMPLERS, TARGETS
    import jaxsamp.mcmc  # noqa: F401  (registers samplers)

    for registry in (TARGETS, SAMPLERS, EXPERIMENTS):
        print(f"{registry.kind}s:")
        for name in registry.names():
            print(f"  {name:<22} {registry.entry(name).summary}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jaxsamp", description="Sampling experiments from YAML configs.")
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", help="run an experiment config into runs/<name>/<timestamp>/")
    p_run.add_argument("config", help="path to a YAML config, e.g. configs/quickstart.yaml")
    p_run.add_argument("overrides", nargs="*", help="key=value overrides, e.g. run.num_steps=100")
    p_run.set_defaults(func=_cmd_run)
    p_resume = sub.add_parser("resume", help="continue a killed run from its newest checkpoint")
    p_resume.add_argument("run_dir")
    p_resume.set_defaults(func=_cmd_resume)
    p_list = sub.add_parser("list", help="list targets, samplers and experiment kinds")
    p_list.set_defaults(func=_cmd_list)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from jaxsamp.experiments.registry import ConfigError

    try:
        return args.func(args)
    except ConfigError as err:
        print(f"jaxsamp: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("jaxsamp: interrupted; `jaxsamp resume RUN_DIR` continues from the last checkpoint", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
