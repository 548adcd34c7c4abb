"""Suite ``chains``: ``jaxsamp.sample``'s NUTS with its chains in lock-step, one after another, and as
``chain_method="auto"`` chooses, on models from 10 to 500 dimensions and from a few to 4 million flops per gradient:
the measurement behind ``auto``'s rule (:mod:`jaxsamp.mcmc.chain_method`)."""

from __future__ import annotations

from jaxsamp.bench.protocol import Cell, Comparison, Goal, Protocol


def _logreg(features: int, data: int) -> dict:
    return {"name": "bayes_logreg", "dataset": "synthetic", "num_features": features, "num_data": data}


#: model -> the target a cell names; the last two (the ``mcmc`` suite's) were not among the pilot's models
MODELS = {
    "eight_schools": {"name": "eight_schools"},
    "funnel_d10": {"name": "funnel", "dim": 10},
    "funnel_d500": {"name": "funnel", "dim": 500},
    "gaussian_d500": {"name": "gaussian", "dim": 500, "correlation": 0.5},
    "logreg_d50_n10000": _logreg(49, 10000),
    "logreg_d500_n500": _logreg(499, 500),
    "logreg_d500_n5000": _logreg(499, 5000),
    "logreg_d200_n20000": _logreg(199, 20000),
    "brownian_motion": {"inference_gym": "BrownianMotionMissingMiddleObservations"},
    "stochastic_volatility": {"inference_gym": "VectorizedStochasticVolatilitySP500Small"},
}
#: chain method -> the ``nuts`` runner's options
METHODS = {"sequential": {"chain_method": "sequential"}, "vectorized": {"chain_method": "vectorized"}, "auto": {}}
RUN = {"num_chains": 4, "num_warmup": 300, "num_samples": 300, "calls": 2}
QUICK = {"num_warmup": 30, "num_samples": 30, "calls": 1}
GOAL = ("issue 61: chain_method='auto' at most 1.1 times the whole second call of either fixed method, on every "
        "model")


def method_cell(method: str, model: str) -> Cell:
    """NUTS on ``model`` with 4 chains, 300 warm-up steps and 300 draws each, two calls per seed."""
    return Cell(f"{method}/{model}", "nuts", MODELS[model], {**RUN, "options": METHODS[method]}, quick=QUICK)


PROTOCOL = Protocol(
    suite="chains",
    summary="NUTS with its chains in lock-step (vmap), one after another (lax.map) and as chain_method='auto' "
            "chooses, on ten models from 10 to 500 dimensions: whole-call seconds per seed",
    cells=tuple(method_cell(method, model) for model in MODELS for method in METHODS),
    seeds=(0, 1, 2),
    headline="call_seconds",
    figures=("sampling_seconds", "warmup_seconds", "mean_integration_steps", "grad_evals_per_s", "lockstep",
             "batching_gain", "first_call_seconds"),
    evaluation={},
    quick_evaluation={},
    goals=tuple(Goal(f"auto/{model}", "call_seconds", 1.1, "below", source=GOAL, baseline=f"{fixed}/{model}")
                for model in MODELS for fixed in ("sequential", "vectorized")),
    comparisons=tuple(c for model in MODELS for c in (
        Comparison(f"vectorized/{model}", f"sequential/{model}", "call_seconds"),
        Comparison(f"vectorized/{model}", f"sequential/{model}", "sampling_seconds"),
    )),
    notes="""\
What: ``jaxsamp.sample(target, num_chains=4, num_warmup=300, num_samples=300)`` (NUTS after Stan's window warm-up,
key ``key(seed)``, the ``mcmc`` suite's starting points ``fold_in(key(seed), 99)``) three ways, each a cell
``METHOD/MODEL``: ``chain_method="sequential"`` (``lax.map`` over the chains), ``"vectorized"`` (``vmap``) and
``"auto"``. Two calls per seed, the first compiling; ``call_seconds`` is the whole second call (the warm-up and
the draws). ``auto`` measures its choice once per model in a process, so, like compilation, the measurement is in
the first call (``first_call_seconds``) and not in the second. The NUTS draws of the two fixed methods differ after a few steps (float round-off in a
chaotic sampler), so their integration steps differ too: ``mean_integration_steps`` beside each.

Models: eight schools (d = 10, non-centred); Neal's funnel at d = 10 and 500 (elementwise, cheap gradients, a wide
spread of tree depths); a Gaussian at d = 500 with correlation 0.5 (a dense triangular solve); Bayesian logistic
regression on synthetic data at (coefficients, data points) = (50, 10 000), (500, 500), (500, 5 000),
(200, 20 000) (matrix-vector products over the data, 0.8 to 16 million flops per gradient); Brownian motion and
stochastic volatility (the ``mcmc`` suite's Inference Gym models, d = 30 and 103).

The rule: ``auto`` times every chain's gradient at the starting points batched and one after another and runs the
chains in lock-step when batching is at least 1.5 times faster (``jaxsamp.mcmc.chain_method``). The threshold was
set before this suite existed, from a pilot on 2026-12-07 on this machine (``jaxsamp.sample``'s own starting points,
key 0, 300 + 300 draws) over the first eight models and a Gaussian at d = 1 500 and logistic regressions at
(5, 500) and (100, 2 000): the gradient's batching gain was at most 1.16 wherever sequential chains were as fast or
faster (funnel d = 500 2.5 times, Gaussian d = 1 500 2.1 times), and 2.3 and 3.7 where lock-step chains were 1.9
and 1.65 times faster (logistic regression at (500, 5 000) and (200, 20 000)). The last two models were not in the
pilot.

Goals: on every model, ``auto``'s whole second call at most 1.1 times each fixed method's (ratio of the per-seed
calls, decided by the 95 % interval over seeds).

Timings: run the suite alone on an idle machine.
""",
)
