"""Child process of test_gflownet's kill-and-resume test: a checkpointed Munchausen-DQN run with a TLM backward policy.

The state with the most parts: the network, its Polyak target, two Adam states
(forward, and TLM's with its decaying learning rate), the prioritised replay
buffer (wrapping around, priorities rewritten every update) and the terminal
history; updates start after 2 iterations, so the kill falls after they began.
Usage: python _gflownet_resume_child.py CHECKPOINT_DIR|- OUT_NPZ  ("-": no checkpoints)
"""

import sys
from pathlib import Path

import jax

from jaxsamp.learned.gflownet import GFlowNet, GFlowNetSettings
from jaxsamp.targets.hypergrid import Hypergrid

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from _kill_resume import child_main, child_run

NUM_STEPS, EVERY = 12, 3


def train(checkpoint=None) -> dict:
    """Train for NUM_STEPS iterations; every array of the final state and the trace."""
    settings = GFlowNetSettings(
        loss="munchausen_dqn",
        backward_policy="tlm",
        hidden=(16, 16),
        buffer_size=300,
        batch_size=32,
        learning_starts=2,
        history_size=64,
        eval_every=4,
    )
    sampler = GFlowNet(Hypergrid(2, 4), settings, num_trajectories=8)
    return child_run(sampler.step, sampler.init(jax.random.key(0)), NUM_STEPS, EVERY, 1, checkpoint)


if __name__ == "__main__":
    child_main(train)
