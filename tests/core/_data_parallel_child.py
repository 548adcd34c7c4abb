"""Runs under XLA_FLAGS=--xla_force_host_platform_device_count=8 (set by test_data_parallel).

Every learned family trains a few steps at tiny sizes through the driver on one
device and, wrapped by ``data_parallel``, on an 8-device mesh (and ``jaxsamp.fit``
with and without ``mesh=`` once); the whole train states and the
traces of every metric (the loss among them) must agree within ``RTOL``/``ATOL`` (float32 round-off: the batch
sums are split into per-device partial sums, so the order of the additions
differs, and a few Adam steps carry that round-off into the parameters). The
sharded run must really split its batch (constraints to the batch axis in the
lowered step, an all-reduce in a compiled one), keep its parameters replicated
and its replay buffers split. Prints ``DATA-PARALLEL-OK`` and one line per family.
"""

import sys
import time
import warnings

import jax
import numpy as np

import jaxsamp
import jaxsamp.learned.methods  # noqa: F401  (registers the methods)
from jaxsamp.core.data_parallel import batch_mesh, data_parallel, place_state, state_shardings
from jaxsamp.core.errors import InputError
from jaxsamp.core.registry import LEARNED
from jaxsamp.targets.binary import bernoulli_mixture
from jaxsamp.targets.hypergrid import Hypergrid
from jaxsamp.targets.gaussian import Gaussian
from jaxsamp.targets.mixture import GaussianMixture

RTOL, ATOL = 1e-4, 1e-5  # float32 round-off of reordered batch sums, after a few Adam steps

assert jax.device_count() == 8, jax.devices()
GAUSSIAN = Gaussian(np.array([1.0, -0.5]), np.diag([0.25, 0.64]))
PATHS = {"num_time_steps": 8, "hidden": 16, "num_layers": 1, "learning_rate": 1e-3}
ADJOINT = dict(network="mlp", hidden=16, num_layers=1, sigma_min=1e-2, sigma_max=3.0, nfe=8, steps_per_epoch=3,
               learning_rate=2e-3, buffer_epochs=2)
GAUSSIAN_Q = {"family": "full_rank_gaussian", "learning_rate": 3e-2}
SEMI_IMPLICIT = {"latent_dim": 2, "hidden_width": 8, "num_inner": 4, "tau_layers": 1, "tau_hidden_width": 8,
                 "pretrain_steps": 1}
#: method name -> (target, settings keywords, batch size, steps); one method per place where a batch is split
CASES = {
    "pis": (GAUSSIAN, PATHS, 16, 3),
    "adjoint": (GAUSSIAN, ADJOINT, 16, 2),
    "asbs": (GAUSSIAN, {**ADJOINT, "prior": "gaussian", "prior_scale": 1.0, "adjoint_epochs": 1,
                        "corrector_epochs": 1}, 16, 2),
    "tps_dps": (jaxsamp.targets.get("double_well_2d"), {"num_time_steps": 10, "batch_size": 16, "buffer_size": 64,
                                                        "updates_per_rollout": 2, "annealing_rollouts": 2}, 16, 2),
    "leaps": (jaxsamp.targets.get("ising", L=3, beta=0.4407), {
        "network": "mlp", "network_params": {"hidden": [8]}, "free_energy_hidden": [8], "loss_batch": 16,
        "rollout_steps": 4, "curriculum_steps": 4, "rollout_every": 2, "buffer_rollouts": 2, "states_per_walker": 2,
        "mcmc_updates": 0, "eval_steps": 4, "compare_weight_points": False}, 16, 3),
    "gflownet": (Hypergrid(2, 4), {"hidden": (8,), "history_size": 64, "backward_policy": "tlm"}, 16, 3),
    # soft DQN: the prioritised buffer, the one batch storage the flow losses do not use
    "gflownet_dqn": (Hypergrid(2, 4), {"hidden": (8,), "history_size": 64, "loss": "soft_dqn", "buffer_size": 256,
                                       "batch_size": 16, "learning_starts": 0}, 16, 3),
    "bernoulli_denoising": (bernoulli_mixture(dim=8, num_components=2, logit_scale=2.0, seed=3), {"hidden": (8,)},
                            16, 3),
    "curves": (GaussianMixture([[1.5, 0.5], [-1.5, -0.5]], 0.6, [0.3, 0.7]),
               {"hidden": (8,), "rate_hidden": (8,), "num_frequencies": 2, "ode_steps": 4}, 16, 3),
    # resampling at every inner segment end (threshold 1): the ancestors are gathered across devices
    "scld": (GAUSSIAN, {**PATHS, "num_segments": 2, "mcmc": "mala", "resample_threshold": 1.0}, 16, 3),
    "elbo": (GAUSSIAN, GAUSSIAN_Q, 16, 3),
    "aisivi": (GAUSSIAN, SEMI_IMPLICIT, 16, 3),
}
#: methods whose batch is split at the same place, by the same code, as the named one's (the suite's time aim):
#: DDS is PIS with another reference process (sde.simulate); SoftCVI and SNIS-fKL draw from the family as the ELBO
#: does (learned/vi/training.py); BSIVI is AISIVI without its reverse model; CMCD is SCLD's one-segment case
SAME_SPLIT = {"dds": "pis", "softcvi": "elbo", "snis_forward_kl": "elbo", "bsivi": "aisivi", "cmcd": "scld"}
assert set(LEARNED.names()) - set(SAME_SPLIT) <= {name.removesuffix("_dqn") for name in CASES}
assert set(SAME_SPLIT.values()) <= set(CASES)


