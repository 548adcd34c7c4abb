"""Deep ensembles of Bayesian-network members, trained all at once: the start of MILE and its DE baseline.

``K`` members of a :class:`~jaxsamp.targets.bnn.BnnRegression` network are
trained independently (own initialisation, own mini-batch order) by optax's
AdamW on the mean Gaussian negative log-likelihood of mini-batches, with early
stopping on the validation split, as in the MILE reference code
(Sommer et al. 2025, ICLR; ``src/training/trainer.py``: AdamW lr 1e-3, weight
decay 1e-3, batch 32, at most 500 epochs, patience 10). The members are the
leading axis of every array of the train state and one :class:`Trainer` step is
one epoch of every member (``jax.vmap``), so :func:`jaxsamp.run` trains them with
progress, checkpoints and bit-identical resume.

Early stopping (the reference's rule): after each epoch the member's
validation loss is compared with its best so far; ``patience`` epochs without
improvement stop it, and it keeps the parameters it has then (not the best
epoch's). A stopped member's epochs are no-ops; once every member has stopped
an epoch costs nothing.
"""

from __future__ import annotations

import dataclasses
import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxsamp.core.driver import run
from jaxsamp.core.errors import InputError
from jaxsamp.core.protocols import Trainer
from jaxsamp.core.validation import NonNegativeFloat, PositiveFloat, PositiveInt, check_fields
from jaxsamp.targets.bnn import BnnRegression, gaussian_log_density


@dataclasses.dataclass(frozen=True)
class DeepEnsembleSettings:
    """Hyper-parameters of the deep ensemble (defaults: the MILE reference's UCI configs).

    Attributes
    ----------
    num_members : int
        ``K`` (12).
    learning_rate, weight_decay : float
        AdamW's (1e-3, 1e-3; ``b1 = 0.9``, ``b2 = 0.999``).
    batch_size : int
        Mini-batch size (32); the last incomplete batch of an epoch is dropped.
    max_epochs : int
        Epochs at most (500).
    patience : int
        Epochs without a better validation loss before a member stops (10).
    """

    num_members: PositiveInt = 12
    learning_rate: PositiveFloat = 1e-3
    weight_decay: NonNegativeFloat = 1e-3
    batch_size: PositiveInt = 32
    max_epochs: PositiveInt = 500
    patience: PositiveInt = 10

    def __post_init__(self):
        check_fields(self)


class DeepEnsembleState(NamedTuple):
    """Train state of all members (leading axis ``K`` everywhere): a PyTree the driver checkpoints.

    Attributes
    ----------
    params : array (K, d)
        Flat parameter vectors.
    opt_state : optax state
    best_valid_loss : array (K,)
    epochs_since_best : int array (K,)
    stopped : bool array (K,)
    epochs : int array (K,)
        Epochs trained.
    """

    params: jax.Array
    opt_state: optax.OptState
    best_valid_loss: jax.Array
    epochs_since_best: jax.Array
    stopped: jax.Array
    epochs: jax.Array


def mean_negative_log_likelihood(target: BnnRegression, theta, x, y) -> jax.Array:
    """``-mean_i log N(y_i; mu(x_i), sigma(x_i)^2)``: the training loss (no prior term)."""
    mu, sigma = target.predict(theta, x)
    return -jnp.mean(gaussian_log_density(y, mu, sigma))


