"""GFlowNet backward policies on the 20^4 hypergrid: TB, DB, SubTB and Munchausen-DQN, each with four P_B.

Gritsaev et al. (2025), "Optimizing backward policies in GFlowNets via trajectory
likelihood maximization" (ICLR), their hypergrid experiment on a CPU budget.

Protocol (fixed before the first run):

* **Environment**: ``hypergrid`` D = 4, H = 20 (160 000 objects, trajectories up to 77 steps), the
  ``standard`` (R0, R1, R2) = (1e-3, 0.5, 2) and ``hard`` (1e-4, 1, 3) rewards.
* **Methods**: losses ``tb``, ``db``, ``subtb`` (lambda 0.9) and ``munchausen_dqn`` (alpha 0.15,
  l0 = -100, prioritised buffer 10^5, batch 256, Huber loss, target rate 0.25, updates from iteration 17),
  each with backward policies ``uniform``, ``naive``, ``maxent`` and ``tlm`` (backward Adam 1e-3 decaying
  x0.999 per step, Polyak target rate 0.25, backward step first): 16 combinations per reward. The paper's
  settings otherwise (:class:`jaxsamp.learned.gflownet.GFlowNetSettings` defaults): 2 x 256 ReLU trunk
  shared by P_F, P_B (starting uniform) and log F; Adam 1e-3, log Z 0.1; 16 trajectories per iteration.
* **Budget**: 5000 iterations = **80 000 trajectories** per run (the paper: 10^6). Fixed from a
  measurement of CPU time per iteration on this 2-core machine under load (12-34 ms per iteration
  depending on the combination; 0.30 s for one iteration of all 16): 2 rewards x 16 x 3 seeds x 5000
  iterations is about 2.5 h of CPU, plus about 10 s of compilation and 3 s of exact evaluation per run,
  so the whole benchmark fits about 3 hours of a quiet 2-core CPU (wall time is at most the CPU time,
  the XLA runtime using up to both cores).
* **Metrics** (every 100 iterations for the learning curves, final values recorded): the paper's
  ``l1`` (mean over the 160 000 objects of ``|pi_hat - pi|``) and ``kl`` (``KL(pi || pi_hat + 1e-9)``)
  with ``pi_hat`` the empirical distribution of the last **16 000** terminal states of training (the
  paper's fraction of its budget, 200 000 of 10^6; at this size both are dominated by the sampling noise
  of ``pi_hat``; the training history's ``empirical_l1`` / ``empirical_kl``), and, free of that noise,
  ``policy_l1`` / ``policy_kl`` of the trained forward policy's exact terminal distribution (pushed through
  the DAG; ``fitted.evaluate``'s); ``logz_abs_err`` (``|log Z - log Z_hat|``, learned log Z for TB,
  log F(s_0) for DB and SubTB; not for DQN; the history's ``log_Z_learned_abs_err``); ``modes_found``
  (of 16); ``train_trajectories_per_s`` over the training run, its compilation left out
  (``fitted.seconds - fitted.compile_seconds``).
  **Headline**: ``{loss}_{pb}_{reward}_policy_l1`` and ``_l1``; the issue's goal compares TLM's L1 with every
  other P_B's at the final budget for DB, SubTB and Munchausen-DQN, and reports TB (where a public review
  says TLM does not beat naive).
* **Sampling throughput**: ``rollout_trajectories_per_s``: 4096 forward rollouts of a fresh 2 x 256
  policy on the 20^4 grid in one ``lax.scan`` of 77 steps (objects only), best of 3 timed calls after a
  compiling one.
* **Seeds 0, 1, 2**: each figure is recorded per seed (``..._seed{k}``) as soon as its run ends (the JSON
  merges); ``{figure}`` and ``{figure}_sd`` are the mean and sd over the seeds recorded so far. The learning
  curves (``{run}_curve_seed{k}``) go into the JSON and into ``bench_gflownet_curves_{reward}.png``: L1
  and KL against trajectories, one panel per loss run, every backward policy in each panel (mean over seeds,
  their range shaded). ``--plot-only`` draws them again from the JSON, e.g. after runs made in parts.

Protocol at the paper's budget (issue 44; fixed 2026-12-05, before any run): ``--trajectories 1000000``, i.e.
62 500 iterations of 16 trajectories per run, everything else as above except the history of terminal states
for ``l1``, which stays the paper's fifth of the budget (**200 000**, the paper's own figure). Runs: losses
``db`` and ``subtb``, backward policies ``naive`` and ``tlm``, both rewards, seeds 0, 1, 2 in that order
(seed-major, so that each seed completes a full comparison): 24 runs, about 6.5 h of a quiet CPU (naive about
12, TLM about 21 minutes a run at the recorded rates), spread over sessions with each run recorded as it ends.
Figures are named ``{loss}_{pb}_{reward}_1000k_{figure}`` beside the 80 000-trajectory ones. **Headline**:
``{loss}_{pb}_{reward}_1000k_policy_l1``, TLM against naive for DB and SubTB, mean ± sd over the seeds
recorded, whichever way it goes (at 80 000 trajectories naive led; TLM's backward learning rate decays
x0.999 per step, so its P_B is nearly frozen after about 3000 iterations, while the naive P_B keeps adapting).

Protocol for TLM with a constant backward rate (fixed 2026-12-06, after the 10^6 comparison above and before any run
of it): does the decay explain why TLM trails naive? ``--trajectories 1000000 --policies tlm --backward-lr-decay 1``
(backward Adam at 1e-3 throughout; everything else as above), losses ``db`` and ``subtb``, both rewards, seeds 0, 1, 2
seed-major: 12 runs, figures ``{loss}_tlm_bdecay1_{reward}_1000k_...``. **Headline**: their ``policy_l1`` beside the
recorded naive and decaying-TLM runs of the same seeds, mean ± sd, whichever way it goes. A variant of the paper's
method, not its settings: it can explain the comparison above, not replace it.

Each run trains through ``jaxsamp.fit("gflownet", ...)`` with ``key=seed``, which splits the seed's key into the
initialisation and training keys its own way: results recorded before this change (initialisation at
``fold_in(key, 0)``, training at ``fold_in(key, 1)``, throughput timed after a separate compiling warm-up run) used
another random-number stream; same protocol.

Usage: python scripts/bench_gflownet.py [--quick] [--rewards standard hard] [--losses ...] [--policies ...]
       [--seeds 0 1 2] [--trajectories N] [--backward-lr-decay D] [--skip-rollout | --rollout-only | --plot-only]
"""

