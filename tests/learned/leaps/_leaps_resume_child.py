"""Child process of test_leaps' kill-and-resume test: a checkpointed LEAPS training run on a 3x3 Ising lattice.

A tiny LE-MLP, rollouts every 2 updates into a buffer of 3 rollouts (so the FIFO
wraps around) and a curriculum that is still growing when the run is killed.
Usage: python _leaps_resume_child.py CHECKPOINT_DIR|- OUT_NPZ  ("-": no checkpoints)
"""

import sys
from pathlib import Path

import jax

from jaxsamp.learned.leaps.training import Leaps, LeapsSettings
from jaxsamp.targets.lattice import ising

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from _kill_resume import child_main, child_run  # noqa: E402

NUM_STEPS, EVERY = 40, 4


def train(checkpoint=None) -> dict:
    """Train for NUM_STEPS updates; every array of the final state and the trace."""
    settings = LeapsSettings(
        network="mlp", network_params={"hidden": [16]}, free_energy_hidden=[8], loss_batch=32,
        rollout_steps=8, curriculum_steps=30, rollout_every=2, buffer_rollouts=3, states_per_walker=2,
        mcmc_updates=3, learning_rate=1e-2,
    )
    trainer = Leaps(ising(3, 0.4407), settings, num_walkers=8)
    return child_run(trainer.step, jax.jit(trainer.init)(jax.random.key(0)), NUM_STEPS, EVERY, 2, checkpoint)


if __name__ == "__main__":
    child_main(train)
