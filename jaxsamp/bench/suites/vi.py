"""Suite ``vi``: SoftCVI, the ELBO and SNIS forward KL on an explicit family; AISIVI against BSIVI on SIVI's 2-D toys,
the banana at the reference code's settings and a Bayesian logistic regression; NUTS as the yardstick."""

from __future__ import annotations

import functools
import re
import time

import numpy as np

from jaxsamp.bench import cells
from jaxsamp.bench.protocol import Budget, Cell, Comparison, Goal, Protocol
from jaxsamp.core.errors import ConfigError

#: the objectives on an explicit family (registered names) and their settings apart from the learning rate and family
OBJECTIVES = {"softcvi": {"alpha": 0.75}, "elbo": {}, "snis_forward_kl": {}}
SEMI_IMPLICIT = ("aisivi", "bsivi")
#: AISIVI's reverse model: settings BSIVI does not have
REVERSE_MODEL = ("tau_layers", "tau_hidden_width", "tau_hidden_layers", "tau_max_log_scale", "pretrain_steps",
                 "tau_learning_rate")
K = 8  # draws per step of the objectives (the SoftCVI paper's)
TOYS = ("banana", "x_shaped", "multimodal")
FLOW = {"name": "coupling_flow", "num_layers": 4, "hidden": [32, 32]}
#: the quick size of a semi-implicit cell: tiny networks and draws, 10 steps
QUICK_SEMI_IMPLICIT = {"hidden_width": 16, "num_inner": 8, "tau_layers": 2, "tau_hidden_width": 8, "pretrain_steps": 2,
                       "marginal_draws": 64}
#: the 2-D quadrature: a grid over the central 99.98 % of exact draws, padded 25 %
GRID = {"name": "grid", "grid_points": 250, "box_samples": 100_000}
QUICK_GRID = {"grid_points": 20, "box_samples": 1000}
#: the logistic regression's data: 20 % of the rows held out (permutation seed 0)
TEST_SPLIT = {"test_fraction": 0.2, "seed": 0}
#: the banana at the reference code's settings (``configs/{aisivi,bsivi}_banana.yaml``), inner draws apart
BANANA_REFERENCE = {"latent_dim": 2, "hidden_width": 128, "hidden_layers": 2, "init_scale": 0.1313262,
                    "scale_factor": 0.1, "tau_layers": 6, "tau_hidden_width": 64, "tau_hidden_layers": 2,
                    "pretrain_steps": 100, "learning_rate": 1e-2, "tau_learning_rate": 1e-2, "decay_step": 2000,
                    "decay_factor": 0.1, "marginal_draws": 50_000}


def semi_implicit_settings(method: str, **values) -> dict:
    """``values`` for ``method``, the reverse model's left out for BSIVI (it has none)."""
    return {k: v for k, v in values.items() if method == "aisivi" or k not in REVERSE_MODEL}


def toy_settings(method: str) -> dict:
    """SIVI's toys: a 2-d latent, a 2 x 128 mean network, 256 inner draws, rates 1e-2 dropping tenfold at step 1000."""
    return semi_implicit_settings(method, latent_dim=2, hidden_width=128, hidden_layers=2, num_inner=256, tau_layers=6,
                                  tau_hidden_width=64, pretrain_steps=100, learning_rate=1e-2, tau_learning_rate=1e-2,
                                  decay_step=1000, decay_factor=0.1, marginal_draws=50_000)


def quick_semi_implicit(method: str, **extra) -> dict:
    return semi_implicit_settings(method, **QUICK_SEMI_IMPLICIT, **extra)


def objective_cell(method: str, target: str, spec: dict, settings: dict, updates: int, score: dict, quick: dict,
                   schedule: dict | None = None) -> Cell:
    params = {"method": method, "settings": {**OBJECTIVES[method], **settings}, "batch_size": K, "score": score}
    if schedule is not None:
        params["schedule"] = schedule
    return Cell(f"{method}/{target}", "vi_fit", spec, params, Budget(updates=updates), quick=quick)


