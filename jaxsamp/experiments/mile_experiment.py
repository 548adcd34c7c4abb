"""The ``mile`` experiment kind: a deep ensemble, MILE from its members, and the NUTS ensemble (BDE) baseline.

Config: ``target`` a ``bnn_regression``; ``run.num_chains`` the ensemble size
``K``; ``sampler.name: mile`` with ``params``:

* ``deep_ensemble``: :class:`~jaxsamp.mcmc.deep_ensemble.DeepEnsembleSettings` (not ``num_members``);
* ``mile``: :class:`~jaxsamp.mcmc.mile.MileSettings`;
* ``bde``: :class:`~jaxsamp.mcmc.bde.BdeSettings`; ``run_bde`` (default true) runs it;
* ``save_draws`` (default true): write ``draws.npz`` (MILE's and BDE's kept draws, ``(draw, member, d)``).

All phases run through :func:`jaxsamp.run` with checkpoints in
``run_dir/checkpoints/<phase>``, so ``jaxsamp resume`` continues a killed run
(the resumed run's wall times then count only what was left to do).
``run.shard`` places MILE's member axis on a mesh.

Metrics on the test split (standardised units), for ``de``, ``mile`` and ``bde``:
``_lppd``, ``_rmse``, ``_coverage90`` (:mod:`jaxsamp.diagnostics.predictive`),
``_seconds`` (tuning/warm-up + sampling; the deep ensemble's own for ``de``) and
``_grad_evals`` (gradient evaluations, full-batch equivalents, all members), with
``_total_seconds`` / ``_total_grad_evals`` adding the deep ensemble's cost, and
R-hat / bulk ESS over the members of the parameters (medians over parameters)
and of each draw's mean test log density. Plot ``lppd_vs_time.png``: test LPPD
against wall time as draws accumulate (MILE and BDE, the sampling time spread
over draws by their gradient evaluations), with the deep ensemble's LPPD as a
line (the MILE paper's figure).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax
import numpy as np

from jaxsamp.core.errors import ConfigError
from jaxsamp.core.registry import EXPERIMENTS, ExperimentKind, validate_dataclass
from jaxsamp.diagnostics.mcmc import convergence_diagnostics
from jaxsamp.diagnostics.predictive import predictive_metrics
from jaxsamp.experiments import plots
from jaxsamp.mcmc.bde import BdeSettings, sample_bde
from jaxsamp.mcmc.deep_ensemble import DeepEnsembleSettings, fit_deep_ensemble
from jaxsamp.mcmc.mile import EnsembleDraws, MileSettings, sample_mile
from jaxsamp.targets.bnn import BnnRegression

PARAMS = ("deep_ensemble", "mile", "bde", "run_bde", "save_draws")


@dataclasses.dataclass(frozen=True)
class MileExperiment:
    """The checked settings of a ``mile`` run."""

    deep_ensemble: DeepEnsembleSettings
    mile: MileSettings
    bde: BdeSettings | None
    save_draws: bool


def check(cfg, target) -> MileExperiment:
    """The kind's settings against the target, before any work (every problem a one-line ConfigError)."""
    if not isinstance(target, BnnRegression):
        raise ConfigError(f"experiment kind 'mile' needs a bnn_regression target, got {cfg.target.name!r}")
    if cfg.sampler.name != "mile":
        raise ConfigError(f"experiment kind 'mile' takes sampler name 'mile', got {cfg.sampler.name!r}")
    params = dict(cfg.sampler.params or {})
    for key in params:
        if key not in PARAMS:
            raise ConfigError(f"sampler 'mile': unknown parameter {key!r}; accepted: {', '.join(PARAMS)}")
    for key in ("deep_ensemble", "mile", "bde"):
        if not isinstance(params.get(key) or {}, dict):
            raise ConfigError(f"sampler 'mile': {key} must be a mapping of settings, got {params[key]!r}")
    for key in ("run_bde", "save_draws"):
        if not isinstance(params.get(key, True), bool):
            raise ConfigError(f"sampler 'mile': {key} must be true or false, got {params[key]!r}")
    de_params = dict(params.get("deep_ensemble") or {})
    if "num_members" in de_params:
        raise ConfigError("sampler 'mile': the ensemble size is run.num_chains, not deep_ensemble.num_members")
    de = validate_dataclass(
        "sampler 'mile' deep_ensemble", {**de_params, "num_members": cfg.run.num_chains}, DeepEnsembleSettings
    )
    mile = validate_dataclass("sampler 'mile' mile", params.get("mile") or {}, MileSettings)
    bde = validate_dataclass("sampler 'mile' bde", params.get("bde") or {}, BdeSettings)
    return MileExperiment(de, mile, bde if params.get("run_bde", True) else None, params.get("save_draws", True))


