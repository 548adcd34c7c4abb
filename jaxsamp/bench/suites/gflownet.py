"""Suite ``gflownet``: GFlowNet backward policies on the 20^4 hypergrid (TB, DB, SubTB and Munchausen-DQN, each
with four P_B; Gritsaev et al. 2025), at 80 000 trajectories and at the paper's 10^6."""

from __future__ import annotations

import re
import time

import numpy as np

from jaxsamp.bench import cells
from jaxsamp.bench.protocol import Budget, Cell, Comparison, Goal, Protocol

LOSSES = ("tb", "db", "subtb", "munchausen_dqn")
POLICIES = ("uniform", "naive", "maxent", "tlm")
REWARDS = ("standard", "hard")
TRAJECTORIES_PER_ITERATION, EVAL_EVERY = 16, 100
#: budget label -> trajectories per run ("" is the CPU budget of the first protocol, "1000k" the paper's)
BUDGETS = {"": 80_000, "1000k": 1_000_000}
#: what training records while it runs: the final figures and the learning curve it leaves
HISTORY = {"history_figures": ["empirical_l1", "empirical_kl", "modes_found"], "throughput": ["trajectories"],
           "history_curve": ["trajectories", "empirical_l1", "empirical_kl"]}


def grid(reward: str, quick: bool = False) -> dict:
    """The hypergrid of a cell: D = 4, H = 20 (the quick size: 8 x 8)."""
    return {"name": "hypergrid", "dim": 2 if quick else 4, "side": 8 if quick else 20, "reward": reward}


