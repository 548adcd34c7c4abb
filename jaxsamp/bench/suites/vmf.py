"""Suite ``vmf``: von Mises-Fisher sampling speed against TFP and scipy, the log normaliser's accuracy, vMF exploration
through the inverted-file index against exact Boltzmann selection at 10^6 actions, and the paper's d = 4 simulation."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from jaxsamp.bench import cells
from jaxsamp.bench.protocol import Cell, Goal, Protocol
from jaxsamp.core.errors import InputError

CONFIGS = Path(__file__).resolve().parents[3] / "configs"
DIMS, KAPPAS = (3, 64, 256), (1, 100)
GRID_DIMS = (2, 3, 4, 10, 64, 256, 1024)
GRID_KAPPAS = (0.0, 1e-8, 1e-3, 0.1, 1.0, 10.0, 100.0, 1e3, 1e4, 1e5)
NPROBE_CANDIDATES = (8, 16, 32, 64, 128, 192, 256, 384, 512, 640, 768, 896, 1024)
IMPLEMENTATIONS = ("jaxsamp", "tfp", "scipy")


def stream_key(seed: int, stream: int):
    """The key of random stream ``stream`` (< 10) at ``seed``: ``key(stream + 10 seed)``, so that seed 0 draws the
    script's keys (``key(stream)``) and each seed its own actions, queries, index and draws."""
    import jax

    return jax.random.key(stream + 10 * seed)