def toy_cell(method: str, target: str) -> Cell:
    return Cell(f"{method}/{target}", "vi_fit", {"name": target},
                {"method": method, "settings": toy_settings(method), "batch_size": 128, "score": GRID},
                Budget(updates=2000),
                quick={"settings": quick_semi_implicit(method, decay_step=None), "batch_size": 16,
                       "budget_updates": 10, "score": QUICK_GRID})


def banana_reference_cell(method: str, inner_draws: int = 256, tau: tuple[int, int] = (64, 2),
                          latent_prior: str = "normal") -> Cell:
    """``{method}-ref{K}[_tau{w}x{l}][_{prior}]/banana``: the reference code's settings with ``K`` inner draws (AISIVI's
    reverse model with conditioners of ``l`` hidden layers of ``w``) and ``latent_prior``."""
    variant = f"ref{inner_draws}"
    settings = {**BANANA_REFERENCE, "num_inner": inner_draws, "latent_prior": latent_prior}
    if method == "aisivi":
        variant += f"_tau{tau[0]}x{tau[1]}"
        settings.update(tau_hidden_width=tau[0], tau_hidden_layers=tau[1])
    variant += "" if latent_prior == "normal" else f"_{latent_prior}"
    scale = {"init_scale": BANANA_REFERENCE["init_scale"], "scale_factor": BANANA_REFERENCE["scale_factor"]}
    return Cell(f"{method}-{variant}/banana", "vi_fit", {"name": "banana"},
                {"method": method, "settings": semi_implicit_settings(method, **settings), "batch_size": 128,
                 "score": GRID},
                Budget(updates=4000),
                quick={"settings": {**toy_settings(method), **quick_semi_implicit(method, decay_step=None), **scale,
                                    "num_inner": 8, "latent_prior": latent_prior},
                       "batch_size": 16, "budget_updates": 10, "score": QUICK_GRID})


def logreg_cell(method: str) -> Cell:
    settings = semi_implicit_settings(method, latent_dim=10, hidden_width=100, hidden_layers=2, num_inner=256,
                                      tau_layers=6, tau_hidden_width=64, pretrain_steps=500, learning_rate=1e-3,
                                      tau_learning_rate=1e-3)
    return Cell(f"{method}/bayes_logreg", "vi_fit", {"name": "bayes_logreg", "dataset": "breast_cancer"},
                {"method": method, "settings": settings, "batch_size": 100, "test_split": TEST_SPLIT,
                 "score": {"name": "test_lppd", "num_samples": 4000}},
                Budget(updates=3000),
                quick={"settings": quick_semi_implicit(method), "batch_size": 16, "budget_updates": 10,
                       "score": {"num_samples": 64}})


def speed_cell(method: str) -> Cell:
    """Training steps per second of ``method`` at its settings above: eight schools for the objectives, the banana
    toy for AISIVI and BSIVI."""
    if method in OBJECTIVES:
        target, settings, batch = "eight_schools", {**OBJECTIVES[method], "learning_rate": 3e-3, "family": FLOW}, K
        quick = {}
    else:
        target, settings, batch = "banana", toy_settings(method), 128
        quick = {"settings": quick_semi_implicit(method, decay_step=None), "batch_size": 16}
    return Cell(f"speed-{method}/{target}", "vi_speed", {"name": target},
                {"method": method, "settings": settings, "batch_size": batch, "block": 200},
                quick={**quick, "block": 5})


LINREG = {"name": "conjugate_linear_regression"}
EIGHT_SCHOOLS_SCORE = {"name": "reference_log_q", "num_samples": 20_000,
                       "reference": {"num_chains": 8, "num_warmup": 2000, "num_samples": 5000, "key": 20261202}}