from __future__ import annotations

import argparse
import json
import re
import time

import benchmark_io
import jax
import numpy as np

import jaxsamp
from jaxsamp.learned.gflownet import GFlowNetSettings, learning_curve
from jaxsamp.learned.gflownet.policy import PolicyModel, sample_objects
from jaxsamp.learned.gflownet.training import sampling_policy
from jaxsamp.targets.hypergrid import Hypergrid

SCRIPT = "bench_gflownet"
LOSSES = ("tb", "db", "subtb", "munchausen_dqn")
POLICIES = ("uniform", "naive", "maxent", "tlm")
REWARDS = ("standard", "hard")
FULL = {"dim": 4, "side": 20, "iterations": 5000, "history": 16_000, "hidden": (256, 256), "rollouts": 4096}
QUICK = {"dim": 2, "side": 8, "iterations": 60, "history": 320, "hidden": (64, 64), "rollouts": 64}
QUICK_RUNS = (("tb", "tlm"),)  # the rest of the code paths are exercised by tests/learned/gflownet/test_gflownet.py
TRAJECTORIES_PER_ITERATION, EVAL_EVERY = 16, 100
#: Weighted draws of the final ``evaluate``; only its exact ``policy_l1`` / ``policy_kl`` (no draws in them) are kept
EVALUATE_DRAWS = 16
#: The default budget in trajectories (``FULL["iterations"]`` iterations); another budget's figures get a suffix.
DEFAULT_TRAJECTORIES = FULL["iterations"] * TRAJECTORIES_PER_ITERATION


