"""The ``scld`` suite at its quick size through ``jaxsamp bench`` on GMM40 (SCLD, the same SMC with the learned part
off, and tempered SMC at the evaluations of SCLD's sampling run), and its protocol: issue 59's goals."""

import numpy as np
import pytest
from _glossary_names import assert_glossary_names

from jaxsamp.bench import store
from jaxsamp.bench.suites import scld
from jaxsamp.cli import main


def test_quick_run_pairs_scld_with_its_learned_part_off_and_smc_at_its_sampling_evaluations(tmp_path):
    assert main(["bench", "run", "scld", "--quick", "--cells", "*/gmm", "--results-dir", str(tmp_path)]) == 0
    data = store.read(tmp_path / "scld_quick.json")
    trained, off, smc = (data["records"][f"{m}/gmm"]["0"]["figures"] for m in ("scld", "ula-smc", "smc"))
    assert trained["train_steps"] == 2 and trained["target_evals"] > 0 and "train_steps" not in off
    assert off["sample_target_evals"] == trained["sample_target_evals"] > 0  # the same run's cost, learned part off
    assert trained["log_Z_hat"] != off["log_Z_hat"]  # two updates moved the transitions
    assert smc["target_evals"] <= trained["sample_target_evals"] + 2 * 32 * 4  # within anneal's two-level floor
    assert trained["sinkhorn"] > 0 and off["sinkhorn"] > 0  # GMM40 has exact samples: the paper's sample figure
    assert "sinkhorn" not in smc  # asked of the SMC cells of the paper's own targets only
    assert_glossary_names({f for cell in data["records"].values() for r in cell.values() for f in r["figures"]})
    goal = next(g for g in data["goals"] if g["cell"] == "scld/gmm")
    assert goal["baseline"] == "ula-smc/gmm" and goal["decision"] == "undecided"  # one seed


def test_the_goals_are_issue_59_s():
    protocol = scld.PROTOCOL
    assert {(g.cell, g.threshold, g.baseline) for g in protocol.goals} == {
        ("scld/funnel", 0.1, ""), ("scld/many_well", 0.01, ""), ("scld/gmm", 1.0, "ula-smc/gmm"),
        ("scld/student_t", 1.0, "ula-smc/student_t")}
    for target in scld.TARGETS:
        trained, off = protocol.cell(f"scld/{target}"), protocol.cell(f"ula-smc/{target}")
        assert trained.params["settings"] == off.params["settings"] and trained.params["evaluate"] == off.params["evaluate"]
        assert protocol.cell(f"smc/{target}").budget.match_figure == "sample_target_evals"
    assert "before any scored run" in protocol.notes


@pytest.mark.parametrize("param", ["num_steps", "optimizer"])
def test_the_learned_part_off_runner_refuses_unknown_parameters(param):
    from jaxsamp.bench.cells import RUNNERS
    from jaxsamp.core.errors import ConfigError

    cell = scld.learned_off_cell("gmm")
    bad = type(cell)(cell.name, cell.runner, cell.target, {**cell.params, param: 1})
    with pytest.raises(ConfigError, match=f"unknown learned_part_off parameters \\['{param}'\\]"):
        RUNNERS["learned_part_off"](bad, 0, target_evals=None, evaluation={})


def test_the_paper_s_sample_figure_is_asked_where_its_targets_are_ours_and_nowhere_else():
    """The Sinkhorn comparison adds a parameter to the ``smc`` cells of the funnel and the Student-t mixture only, so
    every other recorded cell keeps its definition; the table beside the paper has one row per such target."""
    protocol = scld.PROTOCOL
    asked = {c.name for c in protocol.cells if c.params.get("sinkhorn")}
    assert asked == {f"smc/{t}" for t in scld.PAPER_SINKHORN} == {"smc/funnel", "smc/student_t"}
    assert {"sinkhorn", "sinkhorn_floor"} <= set(protocol.figures)
    rows = scld.paper_table().splitlines()[2:]
    assert [r.split(" | ")[0] for r in rows] == ["| funnel", "| student_t"]
    assert rows[0].endswith("| 134.23 | 117.48 (SMC-ESS) |")


def test_the_brownian_posterior_has_no_goal_and_is_scored_against_the_gym_s_ground_truth():
    """SCLD's Brownian (Inference Gym): its three cells, no goal or break-even cell (no exact log Z), comparisons on
    the figures it has; the learned-part-off and SMC runners score the posterior mean against the Gym's truth."""
    from jaxsamp.bench.cells import RUNNERS

    protocol = scld.PROTOCOL
    names = {c.name for c in protocol.cells if c.name.endswith("/brownian")}
    assert names == {"scld/brownian", "ula-smc/brownian", "smc/brownian"}
    assert not any(g.cell.endswith("/brownian") for g in protocol.goals)
    assert {(c.baseline, c.figure) for c in protocol.comparisons if c.cell == "scld/brownian"} == {
        ("ula-smc/brownian", "elbo"), ("ula-smc/brownian", "log_Z_hat"), ("smc/brownian", "log_Z_hat"),
        ("smc/brownian", "reference_mean_err")}
    assert protocol.cell("scld/brownian").params["settings"]["prior_scale"] == 0.1  # the reference's Brownian
    off, _ = RUNNERS["learned_part_off"](protocol.cell("ula-smc/brownian").sized(True), 0, target_evals=None,
                                         evaluation={"num_samples": 32})
    smc, _ = RUNNERS["tempered_smc"](protocol.cell("smc/brownian").sized(True), 0, target_evals=off["sample_target_evals"],
                                     evaluation={})
    for figures in (off, smc):
        assert "log_Z_abs_err" not in figures and np.isfinite(figures["log_Z_hat"])
        assert 0 < figures["reference_mean_err"] < np.inf
    assert_glossary_names(set(off) | set(smc))
    rows = scld.posterior_table().splitlines()[2:]
    assert [r.split(" | ")[1] for r in rows] == ["log_Z_hat", "elbo", "reference_mean_err"]
