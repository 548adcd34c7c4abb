"""The ``gflownet`` experiment kind: train GFlowNets on a DAG environment, one per backward policy, with exact metrics.

Config: ``target`` is a :class:`~jaxsamp.targets.dag_environment.DagEnvironment`
(``hypergrid``, ``bit_sequence``); ``sampler: {name: gflownet, params: ...}`` is
validated into :class:`GFlowNetExperimentSettings`, the
:class:`~jaxsamp.learned.gflownet.GFlowNetSettings` plus ``backward_policies``: a
list of backward policies to train side by side (each overriding
``backward_policy``; empty: just ``backward_policy``). ``run.num_chains`` is the
number of trajectories per iteration (16 in the TLM paper) and ``run.num_steps``
the number of iterations; each policy's run goes through the driver with its own
checkpoint folder (``checkpoints_<policy>``), so ``jaxsamp resume`` continues
whichever was interrupted.

Outputs (Gritsaev et al. 2025, ICLR; metrics as in their code, research/methods.md
§9): per policy ``<policy>_l1``, ``_kl``, ``_logz_abs_err``, ``_modes_found`` at the
last evaluation (over the last ``history_size`` terminal states of training),
``_policy_l1`` and ``_policy_kl`` of the trained forward policy's exact terminal
distribution (no sampling noise; :meth:`~jaxsamp.learned.gflownet.sampling.TrainedGFlowNet.policy_metrics`),
``_train_trajectories_per_s`` (compilation included), and ``learning_curves.png``
(L1 and KL against trajectories, every policy in one plot), ``learning_curves.npz``
(the curves, the exact ``pi`` and each policy's empirical ``pi_hat``).
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import jax
import numpy as np

from jaxsamp.diagnostics import health
from jaxsamp.core import run
from jaxsamp.core.errors import InputError
from jaxsamp.core.registry import EXPERIMENTS, ExperimentKind, build_learned_sampler
from jaxsamp.experiments import plots
from jaxsamp.learned.gflownet.training import (
    BACKWARD_POLICIES,
    GFlowNet,
    GFlowNetSettings,
    learning_curve,
)


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


def check(cfg, target) -> dict:
    """One :class:`GFlowNet` per backward policy, built (and so checked against the target) before any work."""

    def build(settings: GFlowNetExperimentSettings):
        return {p: GFlowNet(target, settings.for_policy(p), cfg.run.num_chains) for p in settings.policies}

    return build_learned_sampler(cfg, "gflownet", {"gflownet": (build, GFlowNetExperimentSettings)})


def curves_plot(path: Path, curves: dict, title: str) -> Path:
    """L1 and KL against trajectories, one line per backward policy (log scale)."""
    plt = plots.pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for policy, curve in curves.items():
        for ax, name in zip(axes, ("l1", "kl")):
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


def run_gflownet(cfg, target, samplers: dict, run_dir: Path) -> dict:
    """Train every backward policy's GFlowNet for ``run.num_steps`` iterations; exact metrics, curves, plot."""
    k_init, k_train = jax.random.split(jax.random.key(cfg.seed))
    metrics, curves, arrays, warnings = {"log_Z": float(target.log_Z)}, {}, {"pi": target.exact_probabilities}, []
    several = len(samplers) > 1
    for policy, sampler in samplers.items():
        folder = f"checkpoints_{policy}" if several else "checkpoints"
        options = {**cfg.driver_options(run_dir, folder), "desc": f"{cfg.name} [{policy}]"}
        start = time.perf_counter()
        trainer = cfg.trainer(sampler)
        state, trace = run(
            trainer.step, trainer.init(k_init), k_train, cfg.run.num_steps, trace=lambda s, m: m, **options
        )
        seconds = time.perf_counter() - start
        trace = {name: np.asarray(values) for name, values in trace.items()}
        curve = learning_curve(trace)
        curves[policy] = curve
        trajectories = cfg.run.num_steps * cfg.run.num_chains
        last = {
            name: float(curve[name][-1]) if len(curve[name]) else float("nan") for name in ("l1", "kl", "logz_abs_err")
        }
        metrics.update(
            {
                f"{policy}_l1": last["l1"],
                f"{policy}_kl": last["kl"],
                f"{policy}_logz_abs_err": last["logz_abs_err"],
                **{f"{policy}_{k}": v for k, v in sampler.policy_metrics(state).items()},
                f"{policy}_log_z": float(trace["log_z"][-1]),
                f"{policy}_modes_found": int(trace["modes_found"][-1]),
                f"{policy}_final_loss": float(trace["loss"][-1]),
                f"{policy}_train_trajectories_per_s": trajectories / seconds,
                f"{policy}_train_seconds_incl_compile": seconds,
            }
        )
        history = state.history
        arrays[f"pi_hat_{policy}"] = np.asarray(history.counts) / max(int(history.size), 1)
        for name, values in curve.items():
            arrays[f"{policy}_{name}"] = values
        updating = np.arange(len(trace["loss"])) >= (sampler.settings.learning_starts + 1 if sampler.dqn else 0)
        warnings += health.training_warnings(trace["loss"], judge_progress=sampler.settings.judge_progress,
                                         steps=updating, label=policy)
        if not len(curve["l1"]):
            warnings.append(
                f"{policy}: no exact evaluation (run.num_steps < eval_every = {sampler.settings.eval_every})"
            )
    metrics.update(
        {"num_modes": target.num_modes, "trajectories": cfg.run.num_steps * cfg.run.num_chains, "warnings": warnings}
    )
    np.savez(run_dir / "learning_curves.npz", **arrays)
    settings = next(iter(samplers.values())).settings
    curves_plot(run_dir / "learning_curves.png", curves, f"{cfg.name}: {settings.loss} on {target.name}")
    return metrics


EXPERIMENTS.register(
    "gflownet", "train GFlowNets (TB, DB, SubTB, soft/Munchausen DQN) per backward policy; exact L1, KL, log Z"
)(ExperimentKind(check, run_gflownet))
