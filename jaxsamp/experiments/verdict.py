"""The one-line verdict that ends every experiment run: the headline figure against the exact answer.

:func:`verdict` reads a run's ``metrics.json`` figures (and the config for sample sizes) and says, in one
line, whether the headline figure agrees with the target's exact reference within Monte Carlo error, or,
where no exact reference exists, what the headline is and what it is compared with. It is printed last by
``jaxsamp run`` and stored as ``metrics["verdict"]``.

The Monte Carlo errors used:

- **Importance-sampling log Z** (``log Ẑ = log mean w``): by the delta method the standard error is
  ``sqrt((1/ess - 1) / n)`` for ``n`` weights of normalised ESS ``ess`` (the relative variance of the
  mean weight is ``(n / ESS_count - 1) / n``). With heavy-tailed weights the ESS itself is noisy and this
  error is optimistic, and ``log Ẑ`` is biased low by about half its variance, so below 30 effective
  samples no verdict is given.
- **MCMC means**: ``|mean_chains - mean_exact| / sqrt(var / n_chains + var / n_exact)`` per coordinate,
  on the chains' final states (independent chains) against exact samples; the largest over coordinates
  is ``mean_max_abs_z``.
- **Total variation to an enumerated law**: the mean and sd of the TV that as many exact samples have
  (``tv_floor``, ``tv_floor_sd``).
"""

from __future__ import annotations

import math

__all__ = ["verdict", "log_z_standard_error", "Z_LIMIT", "MIN_EFFECTIVE"]

Z_LIMIT = 3.0  # standard errors within which an estimate agrees with the exact answer
MEAN_Z_LIMIT = 4.0  # the largest of d coordinates' |z|: 4 keeps false alarms below 1e-4 per coordinate
MIN_EFFECTIVE = 30.0  # effective samples below which an importance-sampling log Z is not judged


def log_z_standard_error(ess: float, n: int) -> float:
    """Delta-method standard error of ``log mean(w)`` from ``n`` weights of normalised ESS ``ess``."""
    return math.sqrt(max(1.0 / ess - 1.0, 0.0) / n)


def _finite(*values) -> bool:
    return all(isinstance(v, (int, float)) and math.isfinite(v) for v in values)


def _log_z(estimate, exact, ess, n, what: str) -> str:
    """Importance-sampling ``log Ẑ`` against the exact ``log Z``."""
    if not _finite(estimate):
        return f"{what} is not finite: the sampler failed (see the warnings)"
    if exact is None or not _finite(exact):
        return f"{what} {estimate:.4f}; no exact log Z for this target (ESS {ess:.3f} of {n})"
    error = estimate - exact
    if not _finite(ess) or ess * n < MIN_EFFECTIVE:
        return (f"{what} {estimate:.4f} vs exact {exact:.4f} (error {error:+.4f}), but only "
                f"{ess * n if _finite(ess) else 0:.0f} effective samples of {n}: too few to judge")
    se = log_z_standard_error(ess, n)
    inside = abs(error) <= Z_LIMIT * se
    return (f"{what} {estimate:.4f} vs exact {exact:.4f}: error {error:+.4f}, "
            f"{'within' if inside else 'BEYOND'} {Z_LIMIT:g} standard errors ({se:.4f}; ESS {ess:.3f} of {n})")


def _mcmc(cfg, metrics, target) -> str:
    if "mean_max_abs_z" in metrics:
        z = metrics["mean_max_abs_z"]
        inside = _finite(z) and z <= MEAN_Z_LIMIT
        line = (f"chain means {'within' if inside else 'BEYOND'} {MEAN_Z_LIMIT:g} standard errors of the exact means "
                f"(largest |z| {z:.2f})")
        if "mode_weight_tv" in metrics:
            line += f"; mode weights TV {metrics['mode_weight_tv']:.4f}"
        return line
    if "max_rhat" in metrics:
        return (f"no exact samples for this target: max R-hat {metrics['max_rhat']:.3f}, "
                f"min bulk ESS {metrics['min_ess_bulk']:.0f}")
    return "no exact reference for this target"


def _smc(cfg, metrics, target) -> str:
    if "log_Z_exact" not in metrics:
        return f"log Z {metrics['log_Z_hat']:.4f}; no exact log Z for this target"
    return (f"log Z {metrics['log_Z_hat']:.4f} vs exact {metrics['log_Z_exact']:.4f} (error "
            f"{metrics['log_Z_hat'] - metrics['log_Z_exact']:+.4f}); one SMC run carries no standard error: "
            "compare seeds")


def _weighted(estimate_key: str, what: str):
    def judge(cfg, metrics, target) -> str:
        n = int(cfg.run.num_eval_samples) - int(metrics.get("nonfinite_samples", 0) or 0)
        exact = metrics.get("log_Z_exact", None if target.log_Z is None else float(target.log_Z))
        line = _log_z(metrics.get(estimate_key, float("nan")), exact, metrics.get("ess", float("nan")), n, what)
        if exact is None and "w2" in metrics:
            line += f"; W2 to the reference set {metrics['w2']:.3f}, energy W2 {metrics.get('energy_w2', float('nan')):.3f}"
        return line
    return judge