def build(method, target, options, batch):
    """The registered method as :func:`jaxsamp.fit` builds it (target conversion, settings dataclass)."""
    entry = LEARNED.entry(method)
    convert = entry.meta.get("as_target") or (lambda t: t)
    return entry.factory(convert(target), entry.meta["settings"](**options), batch_size=batch)


def compare(name, one, many):
    """Every leaf of ``one`` (1 device) and ``many`` (8 devices) agrees within the tolerance (NaN where NaN)."""
    for a, b in zip(jax.tree.leaves(one), jax.tree.leaves(many), strict=True):
        np.testing.assert_allclose(np.asarray(b, np.float64), np.asarray(a, np.float64), rtol=RTOL, atol=ATOL,
                                   err_msg=name)


mesh = batch_mesh(8)
start = time.perf_counter()
for name, (target, options, batch, steps) in CASES.items():
    method = name.removesuffix("_dqn")
    sampler = build(method, target, options, batch)
    wrapped = data_parallel(sampler, mesh)
    state0 = jax.jit(sampler.init)(jax.random.key(0))
    trace = lambda state, metrics: metrics  # noqa: E731  (the loss and every other metric, per step)
    one = jaxsamp.run(sampler.step, state0, jax.random.key(1), steps, trace=trace, progress=False)
    many = jaxsamp.run(wrapped.step, place_state(state0, mesh), jax.random.key(1), steps, trace=trace, progress=False)
    compare(name, one, many)
    many = many[0]
    # the layout: parameters whole on all 8 devices, buffers split
    layout = state_shardings(many, mesh)
    for leaf, sharding in zip(jax.tree.leaves(many), jax.tree.leaves(layout), strict=True):
        assert leaf.sharding.is_equivalent_to(sharding, leaf.ndim), (name, leaf.shape, leaf.sharding)
    split = [s for s in jax.tree.leaves(layout) if s.spec != jax.sharding.PartitionSpec()]
    assert bool(split) == (method in ("adjoint", "asbs", "tps_dps", "leaps", "scld") or name == "gflownet_dqn"), name
    # the batch is really split: the lowered step constrains more arrays to the batch axis than the state's buffers
    text = jax.jit(wrapped.step).lower(jax.random.key(1), many).as_text()
    batch_constraints = [line for line in text.splitlines() if "sharding_constraint" in line and '[{"batch"}' in line]
    assert len(batch_constraints) > len(split), (name, len(batch_constraints), len(split))
    print(f"{name}: ok ({time.perf_counter() - start:.1f} s)", flush=True)

# jaxsamp.fit(mesh=...) is the same mechanism: its run equals the 1-device fit's
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the health rules on a 3-step run say nothing here
    fits = [jaxsamp.fit("elbo", GAUSSIAN, num_steps=3, batch_size=16, progress=False, mesh=m, **GAUSSIAN_Q)
            for m in (None, mesh)]
compare("fit", (fits[0].state, fits[0].history), (fits[1].state, fits[1].history))
assert all(len(leaf.sharding.device_set) == 8 for leaf in jax.tree.leaves(fits[1].state))

# the gradient is reduced across devices by XLA: an all-reduce in the compiled step
elbo = data_parallel(build("elbo", GAUSSIAN, GAUSSIAN_Q, 16), mesh)
assert "all-reduce" in jax.jit(elbo.step).lower(jax.random.key(1), fits[1].state).compile().as_text()

# a batch that does not divide the devices is a clear error, before and at the first trace
try:
    jaxsamp.fit("elbo", GAUSSIAN, num_steps=1, batch_size=12, progress=False, mesh=mesh, **GAUSSIAN_Q)
except InputError as err:
    assert "batch_size=12" in str(err) and "8 devices" in str(err), err
else:
    raise AssertionError("expected an InputError for a batch of 12 on 8 devices")
odd = data_parallel(build("elbo", GAUSSIAN, GAUSSIAN_Q, 12), mesh)
try:
    jaxsamp.run(odd.step, odd.init(jax.random.key(0)), jax.random.key(1), 1, progress=False)
except InputError as err:
    assert "length 12" in str(err) and "8 devices" in str(err), err
else:
    raise AssertionError("expected an InputError for draws of 12 on 8 devices")
print("DATA-PARALLEL-OK", flush=True)
sys.exit(0)
