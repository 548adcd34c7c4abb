"""Binary data by Bernoulli-noise denoising: a 16-bit mixture, binarised digits and the critical 8x8 Ising model.

Protocol (fixed before the first full run; the sampler settings were chosen on the 16-bit mixture with
the EXACT denoiser only, never on a learned one or on digits/Ising figures):

* **Noise and samplers** (``jaxsamp.learned.binary.bernoulli_samplers``). alpha = 1 (flip probability 0.119)
  everywhere. One denoiser per data set and seed, trained with up to 4 measurements per example,
  serves the three samplers, each given **100 denoiser evaluations per sample** (one at ``init``, one
  per step), every chain starting from uniform noise:

  - ``one_stage``: the Langevin-like product-Bernoulli proposal, step size eta = 1, with the
    trapezoid Metropolis-Hastings correction (the one a learned denoiser allows), 99 steps,
    clean bits drawn from the final posterior means (``readout="bernoulli"``);
  - ``two_stage``: clean bits from the denoiser's means, then a fresh measurement, 99 steps,
    ``readout="bernoulli"``;
  - ``multi_m4``: two-stage moves over m = 4 measurements of 24 moves each (99 steps with the 3
    commits), final denoising ``sign(g(h))`` (``readout="sign"``).

* **Mixture** ``bernoulli_mixture(dim=16, num_components=4, logit_scale=2.0, seed=0)`` (the same
  target for every seed). 20 000 exact training samples per seed; MLP denoiser 256 x 256 (SiLU),
  Adam lr 1e-3 with cosine decay, batches of 256, 4000 steps. 50 000 samples per sampler;
  ``tv_mixture_d16_{sampler}`` is the total variation to the exact law over all 2^16 states,
  ``tv_mixture_d16_{sampler}_exact_score`` the same sampler with the exact denoiser
  ``grad A`` (same keys), ``tv_mixture_d16_floor`` the expected TV of 50 000 exact samples (the
  estimate's noise floor), ``tv_mixture_d16_evals_per_sample`` = 100.
* **Digits** ``binary_digits`` (scikit-learn's 8x8 digits, pixel >= 8 of 16 is on; fixed split:
  1297 training, 500 test images). Convolutional denoiser (5 zero-padded 3x3 layers of 32
  channels), Adam lr 1e-3 with cosine decay, batches of 128, 6000 steps. 500 samples per sampler
  (the test set's size); ``mmd_digits_{sampler}`` is the MMD (V-statistic) with the exponential
  Hamming kernel exp(-H / 16) (16 bits ~ the median Hamming distance between digits, 17) to the
  test set; ``mmd_digits_train_vs_test`` the same between 500 training images (a random subset per
  seed) and the test set: the floor. **Classical baseline**: a fully visible Boltzmann machine fitted
  to the training images by pseudo-likelihood (2000 full-batch Adam steps, lr 0.02, L2 1e-4),
  sampled by random-scan Gibbs (the heat bath of ``jaxsamp.mcmc.discrete``) from uniform noise:
  ``mmd_digits_fvbm_gibbs`` at **equal evaluations** (100 calls of the energy's all-site flip
  log-ratios, i.e. 100 single-site updates per sample) and ``mmd_digits_fvbm_gibbs_long`` after 200
  sweeps (12 800 evaluations: the model's own quality, not equal cost). Sample grid:
  ``benchmarks/results/bench_binary_digits_seed{k}.png`` (multi_m4 samples next to test images) and
  ``bench_binary_digits_fvbm_seed{k}.png`` (the FVBM's long-run samples).
* **Ising** ``ising(L=8, beta=0.4407)`` (critical). Training data: the final states of 10 000
  checkerboard heat-bath chains after 1000 sweeps from uniform spins (about 10 integrated
  autocorrelation times of |m|); circular conv denoiser (4 layers of 32 channels), Adam lr 1e-3 with
  cosine decay, batches of 128, 4000 steps. 4000 samples per sampler (standard error of <|m|> about
  0.003); ``ising_L8_abs_m_err`` is |<|m|> - exact| for ``multi_m4`` (the headline),
  ``ising_L8_abs_m_err_{one_stage,two_stage}`` for the others, ``ising_L8_glauber_abs_m_err`` the
  training data's own error, the exact <|m|> from the transfer matrix's P(m); ``ising_L8_m_tv*``: the TV
  between the samples' distribution of m and that exact P(m) (same naming).
* **Seeds 0, 1, 2** (training data, initialisation, batches and sampling keys); every figure is
  recorded per seed and as mean / sd over the seeds so far (``benchmark_io.record_seed``; the JSON
  merges, so parts and seeds may run separately).
* **Training figures** (per part): ``..._train_minutes``, the wall-clock minutes of training, compilation
  included, and ``..._final_loss``, the mean per-bit logistic loss of the last 100 steps.

Each denoiser trains through ``jaxsamp.fit("bernoulli_denoising", data, ...)`` with the part's training key,
which fit splits into the initialisation and training keys as the script did before (``jax.random.split``), so
the random-number stream is the one of the results recorded before this change.

Goals (the issue): TV within 2x of the exact-score sampler's; on digits MMD within 1.5x of the
train-vs-test floor and below the Boltzmann machine's Gibbs baseline at equal cost.

``--quick`` (CI) keeps the figure names but shrinks everything: an 8-bit mixture, 50-100 training steps,
a tiny conv on digits, a 4x4 Ising model, 20 evaluations per sample; its numbers mean nothing.

Usage: python scripts/bench_binary.py [--quick] [--parts mixture digits ising] [--seeds 0 1 2]
"""

