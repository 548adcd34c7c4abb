"""The standard table: every entry read from its suite's results, written into the docs and checked like a figure."""

import pytest
from test_documented_figures import results  # noqa: F401  (the toy suite's results, a fixture)

from jaxsamp.bench import docs, standard
from jaxsamp.bench.suites import suite
from jaxsamp.core.errors import InputError

TOY_COLUMNS = (standard.Column("t", "toy target", "log_Z_abs_err"), standard.Column("u", "other target", "w2"))
TOY_ROWS = (standard.Row("learned", "5 updates", {"t": ("toy", "learned/t"), "u": ("toy", "learned/t")}),)


@pytest.fixture
def toy_table(monkeypatch):
    monkeypatch.setattr(standard, "COLUMNS", TOY_COLUMNS)
    monkeypatch.setattr(standard, "ROWS", TOY_ROWS)
    monkeypatch.setattr(standard, "TABLES", (("errors", None), ("ess", "ess")))


def test_every_entry_names_a_cell_of_its_suites_protocol_and_a_column():
    keys = {c.key for c in standard.COLUMNS}
    for row in standard.ROWS:
        assert set(row.entries) <= keys, row.label
        for suite_name, cell in row.entries.values():
            assert cell in {c.name for c in suite(suite_name).cells}, (row.label, suite_name, cell)


def test_entries_are_mean_sd_and_seeds_and_a_missing_figure_is_a_dash(results, toy_table):  # noqa: F811
    text = standard.table(results)
    errors, ess = text.split("**ess**")
    assert "| learned | 0.11 ± 0.01 (3) | — | 5 updates |" in errors  # the toy cell has no w2
    assert "| learned | — | — | 5 updates |" in ess
    assert "`toy`" in text


def test_an_entry_whose_cell_has_no_results_is_an_error(results, toy_table, monkeypatch):  # noqa: F811
    monkeypatch.setattr(standard, "ROWS", (standard.Row("x", "", {"t": ("toy", "other/t")}),))
    with pytest.raises(InputError, match="no results for cell 'other/t'"):
        standard.table(results)


def test_the_block_is_written_into_a_page_and_a_stale_one_fails_the_check(results, toy_table, tmp_path):  # noqa: F811
    page = tmp_path / "page.md"
    page.write_text("before\n<!--bench-table standard-->\nold\n<!--/bench-table-->\nafter\n")
    assert docs.update([page], check=True, results_dir=results) == ["page.md: the standard table differs from its "
                                                                     "results"]
    docs.update([page], results_dir=results)
    assert "0.11 ± 0.01 (3)" in page.read_text() and "old" not in page.read_text()
    assert docs.update([page], check=True, results_dir=results) == []
    page.write_text("<!--bench-table nosuch-->\n<!--/bench-table-->\n")
    with pytest.raises(InputError, match="unknown bench table block .nosuch.*the blocks: standard, scld-break-even"):
        docs.update([page], check=True, results_dir=results)
