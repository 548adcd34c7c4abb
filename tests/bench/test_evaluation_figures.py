"""The one evaluation setup of the learned-sampler runners (``fit`` and the scld suite's ``learned_part_off``), and a
``fit`` cell scored by a resampled SMC run (``params["evaluate"]["smc"]``) at a quick size."""

import jax
import numpy as np

from jaxsamp.bench import cells
from jaxsamp.bench.protocol import Budget, Cell
from jaxsamp.experiments.glossary import GLOSSARY, describe


def test_evaluation_figures_merge_the_options_and_evaluate_at_fold_in_2():
    """The cell's ``params["evaluate"]`` over the protocol's ``evaluation``, ``num_samples`` popped, the key's
    ``fold_in`` 2, scalar figures as floats without ``target_evals``; ``params["evaluate"] = None``: nothing."""
    calls = []

    def evaluate(key, num_samples, **options):
        calls.append((key, num_samples, options))
        return {"log_Z_hat": np.float32(0.5), "target_evals": 7, "trace": np.zeros(3), "name": "x"}

    key = jax.random.key(4)
    figures = cells.evaluation_figures(evaluate, key, {"num_samples": 16, "num_sets": 2},
                                       {"evaluate": {"num_samples": 32, "smc": True}})
    assert figures == {"log_Z_hat": 0.5} and type(figures["log_Z_hat"]) is float
    (got_key, n, options), = calls
    assert n == 32 and options == {"num_sets": 2, "smc": True}
    assert np.array_equal(jax.random.key_data(got_key), jax.random.key_data(jax.random.fold_in(key, 2)))
    assert cells.evaluation_figures(evaluate, key, {"num_samples": 16}, {}) == {"log_Z_hat": 0.5}
    assert cells.evaluation_figures(evaluate, key, {"num_samples": 16}, {"evaluate": None}) == {}
    assert len(calls) == 2


def test_a_fit_cell_scored_by_a_resampled_smc_run():
    """A briefly trained curve, evaluated by ``Fitted.evaluate(smc={...})`` through the ``fit`` runner: the SMC run's
    figures (glossary names) are the cell's, the training's ``target_evals`` the cost."""
    cell = Cell("curves-smc/gmm", "fit", {"name": "gaussian_mixture", "means": [[1.5, 0.5], [-1.5, -0.5]],
                                         "scales": 0.6, "weights": [0.3, 0.7]},
                {"method": "curves", "batch_size": 16,
                 "settings": {"hidden": [8], "rate_hidden": [4], "num_frequencies": 2, "box": 4.0, "ode_steps": 8},
                 "evaluate": {"smc": {"moves": "mala", "resample_threshold": 0.9}}},
                Budget(updates=2))
    figures, artifacts = cells.fit_cell(cell, 0, target_evals=None, evaluation={"num_samples": 32})
    fitted = artifacts["fitted"]
    run = fitted.smc(jax.random.fold_in(jax.random.key(0), 2), 32, moves="mala", resample_threshold=0.9)
    assert figures["log_Z_hat"] == float(run.samples.log_Z) and figures["log_Z_exact"] == 0.0
    assert figures["sample_target_evals"] == run.num_target_evals > 0 and figures["num_resamplings"] > 0
    assert 0 < figures["segment_ess_min"] <= 1 and figures["target_evals"] == fitted.history["target_evals"][-1]
    assert [f for f in figures if not any(describe(kind, f) for kind in GLOSSARY)] == []
