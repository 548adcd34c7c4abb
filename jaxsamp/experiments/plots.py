"""Plots written into run folders (matplotlib, Agg backend, PNG)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def pyplot():
    """``matplotlib.pyplot`` with the non-interactive Agg backend (imported on first use)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path, dpi: int = 110) -> Path:
    """Lay ``fig`` out, write it to ``path`` (PNG) and close it, so that long runs that plot often hold no figures."""
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    pyplot().close(fig)
    return Path(path)


def samples_over_density(path: Path, log_prob_grid, samples: np.ndarray, extent, title: str, reference: np.ndarray | None = None) -> Path:
    """Scatter of 2-D ``samples`` over the contours of a log density.

    ``log_prob_grid(X, Y) -> Z`` evaluates the log density on a mesh grid;
    ``extent = (xmin, xmax, ymin, ymax)``.
    """
    plt = pyplot()
    xs = np.linspace(extent[0], extent[1], 200)
    ys = np.linspace(extent[2], extent[3], 200)
    X, Y = np.meshgrid(xs, ys)
    Z = np.asarray(log_prob_grid(X, Y))
    fig, axes = plt.subplots(1, 2 if reference is not None else 1, figsize=(10 if reference is not None else 5, 5), squeeze=False)
    panels = [("sampler", samples)] + ([("exact", reference)] if reference is not None else [])
    for ax, (label, pts) in zip(axes[0], panels):
        ax.contourf(X, Y, np.exp(Z - Z.max()), levels=20, cmap="Blues")
        ax.scatter(pts[:, 0], pts[:, 1], s=3, c="C3", alpha=0.5)
        ax.set_title(f"{title}: {label} ({len(pts)} points)")
        ax.set_xlim(extent[:2])
        ax.set_ylim(extent[2:])
        ax.set_aspect("equal")
    save_figure(fig, path)
    return path


def density_comparison(path: Path, log_p_grid, log_q_grid, extent, title: str) -> Path:
    """Two panels of filled contours on a shared scale: the target's density (left) and a fitted ``q`` (right).

    ``log_*_grid(X, Y) -> Z`` evaluate each log density on a mesh grid;
    ``extent = (xmin, xmax, ymin, ymax)``; each panel is ``exp(log density)``.
    """
    plt = pyplot()
    X, Y = np.meshgrid(np.linspace(extent[0], extent[1], 200), np.linspace(extent[2], extent[3], 200))
    densities = [np.exp(np.asarray(log_p_grid(X, Y))), np.exp(np.asarray(log_q_grid(X, Y)))]
    top = max(float(np.nanmax(d)) for d in densities)
    levels = np.linspace(0.0, top, 21)
    fig, axes = plt.subplots(1, 2, figsize=(10, 5))
    for ax, density, label in zip(axes, densities, ("target", "q")):
        ax.contourf(X, Y, np.nan_to_num(density), levels=levels, cmap="Blues")
        ax.set_title(f"{title}: {label}")
        ax.set_aspect("equal")
    save_figure(fig, path)
    return path


def marginals(path: Path, samples: np.ndarray, reference: np.ndarray | None, title: str, max_dims: int = 4) -> Path:
    """Histograms of the first coordinates of ``samples`` (and a reference set)."""
    plt = pyplot()
    k = min(max_dims, samples.shape[1])
    fig, axes = plt.subplots(1, k, figsize=(3.2 * k, 3), squeeze=False)
    for j, ax in enumerate(axes[0]):
        bins = np.histogram_bin_edges(np.concatenate([samples[:, j]] + ([reference[:, j]] if reference is not None else [])), 50)
        ax.hist(samples[:, j], bins=bins, density=True, alpha=0.6, label="sampler")
        if reference is not None:
            ax.hist(reference[:, j], bins=bins, density=True, histtype="step", color="k", label="exact")
        ax.set_title(f"x[{j}]")
    axes[0][0].legend()
    fig.suptitle(title)
    save_figure(fig, path)
    return path


def trace_plot(path: Path, series: dict[str, np.ndarray], title: str) -> Path:
    """Line plots of per-step scalar series (acceptance rate, loss, ...)."""
    plt = pyplot()
    fig, axes = plt.subplots(len(series), 1, figsize=(7, 2.2 * len(series)), squeeze=False, sharex=True)
    for ax, (name, values) in zip(axes[:, 0], series.items()):
        ax.plot(np.asarray(values))
        ax.set_ylabel(name)
    axes[-1, 0].set_xlabel("step")
    fig.suptitle(title)
    save_figure(fig, path)
    return path


def trace_and_rank(path: Path, draws: np.ndarray, title: str, max_dims: int = 4, max_chains: int = 8) -> Path:
    """Trace plots (left) and rank plots (right) of the first coordinates, for the first chains.

    ``draws`` is ``(chains, draws, d)``. A rank plot histograms, per chain, the
    ranks of its draws among the shown chains' draws (ranking all chains' draws
    would copy a million-chain trace in float64 for the sake of eight histograms);
    well-mixed chains give flat,
    overlapping histograms (Vehtari et al. 2021, "Rank-normalization, folding,
    and localization", Sec. 5.3).
    """
    from scipy.stats import rankdata

    plt = pyplot()
    chains, n, d = draws.shape
    shown_chains, k = min(chains, max_chains), min(max_dims, d)
    fig, axes = plt.subplots(k, 2, figsize=(10, 2.2 * k), squeeze=False)
    bins = np.linspace(0, shown_chains * n, 21)
    for j in range(k):
        ranks = rankdata(draws[:shown_chains, :, j], method="average").reshape(shown_chains, n)
        for c in range(shown_chains):
            axes[j, 0].plot(draws[c, :, j], lw=0.6, alpha=0.8)
            axes[j, 1].hist(ranks[c], bins=bins, histtype="step", lw=1.0)
        axes[j, 1].axhline(n / 20, color="k", ls="--", lw=0.8)
        axes[j, 0].set_ylabel(f"x[{j}]")
    axes[0, 0].set_title("trace (per chain)")
    axes[0, 1].set_title("rank histogram (per chain; flat when mixed)")
    axes[-1, 0].set_xlabel("draw")
    axes[-1, 1].set_xlabel("rank among the shown chains' draws")
    fig.suptitle(f"{title}: {min(chains, max_chains)} of {chains} chains")
    save_figure(fig, path)
    return path


def samples_against_target(run_dir: Path, target, samples: np.ndarray, reference: np.ndarray | None, title: str) -> Path:
    """``samples.png`` over the target's density contours for a 2-D target, else ``marginals.png``.

    ``samples`` and ``reference`` are flattened sets ``(n, d)``; the reference panel
    shows as many points as the sampler's.
    """
    import jax
    import jax.numpy as jnp

    if samples.shape[1] != 2:
        return marginals(run_dir / "marginals.png", samples, reference, title)
    both = samples if reference is None else np.concatenate([samples, reference])
    lo, hi = np.percentile(both, [0.5, 99.5], axis=0)
    pad = 0.15 * (hi - lo)
    extent = (lo[0] - pad[0], hi[0] + pad[0], lo[1] - pad[1], hi[1] + pad[1])
    grid_lp = jax.jit(jax.vmap(target.log_prob))

    def log_prob_grid(X, Y):
        pts = jnp.stack([X.ravel(), Y.ravel()], -1).astype(jnp.float32)
        return np.asarray(grid_lp(pts)).reshape(X.shape)

    shown = None if reference is None else reference[: len(samples)]
    return samples_over_density(run_dir / "samples.png", log_prob_grid, samples, extent, title, shown)