def _scld(cfg, metrics, target) -> str:
    """SMC's verdict when the run resampled (one run then carries no standard error), else importance sampling's."""
    if metrics.get("num_resamplings", 0):
        return _smc(cfg, metrics, target)
    return _weighted("log_Z_hat", "log Z (importance sampling)")(cfg, metrics, target)


def _leaps(cfg, metrics, target) -> str:
    """The exact discrete-time weights are the headline whatever rule the config names (they are unbiased); the
    paper's Jarzynski quadrature on the same walkers, when recorded, follows as context. The exact rule's figures
    are the unsuffixed ones when it is the headline rule, else ``*_exact``."""
    exact_rule = "_exact" if "log_Z_hat_exact" in metrics else ""
    log_z = metrics[f"log_Z_hat{exact_rule}"]
    if f"ess{exact_rule}" not in metrics:  # resampling on: the final weights cover the steps since the last resampling only
        return (f"log Z {log_z:.4f} vs exact {metrics.get('log_Z_exact', float('nan')):.4f} "
                "with resampling: one run carries no standard error, compare seeds")
    line = _log_z(log_z, metrics.get("log_Z_exact"), metrics[f"ess{exact_rule}"],
                  int(metrics["eval_walkers"]), "log Z (exact weights)")
    if "ess_quadrature_paper" in metrics:
        line += (f"; the paper's quadrature on the same walkers: ESS {metrics['ess_quadrature_paper']:.3f}, "
                 f"log Z {metrics['log_Z_hat_quadrature_paper']:.4f} (biased at finite steps)")
    return line


def _gflownet(cfg, metrics, target) -> str:
    parts = [f"{key[:-len('_policy_l1')]} {value:.2e}" for key, value in metrics.items() if key.endswith("_policy_l1")]
    if not parts:
        return "no exact evaluation of the policy"
    return ("L1 of each policy's exact terminal distribution to pi (computed, not sampled; 0 is exact): "
            + ", ".join(parts))


def _tps_dps(cfg, metrics, target) -> str:
    return (f"{metrics['thp']:.1f}% of paths reach the end state, transition-state energy {metrics['ets']:.3f} "
            f"± {metrics.get('ets_std', float('nan')):.3f}; no exact path ensemble to compare with")


def _bernoulli(cfg, metrics, target) -> str:
    if "tv" in metrics and "tv_floor" in metrics:
        floor, sd = metrics["tv_floor"], metrics.get("tv_floor_sd", 0.0)
        inside = metrics["tv"] <= floor + Z_LIMIT * sd
        return (f"TV to the exact law {metrics['tv']:.4f}: {'within' if inside else 'BEYOND'} the Monte Carlo error of "
                f"as many exact samples ({floor:.4f} ± {sd:.4f})")
    if "mmd_test" in metrics:
        return (f"no exact law: MMD to held-out data {metrics['mmd_test']:.4f} "
                f"(train vs held-out data: {metrics.get('mmd_train_vs_test', float('nan')):.4f})")
    return "no exact reference for this target"


def _mile(cfg, metrics, target) -> str:
    parts = [f"{m} {metrics[f'{m}_lppd']:.3f}" for m in ("mile", "bde") if f"{m}_lppd" in metrics]
    return (f"no exact posterior: test LPPD {', '.join(parts)} against the deep ensemble's {metrics['de_lppd']:.3f} "
            "(higher is better)")


def _vmf(cfg, metrics, target) -> str:
    return (f"vMF-exp's selection frequencies deviate at most {100 * metrics['max_rel_dev_vmfexp_vs_boltzmann']:.1f}% "
            f"from Boltzmann's exact probabilities (the first-order theory: "
            f"{100 * metrics['max_rel_dev_first_order_vs_boltzmann']:.1f}%)")


_JUDGES = {
    "mcmc": _mcmc,
    "smc": _smc,
    "vi": _weighted("log_Z_hat", "log Z (importance sampling)"),
    "diffusion": _weighted("log_Z_hat", "log Z (importance sampling)"),
    "adjoint": _weighted("log_Z_hat", "log Z (importance sampling)"),
    "curves": _weighted("log_Z_hat", "log Z (ODE importance sampling)"),
    "leaps": _leaps,
    "scld": _scld,
    "gflownet": _gflownet,
    "tps_dps": _tps_dps,
    "bernoulli_denoising": _bernoulli,
    "mile": _mile,
    "vmf_exploration": _vmf,
}


def verdict(cfg, target, metrics: dict) -> str:
    """One line: the run's headline figure against the target's exact reference (see the module docstring).

    Parameters
    ----------
    cfg : ExperimentConfig
        The run's config (its kind and sample sizes).
    target : Target
        The run's target (its exact ``log_Z`` where known).
    metrics : dict
        The figures the run wrote to ``metrics.json``.
    """
    judge = _JUDGES.get(cfg.kind)
    if judge is None:
        return "no verdict for this kind of run"
    try:
        return judge(cfg, metrics, target)
    except (KeyError, TypeError, ValueError) as err:  # a figure the verdict needs is missing or not a number
        return f"no verdict: the run did not report {err}"