def budget_size(trajectories: int) -> dict:
    """The full-size settings at a budget of ``trajectories``: its iterations and a history of a fifth of it."""
    if trajectories % TRAJECTORIES_PER_ITERATION:
        raise SystemExit(f"--trajectories must be a multiple of {TRAJECTORIES_PER_ITERATION}, got {trajectories}")
    return {**FULL, "iterations": trajectories // TRAJECTORIES_PER_ITERATION, "history": trajectories // 5}


def budget_suffix(trajectories: int) -> str:
    """``""`` for the default budget, else ``"_{k}k"`` (thousands of trajectories) for the figures' names."""
    return "" if trajectories == DEFAULT_TRAJECTORIES else f"_{trajectories // 1000}k"


def train(loss: str, policy: str, reward: str, seed: int, quick: bool,
          trajectories: int = DEFAULT_TRAJECTORIES, backward_lr_decay: float | None = None) -> tuple[dict, dict]:
    """One run of ``trajectories`` trajectories (the quick size ignores it) through :func:`jaxsamp.fit`; its final
    figures and learning curve (the history's evaluated rows, :func:`~jaxsamp.learned.gflownet.learning_curve`).

    ``backward_lr_decay`` replaces TLM's per-step decay of its backward learning rate (the settings' 0.999).
    """
    size = QUICK if quick else budget_size(trajectories)
    env = Hypergrid(size["dim"], size["side"], reward)
    eval_every = 20 if quick else EVAL_EVERY
    decay = {} if backward_lr_decay is None else {"backward_lr_decay": backward_lr_decay}
    settings = GFlowNetSettings(
        loss=loss, backward_policy=policy, hidden=size["hidden"], history_size=size["history"], eval_every=eval_every,
        **decay,
    )
    fitted = jaxsamp.fit("gflownet", env, num_steps=size["iterations"], key=seed, settings=settings,
                         batch_size=TRAJECTORIES_PER_ITERATION, progress=False)
    curve = learning_curve(fitted.history)
    exact = fitted.evaluate(jax.random.fold_in(jax.random.key(seed), 2), EVALUATE_DRAWS)
    figures = {
        "l1": float(curve["empirical_l1"][-1]),
        "kl": float(curve["empirical_kl"][-1]),
        "policy_l1": exact["policy_l1"],
        "policy_kl": exact["policy_kl"],
        "modes_found": int(fitted.history["modes_found"][-1]),
        "train_trajectories_per_s": size["iterations"] * TRAJECTORIES_PER_ITERATION
        / (fitted.seconds - fitted.compile_seconds),
    }
    if loss != "munchausen_dqn":
        figures["logz_abs_err"] = float(curve["log_Z_learned_abs_err"][-1])
    curve = {name: [float(v) for v in curve[history_name]] for name, history_name in
             (("trajectories", "trajectories"), ("l1", "empirical_l1"), ("kl", "empirical_kl"))}
    return figures, curve


def rollout_throughput(quick: bool) -> float:
    """Forward rollouts per second of a fresh 2 x 256 policy on the 20^4 grid (objects only), best of 3."""
    env, settings = Hypergrid(4, 20), GFlowNetSettings()
    model = PolicyModel(env, settings.hidden)
    network, logits_fn = model.init(jax.random.key(0)), sampling_policy(model, settings)
    n = QUICK["rollouts"] if quick else FULL["rollouts"]
    draw = jax.jit(lambda net, k: sample_objects(env, logits_fn(net), k, n).objects)
    jax.block_until_ready(draw(network, jax.random.key(1)))
    best = np.inf
    for i in range(3):
        start = time.perf_counter()
        jax.block_until_ready(draw(network, jax.random.key(2 + i)))
        best = min(best, time.perf_counter() - start)
    return n / best


def plot_curves(results: dict, reward: str, quick: bool, suffix: str = "") -> None:
    """L1 and KL against trajectories: one column per loss run at this budget, one line per backward policy (mean
    over seeds, shaded between the lowest and highest seed).

    ``suffix`` is the budget's (:func:`budget_suffix`): its runs get a figure of their own.
    """
    from jaxsamp.experiments.plots import pyplot, save_figure

    # every recorded curve at this budget, by loss and backward policy or variant (e.g. ``tlm_bdecay1``)
    pattern = re.compile(rf"({'|'.join(LOSSES)})_((?:{'|'.join(POLICIES)})[\w.]*?)_{reward}{suffix}_curve_seed\d+")
    runs: dict[tuple[str, str], list] = {}
    for key, curve in results.items():
        if m := pattern.fullmatch(key):
            runs.setdefault(m.groups(), []).append(curve)
    labels = sorted({label for _, label in runs}, key=lambda label: (POLICIES.index(label.split("_")[0]), label))
    losses = [loss for loss in LOSSES if any(loss == run_loss for run_loss, _ in runs)]
    if not losses:
        print(f"  (no {reward}-reward learning curves recorded at this budget: no plot)", flush=True)
        return
    plt = pyplot()
    fig, axes = plt.subplots(2, len(losses), figsize=(4 * len(losses) + 1, 6.5), squeeze=False)
    for col, loss in enumerate(losses):
        for policy in labels:
            curves = runs.get((loss, policy))
            if not curves:
                continue
            length = min(len(c["l1"]) for c in curves)
            x = np.asarray(curves[0]["trajectories"][:length])
            for row, name in enumerate(("l1", "kl")):
                y = np.asarray([c[name][:length] for c in curves])
                line, = axes[row, col].plot(x, y.mean(axis=0), label=f"{policy} ({len(curves)} seed{'s' * (len(curves) > 1)})")
                if len(curves) > 1:
                    axes[row, col].fill_between(x, y.min(axis=0), y.max(axis=0), color=line.get_color(), alpha=0.2)
        axes[0, col].set_title(loss)
        for row, name in enumerate(("L1 (last-N empirical)", "KL(pi || pi_hat)")):
            axes[row, col].set_yscale("log")
            axes[row, col].set_ylabel(name)
            axes[row, col].grid(alpha=0.3)
        axes[1, col].set_xlabel("trajectories")
        axes[0, col].legend(fontsize=7)
    fig.suptitle(f"hypergrid {'8x8 (quick)' if quick else '20^4'}, {reward} reward")
    path = benchmark_io.RESULTS_DIR / f"{SCRIPT}_curves_{reward}{suffix}{'_quick' if quick else ''}.png"
    save_figure(fig, path, dpi=100)
    print(f"  -> {path}", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="CI-sized run on an 8x8 grid (numbers not meaningful)")
    parser.add_argument("--rewards", nargs="+", choices=REWARDS, default=list(REWARDS))
    parser.add_argument("--losses", nargs="+", choices=LOSSES, default=list(LOSSES))
    parser.add_argument("--policies", nargs="+", choices=POLICIES, default=list(POLICIES))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--trajectories", type=int, default=DEFAULT_TRAJECTORIES,
                        help="training budget per run (default 80 000; another budget's figures are named "
                             "{loss}_{pb}_{reward}_{k}k_..., e.g. _1000k for the paper's 10^6)")
    parser.add_argument("--skip-rollout", action="store_true", help="do not measure rollout_trajectories_per_s")
    parser.add_argument("--rollout-only", action="store_true",
                        help="only measure rollout_trajectories_per_s (a timing: run it alone on the machine)")
    parser.add_argument("--backward-lr-decay", type=float, default=None, metavar="D",
                        help="TLM only: decay its backward learning rate by D per step instead of 0.999 (1: "
                             "constant); the figures are named {loss}_tlm_bdecay{D}_{reward}...")
    parser.add_argument("--plot-only", action="store_true",
                        help="train nothing: draw the learning curves of --rewards at --trajectories from the "
                             "results file (e.g. after runs made in parts)")
    args = parser.parse_args(argv)
    if args.skip_rollout and args.rollout_only:
        parser.error("--skip-rollout and --rollout-only exclude each other")
    if args.plot_only and args.rollout_only:
        parser.error("--plot-only and --rollout-only exclude each other")
    if args.backward_lr_decay is not None and (args.policies != ["tlm"] or not 0 < args.backward_lr_decay <= 1):
        parser.error("--backward-lr-decay D needs --policies tlm and 0 < D <= 1")
    variant = "" if args.backward_lr_decay is None else f"_bdecay{args.backward_lr_decay:g}"
    suffix = "" if args.quick else budget_suffix(args.trajectories)
    rewards = args.rewards[:1] if args.quick else args.rewards
    if args.plot_only:
        for reward in rewards:
            plot_curves(benchmark_io.read_results(SCRIPT, args.quick), reward, args.quick, suffix)
        return
    results: dict = {}

    def save():
        path = benchmark_io.write_results(SCRIPT, results, quick=args.quick, merge=True)
        print(f"  -> {path}", flush=True)

    if not args.skip_rollout:
        results["rollout_trajectories_per_s"] = rollout_throughput(args.quick)
        print(f"rollout_trajectories_per_s: {results['rollout_trajectories_per_s']:.0f}", flush=True)
        save()
    if args.rollout_only:
        return
    seeds = args.seeds[:1] if args.quick else args.seeds
    runs = QUICK_RUNS if args.quick else [(loss, policy) for loss in args.losses for policy in args.policies]
    for seed in seeds:
        for reward in rewards:
            for loss, policy in runs:
                name = f"{loss}_{policy}{variant}_{reward}{suffix}"
                figures, curve = train(loss, policy, reward, seed, args.quick, args.trajectories,
                                       args.backward_lr_decay)
                for fig, value in figures.items():
                    benchmark_io.record_seed(results, SCRIPT, f"{name}_{fig}", seed, value, args.quick)
                results[f"{name}_curve_seed{seed}"] = curve
                print(f"seed {seed} {name}: " + json.dumps(figures), flush=True)
                save()
    merged = benchmark_io.read_results(SCRIPT, args.quick)
    for reward in rewards:
        plot_curves(merged, reward, args.quick, suffix)


if __name__ == "__main__":
    main()
