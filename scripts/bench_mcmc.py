"""jaxsamp's one-call NUTS against numpyro's MCMC(NUTS) and blackjax written by hand, side by side.

Protocol (fixed before any run):

* models: eight schools (numpyro, non-centred), ``BrownianMotionMissingMiddleObservations``
  and ``VectorizedStochasticVolatilitySP500Small`` (Inference Gym), all sampled on the same
  unconstrained log density;
* every framework: 4 chains from the same starting points, 1000 warm-up steps of Stan's
  window adaptation (diagonal mass matrix, target acceptance 0.8, one adaptation per chain)
  and 1000 NUTS draws per chain;
  - jaxsamp: ``jaxsamp.sample(target, num_chains=4, num_warmup=1000, num_samples=1000)``;
  - numpyro: ``MCMC(NUTS(potential_fn=...), chain_method="vectorized")``, ``warmup`` then ``run``;
  - blackjax: ``blackjax.window_adaptation(blackjax.nuts, ...)`` vmapped over the chains, then
    the tuned ``nuts`` kernels vmapped and scanned by hand;
* each framework is built once per model and called twice per seed; the very first call
  (first seed, compilation included) is ``_first_call_seconds``; the second call of each seed
  gives the timings of the figures (``--quick`` makes one call, so its figures include
  compilation);
* ``_call_seconds`` is the whole second call's wall time, from the call to the draws as a NumPy
  array: for jaxsamp everything ``jaxsamp.sample`` does (starting-point checks, warm-up, sampling,
  health checks with R-hat and ESS, constraining), for blackjax the two jitted functions, for
  numpyro ``warmup`` and ``run``; ``_min_ess_per_call_second`` divides the worst bulk ESS by it,
  and ``jaxsamp_over_blackjax_{model}_call_seconds`` / ``..._min_ess_per_call_second`` are the
  goals' ratios (goals: at most 1.1 and at least 0.95);
* jaxsamp runs twice: ``jaxsamp`` with its default ``chain_method="auto"`` (sequential chains,
  ``lax.map``, on a CPU; chosen on a pilot with seed 10, before this run) and ``jaxsamp_vectorized``
  (on an accelerator ``jaxsamp_sequential``) with the other one (chains in lock-step, ``vmap``);
* headline estimator: the bulk ESS of the worst unconstrained coordinate (ArviZ's estimator,
  ``jaxsamp.diagnostics.posterior_summary``, the same code for every framework) divided by the
  seconds of the sampling phase (``min_ess_per_s``) and of warm-up plus sampling
  (``min_ess_per_s_incl_warmup``); ``max_rhat`` is the largest rank R-hat;
* seeds 0, 1, 2; each figure is the mean over seeds, with ``_sd`` its standard deviation;
* the three frameworks run one after another for each seed and model, on an idle machine.

Also ``diagnostics_first_call_seconds``: ``posterior_summary`` on 4 x 1000 x 10 draws in a
fresh process, compilation included.

Usage: python scripts/bench_mcmc.py [--quick] [--models NAME ...] [--seeds 0 1 2]
"""

from __future__ import annotations

import argparse
import functools
import subprocess
import sys
import time
import warnings

import benchmark_io
import blackjax
import jax
import numpy as np

import jaxsamp
from jaxsamp.diagnostics.mcmc import posterior_summary
from jaxsamp.mcmc.warmup import starting_points

MODELS = ("eight_schools", "brownian_motion", "stochastic_volatility")
def build_target(name: str):
    """The model as a jaxsamp Target over its flat unconstrained space."""
    if name == "eight_schools":
        return jaxsamp.targets.get("eight_schools")
    from inference_gym import using_jax as gym

    model = {"brownian_motion": gym.targets.BrownianMotionMissingMiddleObservations,
             "stochastic_volatility": gym.targets.VectorizedStochasticVolatilitySP500Small}[name]()
    return jaxsamp.targets.from_inference_gym(model)


# --------------------------------------------------------------------------
# the three ways to run the same chains
# --------------------------------------------------------------------------


def jaxsamp_runner(target, num_warmup, num_draws, chain_method=None):
    """jaxsamp's one call; its kernels are cached per target and settings, so a second call does not compile."""
    options = {} if chain_method is None else {"chain_method": chain_method}

    def go(positions, key):
        post = jaxsamp.sample(target, key=key, init=positions, num_chains=positions.shape[0], num_warmup=num_warmup,
                              num_samples=num_draws, progress=False, **options)
        return np.asarray(post.positions), post.seconds["warmup"], post.seconds["sampling"]

    return go


#: The chain method that jaxsamp.sample's default ("auto") does not take on this backend, run as a second jaxsamp row.
OTHER_CHAIN_METHOD = "vectorized" if jax.default_backend() == "cpu" else "sequential"


def numpyro_runner(target, num_warmup, num_draws, num_chains=4):
    """One numpyro ``MCMC`` object per model (it keeps its compiled functions); ``warmup`` then ``run``."""
    from numpyro.infer import MCMC, NUTS

    mcmc = MCMC(NUTS(potential_fn=lambda x: -target.log_prob(x)), num_warmup=num_warmup, num_samples=num_draws,
                num_chains=num_chains, chain_method="vectorized", progress_bar=False)

    def go(positions, key):
        k_warm, k_draw = jax.random.split(key)
        start = time.perf_counter()
        mcmc.warmup(k_warm, init_params=positions)
        jax.block_until_ready(mcmc.post_warmup_state)
        warm = time.perf_counter() - start
        start = time.perf_counter()
        mcmc.run(k_draw)  # continues from the post-warm-up state
        draws = mcmc.get_samples(group_by_chain=True)
        jax.block_until_ready(draws)
        return np.asarray(draws), warm, time.perf_counter() - start

    return go


