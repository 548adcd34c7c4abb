"""Suite ``mcmc``: jaxsamp's one-call NUTS (``jaxsamp.sample``) against numpyro's ``MCMC(NUTS)`` and blackjax written
by hand, on eight schools, Brownian motion and stochastic volatility: each framework a cell, timed per seed."""

from __future__ import annotations

import subprocess
import sys
import time

import jax
import numpy as np

from jaxsamp.bench import cells
from jaxsamp.bench.protocol import Cell, Comparison, Goal, Protocol

#: model -> the target a cell names (Inference Gym models on their flat unconstrained space)
MODELS = {
    "eight_schools": {"name": "eight_schools"},
    "brownian_motion": {"inference_gym": "BrownianMotionMissingMiddleObservations"},
    "stochastic_volatility": {"inference_gym": "VectorizedStochasticVolatilitySP500Small"},
}
#: framework -> (runner, its options): jaxsamp twice, with ``chain_method="auto"`` (sequential chains on these three
#: models on a CPU) and in lock-step
FRAMEWORKS = {
    "jaxsamp": ("nuts", {}),
    "jaxsamp-vectorized": ("nuts", {"options": {"chain_method": "vectorized"}}),
    "numpyro": ("numpyro_nuts", {}),
    "blackjax": ("blackjax_nuts", {}),
}
RUN = {"num_chains": 4, "num_warmup": 1000, "num_samples": 1000, "calls": 2}
QUICK = {"num_warmup": 100, "num_samples": 100, "calls": 1}
CALL_GOAL = ("issue 43 (bench_mcmc's goals): jaxsamp.sample's whole second call at most 1.1 times blackjax's by "
             "hand")
ESS_GOAL = "issue 43 (bench_mcmc's goals): min ESS per call-second at least 0.95 times blackjax's by hand"


def framework_cell(framework: str, model: str) -> Cell:
    """One framework on one model: 4 chains, 1000 warm-up steps and 1000 draws each, two calls per seed."""
    runner, params = FRAMEWORKS[framework]
    return Cell(f"{framework}/{model}", runner, MODELS[model], {**RUN, **params}, quick=QUICK)


CELLS = (
    *(framework_cell(f, m) for m in MODELS for f in FRAMEWORKS),
    Cell("diagnostics/posterior_summary", "posterior_summary_first_call", {},
         {"shape": [4, 1000, 10]}),
)


def _comparisons():
    for model in MODELS:
        for figure in ("call_seconds", "min_ess_per_call_second", "min_ess_per_s"):
            for baseline in ("blackjax", "numpyro"):
                yield Comparison(f"jaxsamp/{model}", f"{baseline}/{model}", figure)
        yield Comparison(f"jaxsamp-vectorized/{model}", f"jaxsamp/{model}", "call_seconds")


