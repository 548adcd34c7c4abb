"""Child process of test_driver's kill-and-resume test: a checkpointed MALA run.

Usage: python _resume_child.py CHECKPOINT_DIR|- OUT_NPZ [REFERENCE_NPZ]  ("-": no checkpoints)
"""

import sys
from pathlib import Path

import blackjax
import jax.numpy as jnp

from jaxsamp.core import ensemble

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _resume_checks import child_main, child_run  # noqa: E402

NUM_STEPS, EVERY = 3000, 100


def train(checkpoint=None) -> dict:
    """512 MALA chains on a quartic target for NUM_STEPS steps; every array of the final state and the trace."""
    target_log_prob = lambda x: -0.5 * jnp.sum(x**2) - 0.1 * jnp.sum(x**4)  # noqa: E731
    kernel = ensemble(blackjax.mala(target_log_prob, 0.3))
    return child_run(kernel.step, kernel.init(jnp.ones((512, 16))), NUM_STEPS, EVERY, 25, checkpoint)


if __name__ == "__main__":
    child_main(train)
