"""What the variational methods share, as plain functions: the target check, the scoring of draws, and the
training of an objective on an explicit family.

Every method's ``build(target, settings=None, *, batch_size=None, optimizer=None)`` returns a
:class:`~jaxsamp.core.LearnedSampler` whose ``sample(key, state, n)`` gives draws of ``q`` weighted by
``log p~ - log q`` and whose ``evaluate`` is :func:`evaluation`'s: the canonical figures
(:func:`jaxsamp.diagnostics.weights.figures`) of those draws and of exact draws of the target,
and ``mean_log_q_reference``. The density ``log q`` of a fitted family at points of your own is
:func:`jaxsamp.learned.vi.density.log_q`.

The objectives on an explicit family (:mod:`~jaxsamp.learned.vi.elbo`,
:mod:`~jaxsamp.learned.vi.snis_forward_kl`, :mod:`~jaxsamp.learned.vi.softcvi`) each define a loss
``loss(problem, settings, params, key) -> (loss, log_w)`` on a :class:`Problem` (the family,
the target's batched log density, the draws per step), ``log_w`` the log importance weights
``log p~(x) - log q(x)`` of the draws it used (no gradient through them); :func:`objective`
trains it with optax.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxsamp.core.errors import InputError
from jaxsamp.core.protocols import LearnedSampler, TrainingHealth, WeightedSamples
from jaxsamp.core.validation import check_int
from jaxsamp.diagnostics.weights import figures
from jaxsamp.learned.vi.families import Family, family_from_spec


class VIState(NamedTuple):
    """Train state of an objective on an explicit family: a plain PyTree the driver checkpoints.

    Attributes
    ----------
    params : PyTree
        The family's parameters (``nnx.split`` state).
    opt_state : optax.OptState
    step : int32 array
        Updates done.
    """

    params: object
    opt_state: optax.OptState
    step: jax.Array


class Problem(NamedTuple):
    """What an objective's loss works on.

    Attributes
    ----------
    family : Family
        The variational family on ``R^d`` (its ``log_prob``, ``sample_and_log_prob`` take the parameters).
    log_density : callable
        ``x (n, d) -> log p~(x) (n,)``, the target's.
    batch_size : int
        Draws of ``q`` per step (the objective's ``K`` or ``n``).
    """

    family: Family
    log_density: Callable[[jax.Array], jax.Array]
    batch_size: int


def flat_dim(target, user: str) -> int:
    """``d`` of a real-valued ``target`` with flat states ``(d,)``.

    Raises
    ------
    InputError
        Any other target; the message names ``user`` and what it needs.
    """
    shape = tuple(target.event_shape or ())
    if target.domain.kind != "real" or len(shape) != 1:
        raise InputError(
            f"{user} lives on R^d: the target must be real-valued with flat states of shape (d,), "
            f"got {target.name!r} ({target.domain.kind}, event shape {target.event_shape})"
        )
    return shape[0]


def problem(name: str, target, family_spec, batch_size: int, min_batch: int = 1) -> Problem:
    """The :class:`Problem` of objective ``name``: the family ``family_spec`` names on the target's ``R^d``.

    Raises
    ------
    InputError
        A target that is not real-valued with flat states, a bad family spec, or
        ``batch_size`` below ``min_batch``.
    """
    batch_size = check_int("batch_size", batch_size, ge=min_batch)
    return Problem(family_from_spec(flat_dim(target, name), family_spec), jax.vmap(target.log_prob), batch_size)


def evaluation_figures(target, samples: WeightedSamples, reference=None, log_q_reference=None) -> dict:
    """The figures of draws of ``q`` against ``target``: :func:`~jaxsamp.diagnostics.weights.figures`, and more.

    A draw whose state is not finite counts as a non-finite sample (its log-weight is
    taken as NaN). With draws of the target (``reference``, exact samples or an MCMC
    run's) and ``log q`` there, their log-weights ``log p~ - log q`` give ``eubo`` and
    ``log_Z_forward`` (and, with the exact ``log Z``, ``eubo_abs_err``: the forward KL
    ``KL(p || q)`` estimated on them), and ``mean_log_q_reference`` is the mean of
    ``log q`` there (the SoftCVI paper's metric, Ward, Beaumont & Fasiolo 2025: higher is
    better, it is minus the forward KL up to a constant).

    Parameters
    ----------
    target : Target
        Its ``log_Z`` (None when unknown) and ``log_prob``.
    samples : WeightedSamples
        Draws of ``q``, ``x`` of shape ``(n, d)``, with ``log_w = log p~(x) - log q(x)``.
    reference : array (m, d), optional
        Draws of the target.
    log_q_reference : array (m,), optional
        ``log q`` at ``reference`` (needed with it).

    Returns
    -------
    dict of str to float
        ``log_Z_hat``, ``ess``, ``elbo``, ``nonfinite_samples``; with ``reference``:
        ``eubo``, ``log_Z_forward``, ``mean_log_q_reference``; with the exact ``log Z``:
        ``log_Z_exact`` and the ``*_abs_err`` of each estimate (``elbo_abs_err`` is
        ``KL(q || p)`` estimated).
    """
    x, log_w = np.asarray(samples.x), np.asarray(samples.log_w, np.float64)
    log_w = np.where(np.all(np.isfinite(x), axis=-1), log_w, np.nan)
    target_log_w, extras = None, {}
    if reference is not None:
        log_q_reference = np.asarray(log_q_reference, np.float64)
        log_p = np.asarray(jax.jit(jax.vmap(target.log_prob))(jnp.asarray(reference)), np.float64)
        target_log_w = log_p - log_q_reference
        extras["mean_log_q_reference"] = float(np.mean(log_q_reference))
    log_Z_exact = None if target.log_Z is None else float(target.log_Z)
    return figures(WeightedSamples(x, log_w, samples.log_Z0), log_Z_exact=log_Z_exact,
                   target_log_w=target_log_w) | extras


def no_options(options: dict) -> None:
    """Refuse every ``evaluate`` option: the variational methods take none.

    Raises
    ------
    InputError
        Naming the first option given.
    """
    if options:
        raise InputError(f"evaluate takes no option {next(iter(options))}", "its options: none")


def evaluation(target, sample: Callable, log_q: Callable) -> Callable[..., dict]:
    """A variational method's ``evaluate(key, state, num_samples)`` from its ``sample`` and ``log_q``.

    Parameters
    ----------
    target : Target
    sample : callable
        ``sample(key, state, n) -> WeightedSamples``.
    log_q : callable
        ``log_q(key, state, z) -> (m,)``, the fitted density at points ``z`` ``(m, d)``.

    Returns
    -------
    callable
        ``evaluate(key, state, num_samples) -> dict``: :func:`evaluation_figures` of
        ``num_samples`` draws of ``q`` and, when the target has exact samples, of
        ``num_samples`` of them. It takes no options.
    """

    def evaluate(key: jax.Array, state, num_samples: int, **options) -> dict:
        no_options(options)
        k_draw, k_ref, k_logq = jax.random.split(key, 3)
        samples = jax.jit(sample, static_argnums=2)(k_draw, state, num_samples)
        reference = log_q_reference = None
        if target.has_exact_samples:
            reference = jnp.asarray(target.sample(k_ref, num_samples), jnp.float32)
            log_q_reference = jax.jit(log_q)(k_logq, state, reference)
        return evaluation_figures(target, samples, reference, log_q_reference)

    return evaluate


def objective(target, problem: Problem, settings, loss: Callable, optimizer: optax.GradientTransformation,
              health: TrainingHealth) -> LearnedSampler:
    """An objective on an explicit family, trained by ``optimizer`` on ``grad loss``: a LearnedSampler.

    Parameters
    ----------
    target : Target
        Real-valued with flat states ``(d,)``: the problem's.
    problem : Problem
    settings : dataclass
        The objective's settings, passed to its loss.
    loss : callable
        ``loss(problem, settings, params, key) -> (loss, log_w)``, ``log_w`` the log-weights of
        the draws it used.
    optimizer : optax.GradientTransformation
    health : TrainingHealth
        How the loss is judged.

    Returns
    -------
    LearnedSampler
        ``init(key)``: fresh family parameters and optimiser state (:class:`VIState`);
        ``step(key, state)``: one optimiser step on ``grad loss``, metrics ``loss``,
        ``elbo`` (mean ``log w`` of the step's draws), ``ess`` (their normalised ESS),
        ``log_Z_hat`` (their importance estimate of ``log Z``); ``sample(key, state, n)``:
        draws of ``q`` weighted by ``log p~ - log q``; ``evaluate``: :func:`evaluation`'s.
    """
    family, log_density = problem.family, problem.log_density
    loss = functools.partial(loss, problem, settings)

    def init(key: jax.Array) -> VIState:
        params = family.init(key)
        return VIState(params, optimizer.init(params), jnp.int32(0))

    def step(key: jax.Array, state: VIState) -> tuple[VIState, dict]:
        (value, log_w), grads = jax.value_and_grad(loss, has_aux=True)(state.params, key)
        updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
        weights = WeightedSamples(None, log_w)
        metrics = {"loss": value, "elbo": jnp.mean(log_w), "ess": weights.ess, "log_Z_hat": weights.log_Z}
        return VIState(optax.apply_updates(state.params, updates), opt_state, state.step + 1), metrics

    def sample(key: jax.Array, state: VIState, num_samples: int) -> WeightedSamples:
        num_samples = check_int("num_samples", num_samples, ge=1)
        x, log_q = family.sample_and_log_prob(key, jax.lax.stop_gradient(state.params), num_samples)
        return WeightedSamples(x, log_density(x) - log_q, 0.0)

    def log_q(key: jax.Array, state: VIState, z: jax.Array) -> jax.Array:
        return family.log_prob(state.params, z)

    return LearnedSampler(init, step, sample, evaluation(target, sample, log_q), health, density=target)

