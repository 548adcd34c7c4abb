"""Child process of test_bernoulli_denoising's kill-and-resume test: checkpointed denoiser training.

A small MLP denoiser on samples of a 6-bit mixture, up to 3 measurements per
example; the whole train state (network, Adam moments, step count) has to
round-trip through the checkpoint.
Usage: python _bernoulli_resume_child.py CHECKPOINT_DIR|- OUT_NPZ  ("-": no checkpoints)
"""

import sys
from pathlib import Path

import jax

from jaxsamp.learned.binary.bernoulli_denoising import BernoulliDenoiser, DenoiserSettings
from jaxsamp.targets.binary import bernoulli_mixture

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from _kill_resume import child_main, child_run  # noqa: E402

NUM_STEPS, EVERY = 40, 10


def train(checkpoint=None) -> dict:
    """Train for NUM_STEPS Adam steps; every array of the final state and the trace."""
    data = bernoulli_mixture(dim=6, num_components=3, seed=2).sample(jax.random.key(0), 500)
    settings = DenoiserSettings(alpha=0.8, max_measurements=3, hidden=(32, 32), decay_steps=NUM_STEPS)
    denoiser = BernoulliDenoiser(data, settings, batch_size=64)
    return child_run(denoiser.step, denoiser.init(jax.random.key(1)), NUM_STEPS, EVERY, 1, checkpoint)


if __name__ == "__main__":
    child_main(train)
