"""The ``vmf_exploration`` experiment kind: vMF-exp against Boltzmann exploration over a large embedded action set.

Config: ``target`` is the exploration distribution, ``vmf`` with ``mu`` the query
``V`` and ``kappa`` the concentration; ``sampler: {name: vmf_exp, params: ...}``
(:class:`VmfExplorationSettings`) sets the action embeddings and the number of draws.
The run draws ``num_draws`` actions by vMF-exp and by Boltzmann sampling, groups
the actions into bins of similarity ``<V, X_i>``, and writes per bin the empirical
selection frequency of each method, Boltzmann's exact probability and the
paper's first-order approximation (metrics and ``selection_probabilities.png``),
plus selections per second of both methods (Bendada et al. 2025, the simulation
of their Figure 2).
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Annotated

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core.errors import InputError
from jaxsamp.core.registry import EXPERIMENTS, ExperimentKind, build_learned_sampler
from jaxsamp.core.validation import Interval, NonNegativeInt, OneOf, PositiveFloat, PositiveInt, check_fields
from jaxsamp.experiments import plots
from jaxsamp.selection.inverted_file_index import build_ivf_index, ivf_argmax, scanned_rows
from jaxsamp.selection.vmf_exploration import (
    SEARCHES,
    max_inner_product,
    boltzmann_probabilities,
    boltzmann_select,
    first_order_probabilities,
    uniform_actions,
    vmf_exp_select,
)
from jaxsamp.targets.sphere import VonMisesFisher, sample_vmf
from jaxsamp.core.progress import phase


@dataclasses.dataclass(frozen=True)
class VmfExplorationSettings:
    """Action set and draws of a ``vmf_exploration`` run.

    Attributes
    ----------
    actions : {"uniform", "clustered"}
        Embeddings uniform on the sphere (the paper's simulation), or ``num_clusters``
        vMF clusters of concentration ``cluster_kappa`` around uniform centres.
    num_actions, num_clusters : int
    cluster_kappa : float
    num_draws : int
        Selections by each method.
    bins : int
        Similarity bins over ``[-1, 1]``.
    search : {"exact", "approximate", "ivf"}
        vMF-exp's maximum-inner-product search; ``ivf`` builds an inverted-file index
        of ``num_lists`` lists and scans ``nprobe`` of them per draw (its build time
        and its recall against the exact search on 2000 of the draws' directions are
        reported).
    num_lists, nprobe : int
        The ``ivf`` index's lists and the lists scanned per draw.
    action_seed : int
        Seed of the embeddings (fixed apart from the run's seed, so runs share actions).
    """

    actions: Annotated[str, OneOf(("uniform", "clustered"))] = "uniform"
    num_actions: PositiveInt = 1_000_000
    num_clusters: PositiveInt = 100
    cluster_kappa: PositiveFloat = 50.0
    num_draws: PositiveInt = 30_000
    bins: Annotated[int, Interval(ge=2)] = 10
    search: Annotated[str, OneOf(SEARCHES + ("ivf",))] = "exact"
    num_lists: PositiveInt = 1024
    nprobe: PositiveInt = 32
    action_seed: NonNegativeInt = 0

    def __post_init__(self):
        check_fields(self)


def action_embeddings(settings: VmfExplorationSettings, dim: int) -> jax.Array:
    """The run's unit action embeddings (num_actions, dim)."""
    key = jax.random.key(settings.action_seed)
    if settings.actions == "uniform":
        return uniform_actions(key, settings.num_actions, dim)
    k_centres, k_assign, k_draw = jax.random.split(key, 3)
    centres = uniform_actions(k_centres, settings.num_clusters, dim)
    owner = jax.random.randint(k_assign, (settings.num_actions,), 0, settings.num_clusters)
    keys = jax.random.split(k_draw, settings.num_actions)
    return jax.vmap(lambda k, c: sample_vmf(k, c, settings.cluster_kappa, 1)[0])(keys, centres[owner])


def check(cfg, target) -> VmfExplorationSettings:
    """The settings, and a ``vmf`` target as the exploration distribution, before any work."""
    def build(settings):
        if not isinstance(target, VonMisesFisher):
            raise InputError(f"the exploration distribution must be the 'vmf' target, got {target.name!r}")
        if settings.search == "ivf" and not settings.nprobe <= settings.num_lists <= settings.num_actions:
            raise InputError(f"ivf search needs nprobe <= num_lists <= num_actions, got {settings.nprobe}, "
                             f"{settings.num_lists}, {settings.num_actions}")
        return settings

    return build_learned_sampler(cfg, "vmf_exploration", {"vmf_exp": (build, VmfExplorationSettings)})


def _timed(fn, *args):
    """``fn(*args)`` and its wall time after a compiling call (arrays are arguments, never baked-in constants)."""
    jax.block_until_ready(fn(*args))
    start = time.perf_counter()
    out = jax.block_until_ready(fn(*args))
    return out, time.perf_counter() - start


def run_vmf_exploration(cfg, target: VonMisesFisher, settings: VmfExplorationSettings, run_dir: Path) -> dict:
    """Draw with both methods, bin by similarity, compare with Boltzmann's exact probabilities; plot."""
    query = jnp.asarray(target.mu_np, jnp.float32)
    actions = action_embeddings(settings, query.shape[0])
    k_vmf, k_boltzmann = jax.random.split(jax.random.key(cfg.seed))
    n, kappa = settings.num_draws, target.kappa
    search_metrics = {}
    if settings.search == "ivf":
        with phase(f"building the inverted-file index ({settings.num_lists} lists)", cfg.run.progress):
            start = time.perf_counter()
            searched = build_ivf_index(jax.random.key(settings.action_seed + 1), actions, settings.num_lists)
            search_metrics["ivf_build_seconds"] = time.perf_counter() - start
        directions = sample_vmf(jax.random.fold_in(k_vmf, 1), query, kappa, min(n, 2000))
        search_metrics["ivf_rows_per_draw"] = float(jnp.mean(scanned_rows(searched, directions, settings.nprobe)))
        found = jax.jit(ivf_argmax, static_argnums=2)(searched, directions, settings.nprobe)
        exact = jax.jit(max_inner_product, static_argnums=(2, 3))(directions, actions, "exact", 0.0)
        search_metrics["ivf_recall"] = float(jnp.mean(found == exact))
    else:
        searched = actions
    select_vmf = jax.jit(lambda k, q, x: vmf_exp_select(k, q, x, kappa, n, search=settings.search,
                                                        nprobe=settings.nprobe))
    select_boltzmann = jax.jit(lambda k, q, x: boltzmann_select(k, q, x, kappa, n))
    with phase(f"timing {n} selections by vMF-exp and by Boltzmann", cfg.run.progress):
        vmf_picks, vmf_seconds = _timed(select_vmf, k_vmf, query, searched)
        boltzmann_picks, boltzmann_seconds = _timed(select_boltzmann, k_boltzmann, query, actions)

    sims = np.asarray(actions @ query, np.float64)
    edges = np.linspace(-1.0, 1.0, settings.bins + 1)
    bins = np.clip(np.digitize(sims, edges) - 1, 0, settings.bins - 1)
    per_bin = lambda weights: np.bincount(bins, weights, minlength=settings.bins)  # noqa: E731
    exact = per_bin(np.asarray(boltzmann_probabilities(query, actions, kappa), np.float64))
    first_order = per_bin(np.asarray(first_order_probabilities(query, actions, kappa), np.float64))
    vmf_freq = np.bincount(bins[np.asarray(vmf_picks)], minlength=settings.bins) / n
    boltzmann_freq = np.bincount(bins[np.asarray(boltzmann_picks)], minlength=settings.bins) / n
    populated = exact > 10.0 / n  # bins where the frequencies carry information
    metrics = {
        "num_actions": settings.num_actions,
        "num_draws": n,
        "vmfexp_selections_per_s": n / vmf_seconds,
        "boltzmann_selections_per_s": n / boltzmann_seconds,
        **search_metrics,
        "max_rel_dev_vmfexp_vs_boltzmann": float(np.max(np.abs(vmf_freq - exact)[populated] / exact[populated])),
        "max_rel_dev_first_order_vs_boltzmann": float(np.max(np.abs(first_order - exact)[populated] / exact[populated])),
        "bin_centres": ((edges[1:] + edges[:-1]) / 2).tolist(),
        "vmfexp_bin_frequency": vmf_freq.tolist(),
        "boltzmann_bin_frequency": boltzmann_freq.tolist(),
        "boltzmann_bin_probability": exact.tolist(),
        "first_order_bin_probability": first_order.tolist(),
    }
    plt = plots.pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    centres = np.asarray(metrics["bin_centres"])
    ax.semilogy(centres, exact, "k-", label="Boltzmann (exact)")
    ax.semilogy(centres, first_order, "k--", label="first-order approximation")
    ax.semilogy(centres[vmf_freq > 0], vmf_freq[vmf_freq > 0], "o", label="vMF-exp (sampled)")
    ax.semilogy(centres[boltzmann_freq > 0], boltzmann_freq[boltzmann_freq > 0], "x", label="Boltzmann (sampled)")
    ax.set_xlabel("similarity <V, X_i>")
    ax.set_ylabel("selection probability per bin")
    ax.set_title(f"{cfg.name}: d = {query.shape[0]}, kappa = {kappa:g}, n = {settings.num_actions:,}")
    ax.legend(fontsize=8)
    plots.save_figure(fig, run_dir / "selection_probabilities.png")
    return metrics


EXPERIMENTS.register("vmf_exploration", "vMF-exp vs Boltzmann exploration over embedded actions; selection probabilities")(
    ExperimentKind(check, run_vmf_exploration)
)
