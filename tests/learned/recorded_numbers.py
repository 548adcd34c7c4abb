"""Numbers recorded before the learned-sampler contract refactor (issue 58), and the calls that reproduce them.

Every registered learned method is trained for a few updates through :func:`jaxsamp.fit` at fixed keys, on
small settings, then sampled and evaluated at fixed keys. What is recorded per method:

* ``history``: every per-step training metric;
* ``state``: per array leaf of the trained state, its shape, sum and sum of absolute values (sorted, so a
  reordering of the state's fields is not a change of numbers);
* ``log_w``: the log-weights of 64 samples, and ``x_sum`` the sum of their states;
* ``evaluate``: the figures of ``evaluate`` on 64 samples.

The calls name methods and settings as plain strings and keyword values, and the test maps the old names of
methods and metrics to the new ones (``RENAMED``), so the same calls run through the old and the new code.

``python tests/learned/recorded_numbers.py --write`` records them into ``recorded_numbers.json`` (run it on
the code before a refactor); ``--compare`` prints the largest relative difference per method against the file,
0 meaning bit for bit. The test suite compares within float32 round-off (``test_recorded_numbers.py``).
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
RECORD = HERE / "recorded_numbers.json"

#: the XLA flags of the test suite (tests/conftest.py), so that the recorded numbers are the suite's
if "jax" not in sys.modules:
    sys.path.insert(0, str(HERE.parent))
    from conftest import FAST_COMPILE  # noqa: E402

    if FAST_COMPILE not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {FAST_COMPILE}".strip()

import jax  # noqa: E402
import numpy as np  # noqa: E402

NUM_SAMPLES = 64
DIFFUSION = dict(num_time_steps=8, hidden=8, num_layers=1, learning_rate=1e-3)
ADJOINT = dict(network="mlp", hidden=8, num_layers=1, sigma_min=1e-2, sigma_max=3.0, nfe=8, steps_per_epoch=2,
               learning_rate=2e-3, buffer_epochs=2)
GAUSSIAN_Q = dict(family="full_rank_gaussian", learning_rate=3e-2)
BSIVI = dict(latent_dim=2, hidden_width=8, num_inner=8, marginal_draws=32)
AISIVI = dict(BSIVI, tau_layers=1, tau_hidden_width=8, pretrain_steps=2)  # BSIVI has no reverse model to set

#: method -> (target name, settings as keywords, batch size, training steps, evaluate options)
CASES = {
    "pis": ("gaussian", DIFFUSION, 16, 3, {"sinkhorn": False}),
    "dds": ("gaussian", DIFFUSION, 16, 3, {"sinkhorn": False}),
    # recorded before SCLD had its replay buffer (now its default): the bufferless training the numbers are of
    "scld": ("gaussian", dict(DIFFUSION, num_segments=2, mcmc="mala", buffer_batches=0), 16, 3, {}),
    "cmcd": ("gaussian", DIFFUSION, 16, 3, {}),
    "adjoint": ("gaussian", ADJOINT, 16, 2, {"sinkhorn": False}),
    "asbs": ("gaussian", dict(ADJOINT, prior="gaussian", prior_scale=1.0, adjoint_epochs=1, corrector_epochs=1),
             16, 3, {"sinkhorn": False}),
    "tps_dps": ("double_well_2d", dict(num_time_steps=10, batch_size=8, buffer_size=16, updates_per_rollout=2,
                                       annealing_rollouts=1, learning_rate=1e-3), 8, 2, {}),
    "leaps": ("ising", dict(network="mlp", network_params={"hidden": [8]}, free_energy_hidden=[8], loss_batch=16,
                            learning_rate=1e-2, rollout_steps=4, curriculum_steps=4, rollout_every=2, buffer_rollouts=2,
                            states_per_walker=2, mcmc_updates=1, eval_steps=4, compare_weight_points=False),
              8, 6, {}),
    "gflownet": ("hypergrid", dict(hidden=(8,), history_size=32), 8, 3, {}),
    "bernoulli": ("bernoulli_mixture", dict(alpha=1.0, max_measurements=2, hidden=(8,), learning_rate=3e-3,
                                           decay_steps=10, num_train_samples=64,
                                           sampler={"num_measurements": 2, "steps_per_measurement": 2}), 16, 3, {}),
    "curves": ("mixture", dict(hidden=(8,), rate_hidden=(4,), num_frequencies=1, box=4.0, ode_steps=4,
                               learning_rate=3e-3), 16, 3, {}),
    "softcvi": ("gaussian", GAUSSIAN_Q, 8, 3, {}),
    "elbo": ("gaussian", GAUSSIAN_Q, 8, 3, {}),
    "snis_fkl": ("gaussian", GAUSSIAN_Q, 8, 3, {}),
    "aisivi": ("gaussian", AISIVI, 8, 4, {}),
    "bsivi": ("gaussian", BSIVI, 8, 4, {}),
}


def target(name: str):
    """The small target each case trains on (exact references where the method's evaluation uses them)."""
    import jaxsamp
    from jaxsamp.targets.binary import bernoulli_mixture
    from jaxsamp.targets.gaussian import Gaussian
    from jaxsamp.targets.hypergrid import Hypergrid
    from jaxsamp.targets.mixture import GaussianMixture

    if name == "gaussian":
        return Gaussian(np.array([1.0, -0.5]), np.diag([0.25, 0.64]))
    if name == "mixture":
        return GaussianMixture([[1.5, 0.5], [-1.5, -0.5]], 0.6, [0.3, 0.7])
    if name == "hypergrid":
        return Hypergrid(2, 4)
    if name == "bernoulli_mixture":
        return bernoulli_mixture(dim=6, num_components=2, logit_scale=2.0, seed=3)
    if name == "ising":
        return jaxsamp.targets.get("ising", L=3, beta=0.4407)
    return jaxsamp.targets.get(name)


def _leaf_figures(tree) -> list[list]:
    """``[shape, sum, sum |.|]`` of every floating or integer array leaf, sorted."""
    out = []
    for leaf in jax.tree.leaves(tree):
        if not hasattr(leaf, "dtype") or jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
            continue
        a = np.asarray(leaf)
        if a.dtype == bool or not np.issubdtype(a.dtype, np.number):
            a = a.astype(np.float64)
        a = a.astype(np.float64)
        out.append([list(a.shape), float(np.sum(a)), float(np.sum(np.abs(a)))])
    return sorted(out, key=lambda item: (item[0], item[1], item[2]))


def compute(method: str, registered_name: str | None = None) -> dict:
    """The recorded figures of one case, through :func:`jaxsamp.fit` (``registered_name``: its name now)."""
    import jaxsamp

    import jaxsamp.learned.methods  # noqa: F401
    from jaxsamp.core.registry import LEARNED, validate_dataclass

    name = registered_name or method
    target_name, values, batch, steps, options = CASES[method]
    settings = validate_dataclass(name, values, LEARNED.entry(name).meta["settings"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = jaxsamp.fit(name, target(target_name), num_steps=steps, key=0, settings=settings, batch_size=batch,
                             progress=False)
        samples = fitted.sample(1, NUM_SAMPLES)
        figures = fitted.evaluate(2, NUM_SAMPLES, **options)
    x_sum = float(sum(np.sum(np.asarray(leaf, np.float64)) for leaf in jax.tree.leaves(samples.x)
                      if np.issubdtype(np.asarray(leaf).dtype, np.number)))
    return {
        "history": {k: np.asarray(v, np.float64).reshape(steps, -1).tolist() for k, v in fitted.history.items()},
        "state": _leaf_figures(fitted.state),
        "log_w": np.asarray(samples.log_w, np.float64).tolist(),
        "x_sum": x_sum,
        "evaluate": {k: float(v) for k, v in figures.items()},
    }


def _flat(record: dict) -> dict[str, np.ndarray]:
    out = {f"history.{k}": np.asarray(v, np.float64) for k, v in record["history"].items()}
    out["state"] = np.asarray([x for _, s, a in record["state"] for x in (s, a)], np.float64)
    out["log_w"] = np.asarray(record["log_w"], np.float64)
    out["x_sum"] = np.asarray(record["x_sum"], np.float64)
    out.update({f"evaluate.{k}": np.asarray(v, np.float64) for k, v in record["evaluate"].items()})
    return out


def largest_relative_difference(recorded: dict, now: dict) -> tuple[float, str]:
    """The largest ``|a - b| / max(|a|, 1e-6)`` over every shared figure (NaN matching NaN is 0), and where."""
    a, b = _flat(recorded), _flat(now)
    worst, where = 0.0, ""
    for name in a:
        if name not in b or a[name].shape != b[name].shape:
            return float("inf"), f"{name} missing or reshaped"
        x, y = a[name], b[name]
        both_nan = np.isnan(x) & np.isnan(y)
        d = np.where(both_nan, 0.0, np.abs(x - y) / np.maximum(np.abs(x), 1e-6))
        if d.size and np.nanmax(np.where(np.isnan(d), np.inf, d)) > worst:
            worst, where = float(np.max(np.where(np.isnan(d), np.inf, d))), name
    return worst, where


def main(argv: list[str]) -> int:
    if argv[:1] == ["--write"]:
        record = {method: compute(method) for method in CASES}
        RECORD.write_text(json.dumps({"jax": jax.__version__, "methods": record}, indent=1) + "\n")
        print(f"wrote {RECORD}")
        return 0
    if argv[:1] == ["--compare"]:
        from test_recorded_numbers import RENAMED, renamed  # noqa: PLC0415

        recorded = json.loads(RECORD.read_text())["methods"]
        for method in CASES:
            now = compute(method, RENAMED.get(method, method))
            worst, where = largest_relative_difference(renamed(recorded[method], method), now)
            print(f"{method:10s} largest relative difference {worst:.3g} ({where or 'bit for bit'})")
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