def best_rate(fn, n: int, repeats: int = 3) -> float:
    """Draws per second: ``n`` over the best of ``repeats`` timed calls after a warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return n / min(times)


@cells.runner("vmf_sampling")
def sampling_cell(cell: Cell, seed: int, *, target_evals, evaluation: dict, budget_scale: int = 1,
                  checkpoint=None) -> tuple[dict, dict]:
    """vMF draws per second at the cell's ``dim`` and ``kappa``: ours (:func:`jaxsamp.targets.sphere.sample_vmf`,
    jitted), TFP's JAX-substrate ``VonMisesFisher`` (jitted) and ``scipy.stats.vonmises_fisher``, ``num_draws`` per
    call, the best of 3 timed calls after a compiling one; ``vmf_samples_per_s_ratio_vs_best_other`` is ours over the
    faster of the other two. The seed's stream 0 (and numpy's generator at the seed) draws."""
    import jax
    import jax.numpy as jnp
    from scipy import stats
    from tensorflow_probability.substrates import jax as tfp

    from jaxsamp.targets.sphere import sample_vmf

    d, kappa, n = cell.params["dim"], float(cell.params["kappa"]), cell.params["num_draws"]
    mu = np.zeros(d, np.float32)
    mu[0] = 1.0
    key = stream_key(seed, 0)
    ours = jax.jit(lambda k: sample_vmf(k, jnp.asarray(mu), kappa, n))
    tfp_dist = tfp.distributions.VonMisesFisher(jnp.asarray(mu), jnp.float32(kappa))
    theirs = jax.jit(lambda k: tfp_dist.sample(n, seed=k))
    scipy_dist, rng = stats.vonmises_fisher(mu.astype(np.float64), kappa), np.random.default_rng(seed)
    rates = {"jaxsamp": best_rate(lambda: ours(key).block_until_ready(), n),
             "tfp": best_rate(lambda: theirs(key).block_until_ready(), n),
             "scipy": best_rate(lambda: scipy_dist.rvs(n, random_state=rng), n)}
    figures = {f"vmf_samples_per_s_{impl}": rate for impl, rate in rates.items()}
    figures["vmf_samples_per_s_ratio_vs_best_other"] = rates["jaxsamp"] / max(rates["tfp"], rates["scipy"])
    return figures, {}


@cells.runner("vmf_log_normalizer")
def log_normalizer_cell(cell: Cell, seed: int, *, target_evals, evaluation: dict, budget_scale: int = 1,
                        checkpoint=None) -> tuple[dict, dict]:
    """``vmf_log_norm_max_rel_err``: the float64 log normaliser against mpmath (40 digits) over ``dims`` x ``kappas``,
    the error relative to ``max(1, |exact|)``. Deterministic: the seed is not used."""
    import jax
    import mpmath

    from jaxsamp.targets.sphere import log_vmf_normalizer

    mpmath.mp.dps = 40
    kappas, worst = cell.params["kappas"], 0.0
    with jax.enable_x64(True):
        for d in cell.params["dims"]:
            got = np.asarray(log_vmf_normalizer(d, np.asarray(kappas, np.float64)))
            for kappa, value in zip(kappas, got):
                if kappa == 0:
                    want = mpmath.loggamma(d / 2) - mpmath.log(2) - d / 2 * mpmath.log(mpmath.pi)
                else:
                    v = mpmath.mpf(d) / 2 - 1
                    want = v * mpmath.log(kappa) - d / 2 * mpmath.log(2 * mpmath.pi) - mpmath.log(mpmath.besseli(v, kappa))
                worst = max(worst, abs(value - float(want)) / max(1.0, abs(float(want))))
    return {"vmf_log_norm_max_rel_err": worst}, {}


@cells.runner("vmf_selection")
def selection_cell(cell: Cell, seed: int, *, target_evals, evaluation: dict, budget_scale: int = 1,
                   checkpoint=None) -> tuple[dict, dict]:
    """Selections per second over ``num_actions`` actions in ``dim`` dimensions at ``kappa``, one for each of
    ``num_queries`` scored queries, exact Boltzmann against vMF-exp exact and through the paged inverted-file index
    whose ``nprobe`` the fidelity rule chose (:func:`jaxsamp.selection.index_fidelity.choose_nprobe`: the smallest
    candidate whose coupling bound on the selection law's total variation is at most 0.02 on ``num_queries`` tuning
    queries x ``draws_per_query`` perturbed directions).

    Timed one at a time (``lax.map`` over the queries: ``<method>_selections_per_s``) and batched (the queries in
    one call: ``<method>_batched_selections_per_s``); Boltzmann one at a time is the faster of its full-CDF and
    streamed samplers. Random streams (:func:`stream_key`): 0 the actions, 1 the scored queries, 2 the selections,
    3 the tuning queries, 4 the index's k-means, 5 the tuning directions, 6 the scored directions.
    """
    import jax
    import jax.numpy as jnp

    from jaxsamp.experiments.vmf_experiment import (
        VmfExplorationSettings,
        action_embeddings,
    )
    from jaxsamp.selection.index_fidelity import (
        TV_THRESHOLD,
        choose_nprobe,
        perturbed_directions,
        selection_tv_bound,
    )
    from jaxsamp.selection.inverted_file_index import build_ivf_index, scanned_rows
    from jaxsamp.selection.vmf_exploration import (
        boltzmann_select,
        boltzmann_select_batch,
        max_inner_product,
        uniform_actions,
        vmf_exp_select,
        vmf_exp_select_batch,
    )

    p = cell.params
    n, d, kappa, num_queries, num_lists = p["num_actions"], p["dim"], p["kappa"], p["num_queries"], p["num_lists"]
    keys = jax.random.split(stream_key(seed, 2), num_queries)

    def per_query(select):
        """One query after another (lax.map): each selection pays its own search, and memory stays O(n)."""
        return jax.jit(lambda ks, qs, x: jax.lax.map(lambda a: select(a[0], a[1], x), (ks, qs)))

    def batched(select):
        """The queries in one call: one selection each, sharing the matrix-matrix products."""
        return jax.jit(lambda k, qs, x: select(k, qs, x))

    clusters = {k: p[k] for k in ("num_clusters", "cluster_kappa") if p["actions"] == "clustered"}
    actions = action_embeddings(VmfExplorationSettings(actions=p["actions"], num_actions=n, action_seed=10 * seed,
                                                       **clusters), d)  # from stream_key(seed, 0)
    queries, tuning = uniform_actions(stream_key(seed, 1), num_queries, d), uniform_actions(stream_key(seed, 3), num_queries, d)
    one_at_a_time = {
        "boltzmann_full_cdf": per_query(lambda k, q, x: boltzmann_select(k, q, x, kappa, 1)[0]),
        "boltzmann_streamed": per_query(lambda k, q, x: boltzmann_select_batch(k, q[None], x, kappa)[0]),
    }
    if p["actions"] == "uniform":  # exact vMF-exp one at a time: the uniform set only
        one_at_a_time["vmfexp"] = per_query(lambda k, q, x: vmf_exp_select(k, q, x, kappa, 1)[0])
    rates = {m: best_rate(lambda s=s: s(keys, queries, actions).block_until_ready(), num_queries)
             for m, s in one_at_a_time.items()}
    rates["boltzmann"] = max(rates["boltzmann_full_cdf"], rates["boltzmann_streamed"])  # the faster exact sampler
    for method, select in {"boltzmann": boltzmann_select_batch, "vmfexp": vmf_exp_select_batch}.items():
        call = batched(lambda k, qs, x, s=select: s(k, qs, x, kappa))
        rates[method + "_batched"] = best_rate(lambda c=call: c(keys[0], queries, actions).block_until_ready(), num_queries)
    start = time.perf_counter()
    index = build_ivf_index(stream_key(seed, 4), actions, num_lists)
    build_seconds = time.perf_counter() - start
    candidates = [c for c in p["nprobe_candidates"] if c < num_lists] + [num_lists]
    choice = choose_nprobe(stream_key(seed, 5), index, actions, tuning, kappa, threshold=TV_THRESHOLD,
                           draws_per_query=p["draws_per_query"], candidates=candidates)
    nprobe = choice.nprobe
    scored = perturbed_directions(stream_key(seed, 6), queries, kappa, p["draws_per_query"])
    bound, se = selection_tv_bound(index, scored, max_inner_product(scored, actions, "exact", 0.0), nprobe)
    ivf = per_query(lambda k, q, x: vmf_exp_select(k, q, x, kappa, 1, nprobe=nprobe, batch_size=1)[0])
    ivf_batched = batched(lambda k, qs, x: vmf_exp_select_batch(k, qs, x, kappa, nprobe=nprobe))
    rates["vmfexp_ivf"] = best_rate(lambda: ivf(keys, queries, index).block_until_ready(), num_queries)
    rates["vmfexp_ivf_batched"] = best_rate(lambda: ivf_batched(keys[0], queries, index).block_until_ready(),
                                            num_queries)
    figures = {f"{method}_selections_per_s": rate for method, rate in rates.items()}
    figures.update(
        ivf_build_seconds=build_seconds, vmfexp_ivf_nprobe=float(nprobe), vmfexp_ivf_tuning_tv_bound=float(choice.tv_bound),
        vmfexp_ivf_tv_bound=float(bound), vmfexp_ivf_tv_bound_se=float(se), ivf_recall=1.0 - float(bound),
        vmfexp_ivf_rows_read_fraction=float(jnp.mean(scanned_rows(index, scored, nprobe))) / n,
        vmfexp_ivf_speedup_vs_boltzmann=rates["vmfexp_ivf"] / rates["boltzmann"],
        vmfexp_ivf_batched_speedup_vs_boltzmann_batched=rates["vmfexp_ivf_batched"] / rates["boltzmann_batched"])
    return figures, {}


@cells.runner("vmf_exploration_config")
def simulation_cell(cell: Cell, seed: int, *, target_evals, evaluation: dict, budget_scale: int = 1,
                    checkpoint=None) -> tuple[dict, dict]:
    """The ``vmf_exploration`` kind on ``params["config"]`` at ``seed`` with the cell's ``num_actions`` and
    ``num_draws``: its ``max_rel_dev_*`` figures, and its selection-probability plot's bytes as an artifact."""
    from jaxsamp.experiments.config import load_config
    from jaxsamp.experiments.runner import run_experiment

    p = cell.params
    out_dir = Path(tempfile.mkdtemp(prefix="jaxsamp_vmf_suite_"))
    try:
        cfg = load_config(CONFIGS / p["config"], [f"seed={seed}", f"sampler.params.num_actions={p['num_actions']}",
                                                  f"sampler.params.num_draws={p['num_draws']}", f"run.out_dir={out_dir}"])
        run_dir, metrics = run_experiment(cfg, verbose=False)
        plot = (run_dir / "selection_probabilities.png").read_bytes()
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    return {k: float(v) for k, v in metrics.items() if k.startswith("max_rel_dev")}, {"selection_png": plot}


