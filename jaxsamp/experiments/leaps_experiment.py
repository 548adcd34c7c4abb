"""The ``leaps`` experiment kind: train a LEAPS sampler on a lattice target, sample, compare with exact answers.

Training is :func:`jaxsamp.fit` (``ExperimentConfig.fit``: progress bar, checkpoints in
``run_dir/checkpoints``, so ``jaxsamp resume RUN_DIR`` continues a killed run; its health
warnings). Then ``run.num_eval_samples`` walkers are drawn with the evaluation
grid of ``sampler.params`` under the four weight rules of
:func:`jaxsamp.learned.leaps.simulate` (``exact``, the unbiased default, and the
``pre``, ``post`` and ``trapezoid`` quadratures; only ``exact`` and the configured one when
``compare_weight_points`` is false). The ``exact`` walkers also carry the paper's
Jarzynski quadrature (``quadrature_paper``: after the jump for Ising, before it for
Potts, as the reference code scores them) on the same draws
(:meth:`~jaxsamp.learned.leaps.training.Leaps.evaluation_samples`; not with
resampling). The run reports for each its ESS and
``log Z`` estimate, with the error against the exact ``log Z`` (Kaufman /
transfer matrix) when it is known (:func:`~jaxsamp.learned.leaps.training.weight_figures`:
the headline rule's figures under the canonical names, every other rule's suffixed), the
free-energy network's ``log_Z_learned``, plus the ESS and log-weight variance of an
untrained network (same grid) for comparison. With resampling on,
the ESS figures are named ``ess_since_last_resample*``: the final weights only
describe the steps after the last resampling.

Observables (as in the LEAPS experiments; :func:`jaxsamp.diagnostics.observables.lattice_observables`):
the magnetisation histogram and ``<|m|>`` and the connected two-point function ``G(r)`` (Ising),
or ``|M|`` (Potts), all self-normalised with the weights, against
:func:`jaxsamp.mcmc.lattice_reference.reference_observables`: exact enumeration for tiny lattices,
the exact ``P(m)`` of the transfer matrix (Ising), and otherwise a Glauber (heat-bath) reference
run through the driver (checkpoints in ``run_dir/reference_checkpoints``). Plots: ``training.png``,
``magnetization.png``, ``two_point.png`` (Ising), ``log_weights.png``.
"""

from __future__ import annotations

import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.diagnostics import health
from jaxsamp.core.errors import ConfigError
from jaxsamp.core.protocols import WeightedSamples
from jaxsamp.core.registry import EXPERIMENTS, ExperimentKind, validate_dataclass
from jaxsamp.diagnostics import observables as obs
from jaxsamp.experiments.fitting import fit_method, smc_metrics
from jaxsamp.experiments import plots
from jaxsamp.learned.leaps import simulation
from jaxsamp.learned.leaps.training import Leaps, LeapsSettings, build_networks, free_energy_log_Z, weight_figures
from jaxsamp.mcmc.lattice_reference import reference_observables
from jaxsamp.core.progress import phase


# --------------------------------------------------------------------------
# plots
# --------------------------------------------------------------------------


def plot_order_parameter(path: Path, target, got: dict, ref: dict, source: str, title: str) -> None:
    plt = plots.pyplot()
    value_range, label = obs.order_parameter_axis(target)
    edges = np.linspace(*value_range, len(got["hist"]) + 1)
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    ax.bar(edges[:-1], got["hist"], width=np.diff(edges), align="edge", alpha=0.6, label="LEAPS (weighted)")
    ax.step(edges, np.append(ref["hist"], ref["hist"][-1]), where="post", color="k", label=source)
    ax.set_xlabel(label)
    ax.set_ylabel("density")
    ax.set_title(f"{title}: <{label.strip('|')}|> {got['abs_order']:.4f} vs {ref['abs_order']:.4f}")
    ax.legend()
    plots.save_figure(fig, path)


def plot_two_point(path: Path, got: np.ndarray, ref: np.ndarray, source: str, title: str) -> None:
    plt = plots.pyplot()
    r = np.arange(len(got))
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    ax.plot(r, got, "o-", label="LEAPS (weighted)")
    ax.plot(r, ref, "k--", label=source)
    ax.set_xlabel("r")
    ax.set_ylabel("G(r)")
    ax.set_title(f"{title}: connected two-point function")
    ax.legend()
    plots.save_figure(fig, path)


def plot_log_weights(path: Path, samples: dict[str, WeightedSamples], title: str) -> None:
    plt = plots.pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for rule, ws in samples.items():
        a = np.asarray(ws.log_w)
        ax.hist(a - a.mean(), bins=60, histtype="step", density=True, label=f"{rule} (ESS {float(ws.ess):.3f})")
    ax.set_xlabel("A - mean(A)")
    ax.set_title(f"{title}: log-weights")
    ax.legend()
    plots.save_figure(fig, path)


# --------------------------------------------------------------------------
# the experiment
# --------------------------------------------------------------------------


