"""Child process of test_fit's kill-and-resume test: ``jaxsamp.fit("dds", ...)`` checkpointing every 4 steps.

The whole train state and the history have to come back bit for bit through ``fit``'s checkpoint.
Usage: python _fit_resume_child.py CHECKPOINT_DIR|- OUT_NPZ [REFERENCE_NPZ]
"""

import sys
import tempfile
from pathlib import Path

import jax
import numpy as np

import jaxsamp
from jaxsamp.learned.diffusion.pis_dds import DdsSettings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _resume_checks import child_main  # noqa: E402

NUM_STEPS, EVERY = 24, 4


def train(checkpoint=None) -> dict:
    """``fit`` for NUM_STEPS steps (the reference run checkpoints into a fresh folder, for the same chunks)."""
    settings = DdsSettings(loss="trajectory_balance", num_time_steps=8, hidden=8, num_layers=1, learning_rate=1e-3)
    with tempfile.TemporaryDirectory() as fresh:
        fitted = jaxsamp.fit("dds", jaxsamp.targets.get("gaussian", dim=2), num_steps=NUM_STEPS, key=0, batch_size=16,
                             settings=settings, checkpoint=fresh if checkpoint is None else checkpoint,
                             checkpoint_every=EVERY, progress=False)
    leaves = {f"state_{i}": np.asarray(leaf) for i, leaf in enumerate(jax.tree.leaves(fitted.state))}
    return {**leaves, **{f"history_{k}": v for k, v in fitted.history.items()}}


if __name__ == "__main__":
    child_main(train)
