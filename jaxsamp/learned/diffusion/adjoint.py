"""Adjoint Sampling: a diffusion sampler trained by reciprocal adjoint matching.

Havens et al. (2025), "Adjoint Sampling: Highly Scalable Diffusion Samplers via
Adjoint Matching" (ICML), as implemented in the official synthetic-energy code
(``facebookresearch/adjoint_samplers``). The sampler is the controlled SDE

    dX_t = g(t)^2 u_theta(t, X_t) dt + g(t) dW_t,   X_0 = 0,   t in [0, 1],

with the geometric variance-exploding schedule ``g``. Its memoryless base
process (Dirac start) has the terminal law ``N(0, nu_1 I)``; the optimal control
makes ``X_1 ~ exp(log_prob)``. Training regresses ``u_theta(t, X_t)`` on the
negative terminal ("lean") adjoint ``-a_1``, which is constant in ``t`` because the
base has no drift (Havens et al. 2025, the "lean adjoint"):

    a_1 = COM-free(clip(grad E(X_1))) - X_1 / nu_1,   E = -log_prob,

at points ``X_t`` resampled from the base bridge between ``0`` and ``X_1``
("reciprocal" adjoint matching). Endpoints ``(X_1, a_1)`` come from a FIFO
replay buffer, so each epoch costs one energy gradient per simulated sample and
no backpropagation through the SDE.

For particle targets every state, increment, bridge noise, adjoint and drift is
projected onto the zero-centre-of-mass subspace (ASBS, Liu et al. 2025, App. C).

The schedule, the state space, the simulation and the path weights are the
shared controlled-SDE core, :mod:`jaxsamp.learned.diffusion.sde`; this module holds what
is Adjoint Sampling's own: the lean adjoint, the base bridge, the matching loss
and the training loop (:class:`AdjointSampling`), and its constructor :func:`build`,
which returns a :class:`~jaxsamp.core.LearnedSampler` (:func:`jaxsamp.fit` trains it).
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Callable, NamedTuple

import chex
import jax
import jax.numpy as jnp
import optax
from flax import nnx

from jaxsamp.core.errors import InputError
from jaxsamp.core.protocols import LearnedSampler, TrainingHealth, WeightedSamples
from jaxsamp.core.validation import Interval, OneOf, PositiveFloat, PositiveInt, check_fields, check_int, settings_or_default
from jaxsamp.diagnostics.particles import SampleScorer
from jaxsamp.learned import buffer as replay
from jaxsamp.learned.diffusion import sde
from jaxsamp.learned.diffusion.evaluation import check_options, path_figures
from jaxsamp.learned.diffusion.sde import GeometricNoiseSchedule, StateSpace, centred_normal, state_space
from jaxsamp.nets.egnn import EGNN
from jaxsamp.nets.mlp import MLP, fourier_time_features

#: Trajectories simulated per epoch when none is given (:func:`build`, the registry's default).
BATCH_SIZE = 256


def clip_per_particle(v, space: StateSpace, max_norm: float):
    """Rescale each particle's ``spatial_dim``-vector of ``v`` (..., D) to norm ``<= max_norm``.

    Coefficient ``min(1, max_norm / (|v_i| + 1e-6))`` as in the reference code
    (``GraphScoreGradTermCost``); for a plain vector target the whole vector is clipped.
    Infinite components (float32 overflow of a Lennard-Jones repulsion at a tiny
    distance) first become ``+-max_norm`` and NaNs 0, so one bad sample cannot
    poison the replay buffer.
    """
    v = jnp.nan_to_num(v, nan=0.0, posinf=max_norm, neginf=-max_norm)
    p = v.reshape(*v.shape[:-1], space.n_particles, space.spatial_dim)
    norm = jnp.linalg.norm(p, axis=-1, keepdims=True)
    return (p * jnp.minimum(1.0, max_norm / (norm + 1e-6))).reshape(v.shape)


class Rollout(NamedTuple):
    """Result of :func:`simulate`.

    Attributes
    ----------
    x1 : (B, D) terminal states.
    log_rn : (B,) ``log dQ^u/dQ^base`` of the simulated path.
    path : (num_steps + 1, B, D) all states, or ``None`` unless ``keep_path``.
    x0 : (B, D) start states (zeros for Adjoint Sampling's point mass).
    """

    x1: jax.Array
    log_rn: jax.Array
    path: jax.Array | None
    x0: jax.Array


def time_grid(nfe: int):
    """``linspace(0, 1, nfe)``: ``nfe - 1`` steps, as in the reference code."""
    return jnp.linspace(0.0, 1.0, nfe)


def adjoint_chain(schedule: GeometricNoiseSchedule, nfe: int, exact_variance: bool = True, v0: float = 0.0) -> sde.GaussianChain:
    """``dX = g^2 u dt + g dW`` on :func:`time_grid` from ``N(0, v0)`` (``v0 = 0``: Adjoint Sampling's point mass).

    ``exact_variance``: increments of variance ``nu(t_{k+1}) - nu(t_k)`` in the
    noise and the drift (:func:`jaxsamp.learned.diffusion.sde.exact_variance_chain`), so the
    base chain ends at exactly the ``N(0, v0 + nu_1)`` the terminal adjoint assumes;
    otherwise left-point Euler-Maruyama as in the reference code, whose base
    variance at ``t = 1`` overshoots ``nu_1``.
    """
    if exact_variance:
        return sde.exact_variance_chain(schedule, time_grid(nfe), v0)
    return sde.euler_maruyama_chain(schedule, time_grid(nfe), control_power=2).replace(v0=float(v0))


def simulate(drift, chain: sde.GaussianChain, space: StateSpace, key, num_samples: int, *, keep_path: bool = False) -> Rollout:
    """Simulate ``chain`` under the control ``drift(t (B,), x (B, D))``, every increment projected.

    :func:`jaxsamp.learned.diffusion.sde.simulate`; the discrete path log Radon-Nikodym
    derivative against the base chain, ``sum_k b_k^2 |u_k|^2 / (2 c_k^2) + (b_k / c_k) u_k . xi_k``,
    is exact for the simulated Markov chain (Girsanov's theorem in discrete time).
    """
    path = sde.simulate(chain, drift, space, key, num_samples, keep_states=keep_path)
    return Rollout(path.x, path.log_rn, path.states, path.x0)


def path_log_weights(log_prob, rollout: Rollout, chain: sde.GaussianChain, space: StateSpace):
    """Importance log-weights of simulated paths for the target path measure.

    ``log w = log_prob(X_1) - log N(X_1; 0, v_K I) - log dQ^u/dQ^base``, with
    ``v_K`` the base chain's terminal variance and the Gaussian taken on the state
    subspace (:func:`jaxsamp.learned.diffusion.sde.path_log_weights`): ``E_u[w] = Z`` exactly
    for the discretised sampler (for particles: the integral over the zero-COM subspace).
    """
    return sde.path_log_weights(chain, space, log_prob, rollout.x1, rollout.log_rn)


def terminal_adjoint(x1, grad_energy, schedule: GeometricNoiseSchedule):
    """Lean adjoint ``a_1 = grad E(X_1) - X_1 / nu_1`` from a centred, clipped ``grad_energy`` (:func:`energy_gradients`).

    Gradient of the terminal cost ``E + log p_1^base`` (Havens et al. 2025); the
    per-particle clip comes before the base term, in the order of the reference
    code (``adjoint_samplers`` ``GraphScoreGradTermCost``; the older
    ``adjoint_sampling`` clips after adding it). ``-X_1 / nu_1`` is the base's
    terminal score: ASBS's corrector for a point-mass prior. Shapes: (B, D) -> (B, D).
    """
    chex.assert_equal_shape([x1, grad_energy])
    return grad_energy - x1 / schedule.nu1


def bridge_sample(key, x1, t, schedule: GeometricNoiseSchedule, space: StateSpace, x0=None):
    """Draw ``X_t`` from the base bridge ``N(X_0 + kappa_t (X_1 - X_0), nu_1 kappa_t (1 - kappa_t) I)``, ``kappa_t = nu_t / nu_1``.

    ``x1`` (B, D), ``t`` (B,), ``x0`` (B, D) or ``None`` for Adjoint Sampling's
    start at the origin; the noise lies on the state subspace and the variance is
    clamped at 0 (the reciprocal projection of Havens et al. 2025; reference code
    ``VESDE.sample_posterior``; ASBS, Liu et al. 2025, bridges between model pairs).
    """
    chex.assert_rank([x1, t], [2, 1])
    kappa = (schedule.nu(t) / schedule.nu1)[:, None]
    std = jnp.sqrt(jnp.maximum(schedule.nu1 * kappa * (1.0 - kappa), 0.0))
    mean = kappa * x1 if x0 is None else x0 + kappa * (x1 - x0)
    return mean + std * centred_normal(key, space, (x1.shape[0],))


def adjoint_matching_loss(drift, key, x1, a1, schedule: GeometricNoiseSchedule, space: StateSpace, x0=None):
    """Reciprocal adjoint matching loss ``mean |u(t, X_t) + a_1|^2``, ``t ~ U[0, 1]``.

    The mean runs over the batch and the coordinates, as in the reference code.
    ``X_t`` comes from :func:`bridge_sample` (between ``x0`` and ``x1``); nothing is
    differentiated through the simulation that produced ``(x1, a1)``.
    """
    chex.assert_equal_shape([x1, a1])
    k_t, k_b = jax.random.split(key)
    t = jax.random.uniform(k_t, (x1.shape[0],))
    xt = bridge_sample(k_b, x1, t, schedule, space, x0)
    return jnp.mean((drift(t, xt) + a1) ** 2)


def regression_epoch(loss_fn, optimizer, params, opt_state, ema_params, key, num_steps: int, ema_decay: float, steps_done):
    """``num_steps`` optimiser steps on ``loss_fn(params, key)``, each followed by an update of the parameter average.

    ``ema <- d * ema + (1 - d) * params`` with ``d = min(ema_decay, (1 + n) / (10 + n))``
    after ``n`` earlier steps (``steps_done`` before this epoch): Polyak averaging
    with the usual warm-up, so the initial network does not linger in the average
    of a short run; ``ema_params=None`` keeps no average. Returns
    ``(params, opt_state, ema_params, losses)``.
    """

    def update(carry, inputs):
        params, opt_state, ema = carry
        k, n = inputs
        loss, grads = jax.value_and_grad(loss_fn)(params, k)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        if ema is not None:
            decay = jnp.minimum(ema_decay, (1.0 + n) / (10.0 + n))
            ema = jax.tree.map(lambda e, p: decay * e + (1.0 - decay) * p, ema, params)
        return (params, opt_state, ema), loss

    counts = jnp.asarray(steps_done, jnp.float32) + jnp.arange(num_steps, dtype=jnp.float32)
    (params, opt_state, ema_params), losses = jax.lax.scan(
        update, (params, opt_state, ema_params), (jax.random.split(key, num_steps), counts)
    )
    return params, opt_state, ema_params, losses


class MLPDrift(nnx.Module):
    """Plain drift ``u(t, x) = MLP([x, fourier_time_features(t)])`` for non-particle targets.

    The last layer starts at zero, so the initial control is exactly 0 (the base
    process), as for the EGNN's near-zero coordinate head.
    """

    def __init__(self, dim: int, hidden: int, num_layers: int, num_frequencies: int = 4, *, rngs: nnx.Rngs):
        self.num_frequencies = num_frequencies
        self.mlp = MLP(dim + 1 + 2 * num_frequencies, [hidden] * num_layers, dim, rngs=rngs)
        last = self.mlp.layers[-1]
        last.kernel.value = jnp.zeros_like(last.kernel.value)

    def __call__(self, t, x):
        t = jnp.broadcast_to(jnp.asarray(t, x.dtype), x.shape[:-1])
        features = jax.vmap(fourier_time_features, in_axes=(0, None))(t.reshape(-1), self.num_frequencies)
        return self.mlp(jnp.concatenate([x, features.reshape(*x.shape[:-1], -1)], axis=-1))


@dataclasses.dataclass(frozen=True)
class AdjointSettings:
    """Hyper-parameters of Adjoint Sampling (defaults: the paper's LJ-13 run, adjoint.md section 4).

    Attributes
    ----------
    network : {"egnn", "mlp"}
        Drift network: the EGNN of :mod:`jaxsamp.nets.egnn` (particle targets) or an MLP.
    hidden, num_layers : int
        Width and depth of the network.
    sigma_min, sigma_max : float
        Geometric noise schedule.
    nfe : int
        Time-grid points of the simulation (``nfe - 1`` steps).
    exact_variance : bool
        Exact-variance increments (:func:`adjoint_chain`); ``False`` is the reference
        code's left-point Euler-Maruyama.
    train_batch_size : int or None
        Buffer samples per optimiser step (default: the rollout batch).
    buffer_epochs : int
        Replay-buffer capacity in rollouts: the buffer holds the last
        ``buffer_epochs * batch_size`` samples, so its staleness does not change
        with the rollout size (the paper: 10 000 samples of 512-path rollouts, about 20).
    steps_per_epoch : int
        Optimiser steps after each rollout.
    learning_rate : float
        Adam learning rate.
    adam_eps : float
        Adam's ``eps`` (optax's default 1e-8; the official ``adjoint_samplers`` code's 1e-10).
    ema_decay : float
        Per-step decay of the parameter average the sampler draws from (0: no averaging).
    max_grad_norm : float
        Per-particle clip of the energy gradient in the terminal adjoint.
    """

    network: Annotated[str, OneOf(("egnn", "mlp"))] = "egnn"
    hidden: PositiveInt = 128
    num_layers: PositiveInt = 5
    sigma_min: PositiveFloat = 1e-3
    sigma_max: PositiveFloat = 2.0
    nfe: Annotated[int, Interval(ge=2)] = 1000
    exact_variance: bool = True
    train_batch_size: PositiveInt | None = None
    buffer_epochs: PositiveInt = 20
    steps_per_epoch: PositiveInt = 100
    learning_rate: PositiveFloat = 1e-4
    adam_eps: PositiveFloat = 1e-8
    ema_decay: Annotated[float, Interval(ge=0, lt=1)] = 0.999
    max_grad_norm: PositiveFloat = 100.0

    def __post_init__(self):
        check_fields(self)
        if not self.sigma_min < self.sigma_max:
            raise InputError(f"need sigma_min < sigma_max, got {self.sigma_min}, {self.sigma_max}")


class AdjointTrainState(NamedTuple):
    """Training state: a plain PyTree (network as ``nnx.split`` state) the driver checkpoints."""

    params: nnx.State
    ema_params: nnx.State
    opt_state: optax.OptState
    buffer: replay.ReplayBuffer
    epoch: jax.Array
    energy_evals: jax.Array


def drift_network(settings: AdjointSettings, space: StateSpace, key) -> nnx.Module:
    """The control network of ``settings`` for ``space``: an EGNN for particles, else an MLP."""
    rngs = nnx.Rngs(key)
    if settings.network == "egnn":
        return EGNN(space.n_particles, space.spatial_dim, settings.hidden, settings.num_layers, rngs=rngs)
    return MLPDrift(space.dim, settings.hidden, settings.num_layers, rngs=rngs)


def check_target(target, settings: AdjointSettings, method: str) -> None:
    """A real-valued target, with particles when the network is an EGNN; else an :class:`InputError`."""
    if target.domain.kind != "real":
        raise InputError(f"{method} needs a real-valued target, got {target.domain.kind!r}")
    if settings.network == "egnn" and not hasattr(target, "n_particles"):
        raise InputError(f"the EGNN drift needs a particle target; {target.name!r} has no n_particles")


def energy_gradients(target, x1, space: StateSpace, max_norm: float):
    """Energies ``-log_prob`` (B,) and centred, per-particle clipped energy gradients (B, D) at ``x1``."""
    energy, grad = jax.vmap(jax.value_and_grad(lambda x: -target.log_prob(x)))(x1)
    return energy, space.project(clip_per_particle(grad, space, max_norm))


class AdjointSampling:
    """The numerics of Adjoint Sampling for ``target``: training, sampling and evaluation, key first.

    :func:`build` constructs it and returns its functions as a :class:`~jaxsamp.core.LearnedSampler`.
    ``step`` is one epoch: a rollout of ``batch_size`` paths, one energy gradient each, into the
    buffer, then ``steps_per_epoch`` optimiser steps on :func:`adjoint_matching_loss`, all in one
    jittable function.

    Parameters
    ----------
    target : Target
        Real-valued target; particle targets (with ``n_particles``) are centred.
    settings : AdjointSettings
    batch_size : int
        Trajectories simulated per epoch (= energy-gradient calls per epoch).
    optimizer : optax.GradientTransformation, optional
        The drift network's optimiser (default: Adam at ``learning_rate`` with ``adam_eps``).

    Attributes
    ----------
    chain : GaussianChain
        The discretised base process (:func:`adjoint_chain`).

    Notes
    -----
    ``step`` (one epoch) returns:

    * ``loss``: the mean adjoint-matching loss of the epoch's Adam steps (squared drift units); its
      regression targets move with the drift, so it need not decrease while the sampler improves;
    * ``energy_mean``: the mean energy ``-log_prob`` of the epoch's rollout end points (nats);
    * ``nonfinite_samples``: rollout end points whose energy was not finite;
    * ``target_evals``: energy gradients so far (one per simulated path).

    ``sample`` and ``evaluate`` use the exponential moving average of the parameters (``ema_params``).
    Scales for a new target: the base process starts at 0 (a point mass) and ends with standard deviation about
    ``sigma_max``, which should cover the target's spread (a short MCMC run or a Laplace fit gives it);
    ``sigma_min`` sets the finest noise near the end.
    """

    method = "Adjoint Sampling"

    def __init__(self, target, settings: AdjointSettings, batch_size: int, optimizer=None):
        check_target(target, settings, self.method)
        self.target, self.settings, self.batch_size = target, settings, batch_size
        self.space = state_space(target)
        self.schedule = GeometricNoiseSchedule(settings.sigma_min, settings.sigma_max)
        self.chain = adjoint_chain(self.schedule, settings.nfe, settings.exact_variance)
        self.train_batch_size = settings.train_batch_size or batch_size
        self.optimizer = optax.adam(settings.learning_rate, eps=settings.adam_eps) if optimizer is None else optimizer
        self.graphdef, _ = nnx.split(drift_network(settings, self.space, jax.random.key(0)))
        # the evaluation's functions, compiled once: evaluating again (a learning curve) compiles nothing
        self._sample_at = jax.jit(self.sample_at, static_argnums=2)
        self._backward_log_weights = jax.jit(self.backward_log_weights)
        self.scorer = SampleScorer(target)

    def drift(self, params: nnx.State) -> Callable:
        """The control ``u(t, x)`` of network parameters ``params``: ``(B,), (B, D) -> (B, D)``."""
        model = nnx.merge(self.graphdef, params)
        return lambda t, x: self.space.project(model(t, x))

    def init(self, key) -> AdjointTrainState:
        """Fresh network (near-zero control for the EGNN), its average, Adam state and an empty buffer."""
        _, params = nnx.split(drift_network(self.settings, self.space, key))
        example = (jnp.zeros(self.space.dim), jnp.zeros(self.space.dim))
        return AdjointTrainState(
            params=params,
            ema_params=params,
            opt_state=self.optimizer.init(params),
            buffer=replay.init(example, self.settings.buffer_epochs * self.batch_size),
            epoch=jnp.int32(0),
            energy_evals=jnp.int32(0),
        )

    def rollout(self, params, key, num_samples: int, *, keep_path: bool = False) -> Rollout:
        """Simulate ``num_samples`` paths of the controlled SDE without gradients."""
        params = jax.lax.stop_gradient(params)
        return simulate(self.drift(params), self.chain, self.space, key, num_samples, keep_path=keep_path)

    def step(self, key, state: AdjointTrainState) -> tuple[AdjointTrainState, dict]:
        """One epoch: rollout, energy gradients into the buffer, ``steps_per_epoch`` Adam steps."""
        k_roll, k_train = jax.random.split(key)
        x1 = self.rollout(state.params, k_roll, self.batch_size).x1
        energy, grad_energy = energy_gradients(self.target, x1, self.space, self.settings.max_grad_norm)
        buffer = replay.add(state.buffer, (x1, terminal_adjoint(x1, grad_energy, self.schedule)))

        def loss_fn(params, k):
            kb, kl = jax.random.split(k)
            bx1, ba1 = replay.sample(buffer, kb, self.train_batch_size)
            return adjoint_matching_loss(self.drift(params), kl, bx1, ba1, self.schedule, self.space)

        params, opt_state, ema, losses = regression_epoch(
            loss_fn, self.optimizer, state.params, state.opt_state, state.ema_params, k_train,
            self.settings.steps_per_epoch, self.settings.ema_decay, state.epoch * self.settings.steps_per_epoch,
        )
        new = AdjointTrainState(params, ema, opt_state, buffer, state.epoch + 1, state.energy_evals + self.batch_size)
        return new, epoch_metrics(losses, energy, new.energy_evals)

    def backward_log_weights(self, key, params, x_target) -> jax.Array:
        """Path log-weights of base-bridge paths drawn backward from target samples ``x_target`` (for the EUBO)."""
        states = sde.simulate_backward(self.chain, self.space, key, self.space.project(jnp.asarray(x_target)))
        log_rn = sde.log_rn_along(self.chain, self.drift(jax.lax.stop_gradient(params)), self.space, states)
        return sde.path_log_weights(self.chain, self.space, self.target.log_prob, states[-1], log_rn)

    def sample_at(self, key, params, num_samples: int) -> WeightedSamples:
        """``num_samples`` terminal states of the drift of ``params`` with their Girsanov path log-weights."""
        roll = self.rollout(params, key, num_samples)
        return WeightedSamples(roll.x1, path_log_weights(self.target.log_prob, roll, self.chain, self.space), 0.0)

    def sample(self, key, state, num_samples: int) -> WeightedSamples:
        """``num_samples`` terminal states of the trained sampler, drawn with the parameters' exponential moving
        average (``ema_params``), with their path log-weights (``.log_Z`` estimates log Z)."""
        return self.sample_at(key, state.ema_params, num_samples)

    def evaluate(self, key, state, num_samples: int, **options) -> dict:
        """The protocol's figures of the averaged network (:func:`~jaxsamp.learned.diffusion.evaluation.path_figures`).

        The path figures (``log_Z_hat``, ``elbo``, ``ess``, and against the reference ``eubo``,
        ``log_Z_forward``) and the particle protocol of Adjoint Sampling and ASBS
        (:mod:`jaxsamp.diagnostics.particles`; Havens et al. 2025, Sec. 5; Liu et al. 2025, Sec. 5):
        ``w2`` (geometric for particle systems), ``energy_w2`` and ``energy_median`` of the draws
        against ``num_samples`` reference samples (a random subset of a particle system's test split,
        or exact samples), and for particle systems their noise floors ``w2_floor`` and
        ``energy_w2_floor`` (test split against validation split at ``num_samples``).

        ``options``: ``reference``, ``forward``, ``sinkhorn`` (default: not for particle systems),
        ``num_sets`` (as :func:`~jaxsamp.learned.diffusion.evaluation.path_figures` takes them), and
        ``raw_network`` (default False): also score the draws of the raw parameters (the last
        update's, not their average), made with the same key against the same reference, as
        ``raw_w2``, ``raw_energy_w2`` and ``raw_energy_median`` -- whether the average leads or lags
        the network it averages (a learning curve's question).
        """
        options = check_options(options, extra=("raw_network",))
        raw_params = state.params if options.pop("raw_network", False) else None
        return path_figures(key, state.ema_params, num_samples, target=self.target, sample_at=self._sample_at,
                            backward_log_weights=self._backward_log_weights, scorer=self.scorer,
                            raw_params=raw_params, **options)


def epoch_metrics(losses, energy, energy_evals) -> dict:
    """Per-epoch metrics of the adjoint-matching samplers."""
    return {
        "loss": jnp.mean(losses),
        "energy_mean": jnp.mean(energy),
        "nonfinite_samples": jnp.sum(~jnp.isfinite(energy)),
        "target_evals": energy_evals,
    }


def build(target, settings: AdjointSettings | None = None, *, batch_size: int | None = None,
          optimizer: optax.GradientTransformation | None = None) -> LearnedSampler:
    """Adjoint Sampling (Havens et al. 2025, ICML): reciprocal adjoint matching, one energy gradient per path.

    Parameters
    ----------
    target : Target
        Real-valued; particle targets (with ``n_particles``) are centred, and need them for the EGNN drift.
    settings : AdjointSettings, optional
        Default ``AdjointSettings()`` (the paper's LJ-13 run).
    batch_size : int, optional
        Trajectories simulated per epoch (default :data:`BATCH_SIZE`).
    optimizer : optax.GradientTransformation, optional
        Replaces the drift network's Adam of ``settings``.

    Returns
    -------
    LearnedSampler
        Of :class:`AdjointSampling`: one training step is one epoch; ``sample`` and ``evaluate`` use the
        parameters' running average. Adjoint matching regresses on targets that move with the drift, so its
        loss is not judged for progress.
    """
    settings = settings_or_default(settings, AdjointSettings)  # not ASBS's, whose own fields would be ignored here
    batch_size = check_int("batch_size", BATCH_SIZE if batch_size is None else batch_size, ge=1)
    sampler = AdjointSampling(target, settings, batch_size, optimizer)
    return LearnedSampler(sampler.init, sampler.step, sampler.sample, sampler.evaluate,
                          TrainingHealth(judge_progress=False), density=sampler.target)
