"""The generic cell runners' own checks (a full fit cell runs in the suites' quick tests)."""

import sys

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


@pytest.mark.parametrize("terminal", [True, False])
def test_a_fit_cell_shows_a_bar_on_a_terminal_and_plain_lines_in_a_log(terminal, monkeypatch, capsys):
    cell = Cell("pis/gaussian", "fit", {"name": "gaussian", "dim": 2},
                {"method": "pis", "settings": {"num_time_steps": 4}, "batch_size": 8, "evaluate": None}, Budget(updates=3))
    monkeypatch.setattr(sys.stderr, "isatty", lambda: terminal)
    cells.fit_cell(cell, 0, target_evals=None, evaluation={})
    err = capsys.readouterr().err
    assert "fit pis" in err and ("\r" in err) == terminal  # a bar redraws in place; a log gets whole lines


@pytest.mark.parametrize("target, colours", [({"name": "ising", "L": 4, "beta": 0.3}, 2),
                                             ({"name": "potts", "L": 3, "beta": 0.5, "q": 3}, 3)])
def test_tempered_smc_with_heat_bath_sweeps_counts_a_level_as_anneal_does(target, colours):
    """On a lattice, ``kernel="heat_bath"`` anneals along LEAPS' path with checkerboard sweeps: a level costs one
    evaluation per particle for the weight and one per colour class and sweep (2 on a 4 x 4 torus, 3 on a 3 x 3
    one), which is anneal's own count, so the budget buys exactly ``B // cost`` levels; log Z is exact at this size
    (enumeration) and 40 levels of 256 particles get within 0.1 of it."""
    particles, sweeps, levels = 256, 2, 40
    cost = particles * (1 + colours * sweeps)
    cell = Cell("smc-heat_bath/lattice", "tempered_smc", target,
                {"kernel": "heat_bath", "num_particles": particles, "num_mcmc_steps": sweeps, "ess_threshold": 0.5})
    figures, _ = cells.tempered_smc_cell(cell, 0, target_evals=levels * cost + cost - 1, evaluation={})
    assert figures["num_levels"] == levels and figures["target_evals"] == levels * cost
    assert figures["log_Z_abs_err"] < 0.1 and 0 < figures["ess"] <= 1


def test_tempered_smc_names_an_unknown_kernel():
    cell = Cell("smc-hmc/lattice", "tempered_smc", {"name": "ising", "L": 4, "beta": 0.3},
                {"kernel": "hmc", "num_particles": 8, "num_mcmc_steps": 1, "ess_threshold": 0.5})
    with pytest.raises(ConfigError, match=r"smc-hmc/lattice.*'mala' or 'heat_bath'.*'hmc'"):
        cells.tempered_smc_cell(cell, 0, target_evals=1000, evaluation={})


def test_the_nuts_runner_times_jaxsamp_sample_call_by_call_on_the_same_starting_points():
    """Two calls: the first compiles (after JAX's caches are cleared), the second gives the figures; the figures
    of one seed are the same draws whatever the calls (the seed's key and starting points)."""
    cell = Cell("jaxsamp/gaussian", "nuts", {"name": "gaussian", "dim": 2},
                {"num_chains": 2, "num_warmup": 20, "num_samples": 30, "calls": 2})
    figures, _ = cells.nuts_cell(cell, 0, target_evals=None, evaluation={})
    assert figures["first_call_seconds"] > figures["call_seconds"] > 0
    assert figures["min_ess_per_call_second"] == pytest.approx(figures["min_ess_bulk"] / figures["call_seconds"])
    assert figures["call_seconds"] >= figures["warmup_seconds"] + figures["sampling_seconds"]
    again, _ = cells.nuts_cell(Cell(cell.name, "nuts", cell.target, {**cell.params, "calls": 1}), 0,
                               target_evals=None, evaluation={})
    assert again["min_ess_bulk"] == figures["min_ess_bulk"] and again["max_rhat"] == figures["max_rhat"]
    with pytest.raises(ConfigError, match="unknown nuts parameters"):
        cells.nuts_cell(Cell(cell.name, "nuts", cell.target, {**cell.params, "steps": 3}), 0, target_evals=None,
                        evaluation={})


def test_an_inference_gym_model_is_a_cell_target():
    target = cells.build_target({"inference_gym": "BrownianMotionMissingMiddleObservations"})
    assert target.event_shape == (30,)  # the 30 latent positions


def test_tempered_smc_asked_for_the_sinkhorn_divergence_scores_its_particles_beside_the_floor():
    """``sinkhorn``: the final particles' positions against exact samples at ``key(2000 + seed)``, and the
    floor of two exact sets at ``key(3000 + seed)``; MALA SMC on a Gaussian lands near the floor, and unasked there
    is neither figure."""
    import jax

    from jaxsamp.diagnostics.particles import sinkhorn_floor

    params = {"base_scale": 1.0, "step_size": 0.3, "num_particles": 64, "num_mcmc_steps": 2, "ess_threshold": 0.5}
    cell = Cell("smc/gaussian", "tempered_smc", {"name": "gaussian", "dim": 2}, {**params, "sinkhorn": True})
    figures, _ = cells.tempered_smc_cell(cell, 1, target_evals=64 * 4 * 10, evaluation={})
    target = cells.build_target(cell.target)
    assert figures["sinkhorn_floor"] == sinkhorn_floor(target, jax.random.key(3001), 64)
    assert 0 < figures["sinkhorn"] < 3 * figures["sinkhorn_floor"]
    plain, _ = cells.tempered_smc_cell(Cell("smc/gaussian", "tempered_smc", cell.target, params), 1,
                                       target_evals=64 * 4 * 10, evaluation={})
    assert "sinkhorn" not in plain and plain["log_Z_hat"] == figures["log_Z_hat"]