from __future__ import annotations

import argparse
import json
import time

import benchmark_io
import jax
import jax.numpy as jnp
import numpy as np

import jaxsamp
from jaxsamp.core import ensemble, run
from jaxsamp.diagnostics import observables as obs
from jaxsamp.diagnostics.binary_discrepancies import expected_tv_of_exact_samples, hamming_mmd, total_variation
from jaxsamp.experiments.bernoulli_denoising_experiment import (
    enumerated_law,
    glauber_samples,
    sample_grid,
)
from jaxsamp.learned.binary import bernoulli_samplers as bs
from jaxsamp.learned.binary.bernoulli_denoising import (
    BernoulliDenoisingSettings,
    exact_posterior_mean,
    posterior_mean,
)
from jaxsamp.mcmc import discrete
from jaxsamp.targets.boltzmann_machine import fit_pseudo_likelihood

SCRIPT = "bench_binary"
ALPHA = 1.0
MMD_LENGTH = 16.0
CONV_BATCH = 128


def sampler_settings(quick: bool) -> dict:
    """The three samplers at equal evaluations per sample: 100 (quick: 20)."""
    steps = 19 if quick else 99
    per_measurement = (steps - 3) // 4
    return {
        "one_stage": bs.SamplerSettings("one_stage", 1.0, "trapezoid", 1, steps, "bernoulli"),
        "two_stage": bs.SamplerSettings("two_stage", 1.0, "none", 1, steps, "bernoulli"),
        "multi_m4": bs.SamplerSettings("two_stage", 1.0, "none", 4, per_measurement, "sign"),
    }


def train(data, settings: BernoulliDenoisingSettings, batch_size: int, num_steps: int, key):
    """Train a denoiser on ``data`` through :func:`jaxsamp.fit`; the learned posterior mean ``g_theta`` and the
    training figures (minutes of training, compilation included; mean loss of the last 100 steps)."""
    fitted = jaxsamp.fit("bernoulli_denoising", data, num_steps=num_steps, key=key, settings=settings,
                         batch_size=batch_size, progress=False)
    figures = {
        "train_minutes": fitted.seconds / 60,
        "final_loss": float(np.mean(fitted.history["loss"][-100:])),
    }
    return posterior_mean(fitted.settings, fitted.state.params, fitted.state.data.shape[1:]), figures


def draw(settings, denoiser_fn, key, n, event_shape, log_partition=None):
    x, _, _ = bs.sample(settings, denoiser_fn, ALPHA, key, n, event_shape, log_partition=log_partition)
    return x


