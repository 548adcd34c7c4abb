"""The ``bernoulli_denoising`` experiment kind: learn a Bernoulli-noise denoiser from data, then sample.

Bach & Saremi (2025, ICML); :mod:`jaxsamp.learned.binary.bernoulli_denoising` derives
the method and :mod:`jaxsamp.learned.binary.bernoulli_samplers` the samplers.

Config ``sampler`` block: ``name: bernoulli_denoising`` and ``params``
validated into :class:`BernoulliDenoisingExperimentSettings` (the method's
settings, with its sampler's, and the run's own). :func:`jaxsamp.fit` trains the
denoiser for ``run.num_steps`` steps on batches of ``run.num_chains`` examples
(checkpoints in ``run_dir/checkpoints``); ``run.num_eval_samples`` independent
chains from uniform noise are then run by the driver and denoised
(:func:`~jaxsamp.learned.binary.bernoulli_denoising.draw`).

The training data come from the target:

* ``binary_digits``: its fixed training split; the test split is held out;
* a target with exact samples (``product_bernoulli``, ``bernoulli_mixture``):
  ``num_train_samples`` of them;
* a spin lattice (``ising``): the final states of ``num_train_samples``
  independent Glauber chains (checkerboard heat bath, :mod:`jaxsamp.mcmc.discrete`)
  after ``glauber_sweeps`` sweeps from uniform spins.

Metrics (``metrics.json``): the training loss; with ``d <= 20`` the total
variation of the samples to the exact law by enumeration (``tv``), the noise
floor of that estimate for as many exact samples (``tv_floor``) and, for
targets with a tractable log partition, the same sampler with the exact
denoiser (``tv_exact_score``); for a data set, the MMD with the exponential
Hamming kernel to the held-out split (``mmd_test``) and the train-vs-test floor
at equal sizes (``mmd_train_vs_test``); for Ising, ``<|m|>`` against the exact
value from the transfer matrix's ``P(m)`` (``abs_m_err``), the TV of the
distribution of ``m`` to that ``P(m)`` (``m_tv``), and the same error of the
training data. Outputs: ``samples.npz``, ``samples.png`` (a grid of samples
next to training data) and ``training.png``.
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core import ensemble, run
from jaxsamp.core.errors import ConfigError, InputError
from jaxsamp.core.registry import EXPERIMENTS, ExperimentKind, validate_dataclass
from jaxsamp.core.validation import PositiveFloat, PositiveInt, check_fields
from jaxsamp.diagnostics import observables as obs
from jaxsamp.diagnostics.binary_discrepancies import expected_tv_of_exact_samples, hamming_mmd, total_variation
from jaxsamp.experiments.fitting import fit_method
from jaxsamp.experiments import plots
from jaxsamp.learned.binary import bernoulli_samplers as samplers
from jaxsamp.learned.binary.bernoulli_denoising import (
    BernoulliDenoisingSettings,
    draw,
    exact_posterior_mean,
    is_data_set,
)
from jaxsamp.mcmc import discrete
from jaxsamp.targets.binary import MAX_ENUMERATION_DIM, enumerated_probabilities
from jaxsamp.core.progress import phase

SHOWN = 64


@dataclasses.dataclass(frozen=True)
class BernoulliDenoisingExperimentSettings:
    """The checked settings of a ``bernoulli_denoising`` run.

    The config's ``params`` is one flat mapping (:func:`settings_from_params`
    splits it): the fields of :class:`~jaxsamp.learned.binary.bernoulli_denoising.BernoulliDenoisingSettings`
    (the batch size is ``run.num_chains``), those of its ``sampler``
    (:class:`~jaxsamp.learned.binary.bernoulli_samplers.SamplerSettings`; ``correction``
    ``none`` or ``trapezoid``), and the two below. Defaults are those classes' own.

    Attributes
    ----------
    denoiser : BernoulliDenoisingSettings
        The method's settings, with its ``sampler`` and ``num_train_samples`` (the training set size for targets
        with exact samples or Glauber data, 20 000).
    glauber_sweeps : int
        Checkerboard heat-bath sweeps per Glauber chain (1000).
    mmd_length_scale : float
        ``ell`` (bits) of the Hamming kernel ``exp(-H / ell)`` (16, about the median Hamming distance between digits).
    """

    denoiser: BernoulliDenoisingSettings
    glauber_sweeps: PositiveInt = 1000
    mmd_length_scale: PositiveFloat = 16.0

    def __post_init__(self):
        check_fields(self)


def settings_from_params(params: dict | None) -> BernoulliDenoisingExperimentSettings:
    """Split a run's flat ``params`` among the denoiser, its sampler and the run's own fields; one-line ConfigErrors."""
    where = "sampler 'bernoulli_denoising'"
    params = dict(params or {})
    names = {
        "denoiser": [f.name for f in dataclasses.fields(BernoulliDenoisingSettings) if f.name != "sampler"],
        "sampler": [f.name for f in dataclasses.fields(samplers.SamplerSettings)],
        "own": [f.name for f in dataclasses.fields(BernoulliDenoisingExperimentSettings) if f.name != "denoiser"],
    }
    accepted = [n for group in names.values() for n in group]
    for key in params:
        if key not in accepted:
            hint = " (the batch size is run.num_chains)" if key == "batch_size" else ""
            raise ConfigError(f"{where}: unknown parameter {key!r}{hint}; accepted: {', '.join(accepted)}")
    part = {group: {n: params[n] for n in group_names if n in params} for group, group_names in names.items()}
    sampler = validate_dataclass(where, part["sampler"], samplers.SamplerSettings)
    denoiser = validate_dataclass(where, {**part["denoiser"], "sampler": sampler}, BernoulliDenoisingSettings)
    return validate_dataclass(where, {**part["own"], "denoiser": denoiser}, BernoulliDenoisingExperimentSettings)


# --------------------------------------------------------------------------
# data sources and exact references
# --------------------------------------------------------------------------


def is_spin_lattice(target) -> bool:
    return target.domain.kind == "spin" and hasattr(target, "flip_log_ratios") and len(target.event_shape) == 2


def glauber_samples(target, key, num_samples: int, num_sweeps: int, **run_options) -> jax.Array:
    """Final states of ``num_samples`` independent checkerboard heat-bath (Glauber) chains after ``num_sweeps`` sweeps.

    Chains start from uniform spins and are run by the driver (``run_options``
    go to :func:`jaxsamp.run`). Costs ``2 num_sweeps`` calls of
    ``flip_log_ratios`` per chain.
    """
    chains = ensemble(discrete.checkerboard(target.flip_log_ratios, "heat_bath"))
    k_init, k_run = jax.random.split(key)
    start = samplers.uniform_noise(k_init, num_samples, target.event_shape)
    state, _ = run(chains.step, chains.init(start), k_run, num_sweeps, **{"progress": False, **run_options})
    return state.position


def training_data(
    target, settings: BernoulliDenoisingExperimentSettings, key, run_options: dict
) -> tuple[jax.Array, np.ndarray | None]:
    """``(train, held_out)``: the target's training data (module docstring) and its held-out split (data sets only)."""
    n = settings.denoiser.num_train_samples
    if is_data_set(target):
        return jnp.asarray(target.train()), target.test()
    if target.has_exact_samples:
        return target.sample(key, n), None
    if is_spin_lattice(target):
        options = {**run_options, "desc": "glauber data", "checkpoint_every": None}
        return glauber_samples(target, key, n, settings.glauber_sweeps, **options), None
    raise InputError(
        f"no training data for target {target.name!r}: use a data set, a target with exact samples or a spin lattice"
    )