CELLS = (
    *(objective_cell(m, "linreg", LINREG, {"learning_rate": 5e-3, "family": "full_rank_gaussian"}, 5000,
                     {"name": "reverse_kl"}, {"budget_updates": 20}, schedule={"cosine_decay_to": 1e-4})
      for m in OBJECTIVES),
    *(objective_cell(m, "eight_schools", {"name": "eight_schools"}, {"learning_rate": 3e-3, "family": FLOW}, 5000,
                     EIGHT_SCHOOLS_SCORE,
                     {"settings": {"family": {"name": "coupling_flow", "num_layers": 2, "hidden": [8]}},
                      "budget_updates": 20,
                      "score": {"num_samples": 256,
                                "reference": {"num_chains": 2, "num_warmup": 50, "num_samples": 50, "key": 20261202}}})
      for m in OBJECTIVES),
    *(toy_cell(m, t) for t in TOYS for m in SEMI_IMPLICIT),
    *(logreg_cell(m) for m in SEMI_IMPLICIT),
    Cell("nuts/bayes_logreg", "vi_nuts", {"name": "bayes_logreg", "dataset": "breast_cancer"},
         {"num_chains": 4, "num_warmup": 1000, "num_samples": 1000, "test_split": TEST_SPLIT},
         quick={"num_warmup": 20, "num_samples": 16}),
    banana_reference_cell("aisivi"),
    banana_reference_cell("bsivi"),
    banana_reference_cell("aisivi", tau=(8, 1)),
    banana_reference_cell("aisivi", latent_prior="uniform"),
    banana_reference_cell("aisivi", inner_draws=1024),
    banana_reference_cell("aisivi", inner_draws=4096),
    *(speed_cell(m) for m in (*OBJECTIVES, *SEMI_IMPLICIT)),
)
BANANA_REFERENCE_CELLS = tuple(c.name for c in CELLS if re.fullmatch(r"\w+-ref\d+\w*/banana", c.name))

