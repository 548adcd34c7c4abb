"""Child process of the kill-and-resume tests of Adjoint Sampling and ASBS: a checkpointed run.

A tiny MLP drift on a 2-D Gaussian (cheap to compile) and a 64-sample buffer, so the
FIFO wraps around several times and the whole train state (network, its average, Adam,
buffers, counters) has to round-trip through the checkpoint. ``ADJOINT_CHILD_METHOD=asbs``
runs ASBS from a Gaussian prior with stages of 3 adjoint and 2 corrector epochs instead.
Usage: python _adjoint_resume_child.py CHECKPOINT_DIR|- OUT_NPZ  ("-": no checkpoints)
"""

import os
import sys
from pathlib import Path

import jax

import jaxsamp.targets
from jaxsamp.learned.diffusion.adjoint import AdjointSampling, AdjointSettings
from jaxsamp.learned.diffusion.asbs import Asbs, AsbsSettings

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from _kill_resume import child_main, child_run  # noqa: E402

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
    return child_run(sampler.step, sampler.init(jax.random.key(0)), NUM_STEPS, EVERY, 3, checkpoint)


if __name__ == "__main__":
    child_main(train)
