"""The experiment configs shipped with jaxsamp, found by name: ``jaxsamp run quickstart``.

The configs live once, in the repository's top-level ``configs/`` folder; the
wheel carries a copy as ``jaxsamp/configs/`` (setup.py's build hook). A config
spec is either a path or the name of a shipped config: a spec with a path
separator or a ``.yaml`` / ``.yml`` suffix is a path (``configs/quickstart.yaml``,
``./my_run.yaml``), and so is a spec naming a file that exists (a local file
wins over a shipped config of the same name); any other spec is a name
(``quickstart``). Where a spec could mean both, one line on stderr says which
was used (:func:`resolve_config`).
"""

from __future__ import annotations

import difflib
import re
import sys
from pathlib import Path

from jaxsamp.core.errors import ConfigError

#: Suffixes that make a config spec a path rather than a name.
YAML_SUFFIXES = (".yaml", ".yml")
#: Longest description :func:`describe` returns, in characters.
DESCRIPTION_WIDTH = 100


def config_dir() -> Path:
    """The folder of the shipped configs.

    Returns
    -------
    Path
        ``jaxsamp/configs/`` inside an installed wheel; in a source checkout
        (or an editable install), the repository's top-level ``configs/``.
    """
    packaged = Path(__file__).resolve().parents[1] / "configs"
    return packaged if packaged.is_dir() else packaged.parents[1] / "configs"


def shipped_configs() -> dict[str, Path]:
    """Every shipped config, by name (the file name without ``.yaml``), sorted by name."""
    return {path.stem: path for path in sorted(config_dir().glob("*.yaml"))}


def describe(path: str | Path) -> str:
    """A config's one-line description: the first sentence of its leading comment.

    The comment block at the top of the file is joined into one text; its first
    sentence (up to a full stop followed by a capital letter, or the end of the
    block) is shortened at a word boundary to :data:`DESCRIPTION_WIDTH`
    characters, ending with ``...`` when cut. A file without a leading comment
    has the empty description.
    """
    lines = []
    for line in Path(path).read_text().splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    text = " ".join(filter(None, lines))
    sentence = re.split(r"(?<=\.)\s+(?=[A-Z])", text, maxsplit=1)[0]
    if len(sentence) <= DESCRIPTION_WIDTH:
        return sentence
    return sentence[: DESCRIPTION_WIDTH - 3].rsplit(" ", 1)[0].rstrip(",;:(") + "..."


def resolve_config(spec: str | Path) -> Path:
    """The file a config spec names: a path as given, or a shipped config by name.

    The rule: a spec with a path separator or a ``.yaml`` / ``.yml`` suffix, or
    naming a file that exists, is a path; any other spec is a shipped config's
    name. So a local file wins over a shipped config of the same name. Where a
    spec could mean both, one line on stderr (``jaxsamp: note: ...``) says which
    one is used and how to run the other: a local file ``quickstart`` when
    ``quickstart`` is also shipped, or a shipped ``quickstart`` when the folder
    also holds a ``quickstart.yaml``.

    Parameters
    ----------
    spec : str or Path
        A path or the name of a shipped config (``jaxsamp list --configs`` lists
        them).

    Returns
    -------
    Path
        The path itself (whether it exists is :func:`~jaxsamp.experiments.config.load_config`'s
        check), or the shipped config's file.

    Raises
    ------
    ConfigError
        A name that matches no shipped config; the message lists the closest
        names.
    """
    if isinstance(spec, Path) or "/" in spec or "\\" in spec or spec.endswith(YAML_SUFFIXES):
        return Path(spec)
    configs = shipped_configs()
    if Path(spec).is_file():
        if spec in configs:
            _note(f"config {spec!r} is the file {Path(spec).resolve()} here, not the shipped config of that name "
                  f"(`jaxsamp run {configs[spec]}` runs that one)")
        return Path(spec)
    if spec in configs:
        local = next((Path(spec + suffix) for suffix in YAML_SUFFIXES if Path(spec + suffix).is_file()), None)
        if local is not None:
            _note(f"config {spec!r} is the shipped one, {configs[spec]}; `jaxsamp run ./{local}` runs the file "
                  f"{local} here")
        return configs[spec]
    close = difflib.get_close_matches(spec, configs, n=5, cutoff=0.5)
    close += sorted(name for name in configs if spec in name and name not in close)[: 5 - len(close)]
    suggestion = f"did you mean {', '.join(close)}? " if close else ""
    raise ConfigError(
        f"no shipped config is named {spec!r} and no file {spec!r} is here (a path needs a '/' or a .yaml suffix)",
        f"{suggestion}`jaxsamp list --configs` lists all {len(configs)}",
    )


def _note(text: str) -> None:
    """One line on stderr, as the command line prints what it chose for the user."""
    print(f"jaxsamp: note: {text}", file=sys.stderr, flush=True)