PROTOCOL = Protocol(
    suite="vi",
    summary="Variational inference: SoftCVI, ELBO and SNIS forward KL (linear regression, eight schools); AISIVI "
            "against BSIVI (SIVI's 2-D toys, the banana at the reference code's settings, logistic regression); "
            "NUTS as the yardstick",
    cells=CELLS,
    seeds=(0, 1, 2),
    headline="forward_kl",
    figures=("q_mass", "p_mass", "reverse_kl", "mean_log_q_reference", "hpd_coverage50", "hpd_coverage90",
             "test_lppd", "train_steps_per_s", "train_seconds"),
    evaluation={},
    quick_evaluation={},
    goals=tuple(Goal(cell, "forward_kl", 0.3, source="issue 44: the SIVI banana at the reference code's settings")
                for cell in BANANA_REFERENCE_CELLS),
    comparisons=(
        *(Comparison(f"{m}/{t}", f"elbo/{t}", figure) for m in ("softcvi", "snis_forward_kl")
          for t, figure in (("linreg", "reverse_kl"), ("eight_schools", "mean_log_q_reference"))),
        *(Comparison(f"aisivi/{t}", f"bsivi/{t}", "forward_kl") for t in TOYS),
        *(Comparison(f"{m}/bayes_logreg", "nuts/bayes_logreg", "test_lppd") for m in SEMI_IMPLICIT),
    ),
    notes="""\
Every method of a group gets the same number of gradient steps and draws per step; the seeds seed the
initialisation and training (``jaxsamp.fit(key=seed)``), never the data. Each cell trains through
:func:`jaxsamp.fit` by its registered name with its settings (runner ``vi_fit``) and is scored by the figure its
group needs (the methods' own ``evaluate`` gives none of them), keys fixed per seed as the script this suite
replaces drew them.

Linear regression (``conjugate_linear_regression``: 50 covariates, 200 observations, data seed 0): a full-rank
Gaussian from N(0, I), K = 8 draws per step (SoftCVI alpha 0.75, proposal negatives), 5000 Adam steps with a
cosine decay from 5e-3 to 1e-4 (``fit``'s ``optimizer=``). Figure ``reverse_kl``, the exact KL(q || p) (distrax's
closed form against the conjugate posterior).

Eight schools (non-centred, numpyro): a 4-layer affine coupling flow (conditioners 2 x 32), K = 8, 5000 Adam
steps at 3e-3. Reference: numpyro NUTS, 8 chains x 5000 draws after 2000 warm-up steps, key 20261202, drawn once
per process and shared by every method and seed. Figures ``mean_log_q_reference``, the mean log q of the
reference draws (the SoftCVI paper's metric; higher is better), and ``hpd_coverage50`` / ``hpd_coverage90``, the
share of reference draws inside q's 50 % / 90 % highest-density region (their log q above the quantile of log q
over 20 000 draws of q at key 2000 + seed; calibrated is 0.5 / 0.9).

SIVI's 2-D toys (banana, x-shaped, multimodal; exact log Z = 0): AISIVI and BSIVI with a 2-d latent, mean
network 2 x 128, batches of 128, 256 inner draws, learning rates 1e-2 dropping tenfold after step 1000, 2000
steps (the reference code: 4000 steps with 2 x 4096 inner draws, the same tenfold drop half-way), AISIVI's
reverse flow 6 couplings (conditioners 2 x 64) pretrained 100 steps. Figure ``forward_kl`` (the headline) by a
250 x 250 midpoint rule over the central 99.98 % of 100 000 exact draws (key 3000), padded 25 %, log q by Monte
Carlo over 50 000 prior draws (key 4000 + seed); ``q_mass`` and ``p_mass``, each density's mass on the grid.

The banana at the reference code's settings (issue 44; ``-ref{K}`` cells, protocol fixed before its first run on
2026-12-05): AISIVI and BSIVI with the settings of ``configs/aisivi_banana.yaml`` and ``configs/bsivi_banana.yaml``,
which are the reference code's (s = 0.1 softplus(v) from v = 1, 4000 steps with the tenfold drop at step 2000,
batch 128, 2 x 128 mean network, 6 couplings pretrained 100 steps) except for the K inner draws (256; the
reference's 2 x 4096 = 8192 costs about 32x the step), scored as the toys. Goal: forward KL <= 0.3. AISIVI's
cells are tagged with its reverse flow's conditioners, ``_tau{w}x{l}``: 64 x 2, the config's (the first run's,
recorded untagged as ``aisivi_banana_ref256``), and 8 x 1, the reference code's (step 2); ``_uniform`` with the
reference's U[0, 1]^d latent (``latent_prior``); 1024 and 4096 inner draws (step 3).

Bayesian logistic regression (breast cancer, d = 31; 20 % of the rows held out by a permutation of seed 0, the
features standardised by the training rows): AISIVI and BSIVI with a 10-d latent, mean network 2 x 100, batches
of 100, 256 inner draws, learning rate 1e-3 (reverse flow 1e-3, pretrained 500 steps), 3000 steps; NUTS
(``nuts/bayes_logreg``: ``jaxsamp.sample``, 4 chains x 1000 draws after 1000 warm-up steps, key 6000 + seed).
Figure ``test_lppd``: the mean over test rows of log mean_s p(y | x, w_s) over 4000 draws (the variational ones
at key 5000 + seed).

Speed (``speed-<method>/<target>``): ``train_steps_per_s``, training steps per second after compilation at the
settings above (eight schools for the objectives, the banana toy for AISIVI / BSIVI): one ``fit`` of 4 blocks of
200 steps with its learning curve evaluated after each (on 2 draws, kept out of its clock), the first block
compiling, the best of the next 3 timed. A timing: to run alone on the machine. The script timed key 0 once
(figures not per seed, not converted); the suite times one fit per seed.

Random streams: the converted seeds trained through ``fit(key=seed)`` as the suite does (results recorded before
training moved onto ``fit`` initialised at key(seed) and trained at key(1000 + seed): another stream, the same
protocol) and were scored at the keys above, so a rerun of a cell draws the converted numbers. The script named
SNIS forward KL's figures ``snis_fkl_*``; its cells are ``snis_forward_kl/*``, the registered name.
""",
)


