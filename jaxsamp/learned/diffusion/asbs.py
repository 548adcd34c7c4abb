"""The Adjoint Schrödinger Bridge Sampler (ASBS): adjoint matching from any Gaussian prior, with a learned corrector.

Liu, Havens, ... & Chen (2025), "Adjoint Schrödinger Bridge Sampler" (arXiv 2506.22565),
as implemented in the official synthetic-energy code (``facebookresearch/adjoint_samplers``).
Adjoint Sampling (:mod:`jaxsamp.learned.diffusion.adjoint`) needs its base process to start
from a point mass, so that the base forgets its start ("memoryless") and the
terminal cost is ``E + log p_1^base``. ASBS starts the same controlled SDE

    dX_t = g(t)^2 u_theta(t, X_t) dt + g(t) dW_t,    X_0 ~ mu,

from any prior ``mu`` and treats sampling as the Schrödinger bridge from ``mu`` to
``exp(-E)``. Its terminal cost is ``E + log phi_hat_1``, and a second network, the
*corrector* ``h ~ grad log phi_hat_1``, removes the bias a non-memoryless base
would leave. Training alternates two regressions on replay buffers (iterative
proportional fitting; the paper's eqs. 14-15):

* **adjoint matching** (``adjoint_epochs`` per stage): ``|u(t, X_t) + (grad E + h)(X_1)|^2``
  with ``X_t`` from the base bridge between model pairs ``(X_0, X_1)``, ``grad E``
  clipped per particle and ``h`` the previous stage's corrector (``h^(0) = 0``);
* **corrector matching** (``corrector_epochs`` per stage): ``|h(X_1) - grad_{x_1} log p^base(X_1 | X_0)|^2``
  on model pairs, with ``p^base(x_1 | x_0) = N(x_1; x_0, nu_1 I)`` for the VE base.

With a point-mass prior at the origin the corrector's optimum is the base's
terminal score ``-x / nu_1`` for every model, so it is used in closed form, no
corrector stage runs, and ASBS is exactly Adjoint Sampling (the paper's
Proposition; proved by a test on equal seeds).

Priors are centred Gaussians on the state subspace, so the base chain is the
shared :class:`~jaxsamp.learned.diffusion.sde.GaussianChain` with ``v0 > 0`` and the path
weights of :mod:`jaxsamp.learned.diffusion.sde` stay exact importance weights
(``E[w] = Z``): ``point`` (``v0 = 0``), ``gaussian`` (``v0 = prior_scale^2``) and
``harmonic`` for particles, the reference's ``CenteredParticlesHarmonic`` (the
harmonic prior of Jing et al. 2023 on the fully connected graph, precision
``(3/2 I - 1/2 11^T) (x) I`` per unit scale): on the zero-centre-of-mass subspace it is
isotropic with variance ``(2/3) prior_scale^2`` per coordinate.

:func:`build` returns ASBS as a :class:`~jaxsamp.core.LearnedSampler` whose training health judges
the two stages apart (:func:`stages`).
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from jaxsamp.core.errors import InputError
from jaxsamp.core.protocols import LearnedSampler, TrainingHealth
from jaxsamp.core.validation import Interval, OneOf, PositiveFloat, PositiveInt, check_int, settings_or_default
from jaxsamp.learned import buffer as replay
from jaxsamp.learned.diffusion.adjoint import (
    BATCH_SIZE,
    AdjointSampling,
    AdjointSettings,
    adjoint_chain,
    adjoint_matching_loss,
    drift_network,
    energy_gradients,
    epoch_metrics,
    regression_epoch,
)
from jaxsamp.learned.diffusion.sde import GeometricNoiseSchedule, StateSpace

PRIORS = ("point", "gaussian", "harmonic")


def prior_variance(prior: str, scale: float, space: StateSpace) -> float:
    """Per-coordinate variance ``v0`` of the prior on the state subspace (module docstring)."""
    if prior == "point":
        return 0.0
    if prior == "gaussian":
        return scale**2
    if not space.centred:
        raise InputError("the harmonic prior is defined for particle targets", "use prior: gaussian for a vector target")
    return 2.0 / 3.0 * scale**2


@dataclasses.dataclass(frozen=True)
class AsbsSettings(AdjointSettings):
    """Hyper-parameters of ASBS: those of :class:`~jaxsamp.learned.diffusion.adjoint.AdjointSettings` plus the prior and the stages.

    Defaults are the paper's DW-4 run (``adjoint_samplers`` ``configs/experiment/dw4_asbs.yaml``).

    Attributes
    ----------
    prior : {"point", "gaussian", "harmonic"}
        The start distribution ``mu`` (module docstring).
    prior_scale : float
        Its scale: the Gaussian's standard deviation, or the harmonic prior's ``scale``.
    adjoint_epochs, corrector_epochs : int
        Epochs of adjoint matching and of corrector matching in each stage.
    corrector_buffer_epochs : int or None
        Capacity of the corrector's buffer in rollouts (None: ``buffer_epochs``, as the adjoint buffer).
    corrector_buffer_per_stage : bool
        Empty the corrector's buffer when each stage's corrector epochs begin, so that every corrector
        fit regresses on pairs of the current controller only (the controller does not move during
        those epochs). Otherwise a FIFO of ``C`` rollouts holds, at the ``j``-th corrector epoch of a
        stage, ``C - j`` rollouts of earlier stages' controllers while ``j < C``.
    """

    sigma_max: PositiveFloat = 1.0
    nfe: Annotated[int, Interval(ge=2)] = 200
    prior: Annotated[str, OneOf(PRIORS)] = "harmonic"
    prior_scale: PositiveFloat = 2.0
    adjoint_epochs: PositiveInt = 200
    corrector_epochs: PositiveInt = 20
    corrector_buffer_epochs: PositiveInt | None = None
    corrector_buffer_per_stage: bool = False


class AsbsTrainState(NamedTuple):
    """Both networks (with their averages and Adam states), both buffers and the counters: one PyTree."""

    params: nnx.State
    ema_params: nnx.State
    opt_state: optax.OptState
    corrector_params: nnx.State
    corrector_opt_state: optax.OptState
    adjoint_buffer: replay.ReplayBuffer
    corrector_buffer: replay.ReplayBuffer
    epoch: jax.Array
    energy_evals: jax.Array


class Asbs(AdjointSampling):
    """The numerics of ASBS for ``target``: training (one epoch per step), sampling and evaluation, key first.

    :func:`build` constructs it and returns its functions as a :class:`~jaxsamp.core.LearnedSampler`.
    The drift network, the rollout, the exact path weights (``sample``), the backward
    paths of the EUBO and the evaluation are Adjoint Sampling's, on a base chain that
    starts from the prior.

    Parameters
    ----------
    target : Target
        Real-valued target; particle targets (with ``n_particles``) are centred.
    settings : AsbsSettings
    batch_size : int
        Trajectories simulated per epoch; adjoint epochs spend one energy gradient
        on each, corrector epochs none.
    optimizer : optax.GradientTransformation, optional
        The optimiser of the drift and of the corrector network, each with its own
        state (default: Adam at ``learning_rate`` with ``adam_eps``).

    Attributes
    ----------
    chain : GaussianChain
        The discretised base process from the prior (:func:`~jaxsamp.learned.diffusion.adjoint.adjoint_chain`).
    stage_length : int
        Epochs per stage (``adjoint_epochs``, plus ``corrector_epochs`` unless the prior is a point).

    Notes
    -----
    ``step`` (one epoch) returns Adjoint Sampling's metrics (``loss``, ``energy_mean``, ``nonfinite_samples``,
    ``target_evals``) and ``corrector_epoch``: True for corrector-matching epochs, whose ``loss`` is the
    corrector's regression loss and whose ``energy_mean`` is NaN (they call no energy). Scales for a new target:
    ``prior_scale`` is the prior's standard deviation (``"gaussian"``) or the harmonic prior's scale, and with
    ``sigma_max`` should cover the target's spread.
    """

    method = "ASBS"

    def __init__(self, target, settings: AsbsSettings, batch_size: int, optimizer=None):
        super().__init__(target, settings, batch_size, optimizer)
        v0 = prior_variance(settings.prior, settings.prior_scale, self.space)
        self.chain = adjoint_chain(self.schedule, settings.nfe, settings.exact_variance, v0)
        self.learned_corrector = settings.prior != "point"
        self.stage_length = settings.adjoint_epochs + (settings.corrector_epochs if self.learned_corrector else 0)

    def corrector(self, corrector_params: nnx.State, stage) -> Callable:
        """``h(x)`` (B, D) -> (B, D) of stage ``stage``: 0 in stage 0, then the corrector network at ``t = 1``.

        For the point prior: the base's terminal score ``-x / nu_1`` at every stage.
        """
        if not self.learned_corrector:
            return lambda x: -x / self.schedule.nu1
        net = self.drift(corrector_params)
        return lambda x: jax.lax.cond(stage > 0, lambda: net(jnp.ones(x.shape[0], x.dtype), x), lambda: jnp.zeros_like(x))

    def init(self, key) -> AsbsTrainState:
        """Fresh drift and corrector networks, Adam states and two empty buffers."""
        k_drift, k_corrector = jax.random.split(key)
        if not self.learned_corrector:  # Adjoint Sampling's initial network for the same key
            k_drift = key
        _, params = nnx.split(drift_network(self.settings, self.space, k_drift))
        _, corrector_params = nnx.split(drift_network(self.settings, self.space, k_corrector))
        vec = jnp.zeros(self.space.dim)
        capacity = self.settings.buffer_epochs * self.batch_size
        corrector_capacity = (self.settings.corrector_buffer_epochs or self.settings.buffer_epochs) * self.batch_size
        return AsbsTrainState(
            params=params,
            ema_params=params,
            opt_state=self.optimizer.init(params),
            corrector_params=corrector_params,
            corrector_opt_state=self.optimizer.init(corrector_params),
            adjoint_buffer=replay.init((vec, vec, vec), capacity),
            corrector_buffer=replay.init((vec, vec), corrector_capacity),
            epoch=jnp.int32(0),
            energy_evals=jnp.int32(0),
        )

    def _adjoint_epoch(self, key, state: AsbsTrainState):
        """Rollout, energy gradients into the adjoint buffer, ``steps_per_epoch`` steps of adjoint matching."""
        s = self.settings
        k_roll, k_train = jax.random.split(key)
        roll = self.rollout(state.params, k_roll, self.batch_size)
        energy, grad_energy = energy_gradients(self.target, roll.x1, self.space, s.max_grad_norm)
        buffer = replay.add(state.adjoint_buffer, (roll.x0, roll.x1, grad_energy))
        corrector = self.corrector(jax.lax.stop_gradient(state.corrector_params), state.epoch // self.stage_length)

        def loss_fn(params, k):
            kb, kl = jax.random.split(k)
            x0, x1, grad = replay.sample(buffer, kb, self.train_batch_size)
            a1 = grad + corrector(x1)
            x0 = x0 if self.learned_corrector else None  # the point prior's bridge starts at the origin
            return adjoint_matching_loss(self.drift(params), kl, x1, a1, self.schedule, self.space, x0)

        params, opt_state, ema, losses = regression_epoch(
            loss_fn, self.optimizer, state.params, state.opt_state, state.ema_params, k_train,
            s.steps_per_epoch, s.ema_decay, self._adjoint_steps_done(state.epoch),
        )
        new = state._replace(params=params, ema_params=ema, opt_state=opt_state, adjoint_buffer=buffer,
                             epoch=state.epoch + 1, energy_evals=state.energy_evals + self.batch_size)
        return new, {**epoch_metrics(losses, energy, new.energy_evals), "corrector_epoch": jnp.bool_(False)}

    def _corrector_epoch(self, key, state: AsbsTrainState):
        """Rollout pairs into the corrector buffer, ``steps_per_epoch`` steps of corrector matching (no energy calls)."""
        s = self.settings
        k_roll, k_train = jax.random.split(key)
        roll = self.rollout(state.params, k_roll, self.batch_size)
        buffer = state.corrector_buffer
        if s.corrector_buffer_per_stage:  # the stage's first corrector epoch starts from an empty buffer
            first = state.epoch % self.stage_length == s.adjoint_epochs
            buffer = jax.lax.cond(first, replay.clear, lambda b: b, buffer)
        buffer = replay.add(buffer, (roll.x0, roll.x1))

        def loss_fn(corrector_params, k):
            kb, _ = jax.random.split(k)
            x0, x1 = replay.sample(buffer, kb, self.train_batch_size)
            h = self.drift(corrector_params)(jnp.ones(x1.shape[0], x1.dtype), x1)
            return jnp.mean((h - corrector_target(x0, x1, self.schedule, self.space)) ** 2)

        params, opt_state, _, losses = regression_epoch(
            loss_fn, self.optimizer, state.corrector_params, state.corrector_opt_state, None, k_train,
            s.steps_per_epoch, 0.0, 0,
        )
        new = state._replace(corrector_params=params, corrector_opt_state=opt_state, corrector_buffer=buffer,
                             epoch=state.epoch + 1)
        metrics = {"loss": jnp.mean(losses), "energy_mean": jnp.float32(jnp.nan), "nonfinite_samples": jnp.int32(0),
                   "target_evals": new.energy_evals, "corrector_epoch": jnp.bool_(True)}
        return new, metrics

    def _adjoint_steps_done(self, epoch):
        """Adjoint-matching optimiser steps taken before ``epoch`` (the EMA warm-up counts them)."""
        stages, within = epoch // self.stage_length, epoch % self.stage_length
        epochs = stages * self.settings.adjoint_epochs + jnp.minimum(within, self.settings.adjoint_epochs)
        return epochs * self.settings.steps_per_epoch

    def step(self, key, state: AsbsTrainState) -> tuple[AsbsTrainState, dict]:
        """One epoch: adjoint matching for the first ``adjoint_epochs`` of each stage, corrector matching after."""
        if not self.learned_corrector:
            return self._adjoint_epoch(key, state)
        in_adjoint_phase = state.epoch % self.stage_length < self.settings.adjoint_epochs
        return jax.lax.cond(in_adjoint_phase, self._adjoint_epoch, self._corrector_epoch, key, state)


def corrector_target(x0, x1, schedule: GeometricNoiseSchedule, space: StateSpace):
    """``grad_{x_1} log p^base(x_1 | x_0) = -(x_1 - x_0) / nu_1`` on the state subspace (the VE base)."""
    return -space.project(x1 - x0) / schedule.nu1


def stages(history: dict) -> dict:
    """The training stages ASBS's health judges apart: ``{label: bool mask over the epochs}``.

    Adjoint matching (the epochs whose ``corrector_epoch`` metric is False) and, when any ran,
    corrector matching: their losses have different scales, so each is judged as a run of its
    own (a NaN/inf loss, an explosion), and neither for progress, since both regress on targets
    that move with training (the lean adjoint of the current drift's paths; the current drift's
    end points).
    """
    corrector = np.asarray(history["corrector_epoch"], bool)
    if not corrector.any():
        return {None: ~corrector}
    return {"adjoint matching": ~corrector, "corrector matching": corrector}


def build(target, settings: AsbsSettings | None = None, *, batch_size: int | None = None,
          optimizer: optax.GradientTransformation | None = None) -> LearnedSampler:
    """ASBS, the Adjoint Schrödinger Bridge Sampler (Liu et al. 2025): adjoint and corrector matching from a prior.

    Parameters
    ----------
    target : Target
        Real-valued; particle targets (with ``n_particles``) are centred, and need them for the EGNN
        drift and the harmonic prior.
    settings : AsbsSettings, optional
        Default ``AsbsSettings()`` (the paper's DW-4 run).
    batch_size : int, optional
        Trajectories simulated per epoch (default :data:`~jaxsamp.learned.diffusion.adjoint.BATCH_SIZE`).
    optimizer : optax.GradientTransformation, optional
        Replaces the Adam of ``settings`` for the drift and the corrector network.

    Returns
    -------
    LearnedSampler
        Of :class:`Asbs`: one training step is one epoch, of adjoint or of corrector matching;
        its health judges the two stages apart (:func:`stages`).
    """
    settings = settings_or_default(settings, AsbsSettings)
    batch_size = check_int("batch_size", BATCH_SIZE if batch_size is None else batch_size, ge=1)
    sampler = Asbs(target, settings, batch_size, optimizer)
    return LearnedSampler(sampler.init, sampler.step, sampler.sample, sampler.evaluate,
                          TrainingHealth(judge_progress=False, stages=stages), density=sampler.target)
