"""The protocols every sampler in jaxsamp speaks.

A sampler is a pair of pure functions over PyTree states, in the shape that
blackjax made standard (``blackjax.base.SamplingAlgorithm``):

* :class:`Kernel` ``(init, step)`` -- a Markov kernel;
* :class:`Trainer` ``(init, step)`` -- a learned sampler's training loop, same shape;
* :class:`LearnedSampler` ``(init, step, sample, evaluate)`` -- a learned sampler: its training
  and its trained sampling, key first everywhere (blackjax's ``VIAlgorithm`` shape), with the
  :class:`TrainingHealth` that :func:`jaxsamp.fit` judges its training by;
* :class:`WeightedSamples` ``(x, log_w, log_Z0)`` -- what every importance,
  annealed or learned sampler returns;
* :class:`SMCProposal` ``(path, transition, schedule)`` -- a trained sampler's learned moves along
  its annealing path, which :func:`jaxsamp.smc.smc` runs as SMC.

Because :class:`Kernel` has exactly the fields ``init`` and ``step``, every
blackjax ``SamplingAlgorithm`` is accepted wherever a Kernel is expected: the
combinators only ever read ``kernel.init`` and ``kernel.step``.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp

PyTree = Any
PRNGKey = jax.Array
State = Any
Info = Any


class Kernel(NamedTuple):
    """A Markov kernel as a pair of pure functions.

    Attributes
    ----------
    init : callable
        ``init(position, rng_key=None) -> state``.
    step : callable
        ``step(rng_key, state) -> (state, info)``. Must be a pure function of its
        arguments so that it can be jitted, vmapped, scanned and sharded.
    """

    init: Callable[..., State]
    step: Callable[[PRNGKey, State], tuple[State, Info]]


class Trainer(NamedTuple):
    """A learned sampler's training procedure, in the same shape as a :class:`Kernel`.

    Attributes
    ----------
    init : callable
        ``init(rng_key) -> train_state``: networks enter as ``nnx.split`` state, so a
        train state is a plain PyTree that the driver can checkpoint.
    step : callable
        ``step(rng_key, train_state) -> (train_state, metrics)``.
    """

    init: Callable[[PRNGKey], State]
    step: Callable[[PRNGKey, State], tuple[State, Info]]


class TrainingHealth(NamedTuple):
    """What :func:`jaxsamp.fit` needs to know to judge a learned sampler's training, declared by the method.

    The rules themselves are :func:`jaxsamp.diagnostics.health.training_warnings` (NaN/inf
    loss, an explosion, no progress); these fields say how they apply to the method.

    Attributes
    ----------
    judge_progress : bool
        The loss is a fixed objective of the parameters, so a loss that does not fall
        over a run means trouble. False where the loss's targets or data move with
        training (adjoint matching, replay buffers), so that a rising loss need not.
    stages : callable, optional
        ``stages(history) -> {label: bool mask over steps}``: the steps judged apart,
        each as a run of its own (ASBS's adjoint and corrector stages), or the only
        steps that count (after a warm-up in which no update is made: AISIVI's
        pretraining). Default: every step, one stage.
    checks : callable, optional
        ``checks(history) -> list of str``: the method's own warnings on its training
        history (AISIVI: a collapsed reverse model).
    """

    judge_progress: bool = False
    stages: Callable[[dict], dict] | None = None
    checks: Callable[[dict], list] | None = None


class LearnedSampler(NamedTuple):
    """A learned sampler: its training (a :class:`Trainer`) and the sampler it trains, key first everywhere.

    The shape of blackjax's ``VIAlgorithm``. Each method's ``build(target, settings=None, *,
    batch_size=None, optimizer=None)`` returns one; :func:`jaxsamp.fit` is the one runner
    that trains it.

    Attributes
    ----------
    init : callable
        ``init(rng_key) -> train_state``, a plain PyTree (networks as ``nnx.split`` state).
    step : callable
        ``step(rng_key, train_state) -> (train_state, metrics)``: one training update.
    sample : callable
        ``sample(rng_key, train_state, num_samples) -> WeightedSamples``: draws of the
        trained sampler with their exact log-weights.
    evaluate : callable
        ``evaluate(rng_key, train_state, num_samples, **options) -> dict``: the canonical
        figures (:func:`jaxsamp.diagnostics.weights.figures`) and the family's extras; an
        option the method does not take is an :class:`~jaxsamp.core.errors.InputError`.
    health : TrainingHealth
        How its training is judged.
    jit_sample : bool
        ``sample`` is a pure function that :func:`jax.jit` may compile whole (with
        ``num_samples`` static). False where it runs chains through the driver's host
        loop (Bernoulli denoising), which compiles its own chunks.
    smc_proposal : callable or None
        ``smc_proposal(train_state) -> SMCProposal``: the trained sampler's moves along its
        annealing path with their exact incremental weights, for a method that has such a
        path (LEAPS, the Boltzmann curves, SCLD and CMCD); :meth:`jaxsamp.Fitted.smc` runs
        them as SMC. None for a method without one.
    density : Target or None
        The :class:`~jaxsamp.core.target.Target` whose log density training follows
        (the target, or for LEAPS the end of its lattice path); None for a method that
        learns from samples or from a reward that is no Target. :func:`jaxsamp.fit`
        checks it at a few starting points before any training, for a sampler built by
        name or passed built.
    """

    init: Callable[[PRNGKey], State]
    step: Callable[[PRNGKey, State], tuple[State, Info]]
    sample: Callable[[PRNGKey, State, int], "WeightedSamples"]
    evaluate: Callable[..., dict]
    health: TrainingHealth = TrainingHealth()
    jit_sample: bool = True
    smc_proposal: Callable[[State], "SMCProposal"] | None = None
    density: Any = None

    @property
    def trainer(self) -> Trainer:
        """The training alone, ``Trainer(init, step)``, as the driver and :func:`~jaxsamp.core.data_parallel.data_parallel` take it."""
        return Trainer(self.init, self.step)


class SMCProposal(NamedTuple):
    """A learned sampler's path with its learned moves: what :func:`jaxsamp.smc.smc` runs as SMC.

    A sequential Monte Carlo sampler (Del Moral, Doucet & Jasra 2006, JRSS B 68, Sec. 3)
    whose forward kernels are the trained sampler's own steps: LEAPS' Euler jumps
    (Holderrieth, Albergo & Jaakkola 2025), a Boltzmann curve's ODE flow (Máté & Fleuret
    2023), SCLD's controlled Langevin steps (Chen et al. 2025).

    Attributes
    ----------
    path : AnnealingPath
        The intermediate densities ``pi_t`` the moves go along (``log_prob(x, t)``, ``base``
        with exact samples of ``pi_0``, ``log_Z0``).
    transition : callable
        ``transition(key, positions, t, t_next) -> (positions, log_increment, evals)``
        (:mod:`jaxsamp.smc.transitions`): the learned move from level ``t`` to ``t_next``
        with each particle's exact incremental log weight.
    schedule : numpy array (K + 1,)
        The levels, increasing from exactly 0.0 to exactly 1.0 (the sampler's own grid).
    """

    path: Any
    transition: Callable
    schedule: Any


def _log_mean_exp(log_w: jax.Array) -> jax.Array:
    n = log_w.shape[0]
    return jax.scipy.special.logsumexp(log_w) - jnp.log(n)


class WeightedSamples(NamedTuple):
    """Samples with importance log-weights.

    Attributes
    ----------
    x : PyTree
        Samples with a leading axis of length ``n``.
    log_w : array, shape (n,)
        Unnormalised importance log-weights, ``log w_i = log p~(x_i) - log q(x_i)``
        (or the accumulated path weight of an annealed/learned sampler).
    log_Z0 : float
        Log normalising constant of the base the weights are relative to, so that
        ``log_Z = log_Z0 + log mean(exp(log_w))``.
    """

    x: PyTree
    log_w: jax.Array
    log_Z0: jax.Array | float = 0.0

    @property
    def log_Z(self) -> jax.Array:
        """Estimate ``log Z0 + log (1/n) sum_i w_i``, computed with logsumexp."""
        return self.log_Z0 + _log_mean_exp(self.log_w)

    @property
    def ess(self) -> jax.Array:
        """Normalised effective sample size ``(sum w)^2 / (n sum w^2)`` in ``(0, 1]``.

        Computed in log space as ``exp(2 LSE(a) - LSE(2 a)) / n`` with
        ``a = log w - max(log w)``, so it neither overflows nor loses precision in
        float32 for log-weights of magnitude ``1e3``.
        """
        lse = jax.scipy.special.logsumexp
        n = self.log_w.shape[0]
        a = self.log_w - jax.lax.stop_gradient(jnp.max(self.log_w))  # keep float32 exact near |log w| ~ 1e3
        return jnp.exp(2.0 * lse(a) - lse(2.0 * a)) / n

    @property
    def normalized_weights(self) -> jax.Array:
        """Self-normalised weights ``softmax(log_w)``."""
        return jax.nn.softmax(self.log_w)