# --- the runners -------------------------------------------------------------------------------------------------


def split_target(spec, test_split: dict | None):
    """The cell's target, or with ``test_split`` (``test_fraction``, permutation ``seed``) the logistic regression on
    its training rows and the held-out ``(design with intercept, labels)``, standardised by the training rows."""
    if test_split is None:
        return cells.build_target(spec), None
    from jaxsamp.targets.bayes_logreg import (
        DATASETS,
        BayesLogisticRegression,
        load_breast_cancer,
    )

    params = dict(spec)
    if params.pop("name") != "bayes_logreg" or params.get("dataset", "breast_cancer") not in DATASETS:
        raise ConfigError(f"test_split holds out rows of a bayes_logreg dataset ({', '.join(DATASETS)}), got {spec}")
    features, labels = load_breast_cancer()
    order = np.random.default_rng(test_split["seed"]).permutation(len(labels))
    cut = int((1 - test_split["test_fraction"]) * len(labels))
    train, test = order[:cut], order[cut:]
    mean, sd = features[train].mean(0), features[train].std(0)
    target = BayesLogisticRegression(features[train], labels[train], params.get("prior_scale", 1.0))
    design = np.hstack([np.ones((len(test), 1)), (features[test] - mean) / sd])
    return target, (design, labels[test])


def test_lppd(weights, held_out) -> float:
    """Mean over the held-out rows of ``log mean_s p(y | x, w_s)`` (the LPPD) for coefficient draws ``(S, d)``."""
    from jaxsamp.diagnostics.predictive import lppd

    design, labels = held_out
    logits = np.asarray(weights, np.float64) @ design.T  # (S, rows)
    return float(lppd(labels * logits - np.logaddexp(0.0, logits)))


@functools.cache
def eight_schools_reference(num_chains: int, num_warmup: int, num_samples: int, key: int) -> np.ndarray:
    """Flat unconstrained NUTS draws of eight schools (numpyro), in the target's layout; computed once per process."""
    import jax
    import jax.numpy as jnp
    from numpyro.infer import MCMC, NUTS

    from jaxsamp.targets import eight_schools

    mcmc = MCMC(NUTS(eight_schools.model), num_warmup=num_warmup, num_samples=num_samples, num_chains=num_chains,
                chain_method="vectorized", progress_bar=False)
    mcmc.run(jax.random.PRNGKey(key), eight_schools.SIGMA, eight_schools.Y)
    sites = mcmc.get_samples()
    unconstrained = {"mu": sites["mu"], "tau": jnp.log(sites["tau"]), "theta_tilde": sites["theta_tilde"]}
    flat = jax.vmap(lambda i: jax.flatten_util.ravel_pytree(jax.tree.map(lambda a: a[i], unconstrained))[0])
    return np.asarray(flat(jnp.arange(num_chains * num_samples)))


def hpd_coverage(log_q_reference: np.ndarray, log_q_own: np.ndarray, level: float) -> float:
    """Share of reference draws inside q's ``level`` highest-density region (its log q above the ``1 - level``
    quantile of log q over q's own draws)."""
    return float(np.mean(log_q_reference >= np.quantile(log_q_own, 1.0 - level)))