PROTOCOL = Protocol(
    suite="mcmc",
    summary="jaxsamp.sample's NUTS against numpyro's MCMC(NUTS) and blackjax by hand on eight schools, Brownian "
            "motion and stochastic volatility: whole-call seconds and min ESS per second, per seed",
    cells=CELLS,
    seeds=(0, 1, 2),
    headline="min_ess_per_call_second",
    figures=("call_seconds", "min_ess_per_s", "min_ess_per_s_incl_warmup", "max_rhat", "min_ess_bulk",
             "first_call_seconds"),
    evaluation={},
    quick_evaluation={},
    goals=tuple(g for model in MODELS for g in (
        Goal(f"jaxsamp/{model}", "call_seconds", 1.1, "below", source=CALL_GOAL, baseline=f"blackjax/{model}"),
        Goal(f"jaxsamp/{model}", "min_ess_per_call_second", 0.95, "above", source=ESS_GOAL,
             baseline=f"blackjax/{model}"),
    )),
    comparisons=tuple(_comparisons()),
    notes="""\
The same chains three ways, each framework a cell (``FRAMEWORK/MODEL``): eight schools (numpyro, non-centred),
``BrownianMotionMissingMiddleObservations`` and ``VectorizedStochasticVolatilitySP500Small`` (Inference Gym), all
sampled on the same unconstrained log density. Every framework: 4 chains from the same starting points
(``fold_in(key(seed), 99)``), 1000 warm-up steps of Stan's window adaptation (diagonal mass matrix, target
acceptance 0.8, one adaptation per chain) and 1000 NUTS draws per chain, key ``key(seed)``:
- ``jaxsamp``: ``jaxsamp.sample(target, num_chains=4, num_warmup=1000, num_samples=1000)`` (the generic ``nuts``
  runner) with its default ``chain_method="auto"``: on a CPU sequential chains (``lax.map``) for every seed
  recorded here (until 2026-12-07 ``auto`` meant sequential on every CPU, chosen on a pilot with seed 10 before
  the first run; since then it times the model's gradient both ways and chooses sequential on these three models,
  ``lockstep`` 0 in the ``chains`` suite); ``jaxsamp-vectorized`` with chains in lock-step (``vmap``; on an
  accelerator ``auto`` is vectorized already, so there this cell repeats ``jaxsamp``);
- ``numpyro``: ``MCMC(NUTS(potential_fn=...), chain_method="vectorized")``, ``warmup`` then ``run``;
- ``blackjax``: ``blackjax.window_adaptation(blackjax.nuts, ...)`` vmapped over the chains, then the tuned
  ``nuts`` kernels vmapped and scanned by hand (the blackjax documentation's recipe).

Timing: each seed of a cell clears JAX's caches and calls its framework twice (``jaxsamp.bench.cells.timed_calls``):
the first call, compilation included, is ``first_call_seconds``; the second call, which compiles nothing, gives
every other figure. ``call_seconds`` is that call's whole wall time, from the call to the draws as a NumPy array:
for jaxsamp everything ``jaxsamp.sample`` does (starting-point checks, warm-up, sampling, health checks with
R-hat and ESS, constraining), for blackjax the two jitted functions, for numpyro ``warmup`` and ``run``. The
quick size makes one call of 100 + 100 steps, so its figures include compilation. A timing is a figure of the
seed like any other; run the suite on an idle machine (each seed's record names its machine; the cells run one
after another for each seed, all three models' frameworks of one seed before the next seed).

Figures: ``min_ess_bulk``, the bulk ESS of the worst unconstrained coordinate (ArviZ's estimator through
``jaxsamp.diagnostics.posterior_summary``, the same code for every framework), per second of sampling
(``min_ess_per_s``), of warm-up and sampling (``min_ess_per_s_incl_warmup``) and of the whole call
(``min_ess_per_call_second``, the headline); ``max_rhat``, the largest rank R-hat, per seed, so that a stuck
chain is seen where it happens: on stochastic volatility the warm-up of some seeds leaves a chain stuck (blackjax
and jaxsamp-vectorized seed 1, numpyro seed 2 in the last script run), and a min-ESS ratio over such a seed
measures the stuck chain, not a speed-up. The comparisons give, per model, the median of the per-seed ratios
jaxsamp / blackjax and jaxsamp / numpyro beside the ratio of means: one slow call carried the script's
eight-schools call ratio of means (0.75) where the per-seed ratios were 0.43, 1.19 and 1.10. The goals (issue 43:
call at most 1.1 times blackjax's, min ESS per call-second at least 0.95 times) are decided on the per-seed
ratios against blackjax: met when the 95 % t-interval of their mean lies on the goal's side, missed when on the
other, otherwise undecided. ``diagnostics/posterior_summary``: ``posterior_summary`` on 4 x 1000 x 10 standard
normal draws in a fresh process, import left out, compilation included (``first_call_seconds``).

What the suite changes against ``scripts/bench_mcmc.py``: the same keys, starting points and calls; each cell-seed
clears JAX's caches before its first call, so ``first_call_seconds`` is recorded at every seed (the script
recorded it at the first seed only, in a process where the other frameworks had run before); the figures are
per seed (the script kept means and sds only).

Legacy seeds: ``bench_mcmc.json`` (the script's run of 2026-12-05 at ``e64042b``, alone on a 2-core machine) kept
means and standard deviations over seeds 0, 1, 2, not per-seed values, so only its seed-0 figures convert: each
framework's ``first_call_seconds`` and the diagnostics' first call. Every other figure (min ESS per second, call
seconds, R-hat, the ratios) needs a re-run of the suite on an idle machine; the old means and their reading are in
BENCHMARKS.md ("bench_mcmc").
""",
)


# --------------------------------------------------------------------------
# the other frameworks' runners (jaxsamp's is the generic "nuts")
# --------------------------------------------------------------------------


@cells.runner("numpyro_nuts")
def numpyro_cell(cell: Cell, seed: int, *, target_evals, evaluation: dict, budget_scale: int = 1,
                 checkpoint=None) -> tuple[dict, dict]:
    """numpyro's ``MCMC(NUTS(potential_fn=-log_prob), chain_method="vectorized")``, built once per cell-seed (it
    keeps its compiled functions): ``warmup`` at ``split(key)[0]``, then ``run`` at ``split(key)[1]`` from the
    warmed-up state; :func:`~jaxsamp.bench.cells.timed_calls`."""
    from numpyro.infer import MCMC, NUTS

    p = cell.params
    target, key, positions = cells.mcmc_start(cell, seed)
    mcmc = MCMC(NUTS(potential_fn=lambda x: -target.log_prob(x)), num_warmup=p["num_warmup"],
                num_samples=p["num_samples"] * budget_scale, num_chains=p["num_chains"], chain_method="vectorized",
                progress_bar=False)
    k_warm, k_draw = jax.random.split(key)

    def call():
        start = time.perf_counter()
        mcmc.warmup(k_warm, init_params=positions)
        jax.block_until_ready(mcmc.post_warmup_state)
        warm = time.perf_counter() - start
        start = time.perf_counter()
        mcmc.run(k_draw)  # continues from the post-warm-up state
        draws = jax.block_until_ready(mcmc.get_samples(group_by_chain=True))
        return np.asarray(draws), warm, time.perf_counter() - start

    return cells.timed_calls(call, p["calls"]), {}


