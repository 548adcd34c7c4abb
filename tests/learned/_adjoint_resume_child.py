"""Child process of test_adjoint's kill-and-resume test: a checkpointed Adjoint Sampling run.

A tiny MLP drift on a 2-D Gaussian (cheap to compile) and a 64-sample buffer, so the
FIFO wraps around several times and the whole train state (network, Adam, buffer,
counters) has to round-trip through the checkpoint.
Usage: python _adjoint_resume_child.py CHECKPOINT_DIR|- OUT_NPZ  ("-": no checkpoints)
"""

import sys

import jax
import numpy as np

import jaxsamp.targets
from jaxsamp.core import run
from jaxsamp.learned.adjoint import AdjointSampling, AdjointSettings

NUM_STEPS, EVERY = 24, 4


def train(checkpoint=None) -> dict:
    """Train for NUM_STEPS epochs; every array of the final state and the trace."""
    settings = AdjointSettings(
        network="mlp", hidden=8, num_layers=1, sigma_max=1.5, nfe=8, buffer_size=64, steps_per_epoch=3, learning_rate=1e-3
    )
    sampler = AdjointSampling(jaxsamp.targets.get("gaussian", dim=2), settings, batch_size=16)
    state, trace = run(
        sampler.step, sampler.init(jax.random.key(0)), jax.random.key(42), NUM_STEPS, trace=lambda s, m: m,
        chunk=3, progress=False, checkpoint=checkpoint, checkpoint_every=EVERY,
    )
    leaves = {f"state_{i}": np.asarray(leaf) for i, leaf in enumerate(jax.tree.leaves(state))}
    return {"loss": np.asarray(trace["loss"]), "energy": np.asarray(trace["energy_mean"]), **leaves}


if __name__ == "__main__":
    np.savez(sys.argv[2], **train(None if sys.argv[1] == "-" else sys.argv[1]))