def score(fitted, target, seed: int, held_out, options: dict) -> dict:
    """The figures of a fitted variational family that ``options["name"]`` asks for (see the suite's notes)."""
    import jax
    import jax.numpy as jnp

    from jaxsamp.learned.vi.density import draws, log_q

    name, (dim,) = options["name"], target.event_shape
    density = jax.jit(lambda z, key: log_q(fitted.method, fitted.settings, fitted.state, z, key))
    if name == "reverse_kl":
        from jaxsamp.learned.vi.families import family_from_spec

        family = family_from_spec(dim, fitted.settings.family)
        return {"reverse_kl": float(family.distribution(fitted.state.params).kl_divergence(target.posterior()))}
    if name == "reference_log_q":
        reference = eight_schools_reference(**options["reference"])
        own = draws(fitted.method, fitted.settings, fitted.state, jax.random.key(2000 + seed), options["num_samples"],
                    dim)
        key = jax.random.key(2000 + seed)  # unused by an explicit family's exact log q
        log_q_ref = np.asarray(density(jnp.asarray(reference, jnp.float32), key))
        log_q_own = np.asarray(density(own, key))
        return {"mean_log_q_reference": float(np.mean(log_q_ref)),
                **{f"hpd_coverage{level}": hpd_coverage(log_q_ref, log_q_own, level / 100) for level in (50, 90)}}
    if name == "grid":
        from jaxsamp.diagnostics.grid_divergences import forward_kl_on_grid
        from jaxsamp.experiments.vi_experiment import box_around

        box = box_around(np.asarray(target.sample(jax.random.key(3000), options["box_samples"])), 0.01, 0.25)
        log_z = 0.0 if target.log_Z is None else float(target.log_Z)
        log_p = jax.jit(lambda z: jax.vmap(target.log_prob)(z) - log_z)
        return forward_kl_on_grid(log_p, lambda z: density(z, jax.random.key(4000 + seed)), box,
                                  options["grid_points"])
    if name == "test_lppd":
        weights = draws(fitted.method, fitted.settings, fitted.state, jax.random.key(5000 + seed),
                        options["num_samples"], dim)
        return {"test_lppd": test_lppd(weights, held_out)}
    raise ConfigError(f"vi_fit: unknown score {name!r}; known: reverse_kl, reference_log_q, grid, test_lppd")


def _fit(cell: Cell, seed: int, target, num_steps: int, **options):
    """``jaxsamp.fit`` of the cell's method with its settings at ``key=seed`` (``schedule``: Adam at the settings'
    learning rate decaying by a cosine to ``cosine_decay_to``)."""
    import optax

    import jaxsamp
    import jaxsamp.learned.methods  # registers the methods
    from jaxsamp.core.registry import LEARNED

    p = cell.params
    settings = LEARNED.entry(p["method"]).meta["settings"](**p["settings"])
    optimizer = None
    if "schedule" in p:
        lr = settings.learning_rate
        optimizer = optax.adam(optax.cosine_decay_schedule(lr, num_steps, alpha=p["schedule"]["cosine_decay_to"] / lr))
    return jaxsamp.fit(p["method"], target, settings=settings, batch_size=p["batch_size"], optimizer=optimizer,
                       key=seed, num_steps=num_steps, progress=False, **options)


@cells.runner("vi_fit")
def vi_fit_cell(cell: Cell, seed: int, *, target_evals, evaluation: dict, budget_scale: int = 1,
                checkpoint=None) -> tuple[dict, dict]:
    """Train a variational method through :func:`jaxsamp.fit` at ``key=seed`` for the cell's updates and score it.

    ``params``: ``method``, ``settings``, ``batch_size``, optionally ``schedule`` (``{"cosine_decay_to": lr}``) and
    ``test_split`` (:func:`split_target`), and ``score`` (:func:`score`'s options: ``name`` one of ``reverse_kl``,
    ``reference_log_q``, ``grid``, ``test_lppd``, with their sizes). Figures: the score's, ``train_steps``,
    ``train_seconds`` and ``compile_seconds``.
    """
    target, held_out = split_target(cell.target, cell.params.get("test_split"))
    steps = cell.budget.updates * budget_scale
    fitted = _fit(cell, seed, target, steps)
    figures = score(fitted, target, seed, held_out, cell.params["score"])
    figures.update(train_steps=float(steps), train_seconds=fitted.seconds - fitted.compile_seconds,
                   compile_seconds=fitted.compile_seconds)
    return figures, {"fitted": fitted}


