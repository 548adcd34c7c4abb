"""The protocol is data: it survives the results file, refuses a malformed grid, and sizes itself for tests."""

import json

import pytest

from jaxsamp.bench.protocol import Budget, Cell, Comparison, Goal, Protocol, scaled_name
from jaxsamp.core.errors import ConfigError


def grid():
    return (
        Cell("a-x/t", "fit", {"name": "gaussian", "dim": 2}, {"method": "pis", "settings": {"loss": "kl"}},
             Budget(updates=10), quick={"settings": {"num_steps": 2}, "budget_updates": 3}),
        Cell("smc/t", "tempered_smc", {"name": "gaussian", "dim": 2}, {"num_particles": 8},
             Budget(match_target_evals=("a-x/t",))),
    )


def test_a_protocol_round_trips_through_json():
    protocol = Protocol("toy", "a toy", grid(), seeds=(0, 4), figures=("ess",), goals=(Goal("a-x/t", "ess", 0.5, "above"),),
                        comparisons=(Comparison("a-x/t", "smc/t", "log_Z_abs_err"),))
    assert Protocol.from_dict(json.loads(json.dumps(protocol.to_dict()))) == protocol


def test_quick_size_overrides_merge_into_the_parameters_and_the_update_budget():
    quick = grid()[0].sized(True)
    assert quick.params["settings"] == {"loss": "kl", "num_steps": 2} and quick.budget.updates == 3
    assert grid()[0].sized(False) is grid()[0] or grid()[0].sized(False) == grid()[0]


def test_the_quick_size_may_take_a_smaller_target():
    cell = Cell("a-x/t", "fit", {"name": "hypergrid", "dim": 4, "side": 20}, {"method": "gflownet"},
                Budget(updates=10), quick={"target": {"name": "hypergrid", "dim": 2, "side": 8}, "budget_updates": 3})
    assert cell.sized(True).target == {"name": "hypergrid", "dim": 2, "side": 8} and cell.sized(True).params == {
        "method": "gflownet"}
    assert cell.sized(False).target["side"] == 20


def test_a_malformed_grid_is_refused_naming_the_culprit():
    cell = grid()[0]
    with pytest.raises(ConfigError, match="named twice: a-x/t"):
        Protocol("toy", "", (cell, cell))
    with pytest.raises(ConfigError, match="matches unknown cells"):
        Protocol("toy", "", grid()[1:])
    with pytest.raises(ConfigError, match="better must be"):
        Goal("a-x/t", "ess", 0.5, "sideways")


def test_cells_are_chosen_by_shell_patterns_and_an_unmatched_pattern_is_an_error():
    protocol = Protocol("toy", "", grid())
    assert [c.name for c in protocol.select(["*/t"])] == ["a-x/t", "smc/t"]
    assert [c.name for c in protocol.select(["smc/*"])] == ["smc/t"]
    with pytest.raises(ConfigError, match="no cell matches"):
        protocol.select(["nope/*"])
    assert scaled_name("a-x/t", 1) == "a-x/t" and scaled_name("a-x/t", 5) == "a-x/t x5"


def test_device_cells_must_be_cells_of_the_suite_with_positive_seconds():
    cell = Cell("a/t", "fit", {"name": "gaussian", "dim": 2}, {}, Budget(updates=5))
    with pytest.raises(ConfigError, match="device cells"):
        Protocol("toy", "toy", (cell,), device={"b/t": 10})
    with pytest.raises(ConfigError, match="positive"):
        Protocol("toy", "toy", (cell,), device={"a/t": 0})
    assert Protocol.from_dict(Protocol("toy", "toy", (cell,), device={"a/t": 10}).to_dict()).device == {"a/t": 10}
