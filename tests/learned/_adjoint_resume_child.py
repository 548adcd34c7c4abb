"""Child process of the kill-and-resume tests of Adjoint Sampling and ASBS: a checkpointed run.

A tiny MLP drift on a 2-D Gaussian (cheap to compile) and a 64-sample buffer, so the
FIFO wraps around several times and the whole train state (network, its average, Adam,
buffers, counters) has to round-trip through the checkpoint. ``ADJOINT_CHILD_METHOD=asbs``
runs ASBS from a Gaussian prior with stages of 3 adjoint and 2 corrector epochs instead.
Usage: python _adjoint_resume_child.py CHECKPOINT_DIR|- OUT_NPZ  ("-": no checkpoints)
"""

import os
import sys

import jax
import numpy as np

import jaxsamp.targets
from jaxsamp.core import run
from jaxsamp.learned.adjoint import AdjointSampling, AdjointSettings
from jaxsamp.learned.asbs import Asbs, AsbsSettings

NUM_STEPS, EVERY = 24, 4


def train(checkpoint=None) -> dict:
    """Train for NUM_STEPS epochs; every array of the final state and the trace."""
    common = dict(network="mlp", hidden=8, num_layers=1, sigma_max=1.5, nfe=8, buffer_epochs=4, steps_per_epoch=3,
                  learning_rate=1e-3)
    target = jaxsamp.targets.get("gaussian", dim=2)
    if os.environ.get("ADJOINT_CHILD_METHOD") == "asbs":
        settings = AsbsSettings(**common, prior="gaussian", prior_scale=1.0, adjoint_epochs=3, corrector_epochs=2)
        sampler = Asbs(target, settings, batch_size=16)
    else:
        sampler = AdjointSampling(target, AdjointSettings(**common), batch_size=16)
    state, trace = run(
        sampler.step, sampler.init(jax.random.key(0)), jax.random.key(42), NUM_STEPS, trace=lambda s, m: m,
        chunk=3, progress=False, checkpoint=checkpoint, checkpoint_every=EVERY,
    )
    leaves = {f"state_{i}": np.asarray(leaf) for i, leaf in enumerate(jax.tree.leaves(state))}
    return {"loss": np.asarray(trace["loss"]), "energy": np.asarray(trace["energy_mean"]), **leaves}


if __name__ == "__main__":
    np.savez(sys.argv[2], **train(None if sys.argv[1] == "-" else sys.argv[1]))
