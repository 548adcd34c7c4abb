"""Child process of test_boltzmann_curves' kill-and-resume test: a checkpointed Boltzmann-curve training run.

The learned interpolation (both networks and ``C``) with trajectory collocation
(the trajectories follow the velocity being trained) and Hutchinson divergence: every random draw of a step (start points, end times,
probes) and both Adam states must round-trip through the checkpoint.
Usage: python _boltzmann_curves_resume_child.py CHECKPOINT_DIR|- OUT_NPZ  ("-": no checkpoints)
"""

import sys
from pathlib import Path

import jax

import jaxsamp.targets
from jaxsamp.learned.curves.training import BoltzmannCurve, BoltzmannCurveSettings

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from _kill_resume import child_main, child_run

NUM_STEPS, EVERY = 12, 3


def train(checkpoint=None) -> dict:
    """Train for NUM_STEPS updates; every array of the final state and the trace."""
    settings = BoltzmannCurveSettings(
        interpolation="learned",
        hidden=(8,),
        rate_hidden=(4,),
        num_frequencies=1,
        collocation="trajectory",
        trajectory_steps=2,
        divergence="hutchinson",
        num_probes=2,
    )
    target = jaxsamp.targets.get(
        "gaussian_mixture", means=[[1.0, -1.0], [-2.0, 0.5]], weights=[0.3, 0.7]
    )
    sampler = BoltzmannCurve(target, settings, batch_size=16)
    return child_run(
        sampler.step,
        jax.jit(sampler.init)(jax.random.key(0)),
        NUM_STEPS,
        EVERY,
        1,
        checkpoint,
    )


if __name__ == "__main__":
    child_main(train)
