"""The ``mcmc`` experiment kind: many chains of a registered kernel through the combinators.

The sampler named in the config is built from ``SAMPLERS`` as a single-chain
kernel and wrapped as ``ensemble(guard_finite(thin(kernel, run.thin)))`` (then
``shard`` when ``run.shard``), run by the driver with checkpoints, and its final
chain states compared with the target's exact answer when one exists.
"""

from __future__ import annotations

import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core import ensemble, guard_finite, run, shard, thin
from jaxsamp.core.combinators import position_of
from jaxsamp.core.errors import ConfigError, InputError
from jaxsamp.core.registry import EXPERIMENTS, SAMPLERS, ExperimentKind
from jaxsamp.diagnostics import health
from jaxsamp.experiments import plots


def initial_positions(target, key, n: int, scale: float = 1.0):
    """Starting points for ``n`` chains: the target's own rule if it has one, else by domain."""
    if hasattr(target, "init_positions"):
        return target.init_positions(key, n)
    shape = (n, *target.event_shape)
    kind = target.domain.kind
    if kind == "spin":
        return jnp.where(jax.random.bernoulli(key, 0.5, shape), 1.0, -1.0)
    if kind == "categorical":
        return jax.random.randint(key, shape, 0, target.domain.num_categories)
    return scale * jax.random.normal(key, shape)


def _acceptance(info) -> jax.Array:
    inner = info.inner if hasattr(info, "rejected_nonfinite") else info
    for name in ("acceptance_rate", "acceptance_probability", "acceptance"):
        if hasattr(inner, name):
            return jnp.mean(jnp.asarray(getattr(inner, name), jnp.float32))
    return jnp.float32(jnp.nan)


def compare_with_exact(target, samples: np.ndarray, exact: np.ndarray) -> dict:
    """Moment and mode-weight errors of ``samples`` against exact samples of ``target``."""
    out = {
        "mean_abs_err": float(np.max(np.abs(samples.mean(0) - exact.mean(0)))),
        "std_rel_err": float(np.max(np.abs(samples.std(0) / exact.std(0) - 1.0))),
    }
    if hasattr(target, "assign_modes"):
        k = len(target.weights_np)
        got = np.bincount(np.asarray(target.assign_modes(jnp.asarray(samples))), minlength=k) / len(samples)
        out["mode_weight_tv"] = float(0.5 * np.abs(got - target.weights_np).sum())
    return out


def check(cfg, target) -> dict:
    """The sampler's parameters (names, types, ranges) and the run settings the kind needs, before any work."""
    params = SAMPLERS.validate(cfg.sampler.name, cfg.sampler.params, skip=("target",))
    if cfg.run.burn_in >= cfg.run.num_steps:
        raise ConfigError(
            f"run.burn_in ({cfg.run.burn_in}) must be < run.num_steps ({cfg.run.num_steps}): no step would be kept"
        )
    return params


def run_mcmc(cfg, target, params: dict, run_dir: Path) -> dict:
    """Run ``cfg.run.num_chains`` chains of ``cfg.sampler`` on ``target``; compare with the exact answer."""
    single = SAMPLERS.get(cfg.sampler.name, target, **params)
    kernel = ensemble(guard_finite(thin(single, cfg.run.thin) if cfg.run.thin > 1 else single))
    if cfg.run.shard:
        kernel = shard(kernel)
    key = jax.random.key(cfg.seed)
    k_init, k_run, k_exact = jax.random.split(key, 3)
    k_pos, k_chain = jax.random.split(k_init)
    positions = initial_positions(target, k_pos, cfg.run.num_chains, cfg.run.init_scale)
    bad_starts = health.count_nonfinite_log_prob(target.log_prob, positions)
    if bad_starts == cfg.run.num_chains:
        raise InputError(
            f"all {bad_starts} chains start where {target.name}.log_prob is NaN/inf",
            "lower run.init_scale, or check the target's parameters and support",
        )
    # per-chain init keys: kernels with random initial state (MCLMC momenta) must not share one
    state = kernel.init(positions, k_chain)

    def trace(s, info):
        return {
            "acceptance": _acceptance(info),
            "nonfinite": jnp.sum(info.rejected_nonfinite.astype(jnp.int32)),
            "moved": jnp.sum(info.moved.astype(jnp.int32)),
        }

    start = time.perf_counter()
    state, tr = run(kernel.step, state, k_run, cfg.run.num_steps, trace=trace, **cfg.driver_options(run_dir))
    elapsed = time.perf_counter() - start
    samples = np.asarray(jax.vmap(position_of)(state) if not hasattr(state, "position") else state.position)
    acc = np.asarray(tr["acceptance"])
    metrics = {
        "num_chains": cfg.run.num_chains,
        "num_steps": cfg.run.num_steps,
        "acceptance_rate": float(np.nanmean(acc[cfg.run.burn_in:])) if np.any(np.isfinite(acc)) else float("nan"),
        "nonfinite_rejections": int(np.asarray(tr["nonfinite"]).sum()),
        "nonfinite_starts": bad_starts,
        "seconds_incl_compile": elapsed,
    }
    metrics["warnings"] = health.initial_warnings(bad_starts, cfg.run.num_chains) + health.chain_warnings(
        num_chains=cfg.run.num_chains,
        start=np.asarray(positions),
        end=samples,
        moved=np.asarray(tr["moved"]),
        acceptance=acc,
        nonfinite=np.asarray(tr["nonfinite"]),
        burn_in=cfg.run.burn_in,
        continuous=target.domain.kind == "real",
        metropolis=SAMPLERS.entry(cfg.sampler.name).meta.get("metropolis", False),
    )
    arrays = {"samples": samples}
    exact = None
    if target.domain.kind == "real" and target.has_exact_samples:
        exact = np.asarray(target.sample(k_exact, cfg.run.num_eval_samples))
        arrays["exact_samples"] = exact
        metrics.update(compare_with_exact(target, samples, exact))
    if target.log_Z is not None:
        metrics["log_Z_exact"] = float(target.log_Z)
    np.savez(run_dir / "samples.npz", **arrays)
    if target.domain.kind == "real":  # samples over the density (2-D) or marginals, next to exact samples
        flat = samples.reshape(len(samples), -1)
        plots.samples_against_target(run_dir, target, flat, None if exact is None else exact.reshape(len(exact), -1), cfg.name)
    plots.trace_plot(run_dir / "acceptance.png", {"acceptance": acc}, cfg.name)
    return metrics


EXPERIMENTS.register("mcmc", "many chains of a registered kernel through ensemble/guard_finite/thin")(
    ExperimentKind(check, run_mcmc)
)