@cells.runner("vi_speed")
def vi_speed_cell(cell: Cell, seed: int, *, target_evals, evaluation: dict, budget_scale: int = 1,
                  checkpoint=None) -> tuple[dict, dict]:
    """``train_steps_per_s``: one fit of 4 blocks of ``params["block"]`` steps, its learning curve evaluated after
    each block (on 2 draws; ``fit`` keeps that out of ``train_seconds``), the first compiling, the best of the next
    3 timed."""
    block = cell.params["block"]
    fitted = _fit(cell, seed, cells.build_target(cell.target), 4 * block, evaluate_every=block, evaluate_samples=2)
    return {"train_steps_per_s": block / float(np.min(np.diff(fitted.curve["train_seconds"])))}, {}


@cells.runner("vi_nuts")
def vi_nuts_cell(cell: Cell, seed: int, *, target_evals, evaluation: dict, budget_scale: int = 1,
                 checkpoint=None) -> tuple[dict, dict]:
    """NUTS (``jaxsamp.sample``, window adaptation) on the cell's target at key ``6000 + seed``: ``num_chains`` x
    ``num_samples`` draws after ``num_warmup``; ``test_lppd`` of every draw on the held-out rows (``test_split``)."""
    import jaxsamp

    p = cell.params
    target, held_out = split_target(cell.target, p["test_split"])
    start = time.perf_counter()
    posterior = jaxsamp.sample(target, key=6000 + seed, num_chains=p["num_chains"], num_warmup=p["num_warmup"],
                               num_samples=p["num_samples"], progress=False)
    draws = np.asarray(posterior.positions).reshape(-1, target.event_shape[0])
    return {"test_lppd": test_lppd(draws, held_out), "seconds_incl_compile": time.perf_counter() - start}, {}


# --- the old results file ----------------------------------------------------------------------------------------

LEGACY_FILE = "bench_vi.json"
#: the script's figure names -> the glossary's
_LEGACY_FIGURES = {"kl": "reverse_kl", "mean_log_q_ref": "mean_log_q_reference", "coverage50": "hpd_coverage50",
                   "coverage90": "hpd_coverage90", "test_lpd": "test_lppd"}
_LEGACY_RUN = re.compile(r"(softcvi|elbo|snis_fkl|aisivi|bsivi|nuts)_(linreg|eight_schools|bayes_logreg|x_shaped|"
                         r"multimodal|banana(?:_ref\d+(?:_tau\d+x\d+)?(?:_uniform)?)?)_(\w+)")


def legacy_key(name: str):
    """``(cell, figure, 1)`` of a per-seed key of ``bench_vi.json``: ``{method}_{target}_{figure}`` (its
    ``_seed<k>`` cut off), ``snis_fkl`` the method ``snis_forward_kl``, the banana at the reference's settings
    ``banana_ref{K}[_tau{w}x{l}][_uniform]`` (AISIVI's untagged ``ref256`` ran conditioners of 64 x 2)."""
    match = _LEGACY_RUN.fullmatch(name)
    if match is None:
        return None
    method, target, figure = match.groups()
    method = "snis_forward_kl" if method == "snis_fkl" else method
    if target.startswith("banana_"):
        variant = target.removeprefix("banana_")
        if method == "aisivi" and "_tau" not in variant:
            variant = re.sub(r"\A(ref\d+)", r"\1_tau64x2", variant)
        method, target = f"{method}-{variant}", "banana"
    return f"{method}/{target}", _LEGACY_FIGURES.get(figure, figure), 1
