"""Shipped configs found by name (``jaxsamp run quickstart``), their descriptions, and ``jaxsamp list --configs``."""

from pathlib import Path

import pytest

from jaxsamp.cli import main
from jaxsamp.core.errors import ConfigError
from jaxsamp.experiments.config import load_config
from jaxsamp.experiments.shipped import DESCRIPTION_WIDTH, config_dir, describe, resolve_config, shipped_configs

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def test_a_checkout_ships_the_top_level_configs_folder():
    assert config_dir() == CONFIGS
    assert list(shipped_configs()) == sorted(p.stem for p in CONFIGS.glob("*.yaml"))


def test_a_name_resolves_to_the_shipped_config_and_a_path_stays_a_path():
    assert resolve_config("quickstart") == CONFIGS / "quickstart.yaml"
    for spec in ("configs/quickstart.yaml", "quickstart.yaml", "my.yml", "./quickstart"):
        assert resolve_config(spec) == Path(spec)
    assert resolve_config(Path("quickstart")) == Path("quickstart")
    assert load_config("quickstart") == load_config(CONFIGS / "quickstart.yaml")


@pytest.mark.parametrize(
    "spec, close",
    [("quickstar", ["quickstart"]), ("leaps", ["leaps_ising_L8", "leaps_ising_L15", "leaps_potts_L15"]), ("xyzzy", [])],
)
def test_an_unknown_name_is_a_one_line_error_listing_close_names(spec, close):
    with pytest.raises(ConfigError, match=f"no shipped config is named '{spec}'") as err:
        load_config(spec)
    line = err.value.one_line()
    assert "\n" not in line and "jaxsamp list --configs" in line
    assert all(name in err.value.hint for name in close)
    assert ("did you mean" in err.value.hint) == bool(close)


def test_a_missing_yaml_path_named_like_a_shipped_config_hints_at_the_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="config file not found: quickstart.yaml") as err:
        load_config("quickstart.yaml")
    assert "found by name: quickstart" in err.value.hint


@pytest.mark.parametrize(
    "text, description",
    [
        ("# One line.\nname: x\n", "One line."),
        ("# Two comment lines joined\n# into one sentence. A second sentence.\nname: x\n", "Two comment lines joined into one sentence."),
        ("# Havens et al. 2025 keep the abbreviation. Next.\n", "Havens et al. 2025 keep the abbreviation."),
        ("name: x\n# not a header\n", ""),
        ("# " + "word " * 40 + "\n", ("word " * 19).strip() + "..."),
    ],
)
def test_describe_is_the_first_sentence_of_the_header_comment_on_one_line(tmp_path, text, description):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    assert describe(path) == description


def test_every_shipped_config_has_a_one_line_description():
    for name, path in shipped_configs().items():
        text = describe(path)
        assert text and len(text) <= DESCRIPTION_WIDTH and "\n" not in text, name


def test_list_configs_prints_every_name_with_its_description(capsys):
    assert main(["list", "--configs"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"configs ({len(shipped_configs())} in {CONFIGS}")
    rows = {line.split()[0]: line.split(maxsplit=1)[1] for line in out[1:]}
    assert rows.keys() == shipped_configs().keys()
    assert rows["mala_gaussian"] == "blackjax MALA on a correlated 8-d Gaussian."


def test_plain_list_points_to_the_configs(capsys):
    assert main(["list"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last == f"configs: {len(shipped_configs())} shipped, listed by `jaxsamp list --configs`"


def test_run_with_an_unknown_name_exits_2_with_one_line(tmp_path, capsys):
    assert main(["run", "quickstar", f"run.out_dir={tmp_path}"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("jaxsamp: error: ConfigError: no shipped config is named 'quickstar'") and "\n" not in err
    assert not any(tmp_path.iterdir())


# --------------------------------------------------------------------------
# a local file named like a shipped config (issue 61): a file that exists wins, and a note says so
# --------------------------------------------------------------------------


def _local_config(folder: Path, file_name: str) -> Path:
    path = folder / file_name
    path.write_text((CONFIGS / "quickstart.yaml").read_text().replace("name: quickstart", "name: mine"))
    return path


def test_a_local_file_named_like_a_shipped_config_wins_with_a_note(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _local_config(tmp_path, "quickstart")
    assert load_config("quickstart").name == "mine"
    (note,) = capsys.readouterr().err.splitlines()
    assert note.startswith("jaxsamp: note: config 'quickstart' is the file ") and str(CONFIGS / "quickstart.yaml") in note


def test_a_shipped_name_beside_a_local_yaml_of_that_name_says_which_is_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _local_config(tmp_path, "quickstart.yaml")
    assert load_config("quickstart").name == "quickstart"
    (note,) = capsys.readouterr().err.splitlines()
    assert "is the shipped one" in note and "`jaxsamp run ./quickstart.yaml`" in note
    assert load_config("quickstart.yaml").name == "mine" and capsys.readouterr().err == ""


def test_a_local_file_that_is_no_shipped_name_is_run_without_a_note(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _local_config(tmp_path, "my_run")
    assert load_config("my_run").name == "mine" and capsys.readouterr().err == ""
    (tmp_path / "quickstart").mkdir()  # a folder is not a config: the shipped one is used
    assert load_config("quickstart").name == "quickstart" and capsys.readouterr().err == ""