def enumerated_law(target) -> np.ndarray | None:
    """The exact law over all ``2^d`` states (:func:`~jaxsamp.targets.binary.enumerated_probabilities`), or None."""
    if is_data_set(target) or math.prod(target.event_shape) > MAX_ENUMERATION_DIM:
        return None
    return enumerated_probabilities(target)


def sample_metrics(target, x, settings: BernoulliDenoisingExperimentSettings, train, held_out, law=None) -> dict:
    """The figures of samples ``x`` ``(n, *event_shape)``: TV (enumerable), MMD to held-out data, Ising ``<|m|>``."""
    out = {}
    if law is not None:
        out["tv"] = total_variation(jnp.asarray(x), law)
    if held_out is not None:
        n = min(len(x), len(held_out))
        out["mmd_test"] = float(hamming_mmd(jnp.asarray(x[:n]), jnp.asarray(held_out[:n]), settings.mmd_length_scale))
    if is_spin_lattice(target):
        exact = obs.exact_magnetization_observables(target)
        out["abs_m"] = float(obs.mean_abs_magnetization(jnp.asarray(x)))
        if exact is not None:
            out["abs_m_exact"] = exact["abs_order"]
            out["abs_m_err"] = abs(out["abs_m"] - exact["abs_order"])
            out["m_tv"] = obs.magnetization_tv(target, x)
    return out


