"""``python -m jaxsamp ...``: the ``jaxsamp`` command, for a caller that has an interpreter but no script on its
path (``jaxsamp bench run --device-budget`` starts its cells this way)."""

from jaxsamp.cli import main

if __name__ == "__main__":  # imported (the API docs walk every module), it runs nothing
    raise SystemExit(main())
