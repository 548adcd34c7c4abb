"""Child process of test_adjoint's kill-and-resume test: a checkpointed DW-4 Adjoint Sampling run.

A tiny EGNN and a 64-sample buffer (so the FIFO wraps around several times).
Usage: python _adjoint_resume_child.py CHECKPOINT_DIR OUT_NPZ
"""

import sys

import jax
import numpy as np

import jaxsamp.targets
from jaxsamp.core import run
from jaxsamp.learned.adjoint import AdjointSampling, AdjointSettings

NUM_STEPS, EVERY = 60, 6


def train(checkpoint=None) -> dict:
    """Train for NUM_STEPS epochs; every array of the final state and the trace."""
    settings = AdjointSettings(hidden=8, num_layers=1, sigma_max=1.5, nfe=8, buffer_size=64, steps_per_epoch=3, learning_rate=1e-3)
    sampler = AdjointSampling(jaxsamp.targets.get("dw4"), settings, batch_size=16)
    state, trace = run(
        sampler.step, sampler.init(jax.random.key(0)), jax.random.key(42), NUM_STEPS, trace=lambda s, m: m,
        chunk=3, progress=False, checkpoint=checkpoint, checkpoint_every=EVERY,
    )
    leaves = {f"state_{i}": np.asarray(leaf) for i, leaf in enumerate(jax.tree.leaves(state))}
    return {"loss": np.asarray(trace["loss"]), "energy": np.asarray(trace["energy_mean"]), **leaves}


if __name__ == "__main__":
    np.savez(sys.argv[2], **train(sys.argv[1]))