def chain_diagnostics(draws: np.ndarray, test_log_lik: np.ndarray) -> dict:
    """R-hat and bulk ESS over the members: medians over parameters, and of the per-draw test log density."""
    if draws.shape[1] < 2 or draws.shape[0] < 4:
        return {}
    params = convergence_diagnostics(np.swapaxes(draws, 0, 1))
    loglik = convergence_diagnostics(np.swapaxes(test_log_lik, 0, 1))
    return {
        "rhat_params_median": float(np.nanmedian(np.asarray(params.r_hat))),
        "ess_bulk_params_median": float(np.nanmedian(np.asarray(params.ess_bulk))),
        "rhat_test_loglik": float(loglik.r_hat),
        "ess_bulk_test_loglik": float(loglik.ess_bulk),
    }


def summarise(name: str, result: EnsembleDraws, target, de_seconds: float, de_grad_evals: float) -> tuple[dict, dict]:
    """A method's metrics and its LPPD-against-time curve."""
    split = target.split
    pred = predictive_metrics(target.predict, result.draws, split.x_test, split.y_test)
    seconds = result.tuning_seconds + result.sampling_seconds
    grad_evals = result.tuning_grad_evals + float(result.cumulative_grad_evals[-1])
    metrics = {
        f"{name}_lppd": pred["lppd"],
        f"{name}_rmse": pred["rmse"],
        f"{name}_coverage90": pred["coverage"],
        f"{name}_seconds": seconds,
        f"{name}_grad_evals": grad_evals,
        f"{name}_total_seconds": de_seconds + seconds,
        f"{name}_total_grad_evals": de_grad_evals + grad_evals,
        f"{name}_tuning_seconds": result.tuning_seconds,
        f"{name}_sampling_seconds": result.sampling_seconds,
        f"{name}_draws_per_member": int(result.draws.shape[0]),
        f"{name}_nonfinite_draws": int(np.sum(~np.all(np.isfinite(result.draws), axis=-1))),
    }
    for param, values in result.parameters.items():
        metrics[f"{name}_{param}_median"] = float(np.median(values))
    metrics.update({f"{name}_{k}": v for k, v in chain_diagnostics(result.draws, pred["test_log_lik"]).items()})
    fraction = result.cumulative_grad_evals / result.cumulative_grad_evals[-1]
    curve = {
        "seconds": de_seconds + result.tuning_seconds + result.sampling_seconds * fraction,
        "lppd": pred["lppd_curve"],
    }
    return metrics, curve


def lppd_plot(path: Path, curves: dict, de: tuple[float, float], title: str) -> Path:
    """Test LPPD against wall time (log scale) as draws accumulate; the deep ensemble as a line."""
    plt = plots.pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for (name, curve), colour in zip(curves.items(), ("C0", "C3", "C2")):
        ax.plot(curve["seconds"], curve["lppd"], color=colour, label=name.upper())
    ax.axhline(de[1], color="k", ls="--", lw=1.0, label="DE")
    ax.plot([de[0]], [de[1]], "ko", ms=4)
    ax.set_xscale("log")
    ax.set_xlabel("wall time (s, deep ensemble included)")
    ax.set_ylabel("test LPPD")
    ax.set_title(title)
    ax.legend()
    plots.save_figure(fig, path)
    return path