def mixture_part(seed: int, quick: bool) -> dict:
    dim = 8 if quick else 16
    target = jaxsamp.targets.get("bernoulli_mixture", dim=dim, num_components=4, logit_scale=2.0, seed=0)
    law = enumerated_law(target)
    key = jax.random.key(seed)
    k_data, k_train, k_sample = jax.random.split(key, 3)
    steps, n_train, n = (100, 1000, 1000) if quick else (4000, 20_000, 50_000)
    settings = BernoulliDenoisingSettings(
        alpha=ALPHA,
        max_measurements=4,
        network="mlp",
        hidden=(16,) if quick else (256, 256),
        learning_rate=1e-3,
        decay_steps=steps,
    )
    learned, train_figures = train(target.sample(k_data, n_train), settings, 256, steps, k_train)
    out = {f"tv_mixture_d16_{k}": v for k, v in train_figures.items()}
    exact = exact_posterior_mean(target.log_partition)
    for name, sampler in sampler_settings(quick).items():
        k = jax.random.fold_in(k_sample, len(name))
        out[f"tv_mixture_d16_{name}"] = total_variation(draw(sampler, learned, k, n, (dim,)), law)
        out[f"tv_mixture_d16_{name}_exact_score"] = total_variation(draw(sampler, exact, k, n, (dim,)), law)
        out[f"tv_mixture_d16_{name}_ratio_to_exact_score"] = (
            out[f"tv_mixture_d16_{name}"] / out[f"tv_mixture_d16_{name}_exact_score"]
        )
        out["tv_mixture_d16_evals_per_sample"] = sampler.denoiser_evals_per_sample
    out["tv_mixture_d16_floor"] = expected_tv_of_exact_samples(law, n)[0]
    return out


def fvbm_gibbs(model, key, n: int, num_updates: int) -> jax.Array:
    """``n`` Gibbs chains from uniform noise, ``num_updates`` random-scan heat-bath site updates each (one evaluation per update)."""
    chains = ensemble(discrete.heat_bath(model.flip_log_ratios, None, num_updates))
    k_init, k_run = jax.random.split(key)
    state, _ = run(chains.step, chains.init(bs.uniform_noise(k_init, n, model.event_shape)), k_run, 1, progress=False)
    return state.position


def conv_denoiser_settings(quick: bool, conv_layers: int, padding: str, steps: int) -> BernoulliDenoisingSettings:
    """The convolutional denoiser of the digits and Ising groups: 4 measurements, 32 channels, lr 1e-3 (batches of
    :data:`CONV_BATCH`)."""
    return BernoulliDenoisingSettings(alpha=ALPHA, max_measurements=4, network="conv", channels=4 if quick else 32,
                            conv_layers=1 if quick else conv_layers, padding=padding,
                            learning_rate=1e-3, decay_steps=steps)


