"""Child process of test_diffusion_samplers' kill-and-resume test: a checkpointed DDS run (trajectory balance).

A small network and 8 SDE steps on a 2-D Gaussian, so compiling is cheap; the
whole train state (network, learned log Z, both Adam states, counters) has to
round-trip through the checkpoint.
Usage: python _diffusion_resume_child.py CHECKPOINT_DIR|- OUT_NPZ  ("-": no checkpoints)
"""

import sys

import jax
import numpy as np

import jaxsamp.targets
from jaxsamp.core import run
from jaxsamp.learned.diffusion_samplers import DiffusionSampler, DiffusionSettings

NUM_STEPS, EVERY = 24, 4


def train(checkpoint=None) -> dict:
    """Train for NUM_STEPS steps; every array of the final state and the trace."""
    settings = DiffusionSettings(loss="trajectory_balance", num_steps=8, hidden=8, num_layers=1, learning_rate=1e-3)
    sampler = DiffusionSampler("dds", jaxsamp.targets.get("gaussian", dim=2), settings, batch_size=16)
    state, trace = run(
        sampler.step, sampler.init(jax.random.key(0)), jax.random.key(42), NUM_STEPS, trace=lambda s, m: m,
        chunk=3, progress=False, checkpoint=checkpoint, checkpoint_every=EVERY,
    )
    leaves = {f"state_{i}": np.asarray(leaf) for i, leaf in enumerate(jax.tree.leaves(state))}
    return {"loss": np.asarray(trace["loss"]), "elbo": np.asarray(trace["elbo"]), **leaves}


if __name__ == "__main__":
    np.savez(sys.argv[2], **train(None if sys.argv[1] == "-" else sys.argv[1]))
