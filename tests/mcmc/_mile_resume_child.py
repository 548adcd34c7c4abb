"""Child process of test_mile's kill-and-resume test: a checkpointed MILE run (tuning phases, then sampling).

A 6-4-2 network on yacht, three members, a 20-step tuning budget and 16 kept draws
thinned by 2; every phase checkpoints every 4 steps into its own sub-folder, and
the test kills the run during sampling, so the resumed run restores the finished
tuning phases (phase (c)'s trace included) and continues the sampling.
Usage: python _mile_resume_child.py CHECKPOINT_DIR|- OUT_NPZ  ("-": no checkpoints)
"""

import sys
from pathlib import Path

import jax
import numpy as np

import jaxsamp.targets
from jaxsamp.mcmc.mile import MileSettings, sample_mile

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _resume_checks import child_main

NUM_STEPS, EVERY = 16, 4


def sample(checkpoint=None) -> dict:
    """Every array MILE returns: draws, gradient counts, tuned parameters, tuning trace, energy errors.

    Without ``checkpoint`` (the reference run) the checkpoints go to a fresh temporary folder.
    """
    if checkpoint is None:
        import tempfile

        with tempfile.TemporaryDirectory() as fresh:
            return sample(fresh)
    target = jaxsamp.targets.get("bnn_regression", dataset="yacht", hidden=[4])
    members = jax.vmap(target.init_params)(jax.random.split(jax.random.key(0), 3))
    settings = MileSettings(tune_steps=20, num_samples=NUM_STEPS, thinning=2)
    out = sample_mile(
        target.log_prob,
        members,
        jax.random.key(1),
        settings,
        progress=False,
        checkpoint_dir=checkpoint,
        checkpoint_every=EVERY,
    )
    arrays = {
        "draws": out.draws,
        "grad_evals": out.cumulative_grad_evals,
        "energy_change": out.energy_change,
        **{f"param_{k}": v for k, v in out.parameters.items()},
        **{f"tuning_{k}": v for k, v in out.tuning_trace._asdict().items()},
    }
    return {k: np.asarray(v) for k, v in arrays.items()}


if __name__ == "__main__":
    child_main(sample)