def check(cfg, target) -> LeapsSettings:
    """The LEAPS settings and a lattice target, checked before any work."""
    if cfg.sampler.name != "leaps":
        raise ConfigError(f"experiment kind 'leaps' needs sampler.name: leaps, got {cfg.sampler.name!r}")
    if not target.domain.is_discrete or not hasattr(target, "flip_log_ratios"):
        raise ConfigError(f"experiment kind 'leaps' needs a lattice target (ising, potts), got {target.name!r}")
    return validate_dataclass("sampler 'leaps'", cfg.sampler.params, LeapsSettings)


def run_leaps(cfg, target, settings: LeapsSettings, run_dir: Path) -> dict:
    """Train LEAPS on an Ising/Potts target with :func:`jaxsamp.fit`; ESS, log Z and observables vs exact answers."""
    key_fit, key_eval, key_ref, key_untrained = jax.random.split(jax.random.key(cfg.seed), 4)
    fitted = fit_method(cfg, target, settings, run_dir, key_fit, method="leaps")
    state = fitted.state
    leaps = Leaps(target, settings, cfg.run.num_chains)  # the family's numerics: the draws of every weight rule

    seconds = {}
    n_first = min(cfg.run.num_eval_samples, settings.eval_batch)
    with phase(f"evaluating {cfg.run.num_eval_samples} walkers under each weight rule", cfg.run.progress):
        samples = leaps.evaluation_samples(key_eval, state, cfg.run.num_eval_samples)
    # a freshly initialised network: the annealing baseline
    untrained_params = jax.jit(lambda k: build_networks(leaps.path, settings, k)[1])(key_untrained)
    for rule in (r for r in samples if r in simulation.WEIGHT_POINTS):  # quadrature_paper rides on the exact draws
        with phase(f"timing {n_first} walkers, {rule} weights", cfg.run.progress):
            if "quadrature_paper" in samples and rule == "exact":  # drawn by the paired draw: compile this one first
                jax.block_until_ready(leaps.draw(jax.random.fold_in(key_eval, 10**6 + 2), state.params, n_first, rule))
            t0 = time.perf_counter()
            # leaps.draw takes the parameters as an argument: the untrained and trained nets share one compilation
            jax.block_until_ready(leaps.draw(jax.random.fold_in(key_eval, 10**6), state.params, n_first, rule))
            seconds[rule] = (time.perf_counter() - t0) * 1000 / n_first
            if rule == settings.weight_point:
                untrained = leaps.draw(jax.random.fold_in(key_eval, 10**6 + 1), untrained_params, n_first, rule)

    loss = fitted.history["loss"]
    metrics = {
        "train_steps": cfg.run.num_steps,
        "train_seconds_incl_compile": fitted.seconds,
        "final_loss": float(np.mean(loss[-max(1, len(loss) // 20):])),
        "final_rollout_ess": float(fitted.history["rollout_ess"][-1]),
        "eval_walkers": cfg.run.num_eval_samples,
        "eval_steps": settings.eval_steps,
    }
    exact = target.log_Z
    metrics.update(weight_figures(samples, settings.weight_point, settings.resample_threshold, exact))
    metrics["log_Z_learned"] = float(free_energy_log_Z(leaps.model, state.params, leaps.path))
    if exact is not None:
        metrics["log_Z_learned_abs_err"] = abs(metrics["log_Z_learned"] - exact)
    ess = "ess" if settings.resample_threshold is None else "ess_since_last_resample"
    metrics[f"{ess}_untrained"] = float(untrained.ess)
    metrics["log_w_var_untrained"] = float(jnp.var(untrained.log_w))
    for rule, value in seconds.items():
        metrics[f"sample_seconds_per_1000_walkers_{rule}"] = value
    main = samples[settings.weight_point]
    # the training's health is fit's (LEAPS declares its loss is not judged for progress); the ESS is the headline rule's
    metrics["warnings"] = fitted.warnings + health.training_warnings(  # no loss: fit judged it
        (), ess=float(main.ess), num_samples=cfg.run.num_eval_samples)

    got = obs.lattice_observables(target, main.x, main.log_w)
    with phase("reference observables", cfg.run.progress):
        ref, source = reference_observables(
            target, key_ref, num_chains=settings.reference_chains, num_sweeps=settings.reference_sweeps,
            **cfg.driver_options(run_dir, "reference_checkpoints"),
        )
    metrics.update(obs.observable_errors(target, got, ref))
    metrics.update(smc_metrics(cfg, fitted))

    np.savez(run_dir / "samples.npz", x=np.asarray(main.x).astype(np.int8), log_w=np.asarray(main.log_w))
    plots.trace_plot(
        run_dir / "training.png",
        {"loss": np.log10(np.maximum(loss, 1e-12)), "rollout_ess": fitted.history["rollout_ess"],
         "k": fitted.history["k"]},
        f"{cfg.name}: log10 loss, rollout ESS, curriculum steps",
    )
    plot_order_parameter(run_dir / "magnetization.png", target, got, ref, source, cfg.name)
    if "two_point" in got:
        plot_two_point(run_dir / "two_point.png", got["two_point"], ref["two_point"], source, cfg.name)
    plot_log_weights(run_dir / "log_weights.png", samples, cfg.name)
    return metrics


EXPERIMENTS.register("leaps", "train LEAPS on an Ising/Potts lattice; ESS, log Z and observables vs exact answers")(
    ExperimentKind(check, run_leaps)
)
