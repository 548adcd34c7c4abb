"""The generic "fit" runner: a seconds budget checked every ``chunk`` updates."""

from jaxsamp.bench.cells import fit_cell
from jaxsamp.bench.protocol import Budget, Cell


def test_a_seconds_budget_ends_training_within_the_cells_chunk():
    """With 100 000 updates and a 0.5-second clock, ``chunk`` 5 stops training a few chunks past the clock (fit's
    default chunk, 2000 updates, would run far longer)."""
    cell = Cell("pis/gaussian", "fit", {"name": "gaussian", "dim": 2},
                {"method": "pis", "settings": {"num_steps": 4}, "batch_size": 8, "chunk": 5},
                Budget(updates=100_000, seconds=0.5))
    figures, _ = fit_cell(cell, 0, target_evals=None, evaluation={"num_samples": 16})
    assert figures["train_seconds"] >= 0.5 and figures["train_steps"] % 5 == 0 and figures["train_steps"] < 2000
