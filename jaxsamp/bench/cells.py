"""How a cell runs: its runner turns ``(cell, seed, budget)`` into the seed's figures.

Two runners serve every suite: ``"fit"`` trains a learned method through :func:`jaxsamp.fit` and scores it
with the method's own ``evaluate`` (so a benchmark reports exactly what a user's ``fitted.evaluate`` does), and
``"tempered_smc"`` is the baseline a user would otherwise run, at an equal number of target evaluations. A
suite registers a runner of its own with :func:`runner` only for what neither covers.

Every figure is a float named in the metric glossary (``docs/metrics.md``); the costs are ``target_evals``
(training evaluations, or the SMC run's), ``train_seconds`` (training, compilation left out) and
``compile_seconds``.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable

import jax
import numpy as np

from jaxsamp.bench.protocol import Cell
from jaxsamp.core.errors import ConfigError
from jaxsamp.diagnostics.particles import sinkhorn_floor, sinkhorn_to_exact

#: ``name -> runner(cell, seed, *, target_evals, evaluation, budget_scale) -> (figures, artifacts)``.
RUNNERS: dict[str, Callable] = {}


def runner(name: str):
    """Register a cell runner under ``name`` (a suite's own kind of cell)."""

    def deco(fn):
        RUNNERS[name] = fn
        return fn

    return deco


def build_target(spec):
    """The target a cell names: ``{"name": registry name, **parameters}``, or ``{"inference_gym": class name}``
    (an Inference Gym model of ``inference_gym.targets`` on its flat unconstrained space)."""
    import jaxsamp.targets  # registers the targets
    from jaxsamp.core.registry import TARGETS

    params = dict(spec)
    if "inference_gym" in params:
        from inference_gym import using_jax as gym

        return jaxsamp.targets.from_inference_gym(getattr(gym.targets, params.pop("inference_gym"))(**params))
    return TARGETS.get(params.pop("name"), **params)


def floats(figures: dict) -> dict:
    """The scalar figures of an ``evaluate`` dict as floats (arrays and strings left out)."""
    out = {}
    for name, value in figures.items():
        value = np.asarray(value)
        if value.ndim == 0 and np.issubdtype(value.dtype, np.number):
            out[name] = float(value)
    return out


def stream_key(seed: int, stream: int):
    """The key of random stream ``stream`` (< 100) of a timing cell at ``seed``: ``key(stream + 100 seed)``, so
    that seed 0 draws the keys its old script drew (``key(stream)``) and each seed its own."""
    return jax.random.key(stream + 100 * seed)


def seconds_of(fn, *args) -> float:
    """Seconds of one call of ``fn(*args)``, waiting for its (JAX) result."""
    start = time.perf_counter()
    jax.block_until_ready(fn(*args))
    return time.perf_counter() - start


def best_seconds(fn, *args, calls: int = 3) -> float:
    """The fastest of ``calls`` timed calls of ``fn(*args)`` after a compiling one."""
    jax.block_until_ready(fn(*args))
    return min(seconds_of(fn, *args) for _ in range(calls))


def evaluation_figures(evaluate: Callable, key, evaluation: dict, params: dict) -> dict:
    """The figures of a cell's evaluation of a learned sampler, as every runner of one scores it.

    ``evaluate(key, num_samples, **options)`` (a :meth:`~jaxsamp.learned.fit.Fitted.evaluate`, or a
    sampler's ``evaluate`` with its train state bound) is called at ``fold_in(key, 2)`` with the
    protocol's ``evaluation`` merged with the cell's ``params["evaluate"]`` (the cell's win):
    ``num_samples`` and the method's options, e.g. ``num_sets``, or ``smc`` (a resampled SMC run
    along the method's path, :meth:`~jaxsamp.learned.fit.Fitted.evaluate`). Its scalar figures as
    floats (:func:`floats`), less ``target_evals`` (the evaluation's count; a runner's cost is the
    training's). ``params["evaluate"] = None`` evaluates nothing: ``{}``.
    """
    if params.get("evaluate", {}) is None:
        return {}
    options = {**evaluation, **params.get("evaluate", {})}
    num_samples = options.pop("num_samples")
    figures = floats(evaluate(jax.random.fold_in(key, 2), num_samples, **options))
    figures.pop("target_evals", None)
    return figures


@runner("fit")
def fit_cell(cell: Cell, seed: int, *, target_evals, evaluation: dict, budget_scale: int = 1,
             checkpoint=None) -> tuple[dict, dict]:
    """Train ``params["method"]`` with ``params["settings"]`` for the cell's updates times ``budget_scale``.

    The seed's key trains (``jaxsamp.fit(key=jax.random.key(seed))``) and its ``fold_in`` 2 evaluates
    (:func:`evaluation_figures`: ``evaluation["num_samples"]`` samples, or the cell's own
    ``params["evaluate"]["num_samples"]``, with the rest of ``params["evaluate"]`` as the method's options, e.g.
    ``num_sets``, or ``smc`` for a resampled SMC run along a trained LEAPS', curve's or SCLD's path); ``fold_in`` 3
    draws the samples kept for plots (``artifacts["samples"]``, as many as ``params["plot_samples"]``, none by
    default).

    What a method measures while it trains (its ``fitted.history``) is read with four optional parameters:
    ``history_figures``, metrics whose last finite value becomes a figure of the same name (a GFlowNet's
    ``empirical_l1`` over its last window of terminal states); ``history_totals`` (``{figure: metric}``), the sum
    over the training updates of a per-update metric as a figure (``{"diverged_collocation_points":
    "diverged_points"}``); ``throughput``, counters whose final value per second of training becomes
    ``train_<name>_per_s``; and ``history_curve``, metrics whose rows where all of them are finite form the
    learning curve ``artifacts["curves"]`` (``{metric: list}``), which the runner stores beside the seed's figures
    (a method that evaluates itself every few steps leaves NaN between). ``artifacts["fitted"]`` is the
    :class:`~jaxsamp.learned.fit.Fitted`, for a suite's plots. ``params["chunk"]``: updates between the checks of a seconds budget
    (``fit``'s ``chunk``; default about a fiftieth of the updates, too coarse where the clock, not the update
    count, ends training). ``params["devices"]``: train data-parallel with the batch split over a mesh of that
    many devices (:func:`jaxsamp.batch_mesh`; the process must have them).

    A learning curve evaluated while training (``fit``'s ``evaluate_every``, off the training clock):
    ``params["curve"] = {"every": updates, "num_samples": n, "options": {...}, "figures": [names]}`` evaluates
    every ``every`` updates on ``n`` samples with the method's ``options`` and keeps the training step and the
    named figures of each point as ``artifacts["curves"]`` (``{"step": [...], name: [...]}``).
    The training shows ``fit``'s progress (compilation, updates done, rate and time left): a bar on a terminal,
    plain lines at each tenth of the updates in a batch job's log (:class:`jaxsamp.core.progress.StepBar`).
    ``params["checkpoint_every"]`` (updates) checkpoints the training into the folder the runner gives
    (``checkpoint``; none when it gives none), so that a long cell killed before its end resumes where it stopped.

    A timing cell: ``params["evaluate"] = None`` leaves the evaluation out (the training's own figures only);
    ``seconds_per_update`` (training seconds over updates, compilation left out) is always a figure, and with
    ``params["paper_updates"]`` so is ``hours_to_paper_budget``, what the paper's updates would take at that rate.
    """
    import jaxsamp
    import jaxsamp.learned.methods
    from jaxsamp.core.registry import LEARNED

    params = dict(cell.params)
    method = params.pop("method")
    unknown = set(params) - {"settings", "batch_size", "evaluate", "plot_samples", "history_figures", "history_totals",
                             "throughput", "history_curve", "chunk", "curve", "checkpoint_every", "paper_updates",
                             "devices"}
    if unknown:
        raise ConfigError(f"cell {cell.name!r}: unknown fit parameters {sorted(unknown)}")
    settings = LEARNED.entry(method).meta["settings"](**params.get("settings", {}))
    if cell.budget.updates is None:
        raise ConfigError(f"cell {cell.name!r}: a fit cell needs budget.updates")
    key = jax.random.key(seed)
    curve = params.get("curve") or {}
    fitted = jaxsamp.fit(method, build_target(cell.target), settings=settings, batch_size=params.get("batch_size"),
                         num_steps=cell.budget.updates * budget_scale, key=key, progress=True,
                         max_seconds=cell.budget.seconds, max_target_evals=target_evals,
                         checkpoint=checkpoint if params.get("checkpoint_every") else None,
                         checkpoint_every=params.get("checkpoint_every") if checkpoint is not None else None,
                         chunk=params.get("chunk"), evaluate_every=curve.get("every"),
                         mesh=jaxsamp.batch_mesh(params["devices"]) if params.get("devices") else None,
                         evaluate_samples=curve.get("num_samples", 1000), evaluate_options=curve.get("options"))
    figures = evaluation_figures(fitted.evaluate, key, evaluation, params)
    history = fitted.history
    steps = len(next(iter(history.values()))) if history else 0
    figures.update(train_steps=float(steps), train_seconds=fitted.seconds - fitted.compile_seconds,
                   compile_seconds=fitted.compile_seconds)
    if steps:
        figures["seconds_per_update"] = figures["train_seconds"] / steps
        if params.get("paper_updates"):
            figures["hours_to_paper_budget"] = params["paper_updates"] * figures["seconds_per_update"] / 3600
    if "target_evals" in history:
        figures["target_evals"] = float(np.asarray(history["target_evals"])[-1])
    for name in params.get("history_figures", ()):
        values = _history(cell, history, name)
        figures[name] = float(values[np.isfinite(values)][-1]) if np.isfinite(values).any() else float("nan")
    for figure, name in params.get("history_totals", {}).items():
        figures[figure] = float(np.sum(_history(cell, history, name)))
    for name in params.get("throughput", ()):
        figures[f"train_{name}_per_s"] = float(_history(cell, history, name)[-1]) / figures["train_seconds"]
    artifacts = {"fitted": fitted}
    if params.get("history_curve"):
        series = {name: _history(cell, history, name) for name in params["history_curve"]}
        rows = np.all([np.isfinite(v) for v in series.values()], axis=0)
        artifacts["curves"] = {name: v[rows].tolist() for name, v in series.items()}
    if curve:
        points = fitted.curve
        artifacts["curves"] = {name: np.asarray(points.get(name, []), dtype=float).tolist()
                               for name in ("step", *curve.get("figures", ()))}
    if params.get("plot_samples"):
        artifacts["samples"] = np.asarray(fitted.sample(jax.random.fold_in(key, 3), params["plot_samples"]).x)
    return figures, artifacts


def _history(cell: Cell, history: dict, name: str) -> np.ndarray:
    """One metric of a training history as a float vector (a ConfigError naming the method's metrics otherwise)."""
    if name not in history:
        raise ConfigError(f"cell {cell.name!r}: the training history has no {name!r}; it has {sorted(history)}")
    return np.asarray(history[name], dtype=float).reshape(len(history[name]), -1).mean(axis=1)


@runner("tempered_smc")
def tempered_smc_cell(cell: Cell, seed: int, *, target_evals, evaluation: dict, budget_scale: int = 1,
                      checkpoint=None) -> tuple[dict, dict]:
    """Tempered SMC to the cell's target, as many levels of a linear schedule as the budget allows.

    ``params["kernel"]`` picks the path and the move at each level:

    - ``"mala"`` (default): the geometric path from ``N(0, base_scale^2 I)``, ``num_mcmc_steps`` MALA steps of
      ``step_size``; a level costs ``num_particles * (num_mcmc_steps + 2)`` target evaluations (the incremental
      weight, MALA's initialisation at the new level and its moves).
    - ``"heat_bath"``: a lattice target (Ising, Potts) on its linear-in-beta path from the uniform lattice
      (:class:`~jaxsamp.targets.lattice.LatticePath`, LEAPS' path), ``num_mcmc_steps`` checkerboard heat-bath
      sweeps (:func:`jaxsamp.mcmc.discrete.checkerboard`); a level costs ``num_particles * (1 + C *
      num_mcmc_steps)`` evaluations, one ``flip_log_ratios`` call per colour class and sweep (``C`` = 2 colours
      on even sides, 3 when a side is odd) beside the incremental weight (no initialisation cost).

    Both as :func:`jaxsamp.smc.anneal` counts them, so a budget of ``B`` evaluations buys ``max(2, B // cost)``
    levels and ``target_evals`` (anneal's count) never exceeds ``B`` beyond the two-level floor.
    ``ess_threshold``: resampling below it (Del Moral, Doucet & Jasra 2006; the baseline of Vargas et al. 2023,
    of the diffusion-sampler papers and of LEAPS). The key is ``jax.random.key(1000 + seed)``. ``sinkhorn``: add
    SCLD's sample figure, the Sinkhorn divergence of the final particles' positions to as many exact samples drawn
    at ``jax.random.key(2000 + seed)`` (:func:`~jaxsamp.diagnostics.particles.sinkhorn_to_exact`), and
    ``sinkhorn_floor``, that of two exact sets of as many samples drawn at ``jax.random.key(3000 + seed)``
    (:func:`~jaxsamp.diagnostics.particles.sinkhorn_floor`, what a perfect sampler scores). On a target with a
    reference posterior (an Inference Gym model), ``reference_mean_err``: the largest error of the final weighted
    particles' mean, in the reference's standard deviations.
    """
    import blackjax

    from jaxsamp.mcmc.discrete import (
        checkerboard,
        checkerboard_colours,
        lattice_categories,
    )
    from jaxsamp.smc import anneal
    from jaxsamp.targets.annealing import geometric_path
    from jaxsamp.targets.lattice import LatticePath

    p = dict(cell.params)
    kernel = p.get("kernel", "mala")
    if kernel not in ("mala", "heat_bath"):
        raise ConfigError(f"cell {cell.name!r}: kernel must be 'mala' or 'heat_bath', got {kernel!r}")
    if target_evals is None:
        raise ConfigError(f"cell {cell.name!r}: tempered SMC needs a target-evaluation budget")
    target = build_target(cell.target)
    if kernel == "mala":
        path = geometric_path(target, base_scale=p["base_scale"])
        cost = p["num_particles"] * (p["num_mcmc_steps"] + 2)

        def make_kernel(t):
            return blackjax.mala(lambda x: path.log_prob(x, t), p["step_size"])
    else:
        path = LatticePath(target)
        colours = int(checkerboard_colours(target.event_shape).max()) + 1
        cost = p["num_particles"] * (1 + colours * p["num_mcmc_steps"])
        q = lattice_categories(target)

        def make_kernel(t):
            return checkerboard(lambda x: path.flip_log_ratios(x, t), "heat_bath", q)
    levels = max(2, int(target_evals // cost))
    result = anneal(jax.random.key(1000 + seed), path, make_kernel, p["num_particles"],
                    schedule=np.linspace(0.0, 1.0, levels + 1), num_mcmc_steps=p["num_mcmc_steps"],
                    ess_threshold=p["ess_threshold"])
    log_z = float(result.samples.log_Z)
    figures = {"log_Z_hat": log_z, "target_evals": float(result.num_target_evals), "num_levels": float(levels),
               "ess": float(result.samples.ess)}
    if target.log_Z is not None:
        figures["log_Z_abs_err"] = abs(log_z - float(target.log_Z))
    if getattr(target, "reference_mean", None) is not None:
        figures["reference_mean_err"] = target.reference_mean_error(result.samples.x, result.samples.log_w)
    if p.get("sinkhorn"):
        sinkhorn = sinkhorn_to_exact(target, jax.random.key(2000 + seed), result.samples.x)
        if sinkhorn is not None:
            figures.update(sinkhorn=sinkhorn, sinkhorn_floor=sinkhorn_floor(target, jax.random.key(3000 + seed),
                                                                            p["num_particles"]))
    return figures, {}


def posterior_figures(draws, warmup_seconds: float, sampling_seconds: float, call_seconds: float) -> dict:
    """The figures of one multi-chain MCMC run: its ``draws`` (chains, draws, dim) and the seconds it took.

    ``min_ess_bulk`` (the worst coordinate's bulk ESS, ArviZ's estimator through
    :func:`jaxsamp.diagnostics.mcmc.posterior_summary`, the same code for every framework) per second of
    sampling (``min_ess_per_s``), of warm-up and sampling (``min_ess_per_s_incl_warmup``) and of the whole call
    (``min_ess_per_call_second``); ``max_rhat``, the largest rank R-hat, shows a stuck chain.
    """
    from jaxsamp.diagnostics.mcmc import posterior_summary

    summary = posterior_summary(np.asarray(draws))
    ess = float(summary.min_ess_bulk)
    return {"min_ess_bulk": ess, "max_rhat": float(summary.max_rhat), "min_ess_per_s": ess / sampling_seconds,
            "min_ess_per_s_incl_warmup": ess / (warmup_seconds + sampling_seconds), "call_seconds": call_seconds,
            "min_ess_per_call_second": ess / call_seconds, "warmup_seconds": warmup_seconds,
            "sampling_seconds": sampling_seconds}


def timed_calls(call: Callable, calls: int) -> dict:
    """Call ``call() -> (draws, warmup_seconds, sampling_seconds)`` ``calls`` times after clearing JAX's caches and
    ``chain_method="auto"``'s choices (:func:`~jaxsamp.mcmc.chain_method.clear_choices`), as in a fresh process.

    The first call's wall time, compilation included, is ``first_call_seconds``; the last call gives the
    :func:`posterior_figures` (with ``calls=2`` a second call that compiles nothing; with 1 its figures include
    compilation). Health warnings of the runs are silenced: ``max_rhat`` records what they would say.
    """
    from jaxsamp.mcmc.chain_method import clear_choices

    jax.clear_caches()
    clear_choices()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seconds = []
        for _ in range(calls):
            start = time.perf_counter()
            draws, warmup_seconds, sampling_seconds = call()
            seconds.append(time.perf_counter() - start)
    return {**posterior_figures(draws, warmup_seconds, sampling_seconds, seconds[-1]), "first_call_seconds": seconds[0]}


def mcmc_start(cell: Cell, seed: int):
    """``(target, key, positions)`` of an MCMC cell: its target, ``jax.random.key(seed)`` and
    ``params["num_chains"]`` starting points drawn at ``fold_in(key, 99)`` (the same for every framework)."""
    from jaxsamp.mcmc.warmup import starting_points

    target = build_target(cell.target)
    key = jax.random.key(seed)
    return target, key, starting_points(target, jax.random.fold_in(key, 99), cell.params["num_chains"])


@runner("nuts")
def nuts_cell(cell: Cell, seed: int, *, target_evals, evaluation: dict, budget_scale: int = 1,
              checkpoint=None) -> tuple[dict, dict]:
    """``jaxsamp.sample`` (NUTS after Stan's window warm-up) on the cell's target, timed call by call.

    ``params``: ``num_chains``, ``num_warmup``, ``num_samples`` (draws per chain, times ``budget_scale``),
    ``calls`` (2: a first call, compilation included, then the timed one; 1 at a quick size) and ``options``,
    further keywords of :func:`jaxsamp.sample` (``{"chain_method": "vectorized"}``). The seed's key samples,
    from the :func:`mcmc_start` points; figures: :func:`timed_calls`, the sampling phase's rates, and how the
    chains ran (``lockstep``, with ``batching_gain`` when ``chain_method="auto"`` measured it).
    """
    import jaxsamp

    p = dict(cell.params)
    unknown = set(p) - {"num_chains", "num_warmup", "num_samples", "calls", "options"}
    if unknown:
        raise ConfigError(f"cell {cell.name!r}: unknown nuts parameters {sorted(unknown)}")
    target, key, positions = mcmc_start(cell, seed)
    last = {}

    def call():
        post = jaxsamp.sample(target, key=key, init=positions, num_chains=p["num_chains"], num_warmup=p["num_warmup"],
                              num_samples=p["num_samples"] * budget_scale, progress=False, **p.get("options", {}))
        last["post"] = post
        return np.asarray(post.positions), post.seconds["warmup"], post.seconds["sampling"]

    figures = timed_calls(call, p.get("calls", 2))
    post = last["post"]
    draws = p["num_chains"] * p["num_samples"] * budget_scale
    figures["draws_per_s"] = draws / figures["sampling_seconds"]
    if "num_integration_steps" in post.info:  # NUTS' leapfrog steps: one gradient each
        steps = float(np.sum(post.info["num_integration_steps"]))
        figures.update(grad_evals_per_s=steps / figures["sampling_seconds"], mean_integration_steps=steps / draws)
    figures["divergences"] = float(post.num_divergences)
    figures["lockstep"] = float(post.chain_method == "vectorized")
    if post.batching_gain is not None:
        figures["batching_gain"] = post.batching_gain
    return figures, {}
