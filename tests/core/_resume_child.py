"""Child process of test_driver's kill-and-resume test: a checkpointed MALA run.

Usage: python _resume_child.py CHECKPOINT_DIR|- OUT_NPZ  ("-": no checkpoints)
"""

import sys

import blackjax
import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core import ensemble, run

NUM_STEPS, EVERY = 3000, 100


def build():
    target_log_prob = lambda x: -0.5 * jnp.sum(x**2) - 0.1 * jnp.sum(x**4)  # noqa: E731
    kernel = ensemble(blackjax.mala(target_log_prob, 0.3))
    state = kernel.init(jnp.ones((512, 16)))
    return kernel, state


def trace(state, info):
    return {"mean": state.position.mean(), "acc": info.acceptance_rate.mean()}


if __name__ == "__main__":
    ckpt, out = sys.argv[1], sys.argv[2]
    kernel, state = build()
    state, tr = run(
        kernel.step, state, jax.random.key(42), NUM_STEPS, trace=trace, chunk=25,
        progress=False, checkpoint=None if ckpt == "-" else ckpt, checkpoint_every=EVERY,
    )
    np.savez(out, position=np.asarray(state.position), logdensity=np.asarray(state.logdensity),
             mean=np.asarray(tr["mean"]), acc=np.asarray(tr["acc"]))