# --------------------------------------------------------------------------
# plots
# --------------------------------------------------------------------------


def sample_grid(
    path: Path, samples: np.ndarray, title: str, reference: np.ndarray | None = None, reference_title: str = "data"
) -> Path:
    """Up to 64 samples as an 8x8 grid of images (2-D states) or as rows of bits (1-D), next to reference data."""
    plt = plots.pyplot()
    panels = [(title, np.asarray(samples)[:SHOWN])] + (
        [(reference_title, np.asarray(reference)[:SHOWN])] if reference is not None else []
    )
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 5), squeeze=False)
    for ax, (name, x) in zip(axes[0], panels):
        if x.ndim == 3:  # images: tile into a grid with one-pixel gaps
            n, h, w = x.shape
            side = math.ceil(math.sqrt(n))
            canvas = np.full((side * (h + 1) - 1, side * (w + 1) - 1), np.nan)
            for i, image in enumerate(x):
                r, c = divmod(i, side)
                canvas[r * (h + 1) : r * (h + 1) + h, c * (w + 1) : c * (w + 1) + w] = image
            ax.imshow(canvas, cmap="gray_r", vmin=-1, vmax=1, interpolation="nearest")
        else:
            ax.imshow(x.reshape(len(x), -1), cmap="gray_r", vmin=-1, vmax=1, interpolation="nearest", aspect="auto")
            ax.set_ylabel("sample")
            ax.set_xlabel("bit")
        ax.set_title(name)
        ax.set_xticks([])
        ax.set_yticks([])
    plots.save_figure(fig, path)
    return path


# --------------------------------------------------------------------------
# the experiment
# --------------------------------------------------------------------------


def check(cfg, target) -> BernoulliDenoisingExperimentSettings:
    """The settings against the target (a data set, exact samples or a spin lattice), before any work."""
    if cfg.sampler.name != "bernoulli_denoising":
        raise ConfigError(
            f"experiment kind 'bernoulli_denoising' takes sampler name bernoulli_denoising, got {cfg.sampler.name!r}"
        )
    if target.domain.kind != "spin":
        raise ConfigError(
            f"experiment kind 'bernoulli_denoising' needs a +-1 (spin) target, got domain {target.domain.kind!r} of {target.name!r}"
        )
    if not (is_data_set(target) or target.has_exact_samples or is_spin_lattice(target)):
        raise ConfigError(
            f"bernoulli_denoising: no training data for target {target.name!r} "
            "(needs a data set, exact samples or a spin lattice for Glauber data)"
        )
    settings = settings_from_params(cfg.sampler.params)
    if settings.denoiser.network == "conv" and len(target.event_shape) != 2:
        raise ConfigError(
            f"sampler 'bernoulli_denoising': network conv needs 2-D states, target {target.name!r} has {target.event_shape}"
        )
    return settings