@cells.runner("blackjax_nuts")
def blackjax_cell(cell: Cell, seed: int, *, target_evals, evaluation: dict, budget_scale: int = 1,
                  checkpoint=None) -> tuple[dict, dict]:
    """blackjax by hand: ``window_adaptation(nuts)`` per chain (vmapped, one jitted function) at ``split(key)[0]``,
    then the tuned ``nuts`` kernels vmapped over the chains and scanned (another) at ``split(key)[1]``."""
    import blackjax

    p = cell.params
    target, key, positions = cells.mcmc_start(cell, seed)
    log_prob, num_draws = target.log_prob, p["num_samples"] * budget_scale

    @jax.jit
    def adapt(keys, xs):
        def one(k, x):
            (state, params), _ = blackjax.window_adaptation(blackjax.nuts, log_prob).run(k, x, p["num_warmup"])
            return state, params

        return jax.vmap(one)(keys, xs)

    @jax.jit
    def draw(states, params, key):
        def one_step(s, k):
            keys = jax.random.split(k, s.position.shape[0])
            s, _ = jax.vmap(lambda kk, ss, pp: blackjax.nuts(log_prob, **pp).step(kk, ss))(keys, s, params)
            return s, s.position

        return jax.lax.scan(one_step, states, jax.random.split(key, num_draws))[1]

    k_warm, k_draw = jax.random.split(key)

    def call():
        start = time.perf_counter()
        states, params = jax.block_until_ready(adapt(jax.random.split(k_warm, positions.shape[0]), positions))
        warm = time.perf_counter() - start
        start = time.perf_counter()
        draws = jax.block_until_ready(draw(states, params, k_draw))
        return np.swapaxes(np.asarray(draws), 0, 1), warm, time.perf_counter() - start

    return cells.timed_calls(call, p["calls"]), {}


@cells.runner("posterior_summary_first_call")
def posterior_summary_cell(cell: Cell, seed: int, *, target_evals, evaluation: dict, budget_scale: int = 1,
                           checkpoint=None) -> tuple[dict, dict]:
    """``posterior_summary`` on ``params["shape"]`` standard normal draws (NumPy generator at ``seed``) in a fresh
    process: its first call's seconds, import left out, compilation included."""
    code = ("import time, numpy as np\n"
            "from jaxsamp.diagnostics.mcmc import posterior_summary\n"
            f"x = np.random.default_rng({int(seed)}).standard_normal({tuple(cell.params['shape'])})\n"
            "t = time.perf_counter(); posterior_summary(x).max_rhat; print(time.perf_counter() - t)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return {"first_call_seconds": float(out.stdout.strip().splitlines()[-1])}, {}


# --------------------------------------------------------------------------
# the old results file
# --------------------------------------------------------------------------

LEGACY_FILE = "bench_mcmc.json"
#: the script kept means over seeds; only its first seed's first calls are one seed's values


def legacy_single(name: str):
    """``(cell, figure, 1, 0)`` of a key the script wrote without ``_seed<k>`` (a figure it ran once, with the
    seed-0 keys); None for the rest, the old file's aggregates (left out: recomputed from the seeds)."""
    placed = legacy_key(name)
    return None if placed is None else (*placed, 0)
_LEGACY_FRAMEWORKS = {"jaxsamp_vectorized": "jaxsamp-vectorized", "jaxsamp": "jaxsamp", "numpyro": "numpyro",
                      "blackjax": "blackjax"}


def legacy_key(name: str):
    """``(cell, figure, 1)`` of a key of ``bench_mcmc.json`` that is one seed's value (``{framework}_{model}_
    first_call_seconds``, ``diagnostics_first_call_seconds``), None for its means, sds and ratios."""
    if name == "diagnostics_first_call_seconds":
        return "diagnostics/posterior_summary", "first_call_seconds", 1
    for prefix, framework in _LEGACY_FRAMEWORKS.items():
        for model in MODELS:
            if name == f"{prefix}_{model}_first_call_seconds":
                return f"{framework}/{model}", "first_call_seconds", 1
    return None
