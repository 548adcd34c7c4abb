"""The generic cell runners' own checks (a full fit cell runs in the suites' quick tests)."""

import numpy as np
import pytest

from jaxsamp.bench import cells
from jaxsamp.bench.protocol import Cell
from jaxsamp.core.errors import ConfigError


def test_a_history_metric_is_read_as_a_float_vector_and_a_missing_one_names_what_there_is():
    cell = Cell("gflownet-tb/grid", "fit", {"name": "hypergrid"}, {"method": "gflownet"})
    history = {"empirical_l1": np.array([np.nan, 0.5, np.nan, 0.25], np.float32), "loss": np.ones((4, 3))}
    np.testing.assert_array_equal(cells._history(cell, history, "empirical_l1"), [np.nan, 0.5, np.nan, 0.25])
    assert cells._history(cell, history, "loss").shape == (4,)
    with pytest.raises(ConfigError, match=r"gflownet-tb/grid.*no 'modes'.*\['empirical_l1', 'loss'\]"):
        cells._history(cell, history, "modes")