def after_seed(cell: str, seed: int, figures: dict, artifacts: dict, *, results_dir, quick: bool) -> None:
    """Keep the paper simulation's plot as ``vmf_selection_<actions>_seed<k>[_quick].png``."""
    if "selection_png" in artifacts:
        actions = cell.split("/")[1].split("_")[0]
        path = Path(results_dir) / f"vmf_selection_{actions}_seed{seed}{'_quick' if quick else ''}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(artifacts["selection_png"])


def selection_params(actions: str) -> dict:
    """10^6 actions in d = 64, kappa = 10, 256 queries, 1024 lists, 16 directions per query (clustered: 1000 vMF
    clusters of concentration 50 around uniform centres)."""
    clusters = {"num_clusters": 1000, "cluster_kappa": 50.0} if actions == "clustered" else {}
    return {"actions": actions, **clusters, "num_actions": 1_000_000, "dim": 64, "kappa": 10.0, "num_queries": 256,
            "num_lists": 1024, "draws_per_query": 16, "nprobe_candidates": list(NPROBE_CANDIDATES)}


QUICK_SELECTION = {"num_actions": 10_000, "num_queries": 16, "num_lists": 32, "draws_per_query": 4, "num_clusters": 100}
CELLS = (
    *(Cell(f"sampling/d{d}_k{k}", "vmf_sampling", {"name": "vmf", "dim": d, "kappa": float(k)},
           {"dim": d, "kappa": k, "num_draws": 100_000}, quick={"num_draws": 1000}) for d in DIMS for k in KAPPAS),
    Cell("log_normalizer/grid", "vmf_log_normalizer", {"name": "vmf"},
         {"dims": list(GRID_DIMS), "kappas": list(GRID_KAPPAS)}, quick={"dims": [2, 1024]}),
    Cell("selection/n1e6_d64", "vmf_selection", {"name": "vmf_exploration", "actions": "uniform"},
         selection_params("uniform"), quick={k: v for k, v in QUICK_SELECTION.items() if k != "num_clusters"}),
    Cell("selection/n1e6_d64_clustered", "vmf_selection", {"name": "vmf_exploration", "actions": "clustered"},
         selection_params("clustered"), quick=QUICK_SELECTION),
    Cell("paper_simulation/uniform_d4", "vmf_exploration_config", {"name": "vmf", "dim": 4, "kappa": 1.0},
         {"config": "vmf_exploration_uniform.yaml", "num_actions": 1_000_000, "num_draws": 30_000},
         quick={"num_actions": 5000, "num_draws": 1000}),
)
ISSUE43 = "issue 43: vMF-exp through the index at least 10x Boltzmann at 10^6 actions, at selection TV bound <= 0.02"
PROTOCOL = Protocol(
    suite="vmf",
    summary="von Mises-Fisher draws against TFP and scipy, the log normaliser against mpmath, vMF exploration through "
            "the paged inverted-file index against exact Boltzmann at 10^6 actions, the paper's d = 4 simulation",
    cells=CELLS,
    seeds=(0, 1, 2),
    headline="vmfexp_ivf_speedup_vs_boltzmann",
    figures=("vmfexp_ivf_batched_speedup_vs_boltzmann_batched", "vmfexp_ivf_selections_per_s",
             "boltzmann_selections_per_s", "vmfexp_ivf_tv_bound", "vmfexp_ivf_nprobe", "vmfexp_ivf_rows_read_fraction",
             "vmf_samples_per_s_ratio_vs_best_other", "vmf_samples_per_s_jaxsamp", "vmf_samples_per_s_tfp",
             "vmf_samples_per_s_scipy", "vmf_log_norm_max_rel_err", "max_rel_dev_vmfexp_vs_boltzmann",
             "max_rel_dev_first_order_vs_boltzmann"),
    evaluation={},
    quick_evaluation={},
    goals=(
        *(Goal(f"sampling/d{d}_k{k}", "vmf_samples_per_s_ratio_vs_best_other", 1.0, better="above",
               source="sampling at least as fast as the faster of TFP and scipy (the sphere module's goal)")
          for d in DIMS for k in KAPPAS),
        Goal("log_normalizer/grid", "vmf_log_norm_max_rel_err", 1e-6, source="the sphere module's accuracy goal"),
        *(Goal(f"selection/{s}", figure, threshold, better=better, source=ISSUE43)
          for s in ("n1e6_d64", "n1e6_d64_clustered")
          for figure, threshold, better in (("vmfexp_ivf_speedup_vs_boltzmann", 10.0, "above"),
                                            ("vmfexp_ivf_tv_bound", 0.02, "below"))),
        Goal("paper_simulation/uniform_d4", "max_rel_dev_vmfexp_vs_boltzmann", 0.05,
             source="Bendada et al. 2025 (vMF exploration), the d = 4 simulation: vMF-exp within 5 % of Boltzmann per bin"),
    ),
    notes="""\
von Mises-Fisher sampling and vMF exploration (Bendada et al. 2025, ICML), to run alone on the machine (every
figure but the accuracies is a timing).

Seeds 0, 1, 2. Every random draw of a seed comes from its own streams (``stream_key(seed, s) = key(s + 10 seed)``),
so seed 0 draws the keys the script ``scripts/bench_vmf.py`` used and each further seed other actions, queries,
index and draws; the timings' spread over seeds is also the machine's. The figures the script recorded are single
runs (seed 0): a report of them rests on one seed, and says so (n = 1).

``sampling/d<d>_k<kappa>`` (d 3, 64, 256; kappa 1, 100): vMF draws per second, ours
(``jaxsamp.targets.sphere.sample_vmf``, jitted), TensorFlow Probability's JAX-substrate ``VonMisesFisher`` (jitted)
and ``scipy.stats.vonmises_fisher``, 100 000 draws per call, the best of 3 timed calls after a compiling one;
``vmf_samples_per_s_ratio_vs_best_other`` is ours over the faster of the other two (goal: at least 1).

``log_normalizer/grid``: the float64 log normaliser against mpmath (40 digits) over d in {2, 3, 4, 10, 64, 256,
1024} and kappa in {0, 1e-8, 1e-3, 0.1, 1, 10, 100, 1e3, 1e4, 1e5} (goal: at most 1e-6; deterministic).

``selection/n1e6_d64[_clustered]``: one selection for each of 256 scored queries over 10^6 actions in d = 64,
kappa = 10, timed one at a time (``lax.map`` over the queries, each paying its own search) and batched (the 256
queries in one call, sharing matrix-matrix products). Boltzmann is exact and float32 like vMF-exp, by two samplers:
every score, a softmax and the inverse CDF over all n (``boltzmann_select``, ``boltzmann_full_cdf_...``), and the
same blocked products as vMF-exp's exact search with one softmax per block and weighted reservoir sampling
(``boltzmann_select_batch``, ``boltzmann_streamed_...``, also given one query at a time);
``boltzmann_selections_per_s`` is the faster of the two one-at-a-time figures and ``boltzmann_batched_...`` the
streamed batch, so the comparison stays like for like. vMF-exp exact over the array one at a time on the uniform
set only. vMF-exp through the paged inverted-file index (``jaxsamp.selection.inverted_file_index``: it reads only
the pages of the lists it probes; a batch shares them): 1024 lists (about sqrt(n)), 10 Lloyd iterations on 65 536
training vectors, the default page size. nprobe is chosen by selection fidelity
(``jaxsamp.selection.index_fidelity.choose_nprobe``): the smallest of 8, 16, ..., 1024 whose coupling bound on the
total variation between the index's and exact vMF-exp's selection laws is at most 0.02, on 256 tuning queries x 16
perturbed directions; then on the scored queries x 16 directions ``vmfexp_ivf_tv_bound`` (and ``_se``),
``ivf_recall`` (recall@1 on the same draws, 1 - the bound), ``vmfexp_ivf_rows_read_fraction`` (rows read per draw
over n), ``vmfexp_ivf_nprobe``; the headline ``vmfexp_ivf_speedup_vs_boltzmann`` (one at a time over one at a
time) and ``vmfexp_ivf_batched_speedup_vs_boltzmann_batched``. Two action sets: uniform (the worst case for any
index: no structure) and clustered (1000 vMF clusters of concentration 50 around uniform centres, like real
embeddings). Goals (issue 43): speed-up at least 10 at TV bound at most 0.02, on both sets.

``paper_simulation/uniform_d4``: the paper's simulation (``configs/vmf_exploration_uniform.yaml``: d = 4, kappa =
1, 10^6 uniform actions, 30 000 draws, exact search), its ``max_rel_dev_*`` figures (goal: vMF-exp within 5 % of
Boltzmann per populated bin) and its selection-probability plot, kept as ``vmf_selection_uniform_seed<k>.png``.

What the suite changes against the script (whose results, converted, are the seed-0 records): the seeds (the
script had none: fixed keys, now seed 0's); the quick size's clustered set (100 clusters of 10^4 actions) is new. The script wrote its sampling and selection parts in separate runs (``--only``) into one file with one
machine record: the converted seeds all carry it, marked ``legacy``.
""",
)


