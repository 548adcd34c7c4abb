"""The ``vi`` experiment kind: fit a variational family through the driver, weight its draws, compare with the target.

Config ``sampler`` block: ``name`` a registered variational method (``elbo``,
``snis_fkl``, ``softcvi``: an objective on a distrax family; ``aisivi``,
``bsivi``: the semi-implicit family of :mod:`jaxsamp.vi.aisivi`), and ``params``
validated into that method's settings (:class:`~jaxsamp.vi.elbo.ELBOSettings`,
:class:`~jaxsamp.vi.snis_forward_kl.SNISForwardKLSettings`,
:class:`~jaxsamp.vi.softcvi.SoftCVISettings`,
:class:`~jaxsamp.vi.aisivi.AISIVISettings`); the objectives' ``params.family`` names
the family, e.g. ``{name: coupling_flow, num_layers: 4, hidden: [32, 32]}``
(:func:`~jaxsamp.vi.families.family_from_spec`; default a RealNVP coupling flow).
The method is the one :func:`jaxsamp.fit` builds by that name, with ``run.num_chains``
as its batch size (the draws of ``q`` per step).
``run.num_steps`` optimiser steps run through the driver with checkpoints in
``run_dir/checkpoints``; ``run.num_eval_samples`` draws of the fitted family are
importance-weighted against the target. Targets without exact samples get a
reference NUTS run (4 chains, ``run.num_warmup`` warm-up steps, window adaptation).

Metrics: ``elbo`` (mean log weight), ``log_Z`` (importance estimate) and
``log_Z_abs_err`` when the target's is known, ``ess``; ``mean_log_q_reference``,
the mean ``log q`` of reference draws (exact samples, else a NUTS run: the SoftCVI
paper's metric); on 2-D targets with a known ``log Z``, ``forward_kl`` by
quadrature (:func:`~jaxsamp.diagnostics.grid_divergences.forward_kl_on_grid`).
Plots: ``training.png`` (loss, ELBO, ESS per step), ``density.png`` (target and
``q`` side by side, 2-D targets) and ``samples.png`` or ``marginals.png`` (draws
of ``q`` against the reference).
"""

from __future__ import annotations

import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core import run
from jaxsamp.core.errors import ConfigError
from jaxsamp.core.registry import EXPERIMENTS, LEARNED, ExperimentKind, build_learned_sampler
from jaxsamp.diagnostics import health
from jaxsamp.diagnostics.grid_divergences import forward_kl_on_grid
from jaxsamp.experiments import plots
from jaxsamp.core.progress import phase

METHODS = ("elbo", "snis_fkl", "softcvi", "aisivi", "bsivi")
SEMI_IMPLICIT = ("aisivi", "bsivi")
GRID_POINTS = 250  # per axis, for the forward KL
BOX_SAMPLES = 100_000  # exact draws whose central 99.98 % (padded) is the forward KL's box
NUTS_CHAINS = 4  # the reference run of targets without exact samples
MOVED = {"num_samples": "run.num_chains", "batch_size": "run.num_chains", "method": "sampler.name"}


def check(cfg, target):
    """The method (a :mod:`jaxsamp.vi` Trainer with ``sample``, ``log_q``), its settings and family against the target."""
    import jaxsamp.learned.methods  # noqa: F401  (registers the methods)

    if not target.has_exact_samples and cfg.run.num_warmup == 0:
        raise ConfigError(f"target {target.name!r} has no exact samples: its NUTS reference needs run.num_warmup > 0")
    for key in cfg.sampler.params or {}:
        if key in MOVED:
            raise ConfigError(f"sampler {cfg.sampler.name!r}: params.{key} is now {MOVED[key]}")
    from jaxsamp.vi.aisivi import AISIVI, BSIVI
    from jaxsamp.vi.elbo import ELBO
    from jaxsamp.vi.snis_forward_kl import SNISForwardKL
    from jaxsamp.vi.softcvi import SoftCVI

    classes = {"softcvi": SoftCVI, "elbo": ELBO, "snis_fkl": SNISForwardKL, "aisivi": AISIVI, "bsivi": BSIVI}
    samplers = {name: (lambda settings, name=name: classes[name](target, settings, cfg.run.num_chains),
                       LEARNED.entry(name).meta["settings"]) for name in METHODS}
    return build_learned_sampler(cfg, "vi", samplers)


