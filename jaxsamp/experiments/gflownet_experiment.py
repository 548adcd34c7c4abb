"""The ``gflownet`` experiment kind: train GFlowNets on a DAG environment, one per backward policy, with exact metrics.

Config: ``target`` is a :class:`~jaxsamp.targets.dag_environment.DagEnvironment`
(``hypergrid``, ``bit_sequence``); ``sampler: {name: gflownet, params: ...}`` is
validated into :class:`GFlowNetExperimentSettings`, the
:class:`~jaxsamp.learned.gflownet.GFlowNetSettings` plus ``backward_policies``: a
list of backward policies to train side by side (each overriding
``backward_policy``; empty: just ``backward_policy``). ``run.num_chains`` is the
number of trajectories per iteration (16 in the TLM paper) and ``run.num_steps``
the number of iterations; each policy is trained by :func:`jaxsamp.fit` with its own
checkpoint folder (``checkpoints_<policy>``), so ``jaxsamp resume`` continues
whichever was interrupted, then evaluated on ``run.num_eval_samples`` weighted draws.

Outputs (Gritsaev et al. 2025, ICLR; metrics as in their code, research/methods.md
§9): per policy the figures of the trained sampler's ``evaluate``
(:meth:`~jaxsamp.learned.gflownet.GFlowNet.evaluate`: ``_log_Z_hat``, ``_ess``,
``_elbo`` and their errors, ``_log_Z_learned`` and its error, and ``_policy_l1``,
``_policy_kl`` of the trained forward policy's exact terminal distribution, with no
sampling noise), the paper's ``_empirical_l1`` and ``_empirical_kl`` of the empirical
distribution of the last ``history_size`` terminal states of training at the last evaluation,
``_modes_found``, ``_train_trajectories_per_s`` (compilation included), and
``learning_curves.png`` (L1 and KL against trajectories, every policy in one plot),
``learning_curves.npz`` (the curves, the exact ``pi`` and each policy's empirical ``pi_hat``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax
import numpy as np

from jaxsamp.core.errors import InputError
from jaxsamp.core.registry import EXPERIMENTS, ExperimentKind, build_learned_sampler
from jaxsamp.experiments.fitting import fit_method
from jaxsamp.experiments import plots
from jaxsamp.learned.gflownet.training import BACKWARD_POLICIES, GFlowNetSettings, build, learning_curve


@dataclasses.dataclass(frozen=True)
class GFlowNetExperimentSettings(GFlowNetSettings):
    """:class:`GFlowNetSettings` plus ``backward_policies``: the policies trained side by side (empty: ``backward_policy``)."""

    backward_policies: tuple = ()

    def __post_init__(self):
        super().__post_init__()
        bad = [p for p in self.backward_policies if p not in BACKWARD_POLICIES]
        if bad or len(set(self.backward_policies)) != len(self.backward_policies):
            raise InputError(
                f"backward_policies must be distinct names from {BACKWARD_POLICIES}, got {list(self.backward_policies)}"
            )
        object.__setattr__(self, "backward_policies", tuple(self.backward_policies))

    @property
    def policies(self) -> tuple:
        return self.backward_policies or (self.backward_policy,)

    def for_policy(self, policy: str) -> GFlowNetSettings:
        """The plain settings of one policy's run."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(GFlowNetSettings)}
        return GFlowNetSettings(**{**fields, "backward_policy": policy})


def check(cfg, target) -> GFlowNetExperimentSettings:
    """The settings, each backward policy's GFlowNet built once (and so checked against the target) before any work."""

    def checked(settings: GFlowNetExperimentSettings) -> GFlowNetExperimentSettings:
        for policy in settings.policies:
            build(target, settings.for_policy(policy), batch_size=cfg.run.num_chains)
        return settings

    return build_learned_sampler(cfg, "gflownet", {"gflownet": (checked, GFlowNetExperimentSettings)})


def curves_plot(path: Path, curves: dict, title: str) -> Path:
    """L1 and KL against trajectories, one line per backward policy (log scale)."""
    plt = plots.pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for policy, curve in curves.items():
        for ax, name in zip(axes, ("empirical_l1", "empirical_kl")):
            ax.plot(curve["trajectories"], curve[name], label=policy)
    for ax, name in zip(axes, ("L1 = mean |pi_hat - pi|", "KL(pi || pi_hat)")):
        ax.set_yscale("log")
        ax.set_xlabel("trajectories")
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
    axes[0].legend(title="backward policy", fontsize=8)
    fig.suptitle(title)
    plots.save_figure(fig, path)
    return path


def run_gflownet(cfg, target, settings: GFlowNetExperimentSettings, run_dir: Path) -> dict:
    """Fit every backward policy's GFlowNet for ``run.num_steps`` iterations; its figures, curves, one plot."""
    key = jax.random.key(cfg.seed)
    metrics, curves, arrays, found = {"log_Z_exact": float(target.log_Z)}, {}, {"pi": target.exact_probabilities}, []
    trajectories = cfg.run.num_steps * cfg.run.num_chains
    for policy in settings.policies:
        folder = f"checkpoints_{policy}" if len(settings.policies) > 1 else "checkpoints"
        fitted = fit_method(cfg, target, settings.for_policy(policy), run_dir, key, method="gflownet", folder=folder)
        figures = fitted.evaluate(jax.random.fold_in(key, 1), cfg.run.num_eval_samples)
        curve = curves[policy] = learning_curve(fitted.history)
        last = {name: float(curve[name][-1]) if len(curve[name]) else float("nan")
                for name in ("empirical_l1", "empirical_kl")}
        metrics.update(
            {
                **{f"{policy}_{name}": value for name, value in figures.items() if name != "log_Z_exact"},
                f"{policy}_empirical_l1": last["empirical_l1"],
                f"{policy}_empirical_kl": last["empirical_kl"],
                f"{policy}_modes_found": int(fitted.history["modes_found"][-1]),
                f"{policy}_final_loss": float(fitted.history["loss"][-1]),
                f"{policy}_train_trajectories_per_s": trajectories / fitted.seconds,
                f"{policy}_train_seconds_incl_compile": fitted.seconds,
            }
        )
        history = fitted.state.history
        arrays[f"pi_hat_{policy}"] = np.asarray(history.counts) / max(int(history.size), 1)
        for name, values in curve.items():
            arrays[f"{policy}_{name}"] = values
        found += [f"{policy}: {w}" for w in fitted.warnings]
        if not len(curve["empirical_l1"]):
            found.append(f"{policy}: no exact evaluation (run.num_steps < eval_every = {settings.eval_every})")
    metrics.update({"num_modes": target.num_modes, "trajectories": trajectories, "warnings": found})
    np.savez(run_dir / "learning_curves.npz", **arrays)
    curves_plot(run_dir / "learning_curves.png", curves, f"{cfg.name}: {settings.loss} on {target.name}")
    return metrics


EXPERIMENTS.register(
    "gflownet", "train GFlowNets (TB, DB, SubTB, soft/Munchausen DQN) per backward policy; exact L1, KL, log Z"
)(ExperimentKind(check, run_gflownet))