def run_mile(cfg, target, checked: MileExperiment, run_dir: Path) -> dict:
    """Deep ensemble, then MILE and (unless ``run_bde: false``) BDE from its members; metrics and the plot."""
    k_de, k_mile, k_bde = jax.random.split(jax.random.key(cfg.seed), 3)
    options = cfg.driver_options(run_dir)
    folder = options["checkpoint"]
    common = {
        "progress": cfg.run.progress,
        "checkpoint_every": cfg.run.checkpoint_every,
        "identity": options["identity"],
    }
    de = fit_deep_ensemble(target, checked.deep_ensemble, k_de, checkpoint=folder / "deep_ensemble", **common)
    split = target.split
    pred = predictive_metrics(target.predict, de.members[None], split.x_test, split.y_test)
    metrics = {
        "num_members": int(de.members.shape[0]),
        "num_parameters": int(de.members.shape[1]),
        "num_train": target.num_train,
        "target_scale": split.target_scale,
        "de_lppd": pred["lppd"],
        "de_rmse": pred["rmse"],
        "de_coverage90": pred["coverage"],
        "de_seconds": de.seconds,
        "de_grad_evals": de.grad_evals,
        "de_epochs_mean": float(np.mean(de.epochs)),
    }
    warnings = []
    if np.any(de.epochs >= checked.deep_ensemble.max_epochs):
        warnings.append(
            f"{int(np.sum(de.epochs >= checked.deep_ensemble.max_epochs))} ensemble members never "
            "stopped early (raise deep_ensemble.max_epochs)"
        )
    sampler_options = {**common, "checkpoint_dir": folder, "chunk": cfg.run.chunk}
    results = {
        "mile": sample_mile(target.log_prob, de.members, k_mile, checked.mile, shard=cfg.run.shard, **sampler_options)
    }
    if checked.bde is not None:
        results["bde"] = sample_bde(target.log_prob, de.members, k_bde, checked.bde, **sampler_options)
    curves = {}
    for name, result in results.items():
        method_metrics, curves[name] = summarise(name, result, target, de.seconds, de.grad_evals)
        metrics.update(method_metrics)
        if method_metrics[f"{name}_nonfinite_draws"]:
            warnings.append(f"{name}: {method_metrics[f'{name}_nonfinite_draws']} draws hold NaN/inf parameters")
        if not np.isfinite(method_metrics[f"{name}_lppd"]):
            warnings.append(f"{name}: the test LPPD is not finite")
    tuning = results["mile"].tuning_trace
    rejected = float(np.mean(~np.asarray(tuning.success)))
    metrics["mile_tuning_rejected_fraction"] = rejected
    if rejected > 0.01:
        warnings.append(f"mile: {100 * rejected:.1f}% of the tuning steps were non-finite and rejected")
    if checked.bde is not None:
        divergent = np.asarray(results["bde"].tuning_trace.is_divergent)
        metrics["bde_warmup_divergent_fraction"] = float(np.mean(divergent))
    np.savez(
        run_dir / "predictive_curves.npz",
        de_seconds=de.seconds,
        de_lppd=metrics["de_lppd"],
        **{f"{n}_{k}": v for n, c in curves.items() for k, v in c.items()},
    )
    if checked.save_draws:
        np.savez(run_dir / "draws.npz", deep_ensemble=de.members, **{n: r.draws for n, r in results.items()})
    lppd_plot(run_dir / "lppd_vs_time.png", curves, (de.seconds, metrics["de_lppd"]), cfg.name)
    metrics["warnings"] = warnings
    return metrics


EXPERIMENTS.register(
    "mile", "deep ensemble, MILE (tuned MCLMC from its members) and the NUTS ensemble; LPPD, RMSE, coverage"
)(ExperimentKind(check, run_mile))