def reference_draws(target, key, n: int, num_warmup: int):
    """``(draws (n, d), label)``: exact samples when the target has them, else a NUTS run's (4 chains, ``num_warmup``)."""
    if target.has_exact_samples:
        return np.asarray(target.sample(key, n)), "exact"
    from jaxsamp.mcmc.sample import sample

    per_chain = -(-n // NUTS_CHAINS)
    posterior = sample(target, key=key, num_chains=NUTS_CHAINS, num_warmup=num_warmup, num_samples=per_chain,
                       progress=False)
    return np.asarray(posterior.positions).reshape(-1, posterior.positions.shape[-1])[:n], "NUTS"


def box_around(points: np.ndarray, tail_percent: float, pad: float) -> tuple[float, float, float, float]:
    """``(x0, x1, y0, y1)``: the central ``100 - 2 tail_percent`` % of 2-D ``points`` per axis, padded by ``pad`` of its width."""
    lo, hi = np.percentile(points, [tail_percent, 100.0 - tail_percent], axis=0)
    margin = pad * (hi - lo)
    return lo[0] - margin[0], hi[0] + margin[0], lo[1] - margin[1], hi[1] + margin[1]


def _trace(state, metrics):
    kept = {k: metrics[k] for k in ("elbo", "ess", "inner_ess") if k in metrics}
    return kept | {"loss": metrics.get("loss", metrics["elbo"])}


def training_warnings(name: str, trace: dict, method, ess: float, num_samples: int) -> list[str]:
    """The learned-run health check of a VI fit: its per-step loss, progress where it can be judged, the draws' ESS.

    * ``elbo``: the loss is the negative ELBO, a fixed objective of ``q`` -- judged for progress;
    * ``snis_fkl``: the loss is a self-normalised estimate of ``KL(p || q) - log Z`` on draws of the
      current ``q``; with a poor proposal the weights sit on one draw and it underestimates the KL, so
      it can rise while ``q`` improves -- not judged for progress;
    * ``softcvi``: a cross-entropy against soft labels computed from the current ``q``'s draws, at best
      the labels' entropy, which grows as the labels even out (``q`` nearer ``p``) -- not judged for progress;
    * ``aisivi``, ``bsivi``: no loss value (the ``phi`` update is a path-gradient surrogate), so the
      negated ELBO estimate of the training draws is used, after ``method.pretrain_steps`` (AISIVI's
      ``pretrain_steps``: no ``phi`` step is taken and it is NaN); its ``log q`` is itself estimated, with a
      reverse model trained alongside (AISIVI) or a mixture whose bias changes with ``q`` (BSIVI), so
      not judged for progress; AISIVI adds its own check, a collapsed reverse model (``method.health_warnings``).
    """
    if name in SEMI_IMPLICIT:
        elbo = np.asarray(trace["elbo"])
        return health.training_warnings(-elbo, judge_progress=False, steps=np.arange(len(elbo)) >= method.pretrain_steps,
                                    ess=ess, num_samples=num_samples) + method.health_warnings(trace)
    return health.training_warnings(trace["loss"], judge_progress=name == "elbo", ess=ess, num_samples=num_samples)


def run_vi(cfg, target, method, run_dir: Path) -> dict:
    """Train for ``run.num_steps`` steps; weight ``run.num_eval_samples`` draws; score and plot them."""
    k_init, k_train, k_eval = jax.random.split(jax.random.key(cfg.seed), 3)
    start = time.perf_counter()
    trainer = cfg.trainer(method)
    state, trace = run(trainer.step, jax.jit(trainer.init)(k_init), k_train, cfg.run.num_steps, trace=_trace,
                       **cfg.driver_options(run_dir))
    seconds = time.perf_counter() - start
    n = cfg.run.num_eval_samples
    k_draw, k_ref, k_logq = jax.random.split(k_eval, 3)
    with phase(f"drawing {n} weighted samples", cfg.run.progress):
        samples = jax.jit(method.sample, static_argnums=2)(state, k_draw, n)
    log_w = np.asarray(samples.log_w)
    metrics = {
        "train_steps": cfg.run.num_steps,
        "train_seconds_incl_compile": seconds,
        "final_loss": float(np.mean(np.asarray(trace["loss"])[-10:])),
        "elbo": float(np.mean(log_w)),
        "log_Z": float(samples.log_Z),
        "ess": float(samples.ess),
    }
    nonfinite = int(np.sum(~(np.all(np.isfinite(np.asarray(samples.x)), axis=1) & np.isfinite(log_w))))
    metrics["warnings"] = health.sample_warnings(nonfinite, n) + training_warnings(
        cfg.sampler.name, trace, method, metrics["ess"], n)
    if target.log_Z is not None:
        metrics["log_Z_abs_err"] = abs(metrics["log_Z"] - float(target.log_Z))
    with phase(f"reference draws and their log q ({n})", cfg.run.progress):
        reference, label = reference_draws(target, k_ref, n, cfg.run.num_warmup)
        log_q = jax.jit(method.log_q)
        metrics["mean_log_q_reference"] = float(np.mean(np.asarray(log_q(state, jnp.asarray(reference, jnp.float32), k_logq))))
    metrics["reference"] = label
    x = np.asarray(samples.x)
    np.savez(run_dir / "samples.npz", samples=x, log_w=log_w)
    title = f"{cfg.name} ({cfg.sampler.name})"
    if x.shape[1] == 2:
        batched_p = jax.jit(jax.vmap(target.log_prob))
        log_q_points = lambda z: log_q(state, z, k_logq)

        def on_mesh(fn):
            return lambda X, Y: np.asarray(fn(jnp.asarray(np.stack([X.ravel(), Y.ravel()], -1), jnp.float32))).reshape(X.shape)

        plots.density_comparison(run_dir / "density.png", on_mesh(batched_p), on_mesh(log_q_points),
                                 box_around(reference, 0.5, 0.15), title)
        if target.log_Z is not None:
            log_p = lambda z: batched_p(z) - float(target.log_Z)
            box_points = np.asarray(target.sample(jax.random.fold_in(k_ref, 1), BOX_SAMPLES)) if target.has_exact_samples \
                else reference
            metrics.update(forward_kl_on_grid(log_p, log_q_points, box_around(box_points, 0.01, 0.25), GRID_POINTS))
    finite = np.all(np.isfinite(x), axis=1)  # a diverged fit's NaN/inf draws are left out of the plot
    plots.samples_against_target(run_dir, target, x[finite], reference, title)
    plots.trace_plot(run_dir / "training.png", {k: np.asarray(v) for k, v in trace.items()},
                     f"{cfg.name}: loss, ELBO and ESS per step")
    return metrics


EXPERIMENTS.register("vi", "fit a variational family (ELBO, SNIS forward KL, SoftCVI, AISIVI, BSIVI); log Z, ESS, log q of reference draws")(
    ExperimentKind(check, run_vi)
)
