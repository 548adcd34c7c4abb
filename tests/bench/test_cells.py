"""The generic cell runners' own checks (a full fit cell runs in the suites' quick tests)."""

import numpy as np
import pytest

from jaxsamp.bench import cells
from jaxsamp.bench.protocol import Budget, Cell
from jaxsamp.core.errors import ConfigError


def test_a_history_metric_is_read_as_a_float_vector_and_a_missing_one_names_what_there_is():
    cell = Cell("gflownet-tb/grid", "fit", {"name": "hypergrid"}, {"method": "gflownet"})
    history = {"empirical_l1": np.array([np.nan, 0.5, np.nan, 0.25], np.float32), "loss": np.ones((4, 3))}
    np.testing.assert_array_equal(cells._history(cell, history, "empirical_l1"), [np.nan, 0.5, np.nan, 0.25])
    assert cells._history(cell, history, "loss").shape == (4,)
    with pytest.raises(ConfigError, match=r"gflownet-tb/grid.*no 'modes'.*\['empirical_l1', 'loss'\]"):
        cells._history(cell, history, "modes")


def test_a_seconds_budget_ends_training_within_the_cells_chunk():
    """With 100 000 updates and a 0.5-second clock, ``chunk`` 5 stops training a few chunks past the clock (fit's
    default chunk, 2000 updates, would run far longer)."""
    cell = Cell("pis/gaussian", "fit", {"name": "gaussian", "dim": 2},
                {"method": "pis", "settings": {"num_time_steps": 4}, "batch_size": 8, "chunk": 5},
                Budget(updates=100_000, seconds=0.5))
    figures, _ = cells.fit_cell(cell, 0, target_evals=None, evaluation={"num_samples": 16})
    assert figures["train_seconds"] >= 0.5 and figures["train_steps"] % 5 == 0 and figures["train_steps"] < 2000
