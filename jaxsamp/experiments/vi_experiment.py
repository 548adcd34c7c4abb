"""The ``vi`` experiment kind: fit a variational family with :func:`jaxsamp.fit`, weight its draws, compare with the target.

Config ``sampler`` block: ``name`` a registered variational method (``elbo``,
``snis_forward_kl``, ``softcvi``: an objective on a distrax family; ``aisivi``,
``bsivi``: the semi-implicit family of :mod:`jaxsamp.learned.vi.semi_implicit`), and ``params``
validated into that method's settings (:class:`~jaxsamp.learned.vi.elbo.ELBOSettings`,
:class:`~jaxsamp.learned.vi.snis_forward_kl.SNISForwardKLSettings`,
:class:`~jaxsamp.learned.vi.softcvi.SoftCVISettings`,
:class:`~jaxsamp.learned.vi.aisivi.AISIVISettings`, :class:`~jaxsamp.learned.vi.bsivi.BSIVISettings`);
the objectives' ``params.family`` names the family, e.g. ``{name: coupling_flow, num_layers: 4, hidden: [32, 32]}``
(:func:`~jaxsamp.learned.vi.families.family_from_spec`; default a RealNVP coupling flow).
:func:`jaxsamp.fit` trains the method for ``run.num_steps`` steps with ``run.num_chains`` as its batch
size (the draws of ``q`` per step), checkpoints in ``run_dir/checkpoints`` (so ``jaxsamp resume``
continues it) and judges its training by the method's own health rules; with ``run.shard`` it trains
data-parallel over every device. ``run.num_eval_samples`` draws of the fitted family are
importance-weighted against the target. Targets without exact samples get a reference NUTS run (4
chains, ``run.num_warmup`` warm-up steps, window adaptation).

Metrics: the canonical figures of the draws (:func:`jaxsamp.learned.vi.training.evaluation_figures`:
``log_Z_hat``, ``ess``, ``elbo``, and with the reference draws ``eubo``, ``log_Z_forward`` and
``mean_log_q_reference``, the mean ``log q`` of reference draws, the SoftCVI paper's metric; with the
target's exact ``log Z`` the errors of each); on 2-D targets with a known ``log Z``, ``forward_kl`` by
quadrature (:func:`~jaxsamp.diagnostics.grid_divergences.forward_kl_on_grid`).
Plots: ``training.png`` (loss, ELBO, ESS per step), ``density.png`` (target and
``q`` side by side, 2-D targets) and ``samples.png`` or ``marginals.png`` (draws
of ``q`` against the reference).
"""

from __future__ import annotations

import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core.errors import ConfigError
from jaxsamp.core.progress import phase
from jaxsamp.core.registry import EXPERIMENTS, LEARNED, ExperimentKind, build_learned_sampler
from jaxsamp.diagnostics import health
from jaxsamp.diagnostics.grid_divergences import forward_kl_on_grid
from jaxsamp.experiments.fitting import fit_method
from jaxsamp.experiments import plots
from jaxsamp.learned.vi.density import EXPLICIT, SEMI_IMPLICIT, log_q
from jaxsamp.learned.vi.training import evaluation_figures

METHODS = EXPLICIT + SEMI_IMPLICIT
GRID_POINTS = 250  # per axis, for the forward KL
BOX_SAMPLES = 100_000  # exact draws whose central 99.98 % (padded) is the forward KL's box
NUTS_CHAINS = 4  # the reference run of targets without exact samples
MOVED = {"num_samples": "run.num_chains", "batch_size": "run.num_chains", "method": "sampler.name"}
TRAINING_PLOT = ("loss", "elbo", "ess", "inner_ess")  # the history's series in training.png