LEGACY_FILE = "bench_vmf.json"
#: the old file recorded single runs, without ``_seed<k>``: they are seed 0's


def legacy_single(name: str):
    """``(cell, figure, 1, 0)``: every key of ``bench_vmf.json`` is a single run, converted as seed 0; a key no cell
    takes stops the conversion (nothing is dropped silently)."""
    placed = legacy_key(name)
    if placed is None:
        raise InputError(f"{LEGACY_FILE}: no cell of suite 'vmf' takes {name!r}")
    return (*placed, 0)


def legacy_key(name: str):
    """``(cell, figure, 1)`` of a key of ``bench_vmf.json``: ``vmf_samples_per_s_{impl}_d{d}_k{kappa}``,
    ``vmf_samples_per_s_d{d}_k{kappa}_ratio_vs_best_other``, ``vmf_log_norm_max_rel_err``,
    ``{figure}_n1e6_d64[_clustered]`` and ``uniform_d4_{figure}``."""
    if name == "vmf_log_norm_max_rel_err":
        return "log_normalizer/grid", name, 1
    if name.startswith("uniform_d4_"):
        return "paper_simulation/uniform_d4", name[len("uniform_d4_"):], 1
    for tag in ("n1e6_d64_clustered", "n1e6_d64"):
        if name.endswith("_" + tag):
            return f"selection/{tag}", name[:-len(tag) - 1], 1
    for d in DIMS:
        for k in KAPPAS:
            tag = f"d{d}_k{k}"
            if name == f"vmf_samples_per_s_{tag}_ratio_vs_best_other":
                return f"sampling/{tag}", "vmf_samples_per_s_ratio_vs_best_other", 1
            if name.startswith("vmf_samples_per_s_") and name.endswith("_" + tag):
                return f"sampling/{tag}", name[:-len(tag) - 1], 1
    return None