def gflownet_cell(loss: str, policy: str, reward: str, budget: str = "", backward_lr_decay: float | None = None) -> Cell:
    """One loss with one backward policy on one reward, trained on ``BUDGETS[budget]`` trajectories.

    The history of terminal states behind ``empirical_l1`` is a fifth of the budget (the paper's 200 000 of
    10^6); ``backward_lr_decay`` replaces TLM's per-step decay of its backward learning rate (0.999).
    """
    trajectories = BUDGETS[budget]
    settings = {"loss": loss, "backward_policy": policy, "history_size": trajectories // 5, "eval_every": EVAL_EVERY}
    variant = policy
    if backward_lr_decay is not None:
        settings["backward_lr_decay"] = backward_lr_decay
        variant += f"_bdecay{backward_lr_decay:g}"
    name = "-".join(filter(None, (loss, variant, budget))) + f"/hypergrid-{reward}"
    return Cell(name, "fit", grid(reward),
                {"method": "gflownet", "settings": settings, "batch_size": TRAJECTORIES_PER_ITERATION, **HISTORY},
                Budget(updates=trajectories // TRAJECTORIES_PER_ITERATION),
                quick={"target": grid(reward, quick=True), "budget_updates": 60,
                       "settings": {"hidden": [64, 64], "history_size": 320, "eval_every": 20}})


@cells.runner("gflownet_rollout")
def rollout_cell(cell: Cell, seed: int, *, target_evals, evaluation: dict, budget_scale: int = 1,
                 checkpoint=None) -> tuple[dict, dict]:
    """Forward rollouts per second of a fresh policy network (``params["hidden"]``) on the cell's grid.

    ``params["num_trajectories"]`` rollouts (objects only) in one compiled ``lax.scan``, best of 3 timed calls
    after a compiling one; the seed's key initialises the network.
    """
    import jax

    from jaxsamp.learned.gflownet import GFlowNetSettings
    from jaxsamp.learned.gflownet.policy import PolicyModel, sample_objects
    from jaxsamp.learned.gflownet.training import sampling_policy

    env, settings = cells.build_target(cell.target), GFlowNetSettings(hidden=tuple(cell.params["hidden"]))
    model = PolicyModel(env, settings.hidden)
    network, logits_fn = model.init(jax.random.key(seed)), sampling_policy(model, settings)
    n = cell.params["num_trajectories"]
    draw = jax.jit(lambda net, k: sample_objects(env, logits_fn(net), k, n).objects)
    jax.block_until_ready(draw(network, jax.random.key(1)))
    best = np.inf
    for i in range(3):
        start = time.perf_counter()
        jax.block_until_ready(draw(network, jax.random.key(2 + i)))
        best = min(best, time.perf_counter() - start)
    return {"rollout_trajectories_per_s": n / best}, {}


CELLS = (
    *(gflownet_cell(loss, policy, reward) for reward in REWARDS for loss in LOSSES for policy in POLICIES),
    *(gflownet_cell(loss, policy, reward, "1000k") for reward in REWARDS for loss in ("db", "subtb")
      for policy in ("naive", "tlm")),
    *(gflownet_cell(loss, "tlm", reward, "1000k", backward_lr_decay=1.0) for reward in REWARDS
      for loss in ("db", "subtb")),
    Cell("rollout/hypergrid-standard", "gflownet_rollout", grid("standard"),
         {"hidden": [256, 256], "num_trajectories": 4096},
         quick={"target": grid("standard", quick=True), "num_trajectories": 64}),
)

PROTOCOL = Protocol(
    suite="gflownet",
    summary="GFlowNets on the 20^4 hypergrid: TB, DB, SubTB and Munchausen-DQN with the uniform, naive, max-entropy "
            "and TLM backward policies, at 80 000 and 10^6 trajectories",
    cells=CELLS,
    seeds=(0, 1, 2),
    headline="policy_l1",
    figures=("empirical_l1", "policy_kl", "empirical_kl", "log_Z_learned_abs_err", "modes_found", "log_Z_abs_err",
             "ess", "train_trajectories_per_s", "rollout_trajectories_per_s"),
    evaluation={"num_samples": 10_000},
    quick_evaluation={"num_samples": 128},
    goals=(Goal("rollout/hypergrid-standard", "rollout_trajectories_per_s", 3000.0, better="above",
                source="docs/status.md's GFlowNet row: forward rollouts at least 3000 trajectories per second on 2 CPU "
                       "cores"),),
    comparisons=(
        *(Comparison(f"{loss}-tlm/hypergrid-{reward}", f"{loss}-{other}/hypergrid-{reward}", "policy_l1")
          for reward in REWARDS for loss in LOSSES for other in POLICIES if other != "tlm"),
        *(Comparison(f"{loss}-{tlm}-1000k/hypergrid-{reward}", f"{loss}-naive-1000k/hypergrid-{reward}", "policy_l1")
          for reward in REWARDS for loss in ("db", "subtb") for tlm in ("tlm", "tlm_bdecay1")),
    ),
    notes="""\
Gritsaev et al. (2025), "Optimizing backward policies in GFlowNets via trajectory likelihood maximization"
(ICLR), their hypergrid experiment on a CPU budget.

Environment: ``hypergrid`` D = 4, H = 20 (160 000 objects, trajectories up to 77 steps), the ``standard``
(R0, R1, R2) = (1e-3, 0.5, 2) and ``hard`` (1e-4, 1, 3) rewards. Methods (``jaxsamp.fit("gflownet", ...)``):
losses ``tb``, ``db``, ``subtb`` (lambda 0.9) and ``munchausen_dqn`` (alpha 0.15, l0 = -100, prioritised buffer
10^5, batch 256, Huber loss, target rate 0.25, updates from iteration 17), each with backward policies ``uniform``,
``naive``, ``maxent`` and ``tlm`` (backward Adam 1e-3 decaying x0.999 per step, Polyak target rate 0.25, backward
step first): 16 combinations per reward. The paper's settings otherwise (``GFlowNetSettings`` defaults): a 2 x 256
ReLU trunk shared by P_F, P_B (starting uniform) and log F; Adam 1e-3, log Z 0.1; 16 trajectories per iteration.

Budget: 5000 iterations = 80 000 trajectories per run (the paper: 10^6), fixed from a measurement of 12-34 ms
per iteration on a loaded 2-core CPU: the 96 runs fit about 3 hours of a quiet 2-core CPU.

Figures: ``empirical_l1`` (the paper's ``l1``, mean over the 160 000 objects of ``|pi_hat - pi|``) and
``empirical_kl`` (``KL(pi || pi_hat + 1e-9)``) with ``pi_hat`` the empirical distribution of the last 16 000
terminal states of training (the paper's fraction of its budget, 200 000 of 10^6; at this size both are dominated
by the sampling noise of ``pi_hat``); free of that noise, the headline ``policy_l1`` / ``policy_kl`` of the
trained forward policy's exact terminal distribution (pushed through the DAG; ``Fitted.evaluate``'s);
``log_Z_learned_abs_err`` (learned log Z for TB, log F(s_0) for DB and SubTB, V(s_0) for soft DQN);
``modes_found`` (of 16); ``train_trajectories_per_s``, compilation left out. ``Fitted.evaluate`` also scores
10 000 weighted draws (``log_Z_abs_err``, ``ess``, ...; the script this suite replaces kept only the exact
policy figures). The learning curve (``empirical_l1`` / ``empirical_kl`` every 100 iterations against
trajectories) is kept in each seed's record (``curves``) and drawn, per reward and budget, in
``gflownet_curves_<reward>[_1000k].png`` (one column per loss, a line per backward policy, mean over the
recorded seeds with their range shaded), redrawn after every seed from the results file.

Sampling throughput (``rollout/hypergrid-standard``): 4096 forward rollouts of a fresh 2 x 256 policy on the 20^4
grid in one ``lax.scan`` of 77 steps (objects only), best of 3 timed calls after a compiling one; a timing, to run
alone on the machine. The script timed one network (key 0); the suite times one per seed.

The comparisons: TLM against each other P_B at 80 000 trajectories for every loss (the paper's claim; a public
review says TLM does not beat naive with TB).

At the paper's budget (issue 44; fixed 2026-12-05, before any run): ``-1000k`` cells, 62 500 iterations of 16
trajectories, the history of terminal states behind ``empirical_l1`` the paper's fifth of the budget (200 000),
losses ``db`` and ``subtb``, backward policies ``naive`` and ``tlm``, both rewards: about 12 (naive) and 21 (TLM)
minutes a run. Headline: TLM against naive, whichever way it goes (at 80 000 trajectories naive led; TLM's backward
learning rate decays x0.999 per step, so its P_B is nearly frozen after about 3000 iterations, while the naive P_B
keeps adapting).

TLM with a constant backward rate (fixed 2026-12-06, after the 10^6 comparison and before any run of it): does
the decay explain why TLM trails naive? ``tlm_bdecay1-1000k`` cells (backward Adam at 1e-3 throughout), losses
``db`` and ``subtb``, both rewards, against the naive and decaying-TLM runs of the same seeds. A variant of the
paper's method, not its settings: it can explain the comparison above, not replace it.

Each run trains through ``jaxsamp.fit("gflownet", ...)`` with the seed's key, as the script this suite replaces did
since 42b63d1 (results recorded before that change used another random-number stream; same protocol): the suite's
runs are the script's, bit for bit, apart from the weighted draws of the evaluation.
""",
)


def after_seed(cell: str, seed: int, figures: dict, artifacts: dict, *, results_dir, quick: bool) -> None:
    """Redraw the learning curves of the cell's reward and budget from the results file (every seed recorded)."""
    if "curves" not in artifacts:
        return
    from jaxsamp.bench import store

    data = store.read(store.results_path(PROTOCOL.suite, quick, results_dir))
    reward, budget = _parse(cell)[2:]
    plot_curves(data["records"], reward, budget, results_dir / f"gflownet_curves_{reward}"
                f"{'_' + budget if budget else ''}{'_quick' if quick else ''}.png", quick)


def _parse(cell: str) -> tuple[str, str, str, str]:
    """``(loss, variant, reward, budget)`` of a training cell's name."""
    method, target = cell.split(" x")[0].split("/")
    loss, variant, *budget = method.split("-")
    return loss, variant, target.split("-")[1], "".join(budget)


def plot_curves(records: dict, reward: str, budget: str, path, quick: bool = False) -> None:
    """L1 and KL against trajectories: one column per loss, one line per backward policy (mean over the recorded
    seeds, shaded between the lowest and the highest)."""
    from jaxsamp.experiments.plots import pyplot, save_figure

    runs: dict[tuple[str, str], list] = {}
    for cell, seeds in records.items():
        if re.fullmatch(r"[^/]+/hypergrid-\w+", cell) and not cell.startswith("rollout"):
            loss, variant, cell_reward, cell_budget = _parse(cell)
            if (cell_reward, cell_budget) == (reward, budget):
                runs[(loss, variant)] = [r["curves"] for r in seeds.values() if "curves" in r]
    losses = [loss for loss in LOSSES if any(runs.get((loss, v)) for _, v in runs)]
    variants = sorted({v for _, v in runs}, key=lambda v: (POLICIES.index(v.split("_")[0]), v))
    plt = pyplot()
    fig, axes = plt.subplots(2, len(losses), figsize=(4 * len(losses) + 1, 6.5), squeeze=False)
    for col, loss in enumerate(losses):
        for variant in variants:
            curves = runs.get((loss, variant))
            if not curves:
                continue
            length = min(len(c["empirical_l1"]) for c in curves)
            x = np.asarray(curves[0]["trajectories"][:length])
            for row, name in enumerate(("empirical_l1", "empirical_kl")):
                y = np.asarray([c[name][:length] for c in curves])
                line, = axes[row, col].plot(x, y.mean(axis=0),
                                            label=f"{variant} ({len(curves)} seed{'s' * (len(curves) > 1)})")
                if len(curves) > 1:
                    axes[row, col].fill_between(x, y.min(axis=0), y.max(axis=0), color=line.get_color(), alpha=0.2)
        axes[0, col].set_title(loss)
        for row, label in enumerate(("L1 (last-N empirical)", "KL(pi || pi_hat)")):
            axes[row, col].set(yscale="log", ylabel=label)
            axes[row, col].grid(alpha=0.3)
        axes[1, col].set_xlabel("trajectories")
        axes[0, col].legend(fontsize=7)
    fig.suptitle(f"hypergrid {'8x8 (quick)' if quick else '20^4'}, {reward} reward"
                 f"{f', {BUDGETS[budget]:,} trajectories' if budget else ''}")
    save_figure(fig, path, dpi=100)


LEGACY_FILE = "bench_gflownet.json"
#: the script's figure names -> the glossary's
_LEGACY_FIGURES = {"l1": "empirical_l1", "kl": "empirical_kl", "logz_abs_err": "log_Z_learned_abs_err"}
_LEGACY_RUN = re.compile(rf"({'|'.join(LOSSES)})_((?:{'|'.join(POLICIES)})(?:_bdecay[\d.]+)?)_({'|'.join(REWARDS)})"
                         r"(?:_(1000k))?_(\w+)")


def legacy_key(name: str):
    """``(cell, figure, 1)`` of a per-seed key of ``bench_gflownet.json``: ``{loss}_{pb}[_bdecay1]_{reward}[_1000k]
    _{figure}`` (its ``_seed<k>`` cut off; a learning curve's figure is ``curve``)."""
    match = _LEGACY_RUN.fullmatch(name)
    if match is None:
        return None
    loss, variant, reward, budget, figure = match.groups()
    cell = "-".join(filter(None, (loss, variant, budget))) + f"/hypergrid-{reward}"
    return cell, _LEGACY_FIGURES.get(figure, figure), 1
