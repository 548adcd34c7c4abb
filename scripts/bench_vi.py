"""Variational inference on distrax: SoftCVI, the ELBO and SNIS forward KL; AISIVI against BSIVI; NUTS as the yardstick.

Protocol (fixed before the first run; every method of a group gets the same number of
gradient steps and draws per step; seeds 0, 1, 2 seed the initialisation and training,
never the data; each figure is recorded per seed, ``..._seed{k}``, and as mean ``{figure}``
and standard deviation ``{figure}_sd``):

* **Linear regression** (:class:`~jaxsamp.targets.linear_regression.ConjugateLinearRegression`,
  50 covariates, 200 observations, data seed 0): a full-rank Gaussian from ``N(0, I)``,
  ``K = 8`` draws per step (SoftCVI alpha 0.75, proposal negatives), 5000 Adam steps with a
  cosine decay from 5e-3 to 1e-4. Headline ``{softcvi,elbo,snis_fkl}_linreg_kl``, the exact
  ``KL(q || p)`` (distrax's closed form).
* **Eight schools** (non-centred, numpyro): a 4-layer affine coupling flow (conditioners 2 x 32),
  ``K = 8``, 5000 Adam steps at 3e-3. Reference: numpyro NUTS, 8 chains x 5000 draws after
  2000 warm-up steps, key 20261202, drawn once per invocation. Headline
  ``{method}_eight_schools_mean_log_q_ref``, the mean ``log q`` of the reference draws (the
  SoftCVI paper's metric; higher is better), and ``_coverage50`` / ``_coverage90``, the share
  of reference draws inside q's 50 % / 90 % highest-density region (its ``log q`` above the
  quantile of ``log q`` over 20 000 draws of q; calibrated is 0.5 / 0.9).
* **2-D toys** (SIVI's banana, x-shaped, multimodal; exact log Z = 0): AISIVI and BSIVI with
  a 2-d latent, mean network 2 x 128, batches of 128, 256 inner draws, learning rates 1e-2
  dropping tenfold after step 1000, 2000 steps (the reference code: 4000 steps with 2 x 4096
  inner draws, the same tenfold drop half-way), AISIVI's reverse flow 6 couplings pretrained
  100 steps. Headline ``{aisivi,bsivi}_{target}_forward_kl``, by a 250 x 250
  midpoint rule over the central 99.98 % of 100 000 exact draws (padded 25 %), ``log q`` by
  Monte Carlo over 50 000 prior draws.
* **Banana at the reference's settings** (``--groups banana_reference``, issue 44; not in the default groups,
  protocol fixed before its first run): AISIVI and BSIVI with the settings of ``configs/aisivi_banana.yaml`` and
  ``configs/bsivi_banana.yaml``, which are the reference code's (s = 0.1 softplus(v) from v = 1, 4000 steps with
  the tenfold drop at step 2000, batch 128, 2 x 128 mean network, 6 couplings pretrained 100 steps) except
  for the inner draws: ``--inner-draws K`` (default 256; the reference's 2 x 4096 = 8192 costs about 32x the
  step). Seeds 0, 1, 2, scored as the toys (250 x 250 midpoint rule, ``log q`` by 50 000 prior draws).
  Headline ``aisivi_banana_ref{K}_tau{w}x{l}_forward_kl`` (goal <= 0.3; ``w x l`` the reverse flow's
  conditioners: the config's 64 x 2; step 1 ran them untagged, step 2 the reference's 8 x 1; ``_uniform`` with
  ``--latent-prior uniform``, the reference's ``U[0, 1]^d`` latent), beside
  ``bsivi_banana_ref{K}_forward_kl`` and both ``_q_mass``. ``--methods`` runs one of the two.
* **Bayesian logistic regression** (breast cancer, d = 31, an 80/20 split with seed 0,
  features standardised by the training rows): AISIVI and BSIVI with a 10-d latent, mean
  network 2 x 100, batches of 100, 256 inner draws, learning rate 1e-3 (reverse flow 1e-3,
  pretrained 500 steps), 3000 steps; NUTS (4 chains x 1000 draws after 1000 warm-up).
  Headline ``{aisivi,bsivi,nuts}_bayes_logreg_test_lpd``: the mean over test rows of
  ``log mean_s p(y | x, w_s)`` over 4000 draws.
* **Speed**: ``{method}_steps_per_s``, training steps per second after compilation at the
  settings above (eight schools for the objectives, banana for AISIVI / BSIVI), best of 3
  timed blocks of 200 steps. Timings need a quiet machine.

``--quick`` runs each group with one or two methods, for a few steps (numbers not meaningful).

Every method trains through :func:`jaxsamp.fit`, by its registered name with its settings object (the
learning-rate schedules are the settings' ``decay_step`` / ``decay_factor`` and, for the linear regression,
an optax cosine schedule given as ``optimizer=``). SNIS forward KL is registered as ``snis_forward_kl``; its
figures keep the prefix ``snis_fkl`` under which they were first recorded. ``fit(key=seed)`` splits the seed's
key into the initialisation and the training key, where the results recorded before training moved onto
``fit`` initialised at ``key(seed)`` and trained at ``key(1000 + seed)``: another random stream, the same
protocol. The speed figure times its blocks of 200 steps by ``fit``'s learning curve (``evaluate_every=200``),
which runs each block as one compiled chunk, where the driver ran the blocks recorded before in chunks of 4
steps, a host round trip each: the steps per second of the objectives, a fraction of a millisecond a step,
are higher than those recorded before and not comparable with them.

Usage: python scripts/bench_vi.py [--quick] [--groups linreg eight_schools toys logreg speed banana_reference]
       [--seeds 0 1 2] [--inner-draws 256] [--methods aisivi bsivi] [--latent-prior normal]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import benchmark_io
import jax
import jax.numpy as jnp
import numpy as np
import optax

import jaxsamp
from jaxsamp.core.registry import validate_dataclass
from jaxsamp.diagnostics.grid_divergences import forward_kl_on_grid
from jaxsamp.experiments.config import load_config
from jaxsamp.experiments.vi_experiment import box_around
from jaxsamp.learned.fit import Fitted
from jaxsamp.learned.vi import aisivi, bsivi, elbo, snis_forward_kl, softcvi
from jaxsamp.learned.vi.density import log_q as fitted_log_q
from jaxsamp.learned.vi.families import family_from_spec
from jaxsamp.learned.vi.semi_implicit import LATENT_PRIORS, SemiImplicitFamily
from jaxsamp.targets.bayes_logreg import BayesLogisticRegression, load_breast_cancer

OBJECTIVES = {  # figures' prefix: (registered name, settings at learning rate lr on a family spec)
    "softcvi": ("softcvi", lambda lr, family: softcvi.SoftCVISettings(alpha=0.75, learning_rate=lr, family=family)),
    "elbo": ("elbo", lambda lr, family: elbo.ELBOSettings(learning_rate=lr, family=family)),
    "snis_fkl": ("snis_forward_kl", lambda lr, family: snis_forward_kl.SNISForwardKLSettings(learning_rate=lr,
                                                                                             family=family)),
}
SEMI_IMPLICIT = {"aisivi": aisivi.AISIVISettings, "bsivi": bsivi.BSIVISettings}  # registered name: settings
REVERSE_MODEL = ("tau_layers", "tau_hidden_width", "tau_hidden_layers", "tau_max_log_scale", "pretrain_steps",
                 "tau_learning_rate")
K = 8  # draws per step of the objectives (the SoftCVI paper's)
TOYS = ("banana", "x_shaped", "multimodal")
GROUPS = ("linreg", "eight_schools", "toys", "logreg", "speed")
EXTRA_GROUPS = ("banana_reference",)  # run only when named
CONFIGS = Path(__file__).resolve().parent.parent / "configs"
# --quick runs each code path once rather than every method everywhere (compilation dominates it)
QUICK_METHODS = {"linreg": ("softcvi",), "eight_schools": ("elbo",), "toys": ("aisivi", "bsivi"), "logreg": ("bsivi",),
                 "speed": ("snis_fkl",), "banana_reference": ("aisivi",)}


def methods(group: str, quick: bool) -> tuple[str, ...]:
    """The methods a group runs: all of its kind, or the quick subset."""
    if group in ("toys", "logreg", "banana_reference"):
        every = tuple(SEMI_IMPLICIT)
    else:
        every = tuple(OBJECTIVES) + (tuple(SEMI_IMPLICIT) if group == "speed" else ())
    return QUICK_METHODS[group] if quick else every


def toy_batch(quick: bool) -> int:
    return 16 if quick else 128


def semi_implicit_settings(method: str, **values):
    """``method``'s settings from ``values``, the reverse model's left out for BSIVI (it has none)."""
    return SEMI_IMPLICIT[method](**{k: v for k, v in values.items() if method == "aisivi" or k not in REVERSE_MODEL})


def toy_settings(method: str, quick: bool):
    return semi_implicit_settings(method, latent_dim=2, hidden_width=16 if quick else 128, hidden_layers=2,
                                  num_inner=8 if quick else 256, tau_layers=2 if quick else 6,
                                  tau_hidden_width=8 if quick else 64, pretrain_steps=2 if quick else 100,
                                  learning_rate=1e-2, tau_learning_rate=1e-2, decay_step=None if quick else 1000,
                                  decay_factor=0.1, marginal_draws=64 if quick else 50_000)


def logreg_settings(method: str, quick: bool):
    return semi_implicit_settings(method, latent_dim=10, hidden_width=16 if quick else 100, hidden_layers=2,
                                  num_inner=8 if quick else 256, tau_layers=2 if quick else 6,
                                  tau_hidden_width=8 if quick else 64, pretrain_steps=2 if quick else 500,
                                  learning_rate=1e-3, tau_learning_rate=1e-3)


def fit(method: str, target, settings, *, batch_size: int, seed: int, num_steps: int, optimizer=None) -> Fitted:
    """:func:`jaxsamp.fit` of registered ``method`` with ``settings``, at ``key=seed``, without a progress bar."""
    return jaxsamp.fit(method, target, settings=settings, batch_size=batch_size, optimizer=optimizer, key=seed,
                       num_steps=num_steps, progress=False)


def linreg(seed: int, quick: bool) -> dict:
    """Exact ``KL(q || p)`` of a full-rank Gaussian after equal steps of each objective."""
    target = jaxsamp.targets.get("conjugate_linear_regression")
    steps = 20 if quick else 5000
    schedule = optax.cosine_decay_schedule(5e-3, steps, alpha=1e-4 / 5e-3)
    out = {}
    family = family_from_spec(target.event_shape[0], "full_rank_gaussian")
    for name in methods("linreg", quick):
        method, settings = OBJECTIVES[name]
        state = fit(method, target, settings(5e-3, "full_rank_gaussian"), batch_size=K, seed=seed, num_steps=steps,
                    optimizer=optax.adam(schedule)).state
        out[f"{name}_linreg_kl"] = float(family.distribution(state.params).kl_divergence(target.posterior()))
    return out


def eight_schools_reference(quick: bool) -> np.ndarray:
    """Flat unconstrained NUTS draws of eight schools (numpyro), the same for every method and seed."""
    from numpyro.infer import MCMC, NUTS

    from jaxsamp.targets import eight_schools

    target = jaxsamp.targets.get("eight_schools")
    chains, warmup, draws = (2, 50, 50) if quick else (8, 2000, 5000)
    mcmc = MCMC(NUTS(eight_schools.model), num_warmup=warmup, num_samples=draws, num_chains=chains,
                chain_method="vectorized", progress_bar=False)
    mcmc.run(jax.random.PRNGKey(20261202), eight_schools.SIGMA, eight_schools.Y)
    sites = mcmc.get_samples()
    unconstrained = {"mu": sites["mu"], "tau": jnp.log(sites["tau"]), "theta_tilde": sites["theta_tilde"]}
    flat = jax.vmap(lambda i: jax.flatten_util.ravel_pytree(jax.tree.map(lambda a: a[i], unconstrained))[0])
    reference = np.asarray(flat(jnp.arange(chains * draws)))
    check = target.unravel(jnp.asarray(reference[0]))  # the flat layout is the target's own
    assert np.isclose(float(check["tau"]), float(np.log(sites["tau"][0])))
    return reference


def hpd_coverage(log_q_reference: np.ndarray, log_q_own: np.ndarray, level: float) -> float:
    """Share of reference draws inside q's ``level`` highest-density region (estimated from q's own draws)."""
    return float(np.mean(log_q_reference >= np.quantile(log_q_own, 1.0 - level)))


def eight_schools(seed: int, quick: bool, reference: np.ndarray) -> dict:
    target = jaxsamp.targets.get("eight_schools")
    flow = {"name": "coupling_flow", "num_layers": 2 if quick else 4, "hidden": (8,) if quick else (32, 32)}
    steps, n = (20, 256) if quick else (5000, 20_000)
    out = {}
    family = family_from_spec(target.event_shape[0], flow)
    for name in methods("eight_schools", quick):
        method, settings = OBJECTIVES[name]
        state = fit(method, target, settings(3e-3, flow), batch_size=K, seed=seed, num_steps=steps).state
        log_q_ref = np.asarray(family.log_prob(state.params, jnp.asarray(reference, jnp.float32)))
        _, log_q_own = family.sample_and_log_prob(jax.random.key(2000 + seed), state.params, n)
        out[f"{name}_eight_schools_mean_log_q_ref"] = float(np.mean(log_q_ref))
        for level in (50, 90):
            out[f"{name}_eight_schools_coverage{level}"] = hpd_coverage(log_q_ref, np.asarray(log_q_own), level / 100)
    return out


def toys(seed: int, quick: bool) -> dict:
    out = {}
    steps = 10 if quick else 2000
    for target_name in TOYS[:1] if quick else TOYS:
        target = jaxsamp.targets.get(target_name)
        box = box_around(np.asarray(target.sample(jax.random.key(3000), 1000 if quick else 100_000)), 0.01, 0.25)
        log_p = jax.jit(jax.vmap(target.log_prob))
        for method in methods("toys", quick):
            fitted = fit(method, target, toy_settings(method, quick), batch_size=toy_batch(quick), seed=seed,
                         num_steps=steps)
            out.update(grid_figures(f"{method}_{target_name}", fitted, seed, log_p, box, quick))
    return out


def grid_figures(name: str, fitted: Fitted, seed: int, log_p, box, quick: bool) -> dict:
    """``{name}_forward_kl`` and ``{name}_q_mass`` of a fitted semi-implicit model on the grid over ``box``."""
    log_q = jax.jit(lambda z: fitted_log_q(fitted.method, fitted.settings, fitted.state, z,
                                           jax.random.key(4000 + seed)))
    figures = forward_kl_on_grid(log_p, log_q, box, 20 if quick else 250)
    return {f"{name}_forward_kl": figures["forward_kl"], f"{name}_q_mass": figures["q_mass"]}


def reference_banana_run(method: str, quick: bool, inner_draws: int) -> tuple[object, int, int]:
    """Settings, batch and steps of ``configs/{method}_banana.yaml`` with ``inner_draws`` inner draws and the toys'
    50 000 marginal draws (quick: the toys' tiny sizes with the config's scale parameterisation, 10 steps)."""
    cfg = load_config(CONFIGS / f"{method}_banana.yaml")
    settings = validate_dataclass("sampler", cfg.sampler.params, SEMI_IMPLICIT[method])
    if quick:
        scale = {"init_scale": settings.init_scale, "scale_factor": settings.scale_factor}
        return dataclasses.replace(toy_settings(method, True), **scale), toy_batch(True), 10
    settings = dataclasses.replace(settings, num_inner=inner_draws, marginal_draws=50_000)
    return settings, cfg.run.num_chains, cfg.run.num_steps


def banana_reference_name(method: str, settings, inner_draws: int) -> str:
    """``{method}_banana_ref{K}``, for AISIVI ``_tau{width}x{layers}`` (its reverse model's conditioners), and
    ``_uniform`` under the uniform latent prior.

    The first run (2026-12-05) used conditioners of 2 x 64 under the untagged name ``aisivi_banana_ref256``;
    the tag keeps it apart from the reference code's 1 x 8 (``_tau8x1``) and the later runs.
    """
    name = f"{method}_banana_ref{inner_draws}"
    if method == "aisivi":  # the one with a reverse model
        name += f"_tau{settings.tau_hidden_width}x{settings.tau_hidden_layers}"
    return name + ("" if settings.latent_prior == "normal" else f"_{settings.latent_prior}")


def banana_reference(seed: int, quick: bool, inner_draws: int, chosen: tuple[str, ...], latent_prior: str) -> dict:
    """Forward KL on the banana of AISIVI and BSIVI (those of ``chosen``) at the reference's settings and schedule."""
    target = jaxsamp.targets.get("banana")
    box = box_around(np.asarray(target.sample(jax.random.key(3000), 1000 if quick else 100_000)), 0.01, 0.25)
    log_p = jax.jit(jax.vmap(target.log_prob))
    out = {}
    for method in (m for m in methods("banana_reference", quick) if m in chosen):
        settings, batch, steps = reference_banana_run(method, quick, inner_draws)
        settings = dataclasses.replace(settings, latent_prior=latent_prior)
        fitted = fit(method, target, settings, batch_size=batch, seed=seed, num_steps=steps)
        out.update(grid_figures(banana_reference_name(method, settings, inner_draws), fitted, seed, log_p, box, quick))
    return out


def logreg_split():
    """The breast-cancer data split 80/20 (seed 0), standardised by the training rows; test design with intercept."""
    features, labels = load_breast_cancer()
    order = np.random.default_rng(0).permutation(len(labels))
    cut = int(0.8 * len(labels))
    train_rows, test_rows = order[:cut], order[cut:]
    mean, sd = features[train_rows].mean(0), features[train_rows].std(0)
    standardise = lambda f: (f - mean) / sd
    target = BayesLogisticRegression(standardise(features[train_rows]), labels[train_rows])
    test_design = np.hstack([np.ones((len(test_rows), 1)), standardise(features[test_rows])])
    return target, test_design, labels[test_rows]


def test_lpd(weights: np.ndarray, design: np.ndarray, labels: np.ndarray) -> float:
    """Mean over test rows of ``log mean_s p(y | x, w_s)`` for draws ``weights`` ``(S, d)``."""
    logits = design @ np.asarray(weights, np.float64).T  # (rows, S)
    log_lik = labels[:, None] * logits - np.logaddexp(0.0, logits)
    return float(np.mean(np.logaddexp.reduce(log_lik, axis=1) - np.log(log_lik.shape[1])))


def logreg(seed: int, quick: bool) -> dict:
    target, design, labels = logreg_split()
    steps, n = (10, 64) if quick else (3000, 4000)
    out = {}
    for method in methods("logreg", quick):
        settings = logreg_settings(method, quick)
        state = fit(method, target, settings, batch_size=16 if quick else 100, seed=seed, num_steps=steps).state
        _, z = SemiImplicitFamily(target.event_shape[0], settings).draw(jax.random.key(5000 + seed), state.phi, n)
        out[f"{method}_bayes_logreg_test_lpd"] = test_lpd(np.asarray(z), design, labels)
    warmup, draws = (20, 16) if quick else (1000, 1000)
    posterior = jaxsamp.sample(target, key=6000 + seed, num_chains=4, num_warmup=warmup, num_samples=draws,
                               progress=False)
    out["nuts_bayes_logreg_test_lpd"] = test_lpd(np.asarray(posterior.positions).reshape(-1, design.shape[1]),
                                                 design, labels)
    return out


def speed(quick: bool) -> dict:
    """Training steps per second after compilation: best of 3 timed blocks of 200 steps (quick: 5).

    One fit of 4 blocks per method, its learning curve evaluated after each block (on 2 draws; fit keeps
    the evaluations' time out of the curve's ``train_seconds``): the first block compiles, the next 3 are timed
    by the differences of ``train_seconds``.
    """
    block = 5 if quick else 200
    schools, banana = jaxsamp.targets.get("eight_schools"), jaxsamp.targets.get("banana")
    flow = {"name": "coupling_flow", "num_layers": 4, "hidden": (32, 32)}
    out = {}
    for name in methods("speed", quick):
        if name in OBJECTIVES:
            method, settings_at = OBJECTIVES[name]
            target, settings, batch = schools, settings_at(3e-3, flow), K
        else:
            method, target, settings, batch = name, banana, toy_settings(name, quick), toy_batch(quick)
        fitted = jaxsamp.fit(method, target, settings=settings, batch_size=batch, key=0, num_steps=4 * block,
                             progress=False, evaluate_every=block, evaluate_samples=2)
        out[f"{name}_steps_per_s"] = block / float(np.min(np.diff(fitted.curve["train_seconds"])))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="CI-sized run (numbers not meaningful)")
    parser.add_argument("--groups", nargs="+", choices=GROUPS + EXTRA_GROUPS, default=list(GROUPS),
                        help="banana_reference is run only when named")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--inner-draws", type=int, default=256,
                        help="banana_reference: inner draws per point (the reference code's: 8192)")
    parser.add_argument("--methods", nargs="+", choices=tuple(SEMI_IMPLICIT), default=list(SEMI_IMPLICIT),
                        help="banana_reference: the methods to run (default both)")
    parser.add_argument("--latent-prior", choices=LATENT_PRIORS, default="normal",
                        help="banana_reference: p(eps), normal (the configs') or the reference code's uniform")
    args = parser.parse_args(argv)
    seeds = args.seeds[:1] if args.quick else args.seeds
    results: dict = {}

    def record(figures: dict, seed: int | None):
        for name, value in figures.items():
            if seed is None:
                results[name] = value
            else:
                benchmark_io.record_seed(results, "bench_vi", name, seed, value, args.quick)
        print(json.dumps(figures), flush=True)
        path = benchmark_io.write_results("bench_vi", results, quick=args.quick, merge=True)
        print(f"  -> {path}", flush=True)

    reference = eight_schools_reference(args.quick) if "eight_schools" in args.groups else None
    for seed in seeds:
        if "linreg" in args.groups:
            record(linreg(seed, args.quick), seed)
        if "eight_schools" in args.groups:
            record(eight_schools(seed, args.quick, reference), seed)
        if "toys" in args.groups:
            record(toys(seed, args.quick), seed)
        if "logreg" in args.groups:
            record(logreg(seed, args.quick), seed)
        if "banana_reference" in args.groups:
            record(banana_reference(seed, args.quick, args.inner_draws, tuple(args.methods), args.latent_prior), seed)
    if "speed" in args.groups:
        record(speed(args.quick), None)


if __name__ == "__main__":
    main()