def blackjax_runner(target, num_warmup, num_draws):
    """The blackjax documentation's recipe: window_adaptation per chain (vmapped), then nuts scanned by hand."""
    log_prob = target.log_prob

    @jax.jit
    def adapt(keys, xs):
        def one(k, x):
            (state, params), _ = blackjax.window_adaptation(blackjax.nuts, log_prob).run(k, x, num_warmup)
            return state, params

        return jax.vmap(one)(keys, xs)

    @jax.jit
    def draw(states, params, key):
        def one_step(s, k):
            keys = jax.random.split(k, s.position.shape[0])
            s, _ = jax.vmap(lambda kk, ss, p: blackjax.nuts(log_prob, **p).step(kk, ss))(keys, s, params)
            return s, s.position

        return jax.lax.scan(one_step, states, jax.random.split(key, num_draws))[1]

    def go(positions, key):
        k_warm, k_draw = jax.random.split(key)
        start = time.perf_counter()
        states, params = jax.block_until_ready(adapt(jax.random.split(k_warm, positions.shape[0]), positions))
        warm = time.perf_counter() - start
        start = time.perf_counter()
        draws = jax.block_until_ready(draw(states, params, k_draw))
        return np.swapaxes(np.asarray(draws), 0, 1), warm, time.perf_counter() - start

    return go


RUNNERS = {
    "jaxsamp": jaxsamp_runner,
    f"jaxsamp_{OTHER_CHAIN_METHOD}": functools.partial(jaxsamp_runner, chain_method=OTHER_CHAIN_METHOD),
    "numpyro": numpyro_runner,
    "blackjax": blackjax_runner,
}


def figures(draws: np.ndarray, warm: float, sampling: float, call: float) -> dict:
    summary = posterior_summary(draws)
    return {
        "min_ess_per_s": summary.min_ess_bulk / sampling,
        "min_ess_per_s_incl_warmup": summary.min_ess_bulk / (warm + sampling),
        "call_seconds": call,
        "min_ess_per_call_second": summary.min_ess_bulk / call,
        "max_rhat": summary.max_rhat,
    }


def diagnostics_first_call_seconds() -> float:
    """``posterior_summary`` on 4 x 1000 x 10 draws in a fresh process, import excluded, compilation included."""
    code = (
        "import time, numpy as np\n"
        "from jaxsamp.diagnostics.mcmc import posterior_summary\n"
        "x = np.random.default_rng(0).standard_normal((4, 1000, 10))\n"
        "t = time.perf_counter(); posterior_summary(x).max_rhat; print(time.perf_counter() - t)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="CI-sized run (numbers not meaningful)")
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    args = parser.parse_args(argv)
    num_warmup, num_draws = (100, 100) if args.quick else (1000, 1000)
    models = ["eight_schools"] if args.quick else args.models
    seeds = args.seeds[:1] if args.quick else args.seeds
    results = {"diagnostics_first_call_seconds": diagnostics_first_call_seconds()}
    print(f"diagnostics first call: {results['diagnostics_first_call_seconds']:.3f} s", flush=True)
    warnings.simplefilter("ignore")  # health warnings of short --quick runs
    for model in models:
        target = build_target(model)
        runners = {name: make(target, num_warmup, num_draws) for name, make in RUNNERS.items()}
        per_seed: dict[str, list[float]] = {}
        for seed in seeds:
            key = jax.random.key(seed)
            positions = starting_points(target, jax.random.fold_in(key, 99), 4)
            for framework in RUNNERS:
                if args.quick and framework.endswith(OTHER_CHAIN_METHOD):
                    continue  # the same runner with one option: not worth a compilation in the test suite
                start = time.perf_counter()
                draws, warm, sampling = runners[framework](positions, key)  # the first call of a seed
                first = call = time.perf_counter() - start
                if not args.quick:  # the figures come from a second call
                    start = time.perf_counter()
                    draws, warm, sampling = runners[framework](positions, key)
                    call = time.perf_counter() - start
                row = figures(draws, warm, sampling, call)
                for name, value in row.items():
                    per_seed.setdefault(f"{framework}_{model}_{name}", []).append(float(value))
                if seed == seeds[0]:
                    results[f"{framework}_{model}_first_call_seconds"] = first
                print(f"{model} seed {seed} {framework}: first call {first:.3g} s, "
                      + ", ".join(f"{k} {v:.4g}" for k, v in row.items()), flush=True)
        for name, values in per_seed.items():
            results[name] = float(np.mean(values))
            results[f"{name}_sd"] = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
        for framework in ("numpyro", "blackjax"):
            for figure in ("min_ess_per_s", "call_seconds", "min_ess_per_call_second"):
                results[f"jaxsamp_over_{framework}_{model}_{figure}"] = (
                    results[f"jaxsamp_{model}_{figure}"] / results[f"{framework}_{model}_{figure}"]
                )
        benchmark_io.write_results("bench_mcmc", results, quick=args.quick, merge=not args.quick)
    path = benchmark_io.write_results("bench_mcmc", results, quick=args.quick, merge=not args.quick)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
