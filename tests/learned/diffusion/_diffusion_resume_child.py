"""Child process of test_pis_dds' kill-and-resume test: a checkpointed DDS run (trajectory balance).

A small network and 8 SDE steps on a 2-D Gaussian, so compiling is cheap; the
whole train state (network, learned log Z, both Adam states, counters) has to
round-trip through the checkpoint.
Usage: python _diffusion_resume_child.py CHECKPOINT_DIR|- OUT_NPZ  ("-": no checkpoints)
"""

import sys
from pathlib import Path

import jax

import jaxsamp.targets
from jaxsamp.learned.diffusion.pis_dds import DiffusionSampler, DiffusionSettings

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from _kill_resume import child_main, child_run  # noqa: E402

NUM_STEPS, EVERY = 24, 4


def train(checkpoint=None) -> dict:
    """Train for NUM_STEPS steps; every array of the final state and the trace."""
    settings = DiffusionSettings(loss="trajectory_balance", num_steps=8, hidden=8, num_layers=1, learning_rate=1e-3)
    sampler = DiffusionSampler("dds", jaxsamp.targets.get("gaussian", dim=2), settings, batch_size=16)
    return child_run(sampler.step, sampler.init(jax.random.key(0)), NUM_STEPS, EVERY, 3, checkpoint)


if __name__ == "__main__":
    child_main(train)