def deep_ensemble_trainer(target: BnnRegression, settings: DeepEnsembleSettings) -> Trainer:
    """The deep ensemble as a :class:`~jaxsamp.core.Trainer` whose step is one epoch of every member.

    ``init(key)`` initialises member ``k`` with ``target.init_params(split(key, K)[k])``;
    ``step(key, state)`` shuffles the training split for member ``k`` with
    ``split(key, K)[k]``, takes ``floor(n_train / batch_size)`` AdamW steps on
    mini-batches, then evaluates the validation loss and applies early stopping.
    Its metrics are the members' mean training loss and validation loss of the
    epoch, and the number of stopped members.
    """
    if not isinstance(target, BnnRegression):
        raise InputError(f"a deep ensemble trains a BnnRegression target, got {type(target).__name__}")
    split = target.split
    x_train, y_train = jnp.asarray(split.x_train), jnp.asarray(split.y_train)
    x_valid, y_valid = jnp.asarray(split.x_valid), jnp.asarray(split.y_valid)
    n_train = x_train.shape[0]
    batch = min(settings.batch_size, n_train)
    n_batches = n_train // batch
    num_members = settings.num_members
    optimizer = optax.adamw(settings.learning_rate, b1=0.9, b2=0.999, weight_decay=settings.weight_decay)
    loss_and_grad = jax.value_and_grad(lambda theta, x, y: mean_negative_log_likelihood(target, theta, x, y))

    def init(key) -> DeepEnsembleState:
        params = jax.vmap(target.init_params)(jax.random.split(key, num_members))
        zeros = jnp.zeros(num_members, jnp.int32)
        return DeepEnsembleState(
            params,
            jax.vmap(optimizer.init)(params),
            jnp.full(num_members, jnp.inf, jnp.float32),
            zeros,
            jnp.zeros(num_members, bool),
            zeros,
        )

    def member_epoch(key, params, opt_state):
        order = jax.random.permutation(key, n_train)[: n_batches * batch].reshape(n_batches, batch)

        def update(carry, rows):
            theta, opt = carry
            loss, grad = loss_and_grad(theta, x_train[rows], y_train[rows])
            updates, opt = optimizer.update(grad, opt, theta)
            return (optax.apply_updates(theta, updates), opt), loss

        (params, opt_state), losses = jax.lax.scan(update, (params, opt_state), order)
        valid = mean_negative_log_likelihood(target, params, x_valid, y_valid)
        return params, opt_state, jnp.mean(losses), valid

    def epoch(key, state: DeepEnsembleState):
        keys = jax.random.split(key, num_members)
        params, opt_state, train_loss, valid = jax.vmap(member_epoch)(keys, state.params, state.opt_state)
        active = ~state.stopped
        improved = valid < state.best_valid_loss
        since = jnp.where(improved, 0, state.epochs_since_best + 1)

        def keep(new, old):
            mask = active.reshape(active.shape + (1,) * (jnp.ndim(new) - 1))
            return jnp.where(mask, new, old)

        new = DeepEnsembleState(
            keep(params, state.params),
            jax.tree.map(keep, opt_state, state.opt_state),
            keep(jnp.where(improved, valid, state.best_valid_loss), state.best_valid_loss),
            keep(since, state.epochs_since_best),
            state.stopped | (active & (since >= settings.patience)),
            state.epochs + active.astype(jnp.int32),
        )
        nan = jnp.float32(jnp.nan)
        metrics = {
            "train_loss": jnp.mean(jnp.where(active, train_loss, nan)),
            "valid_loss": jnp.mean(jnp.where(active, valid, nan)),
            "num_stopped": jnp.sum(new.stopped).astype(jnp.int32),
        }
        return new, metrics

    def idle(key, state):
        nan = jnp.float32(jnp.nan)
        return state, {"train_loss": nan, "valid_loss": nan, "num_stopped": jnp.int32(num_members)}

    def step(key, state: DeepEnsembleState):
        return jax.lax.cond(jnp.all(state.stopped), idle, epoch, key, state)

    return Trainer(init, step)


class DeepEnsemble(NamedTuple):
    """A trained deep ensemble.

    Attributes
    ----------
    members : array (K, d)
        The members' flat parameter vectors: MILE's and BDE's starting points.
    epochs : array (K,)
        Epochs each member trained before it stopped.
    grad_evals : float
        Gradient evaluations in full-batch equivalents (a mini-batch gradient of
        ``b`` examples counts ``b / n_train``), summed over members.
    seconds : float
        Wall time of the training (compilation included).
    """

    members: np.ndarray
    epochs: np.ndarray
    grad_evals: float
    seconds: float


def fit_deep_ensemble(
    target: BnnRegression,
    settings: DeepEnsembleSettings,
    key,
    *,
    progress: bool = True,
    checkpoint=None,
    checkpoint_every: int | None = None,
    identity: str | None = None,
) -> DeepEnsemble:
    """Train the ensemble for at most ``settings.max_epochs`` epochs through :func:`jaxsamp.run`.

    ``key`` is split into the initialisation key and the driver's key. With
    ``checkpoint`` a killed training resumes bit for bit; ``identity`` is passed to :func:`jaxsamp.run`.
    """
    trainer = deep_ensemble_trainer(target, settings)
    k_init, k_train = jax.random.split(key)
    start = time.perf_counter()
    state, _ = run(
        trainer.step,
        jax.jit(trainer.init)(k_init),
        k_train,
        settings.max_epochs,
        progress=progress,
        checkpoint=checkpoint,
        checkpoint_every=checkpoint_every,
        identity=identity,
        desc="deep ensemble",
    )
    members = np.asarray(jax.block_until_ready(state.params))
    seconds = time.perf_counter() - start
    epochs = np.asarray(state.epochs)
    batch = min(settings.batch_size, target.num_train)
    per_epoch = (target.num_train // batch) * batch / target.num_train
    return DeepEnsemble(members, epochs, float(epochs.sum() * per_epoch), seconds)
