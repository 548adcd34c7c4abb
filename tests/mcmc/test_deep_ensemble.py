"""The deep ensemble's early stopping: every member stops, and a stopped member is frozen bit for bit.

Oracle: the rule itself. With patience 1 each member stops at its first epoch without a better
validation loss; epochs after that (here: 20 more) must leave every array of the state unchanged,
and the epoch counts must match the recorded per-epoch number of stopped members.
"""

import jax
import numpy as np

import jaxsamp.targets
from jaxsamp.core import run
from jaxsamp.mcmc.deep_ensemble import DeepEnsembleSettings, deep_ensemble_trainer


def test_members_stop_early_and_stay_frozen():
    target = jaxsamp.targets.get("bnn_regression", dataset="yacht", hidden=[4])
    settings = DeepEnsembleSettings(num_members=3, learning_rate=1e-2, patience=1, max_epochs=60)
    trainer = deep_ensemble_trainer(target, settings)
    state = jax.jit(trainer.init)(jax.random.key(0))
    key = jax.random.key(1)
    metrics = lambda s, m: m  # one function for both runs: one compilation
    first, trace = run(trainer.step, state, key, 40, chunk=20, trace=metrics, progress=False)
    later, _ = run(trainer.step, state, key, 60, chunk=20, trace=metrics, progress=False)
    epochs, stopped = np.asarray(first.epochs), np.asarray(trace["num_stopped"])
    assert np.all(np.asarray(first.stopped)) and np.all((epochs >= 2) & (epochs < 40)), epochs
    # member k trained epochs[k] epochs: after epoch e, the members with epochs <= e have stopped
    np.testing.assert_array_equal(stopped, [np.sum(epochs <= e) for e in range(1, 41)])
    for a, b in zip(jax.tree.leaves(first), jax.tree.leaves(later)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert np.all(np.isfinite(np.asarray(first.best_valid_loss)))
