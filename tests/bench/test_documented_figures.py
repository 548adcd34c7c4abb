"""Figures in the README, docs and notebooks are written from the results and checked against them."""

import json

import pytest
from test_runner import toy  # noqa: F401  (registers the toy runner)

from jaxsamp.bench import docs, runner
from jaxsamp.bench.protocol import Budget, Cell, Goal, Protocol
from jaxsamp.core.errors import InputError


@pytest.fixture
def results(tmp_path):
    protocol = Protocol("toy", "toy", (Cell("learned/t", "toy_for_tests", {"name": "gaussian", "dim": 2},
                                            {"error": 0.1}, Budget(updates=5)),),
                        seeds=(0, 1, 2), goals=(Goal("learned/t", "log_Z_abs_err", 0.2),))
    runner.run_suite(protocol, results_dir=tmp_path, log=lambda _: None)
    return tmp_path


def marked(spec: str, text: str = "stale") -> str:
    return f"<!--bench {spec}-->{text}<!--/bench-->"


def test_a_marker_renders_mean_sd_seeds_and_the_goal_decision(results):
    assert docs.render("toy ; learned/t ; log_Z_abs_err ; {mean:.2f} ± {sd:.2f} ({n} seeds)", results) == \
        "0.11 ± 0.01 (3 seeds)"
    assert docs.render("toy ; learned/t ; goal:log_Z_abs_err ; {decision} (< {threshold})", results) == "met (< 0.2)"
    assert docs.render("toy ; learned/t ; log_Z_abs_err ; {seed1:.2f}, not {seed2:.2f}", results) == "0.11, not 0.12"


def test_a_marker_reads_the_seeds_an_accelerator_ran_from_their_own_file(results):
    """``SUITE.DEVICE`` names ``<suite>.<device>.json``: there the toy file copied under an accelerator's name."""
    (results / "toy.nvidia-h200.json").write_text((results / "toy.json").read_text())
    assert docs.render("toy.nvidia-h200 ; learned/t ; log_Z_abs_err ; {n} seeds", results) == "3 seeds"
    with pytest.raises(InputError, match="no results file"):
        docs.render("toy.nvidia-h100 ; learned/t ; log_Z_abs_err ; {n}", results)


@pytest.mark.parametrize("spec, message", [
    ("nosuite ; learned/t ; log_Z_abs_err ; {mean}", "no results file"),
    ("toy ; other/t ; log_Z_abs_err ; {mean}", "no results for cell 'other/t'"),
    ("toy ; learned/t ; ess ; {mean}", "has no figure 'ess'"),
    ("toy ; learned/t ; log_Z_abs_err ; {median}", "bad format"),
    ("toy ; learned/t ; log_Z_abs_err", "expected 'suite ; cell ; figure ; format"),
    ("toy ; learned/t ; log_Z_abs_err ; {mean} ; no such machine", "0 machines match"),
    ("toy ; learned/t ; goal:ess ; {decision}", "no goal on 'ess'"),
])
def test_a_marker_without_results_behind_it_is_an_error_naming_it(results, spec, message):
    with pytest.raises(InputError, match=message):
        docs.render(spec, results)


def test_update_writes_markdown_and_notebook_markdown_and_check_reports_stale_figures(results, tmp_path):
    page = tmp_path / "page.md"
    page.write_text(f"error {marked('toy ; learned/t ; log_Z_abs_err ; {mean:.3f}')} here\n")
    nb = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": [f"n = {marked('toy ; learned/t ; log_Z_abs_err ; {n}')}"]},
                    {"cell_type": "code", "metadata": {}, "source": ["x = 1"], "outputs": [], "execution_count": None}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    notebook = tmp_path / "nb.ipynb"
    notebook.write_text(json.dumps(nb, indent=1) + "\n")
    stale = docs.update([page, notebook], check=True, results_dir=results)
    assert stale == ["page.md: 'stale' -> '0.110'", "nb.ipynb: 'stale' -> '3'"]
    assert "stale" in page.read_text()  # a check changes nothing
    docs.update([page, notebook], results_dir=results)
    assert "-->0.110<!--" in page.read_text()
    assert json.loads(notebook.read_text())["cells"][0]["source"] == ["n = " + marked("toy ; learned/t ; log_Z_abs_err ; {n}", "3")]
    assert docs.update([page, notebook], check=True, results_dir=results) == []


def test_every_documented_figure_matches_its_results():
    """The README, the docs' pages and the notebooks: a figure that drifted from its results key fails here
    (`jaxsamp bench docs` rewrites them)."""
    assert docs.update(check=True) == []
    assert any("<!--bench " in p.read_text() for p in docs.documented_files())


def test_markers_read_a_comparison_and_a_goal_on_a_ratio(tmp_path):
    from jaxsamp.bench.protocol import Comparison

    cells = (Cell("learned/t", "toy_for_tests", {"name": "gaussian", "dim": 2}, {"error": 0.1}, Budget(updates=5)),
             Cell("smc/t", "toy_for_tests", {"name": "gaussian", "dim": 2}, {"error": 0.05}, Budget(updates=5)))
    protocol = Protocol("toy", "toy", cells, seeds=(0, 1, 2),
                        goals=(Goal("learned/t", "log_Z_abs_err", 2.5, baseline="smc/t"),),
                        comparisons=(Comparison("learned/t", "smc/t", "log_Z_abs_err"),))
    runner.run_suite(protocol, results_dir=tmp_path, log=lambda _: None)
    spec = "toy ; learned/t ; compare:log_Z_abs_err vs smc/t ; {ratio_median:.2f} ({ratio_min:.2f}-{ratio_max:.2f})"
    assert docs.render(spec, tmp_path) == "1.83 (1.71-2.00)"
    difference = docs.values("toy ; learned/t ; compare:log_Z_abs_err vs smc/t ; -", tmp_path)
    assert difference["lo"] < difference["mean"] < difference["hi"]  # the paired differences' 95 % interval
    assert docs.render("toy ; learned/t ; goal:log_Z_abs_err vs smc/t ; {decision}", tmp_path) == "met"
    assert docs.render("toy ; learned/t ; goal:log_Z_abs_err vs smc/t @ 2.5 ; {threshold}", tmp_path) == "2.5"
    with pytest.raises(InputError, match="no goal on 'log_Z_abs_err vs smc/t @ 0.5'"):
        docs.render("toy ; learned/t ; goal:log_Z_abs_err vs smc/t @ 0.5 ; {decision}", tmp_path)
    with pytest.raises(InputError, match="no compare on 'ess vs smc/t'"):
        docs.render("toy ; learned/t ; compare:ess vs smc/t ; {mean}", tmp_path)