def run_bernoulli_denoising(cfg, target, settings: BernoulliDenoisingExperimentSettings, run_dir: Path) -> dict:
    """Fit the denoiser for ``run.num_steps`` steps, sample ``run.num_eval_samples`` chains, evaluate."""
    k_data, k_fit, k_sample, k_exact = jax.random.split(jax.random.key(cfg.seed), 4)
    train, held_out = training_data(target, settings, k_data, cfg.driver_options(run_dir, "data_checkpoints"))
    fitted = fit_method(cfg, train, settings.denoiser, run_dir, k_fit, method="bernoulli_denoising")
    trace = fitted.history

    sampler = settings.denoiser.sampler
    start = time.perf_counter()
    sample_options = {"progress": cfg.run.progress, "chunk": cfg.run.chunk, "desc": f"{cfg.name} sampling"}
    x, final, sample_trace = draw(k_sample, fitted.settings, fitted.state, cfg.run.num_eval_samples, **sample_options)
    sample_seconds = time.perf_counter() - start
    x = np.asarray(x)

    with phase(f"scoring {x.shape[0]} samples against the exact references", cfg.run.progress):
        law = enumerated_law(target)
        scores = sample_metrics(target, x, settings, train, held_out, law)
    metrics = {
        "train_steps": cfg.run.num_steps,
        "train_seconds_incl_compile": fitted.seconds,
        "final_loss": float(np.mean(np.asarray(trace["loss"])[-max(1, cfg.run.num_steps // 20) :])),
        "final_bit_error": float(np.mean(np.asarray(trace["bit_error"])[-max(1, cfg.run.num_steps // 20) :])),
        "num_train": int(train.shape[0]),
        "num_samples": int(x.shape[0]),
        "denoiser_evals_per_sample": sampler.denoiser_evals_per_sample,
        "sample_seconds_incl_compile": sample_seconds,
        "acceptance_rate": float(np.mean(np.asarray(sample_trace["acceptance_rate"]))),
        "flip_probability": float(samplers.flip_probability(settings.denoiser.alpha)),
        **scores,
    }
    if law is not None:
        metrics["tv_floor"], metrics["tv_floor_sd"] = expected_tv_of_exact_samples(law, x.shape[0])
        if hasattr(target, "log_partition"):
            with phase("the same sampler with the exact denoiser", cfg.run.progress):
                x_exact, _, _ = samplers.sample(
                    sampler,
                    exact_posterior_mean(target.log_partition),
                    settings.denoiser.alpha,
                    k_exact,
                    cfg.run.num_eval_samples,
                    target.event_shape,
                )
                metrics["tv_exact_score"] = total_variation(x_exact, law)
    if held_out is not None:
        n = min(x.shape[0], len(held_out))
        metrics["mmd_train_vs_test"] = float(
            hamming_mmd(train[:n], jnp.asarray(held_out[:n]), settings.mmd_length_scale)
        )
    if is_spin_lattice(target) and "abs_m_exact" in metrics:
        metrics["train_abs_m_err"] = abs(float(obs.mean_abs_magnetization(train)) - metrics["abs_m_exact"])
    metrics["warnings"] = list(fitted.warnings)  # the samples are unweighted chains: no ESS to judge

    np.savez(
        run_dir / "samples.npz",
        x=x.astype(np.int8),
        y=np.asarray(final.position).astype(np.int8),
        **{f"trace_{k}": np.asarray(v) for k, v in trace.items()},
    )
    sample_grid(run_dir / "samples.png", x, f"{cfg.name}: samples", np.asarray(train), "training data")
    plots.trace_plot(
        run_dir / "training.png",
        {"loss (nats/bit)": np.asarray(trace["loss"]), "bit error": np.asarray(trace["bit_error"])},
        f"{cfg.name}: training",
    )
    return metrics


EXPERIMENTS.register(
    "bernoulli_denoising",
    "learn a Bernoulli-noise denoiser from binary data and sample by one-/two-stage/multi-measurement chains; TV, MMD, Ising <|m|>",
)(ExperimentKind(check, run_bernoulli_denoising))