def check(cfg, target):
    """The method's settings (its family among them) against the target: built once by its ``build``, not trained.

    Returns
    -------
    dataclass
        The validated settings, which :func:`run_vi` trains with.
    """
    import jaxsamp.learned.methods  # noqa: F401  (registers the methods)

    if not target.has_exact_samples and cfg.run.num_warmup == 0:
        raise ConfigError(f"target {target.name!r} has no exact samples: its NUTS reference needs run.num_warmup > 0")
    for key in cfg.sampler.params or {}:
        if key in MOVED:
            raise ConfigError(f"sampler {cfg.sampler.name!r}: params.{key} is now {MOVED[key]}")

    def checked(name):
        entry = LEARNED.entry(name)

        def build(settings):
            entry.factory(target, settings, batch_size=cfg.run.num_chains)  # refuses a target or family that does not fit
            return settings

        return build, entry.meta["settings"]

    return build_learned_sampler(cfg, "vi", {name: checked(name) for name in METHODS})


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


def run_vi(cfg, target, settings, run_dir: Path) -> dict:
    """Fit for ``run.num_steps`` steps; weight ``run.num_eval_samples`` draws; score and plot them."""
    name = cfg.sampler.name
    k_fit, k_eval = jax.random.split(jax.random.key(cfg.seed))
    fitted = fit_method(cfg, target, settings, run_dir, k_fit, method=name)
    state, history = fitted.state, fitted.history
    n = cfg.run.num_eval_samples
    k_draw, k_ref, k_logq = jax.random.split(k_eval, 3)
    with phase(f"drawing {n} weighted samples", cfg.run.progress):
        samples = fitted.sample(k_draw, n)
    log_q_at = jax.jit(functools.partial(log_q, name, settings))
    density = lambda z: log_q_at(state, z, k_logq)  # noqa: E731
    with phase(f"reference draws and their log q ({n})", cfg.run.progress):
        reference, label = reference_draws(target, k_ref, n, cfg.run.num_warmup)
        reference = jnp.asarray(reference, jnp.float32)
        figures = evaluation_figures(target, samples, reference, density(reference))
    metrics = {
        "train_steps": cfg.run.num_steps,
        "train_seconds_incl_compile": fitted.seconds,
        "final_loss": float(np.mean(history["loss"][-10:])),
        **figures,
        "reference": label,
    }
    metrics["warnings"] = (health.sample_warnings(int(figures["nonfinite_samples"]), n) + fitted.warnings
                           + health.training_warnings((), ess=figures.get("ess", float("nan")), num_samples=n))
    x, reference = np.asarray(samples.x), np.asarray(reference)
    np.savez(run_dir / "samples.npz", samples=x, log_w=np.asarray(samples.log_w))
    title = f"{cfg.name} ({name})"
    if x.shape[1] == 2:
        batched_p = jax.jit(jax.vmap(target.log_prob))

        def on_mesh(fn):
            return lambda X, Y: np.asarray(fn(jnp.asarray(np.stack([X.ravel(), Y.ravel()], -1), jnp.float32))).reshape(X.shape)

        plots.density_comparison(run_dir / "density.png", on_mesh(batched_p), on_mesh(density),
                                 box_around(reference, 0.5, 0.15), title)
        if target.log_Z is not None:
            log_p = lambda z: batched_p(z) - float(target.log_Z)
            box_points = np.asarray(target.sample(jax.random.fold_in(k_ref, 1), BOX_SAMPLES)) if target.has_exact_samples \
                else reference
            metrics.update(forward_kl_on_grid(log_p, density, box_around(box_points, 0.01, 0.25), GRID_POINTS))
    finite = np.all(np.isfinite(x), axis=1)  # a diverged fit's NaN/inf draws are left out of the plot
    plots.samples_against_target(run_dir, target, x[finite], reference, title)
    plots.trace_plot(run_dir / "training.png", {k: history[k] for k in TRAINING_PLOT if k in history},
                     f"{cfg.name}: loss, ELBO and ESS per step")
    return metrics


EXPERIMENTS.register("vi", "fit a variational family (ELBO, SNIS forward KL, SoftCVI, AISIVI, BSIVI); log Z, ESS, log q of reference draws")(
    ExperimentKind(check, run_vi)
)
