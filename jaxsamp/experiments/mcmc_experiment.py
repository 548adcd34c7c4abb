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

from jaxsamp.core import ensemble, guard_finite, run, shard, shard_state, thin
from jaxsamp.core.combinators import position_of
from jaxsamp.core.errors import ConfigError
from jaxsamp.core.registry import EXPERIMENTS, SAMPLERS, ExperimentKind
from jaxsamp.diagnostics import health
from jaxsamp.diagnostics.mcmc import posterior_summary
from jaxsamp.experiments import plots
from jaxsamp.mcmc.sample import check_starting_points
from jaxsamp.mcmc.warmup import WINDOW_ALGORITHMS, starting_points, warmup
from jaxsamp.core.progress import phase


def _acceptance(info) -> jax.Array:
    inner = info.inner if hasattr(info, "rejected_nonfinite") else info
    for name in ("acceptance_rate", "acceptance_probability", "acceptance"):
        if hasattr(inner, name):
            return jnp.mean(jnp.asarray(getattr(inner, name), jnp.float32))
    return jnp.float32(jnp.nan)


def compare_with_exact(target, samples: np.ndarray, exact: np.ndarray) -> dict:
    """Moment and mode-weight errors of ``samples`` (one per independent chain) against exact samples of ``target``.

    ``mean_max_abs_z`` is the largest absolute z-score over coordinates of the difference of means, with the standard
    error of two independent sample means (the chains' final states are independent across chains).
    """
    difference = samples.mean(0) - exact.mean(0)
    standard_error = np.sqrt(samples.var(0) / len(samples) + exact.var(0) / len(exact))
    out = {
        "mean_abs_err": float(np.max(np.abs(difference))),
        "mean_max_abs_z": float(np.max(np.abs(difference) / standard_error)),
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
    if cfg.run.num_warmup:
        if cfg.sampler.name not in WINDOW_ALGORITHMS:
            raise ConfigError(
                f"run.num_warmup (multi-chain window warm-up) adapts {' and '.join(WINDOW_ALGORITHMS)}, "
                f"not {cfg.sampler.name!r}",
                "use run.burn_in for other samplers",
            )
        if params.get("tune_steps"):
            raise ConfigError(
                "give run.num_warmup (every chain warmed up) or sampler.params.tune_steps (one chain), not both"
            )
        if cfg.run.num_warmup < 20:
            raise ConfigError(f"run.num_warmup must be 0 or >= 20, got {cfg.run.num_warmup}")
    return params


def _info_field(info, name: str):
    """A field of the sampler's own info under ``guard_finite`` (``None`` when it has none)."""
    inner = info.inner
    return getattr(inner, name, None)


def _window_fixed(sampler: str, params: dict) -> dict:
    return {k: params[k] for k in ("num_integration_steps", "max_num_doublings") if k in params}


def build_chains(cfg, target, params: dict, positions, key, run_dir: Path):
    """The batched kernel and the chains' states: after a multi-chain warm-up (``run.num_warmup``) or as initialised."""
    if cfg.run.num_warmup:
        options = cfg.driver_options(run_dir, "warmup_checkpoints")
        warm, _ = warmup(
            target.log_prob, positions, key, cfg.run.num_warmup, algorithm=cfg.sampler.name,
            target_acceptance=params.get("target_acceptance", 0.8), initial_step_size=params.get("step_size", 1.0),
            progress=options["progress"], checkpoint=options["checkpoint"], identity=options["identity"],
            **_window_fixed(cfg.sampler.name, params),
        )
        kernel = warm.sampling_kernel(target.log_prob, thin=cfg.run.thin)
        return kernel, kernel.init(warm), warm
    single = SAMPLERS.get(cfg.sampler.name, target, **params)
    kernel = ensemble(guard_finite(thin(single, cfg.run.thin) if cfg.run.thin > 1 else single))
    # per-chain init keys: kernels with random initial state (MCLMC momenta) must not share one
    return kernel, kernel.init(positions, key), None


#: Chains whose draws R-hat and ESS are computed on. The diagnostics hold about twenty copies of the
#: draws they rank and transform (1e5 chains x 300 draws x 2: several GB); evenly spaced chains
#: bound that, and 4096 chains estimate R-hat to within ~1e-3 of all of them (chains are exchangeable).
MAX_DIAGNOSED_CHAINS = 4096


def chain_diagnostics(draws: np.ndarray, divergent: np.ndarray | None) -> tuple[dict, list[str]]:
    """Bulk ESS (worst coordinate), max R-hat, divergences and their warnings over the kept draws ``(steps, chains, d)``.

    R-hat and ESS are those of at most :data:`MAX_DIAGNOSED_CHAINS` evenly spaced chains
    (``diagnosed_chains`` in the metrics); divergences are counted over all chains.
    """
    num_chains = draws.shape[1]
    diagnosed = np.unique(np.linspace(0, num_chains - 1, min(num_chains, MAX_DIAGNOSED_CHAINS)).round().astype(int))
    by_chain = np.swapaxes(draws[:, diagnosed], 0, 1)
    out, warnings = {}, []
    if by_chain.shape[0] >= 2 and by_chain.shape[1] >= 4:
        summary = posterior_summary(by_chain)
        out.update(min_ess_bulk=summary.min_ess_bulk, max_rhat=summary.max_rhat, diagnosed_chains=len(diagnosed))
        warnings += health.convergence_warnings(summary.r_hat, summary.ess_bulk, len(diagnosed))
    if divergent is not None:
        out["divergences"] = int(np.sum(divergent))
        if out["divergences"]:
            warnings.append(f"{out['divergences']} divergent transitions after burn-in")
    return out, warnings


def run_mcmc(cfg, target, params: dict, run_dir: Path) -> dict:
    """Run ``cfg.run.num_chains`` chains of ``cfg.sampler`` on ``target``; diagnostics and the exact answer."""
    key = jax.random.key(cfg.seed)
    k_init, k_run, k_exact = jax.random.split(key, 3)
    k_pos, k_chain = jax.random.split(k_init)
    positions = starting_points(target, k_pos, cfg.run.num_chains, scale=cfg.run.init_scale)
    bad_starts = check_starting_points(target, positions,
                                       hint="lower run.init_scale, or check the target's parameters and support")
    start = time.perf_counter()
    kernel, state, warm = build_chains(cfg, target, params, positions, k_chain, run_dir)
    if cfg.run.shard:
        kernel, state = shard(kernel), shard_state(state)
    continuous = not target.domain.is_discrete  # R^d and the sphere
    burn_in = cfg.run.burn_in

    def trace(s, info):
        out = {
            "acceptance": _acceptance(info),
            "nonfinite": jnp.sum(info.rejected_nonfinite.astype(jnp.int32)),
            "moved": jnp.sum(info.moved.astype(jnp.int32)),
        }
        divergent = _info_field(info, "is_divergent")
        if divergent is not None:
            out["divergent"] = jnp.sum(divergent.astype(jnp.int32))
        if continuous:
            out["position"] = position_of(s)
        return out

    first = position_of(state)
    # health=False: the checks below (health.chain_warnings, with the trace) say more than the driver's
    state, tr = run(kernel.step, state, k_run, cfg.run.num_steps, trace=trace, health=False, **cfg.driver_options(run_dir))
    elapsed = time.perf_counter() - start
    samples = np.asarray(position_of(state))
    acc = np.asarray(tr["acceptance"])
    metrics = {
        "num_chains": cfg.run.num_chains,
        "num_steps": cfg.run.num_steps,
        "num_warmup": cfg.run.num_warmup,
        "acceptance_rate": float(np.nanmean(acc[burn_in:])) if np.any(np.isfinite(acc)) else float("nan"),
        "nonfinite_rejections": int(np.asarray(tr["nonfinite"]).sum()),
        "nonfinite_starts": bad_starts,
        "seconds_incl_compile": elapsed,
    }
    if warm is not None:
        metrics["warmup_step_size_mean"] = float(np.mean(np.asarray(warm.parameters["step_size"])))
    kept = None
    if continuous:
        kept = np.asarray(tr["position"])[burn_in:].reshape(cfg.run.num_steps - burn_in, cfg.run.num_chains, -1)
        divergent = np.asarray(tr["divergent"])[burn_in:] if "divergent" in tr else None
        with phase(f"R-hat and ESS of {kept.shape[1]} chains", cfg.run.progress):
            diagnostics, convergence = chain_diagnostics(kept, divergent)
        metrics.update(diagnostics)
    metrics["warnings"] = health.initial_warnings(bad_starts, cfg.run.num_chains) + health.chain_warnings(
        num_chains=cfg.run.num_chains,
        start=np.asarray(first),
        end=samples,
        moved=np.asarray(tr["moved"]),
        acceptance=acc,
        nonfinite=np.asarray(tr["nonfinite"]),
        burn_in=burn_in,
        continuous=continuous,
        metropolis=SAMPLERS.entry(cfg.sampler.name).meta.get("metropolis", False),
    )
    if continuous:
        metrics["warnings"] += convergence
    arrays = {"samples": samples}
    exact = None
    if continuous and target.has_exact_samples:
        exact = np.asarray(target.sample(k_exact, cfg.run.num_eval_samples))
        arrays["exact_samples"] = exact
        metrics.update(compare_with_exact(target, samples, exact))
    if target.log_Z is not None:
        metrics["log_Z_exact"] = float(target.log_Z)
    if kept is not None:
        arrays["draws"] = np.swapaxes(kept, 0, 1)  # (chains, draws, d), ArviZ's layout
    np.savez(run_dir / "samples.npz", **arrays)
    if continuous:  # samples over the density (2-D) or marginals, next to exact samples; trace and rank plots
        flat = samples.reshape(len(samples), -1)
        plots.samples_against_target(run_dir, target, flat, None if exact is None else exact.reshape(len(exact), -1), cfg.name)
        plots.trace_and_rank(run_dir / "trace_rank.png", arrays["draws"], cfg.name)
    plots.trace_plot(run_dir / "acceptance.png", {"acceptance": acc}, cfg.name)
    return metrics


EXPERIMENTS.register("mcmc", "many chains of a registered kernel through ensemble/guard_finite/thin")(
    ExperimentKind(check, run_mcmc)
)
