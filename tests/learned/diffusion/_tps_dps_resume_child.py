"""Child process of test_tps_dps's kill-and-resume test: a checkpointed TPS-DPS run.

Short paths (20 steps), 16 paths per rollout and a 40-path buffer, so the FIFO
wraps around several times and the whole train state (network, log Z, buffer,
counters) has to round-trip through the checkpoint; the behaviour temperature
is still annealing when the run is killed.
Usage: python _tps_dps_resume_child.py CHECKPOINT_DIR|- OUT_NPZ  ("-": no checkpoints)
"""

import sys
from pathlib import Path

import jax

import jaxsamp.targets
from jaxsamp.learned.diffusion.tps_dps import TpsDps, TpsDpsSettings

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from _kill_resume import child_main, child_run  # noqa: E402

NUM_STEPS, EVERY = 12, 3


def train(checkpoint=None) -> dict:
    """Train for NUM_STEPS rounds; every array of the final state and the trace."""
    settings = TpsDpsSettings(
        time_step=0.05, num_time_steps=20, buffer_size=40, batch_size=8, updates_per_rollout=3,
        learning_rate=1e-3, annealing_rollouts=8,
    )
    sampler = TpsDps(jaxsamp.targets.get("double_well_2d"), settings, num_paths=16)
    return child_run(sampler.step, sampler.init(jax.random.key(0)), NUM_STEPS, EVERY, 1, checkpoint)


if __name__ == "__main__":
    child_main(train)