def digits_part(seed: int, quick: bool) -> dict:
    target = jaxsamp.targets.get("binary_digits")
    train_x, test_x = jnp.asarray(target.train()), jnp.asarray(target.test())
    key = jax.random.key(seed)
    k_train, k_sample, k_subset, k_gibbs = jax.random.split(key, 4)
    steps = 50 if quick else 6000
    n = 64 if quick else len(test_x)
    settings = conv_denoiser_settings(quick, 5, "zeros", steps)
    learned, train_figures = train(train_x, settings, CONV_BATCH, steps, k_train)
    out = {f"mmd_digits_{k}": v for k, v in train_figures.items()}
    test = test_x[:n]
    samples = {}
    for name, sampler in sampler_settings(quick).items():
        samples[name] = draw(sampler, learned, jax.random.fold_in(k_sample, len(name)), n, (8, 8))
        out[f"mmd_digits_{name}"] = float(hamming_mmd(samples[name], test, MMD_LENGTH))
        out["mmd_digits_evals_per_sample"] = sampler.denoiser_evals_per_sample
    subset = train_x[jax.random.permutation(k_subset, train_x.shape[0])[:n]]
    out["mmd_digits_train_vs_test"] = float(hamming_mmd(subset, test, MMD_LENGTH))
    model, fit = fit_pseudo_likelihood(train_x, num_steps=100 if quick else 2000, learning_rate=0.02, l2=1e-4)
    out["mmd_digits_fvbm_pseudo_log_likelihood"] = fit["pseudo_log_likelihood"]
    equal = fvbm_gibbs(model, jax.random.fold_in(k_gibbs, 0), n, out["mmd_digits_evals_per_sample"])
    long = fvbm_gibbs(model, jax.random.fold_in(k_gibbs, 1), n, (2 if quick else 200) * 64)
    out["mmd_digits_fvbm_gibbs"] = float(hamming_mmd(equal, test, MMD_LENGTH))
    out["mmd_digits_fvbm_gibbs_long"] = float(hamming_mmd(long, test, MMD_LENGTH))
    out["mmd_digits_multi_m4_ratio_to_floor"] = out["mmd_digits_multi_m4"] / out["mmd_digits_train_vs_test"]
    suffix = f"seed{seed}{'_quick' if quick else ''}.png"
    sample_grid(
        benchmark_io.RESULTS_DIR / f"{SCRIPT}_digits_{suffix}",
        np.asarray(samples["multi_m4"]),
        f"multi_m4 (MMD {out['mmd_digits_multi_m4']:.3f})",
        np.asarray(test),
        "test images",
    )
    sample_grid(
        benchmark_io.RESULTS_DIR / f"{SCRIPT}_digits_fvbm_{suffix}",
        np.asarray(long),
        f"FVBM Gibbs, 200 sweeps (MMD {out['mmd_digits_fvbm_gibbs_long']:.3f})",
    )
    return out


def ising_part(seed: int, quick: bool) -> dict:
    L = 4 if quick else 8
    target = jaxsamp.targets.get("ising", L=L, beta=0.4407)
    exact = obs.exact_magnetization_observables(target)["abs_order"]
    key = jax.random.key(seed)
    k_data, k_train, k_sample = jax.random.split(key, 3)
    chains, sweeps, steps, n = (256, 20, 50, 256) if quick else (10_000, 1000, 4000, 4000)
    data = glauber_samples(target, k_data, chains, sweeps)
    settings = conv_denoiser_settings(quick, 4, "circular", steps)
    learned, train_figures = train(data, settings, CONV_BATCH, steps, k_train)
    out = {f"ising_L8_{k}": v for k, v in train_figures.items()}
    out["ising_L8_abs_m_exact"] = exact
    out["ising_L8_glauber_abs_m_err"] = abs(float(obs.mean_abs_magnetization(data)) - exact)
    out["ising_L8_glauber_m_tv"] = obs.magnetization_tv(target, data)
    for name, sampler in sampler_settings(quick).items():
        x = draw(sampler, learned, jax.random.fold_in(k_sample, len(name)), n, (L, L))
        value = float(obs.mean_abs_magnetization(x))
        suffix = "" if name == "multi_m4" else f"_{name}"
        out[f"ising_L8_abs_m{suffix}"] = value
        out[f"ising_L8_abs_m_err{suffix}"] = abs(value - exact)
        out[f"ising_L8_m_tv{suffix}"] = obs.magnetization_tv(target, x)
    return out


PARTS = {"mixture": mixture_part, "digits": digits_part, "ising": ising_part}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="CI-sized run (numbers not meaningful)")
    parser.add_argument("--parts", nargs="+", choices=list(PARTS), default=list(PARTS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    args = parser.parse_args(argv)
    seeds = args.seeds[:1] if args.quick else args.seeds
    results: dict = {}
    for seed in seeds:
        for part in args.parts:
            start = time.perf_counter()
            figures = PARTS[part](seed, args.quick)
            for name, value in figures.items():
                benchmark_io.record_seed(results, SCRIPT, name, seed, value, args.quick)
            print(
                f"seed {seed} {part} ({(time.perf_counter() - start) / 60:.1f} min): {json.dumps(figures)}", flush=True
            )
            path = benchmark_io.write_results(SCRIPT, results, quick=args.quick, merge=True)
            print(f"  -> {path}", flush=True)


if __name__ == "__main__":
    main()
