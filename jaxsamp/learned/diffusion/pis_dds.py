"""PIS and DDS on the shared controlled-SDE core, trainable with the reverse KL, log-variance or trajectory balance.

* **PIS**, the Path Integral Sampler (Zhang & Chen 2022, ICLR): ``x_0 = 0``,
  Euler-Maruyama of ``dX = s(t) u dt + s(t) dW`` with the cosine schedule
  (:class:`~jaxsamp.learned.diffusion.sde.CosineNoiseSchedule`, ``sigma_max = max_diffusion``);
  the score input of the control is ``t grad log rho`` (the Beyond-ELBOs code's
  ``(1 - step/T) log rho`` in forward time).
* **DDS**, the Denoising Diffusion Sampler (Vargas, Grathwohl & Doucet 2023,
  ICLR): the Ornstein-Uhlenbeck process stationary at ``N(0, init_std^2)``, its
  exponential integrator ``x' = sqrt(1 - b^2) x + b^2 u + b init_std xi`` with the
  squared-cosine step scheme (:func:`~jaxsamp.learned.diffusion.sde.cosine_ou_betas`,
  ``noise_scale`` 6); the score input is ``grad log rho``.

Both use the Langevin-preconditioned network (:class:`~jaxsamp.nets.langevin_net.LangevinNet`)
and the exact discrete Girsanov weights of :mod:`jaxsamp.learned.diffusion.sde`. The loss
(:mod:`jaxsamp.learned.diffusion.path_losses`):

* ``kl``: the negative ELBO, differentiated through the simulated paths
  (``jax.checkpoint`` per step bounds the memory). With ``kl_stochastic_term=False``
  the training loss leaves out the stochastic Girsanov term ``sum_k (b_k / c_k) u_k . xi_k``
  of ``log dP^u/dP^ref``: the running and terminal costs only, as the Beyond-ELBOs
  code's ELBO (``-mean(running + terminal)``) and PIS's control objective
  ``E[int |u|^2 / 2 dt + terminal cost]`` (Zhang & Chen 2022). Each ``xi_k`` is independent
  of ``x_k`` and of the parameters (reparameterised paths), so the term has mean zero
  at every parameter value: the loss's expectation and its expected gradient are
  unchanged, and the gradient's variance drops where the control's share of the
  weight's noise is large (0.22x on a perturbed untrained PIS, 2-D Gaussian; 1.0x for
  an untrained DDS, whose terminal cost dominates). The path weights of the metrics, of
  :meth:`~PisDds.sample` and of every evaluation keep the term, so they stay exact;
* ``log_variance``: the variance of the path log-weights (VarGrad) on paths of a
  stop-gradient copy of the control (Richter & Berner 2024): no
  backpropagation through the SDE;
* ``trajectory_balance``: the same paths, ``(log Z - log w)^2`` with a learned
  ``log Z`` (Malkin et al. 2022; Sendera et al. 2024).

Defaults are the Beyond-ELBOs benchmark's (Blessing et al. 2024, ``configs/algorithm/pis.yaml``,
``dds.yaml``): 128 steps, two GELU layers of 64, learning rate 5e-4, gradient
clip 1; ``max_diffusion`` and ``init_std`` are per target (funnel 4 / 1, GMM40 160
/ 40, many-well 4 / 1). Unlike that code, the noise and the start are not
clipped, so the weights stay exact. A batch whose gradient is not finite skips its
update (``optax.apply_if_finite``; counted in the ``skipped_updates`` metric).

Cost: every step of every path evaluates the target's gradient once for the
control's score input (and once more along stored paths for the off-policy
losses), plus the log density at the end: ``target_evals`` counts them.

Each method has its settings (:class:`PisSettings`, :class:`DdsSettings`: the shared fields of
the network and the loss, and the scale of its own reference process) and its constructor,
:func:`build_pis` / :func:`build_dds`, which returns a :class:`~jaxsamp.core.LearnedSampler`
(:func:`jaxsamp.fit` trains it); :class:`PisDds` holds the numerics of both.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import nnx

from jaxsamp.core.errors import InputError
from jaxsamp.core.protocols import LearnedSampler, TrainingHealth, WeightedSamples
from jaxsamp.core.validation import OneOf, PositiveFloat, PositiveInt, check_fields, check_int, settings_or_default
from jaxsamp.learned.diffusion import path_losses, sde
from jaxsamp.learned.diffusion.evaluation import check_options, path_figures
from jaxsamp.nets.langevin_net import LangevinNet

LOSSES = ("kl", "log_variance", "trajectory_balance")
MAX_SKIPPED = 20  # consecutive non-finite updates skipped before one is let through
#: Paths per training step when none is given (``build_pis`` / ``build_dds``, the registry's default).
BATCH_SIZE = 256


@dataclasses.dataclass(frozen=True)
class _PathLossSettings:
    """The fields PIS and DDS share: the loss, the SDE's steps, the network and its optimiser.

    Attributes
    ----------
    loss : {"kl", "log_variance", "trajectory_balance"}
    num_time_steps : int
        Steps of the discretised SDE (TPS-DPS's name for its path steps too). It was ``num_steps``,
        which :func:`jaxsamp.fit` uses for training updates; a config that still names it is refused with
        the new name (``RENAMED``).
    hidden, num_layers : int
        Width and depth of :class:`~jaxsamp.nets.langevin_net.LangevinNet`.
    learning_rate, log_z_learning_rate : float
        Adam learning rates of the network and of the learned ``log Z`` (trajectory balance).
    grad_clip : float
        Global-norm gradient clip of the network.
    langevin : bool
        Give the control the target's score as an input.
    kl_stochastic_term : bool
        ``kl`` loss only: keep the zero-mean stochastic Girsanov term in the training loss
        (``False`` drops it; module docstring). Evaluation weights are exact either way.
        On the funnel (``bench_paths``, 950 updates, 3 seeds) ``False`` helped PIS (log Z
        error 0.34 ± 0.10 against 0.72 ± 0.53) and broke DDS (one seed diverged, two
        reached ELBOs below -400): use it with PIS only.
    """

    #: retired field names and the fields that replaced them (named in the error of a config that uses one)
    RENAMED: ClassVar[dict[str, str]] = {"num_steps": "num_time_steps"}

    loss: Annotated[str, OneOf(LOSSES)] = "kl"
    num_time_steps: PositiveInt = 128
    hidden: PositiveInt = 64
    num_layers: PositiveInt = 2
    learning_rate: PositiveFloat = 5e-4
    log_z_learning_rate: PositiveFloat = 1e-2
    grad_clip: PositiveFloat = 1.0
    langevin: bool = True
    kl_stochastic_term: bool = True

    def __post_init__(self):
        check_fields(self)
        if not self.kl_stochastic_term and self.loss != "kl":
            raise InputError(f"kl_stochastic_term=False applies to the 'kl' loss only, got loss {self.loss!r}",
                             "the variance losses use the exact path weights; drop kl_stochastic_term")


@dataclasses.dataclass(frozen=True)
class PisSettings(_PathLossSettings):
    """Hyper-parameters of PIS (``sampler.params`` of a ``kind: diffusion`` config with ``name: pis``).

    The loss, the SDE's ``num_time_steps``, the network (``hidden``, ``num_layers``, ``langevin``) and its
    optimiser (``learning_rate``, ``log_z_learning_rate``, ``grad_clip``) and ``kl_stochastic_term``, as
    :class:`DdsSettings` has them, and the scale of PIS's reference process:

    Attributes
    ----------
    max_diffusion : float
        ``sigma_max`` of the cosine schedule (its noise starts near ``max_diffusion / 2``).
    """

    max_diffusion: PositiveFloat = 4.0


@dataclasses.dataclass(frozen=True)
class DdsSettings(_PathLossSettings):
    """Hyper-parameters of DDS (``sampler.params`` of a ``kind: diffusion`` config with ``name: dds``).

    The loss, the SDE's ``num_time_steps``, the network (``hidden``, ``num_layers``, ``langevin``) and its
    optimiser (``learning_rate``, ``log_z_learning_rate``, ``grad_clip``) and ``kl_stochastic_term``, as
    :class:`PisSettings` has them, and the scale of DDS's reference process:

    Attributes
    ----------
    init_std : float
        Standard deviation of the prior ``N(0, init_std^2 I)``, the OU process's stationary law.
    noise_scale : float
        Total of the squared-cosine ``beta^2`` scheme.
    """

    init_std: PositiveFloat = 1.0
    noise_scale: PositiveFloat = 6.0


class PisDdsTrainState(NamedTuple):
    """Training state: a plain PyTree the driver checkpoints."""

    params: nnx.State
    log_z: jax.Array
    opt_state: optax.OptState
    log_z_opt_state: optax.OptState
    step: jax.Array
    energy_evals: jax.Array


class PisDds:
    """The numerics of PIS and DDS for ``target``: training, sampling and evaluation, key first.

    :func:`build_pis` and :func:`build_dds` construct it and return its functions as a
    :class:`~jaxsamp.core.LearnedSampler`.

    Parameters
    ----------
    target : Target
        A real-valued target with a flat event shape ``(d,)``.
    settings : PisSettings or DdsSettings
        The method: PIS for :class:`PisSettings`, DDS for :class:`DdsSettings`.
    batch_size : int
        Paths simulated per training step.
    optimizer : optax.GradientTransformation, optional
        The network's optimiser (default: Adam at ``learning_rate`` after a global-norm clip at
        ``grad_clip``); a non-finite update is skipped either way.

    Notes
    -----
    ``step`` returns these metrics (one value per step, on the step's ``batch_size`` paths):

    * ``loss``: the configured loss (nats for ``kl``: minus the ELBO; nats squared for the variance losses);
    * ``elbo``: the mean path log-weight, a lower bound on ``log Z`` (nats);
    * ``log_Z_hat``: ``logsumexp(log w) - log n``, the importance-sampling estimate of ``log Z`` (nats);
    * ``ess``: the normalised ESS of the path weights, in ``(0, 1]``;
    * ``log_Z_learned``: the learned ``log Z`` before the step (trajectory balance; 0 otherwise);
    * ``target_evals``: target evaluations so far (gradients and log densities);
    * ``skipped_updates``: batches whose gradient was not finite and were skipped, so far.

    Scales for a new target: PIS's paths start at 0 and spread by about ``max_diffusion / 2`` over the unit
    time, so ``max_diffusion`` should be about twice the target's largest marginal standard deviation plus its
    distance from 0 (the Beyond-ELBOs settings: funnel 4, GMM40 160, many-well 4); DDS's prior is
    ``N(0, init_std^2)``, so ``init_std`` should cover the target's spread (funnel 1, GMM40 40, many-well 1). A
    short MCMC run or a Laplace fit gives the spread; a scale too small leaves modes unvisited (low ESS,
    ``log Z`` low), one too large wastes paths (noisy weights). The log density must have a finite gradient
    where paths start (0 for PIS).
    """

    def __init__(self, target, settings: PisSettings | DdsSettings, batch_size: int, optimizer=None):
        if not isinstance(settings, (PisSettings, DdsSettings)):
            raise InputError(f"settings must be a PisSettings or a DdsSettings, got {type(settings).__name__}")
        self.method = "pis" if isinstance(settings, PisSettings) else "dds"
        if target.domain.kind != "real" or target.event_shape is None or len(target.event_shape) != 1:
            raise InputError(f"{self.method} needs a real-valued target with a flat state (d,), got {target.name!r}")
        self.target, self.settings, self.batch_size = target, settings, batch_size
        self.space = sde.state_space(target)
        k = settings.num_time_steps
        if self.method == "pis":
            schedule = sde.CosineNoiseSchedule(0.01, settings.max_diffusion)
            self.chain = sde.euler_maruyama_chain(schedule, jnp.linspace(0.0, 1.0, k + 1), control_power=1)
        else:
            self.chain = sde.ou_chain(sde.cosine_ou_betas(k, settings.noise_scale), settings.init_std)
        # a batch whose loss overflows (a path thrown into a stiff region) skips its update instead of poisoning
        # the network; after MAX_SKIPPED such batches in a row the non-finite update goes through and the run fails
        if optimizer is None:
            optimizer = optax.chain(optax.clip_by_global_norm(settings.grad_clip), optax.adam(settings.learning_rate))
        self.optimizer = optax.apply_if_finite(optimizer, MAX_SKIPPED)
        self.log_z_optimizer = optax.adam(settings.log_z_learning_rate)
        self.graphdef, _ = nnx.split(self._network(jax.random.key(0)))
        score_evals = k if settings.langevin else 0
        # per path: the scores along the simulation, the log density at its end, and, off-policy, the scores again
        self.evals_per_path = score_evals + 1 + (score_evals if settings.loss != "kl" else 0)
        # the evaluation's functions, compiled once: evaluating again (a learning curve) compiles nothing
        self._sample_at = jax.jit(self.sample_at, static_argnums=2)
        self._backward_log_weights = jax.jit(self.backward_log_weights)

    def _network(self, key) -> LangevinNet:
        s = self.settings
        return LangevinNet(self.space.dim, s.hidden, s.num_layers, rngs=nnx.Rngs(key))

    def control(self, params) -> sde.Control:
        """``u(t, x)`` of network parameters ``params``, with the (annealed) target score as input."""
        model = nnx.merge(self.graphdef, params)
        score_fn = jax.vmap(jax.grad(self.target.log_prob))

        def u(t, x):
            if not self.settings.langevin:
                return model(t, x, jnp.zeros_like(x))
            score = jax.lax.stop_gradient(score_fn(x))
            if self.method == "pis":
                score = t[:, None] * score
            return model(t, x, score)

        return u

    def init(self, key) -> PisDdsTrainState:
        """Fresh network, ``log Z = 0`` and the two optimiser states."""
        _, params = nnx.split(self._network(key))
        log_z = jnp.zeros(())
        return PisDdsTrainState(
            params, log_z, self.optimizer.init(params), self.log_z_optimizer.init(log_z), jnp.int32(0), jnp.int32(0)
        )

    def log_weights(self, x, log_rn):
        """Path log-weights of terminal states ``x`` and their ``log dP^u/dP^ref``."""
        return sde.path_log_weights(self.chain, self.space, self.target.log_prob, x, log_rn)

    def loss(self, params, log_z, key):
        """The configured loss on ``batch_size`` fresh paths; returns ``(loss, log_w)`` with the exact ``log_w``."""
        if self.settings.loss == "kl":
            path = sde.simulate(self.chain, self.control(params), self.space, key, self.batch_size, remat=True)
            log_w = self.log_weights(path.x, path.log_rn)
            # log w carries -stochastic (log w = ... - log_rn); adding it back leaves the running and terminal costs
            trained = log_w if self.settings.kl_stochastic_term else log_w + path.stochastic
            return path_losses.reverse_kl(trained), log_w
        behaviour = self.control(jax.lax.stop_gradient(params))
        path = sde.simulate(self.chain, behaviour, self.space, key, self.batch_size, keep_states=True)
        states = jax.lax.stop_gradient(path.states)
        log_w = self.log_weights(states[-1], sde.log_rn_along(self.chain, self.control(params), self.space, states))
        variate = "learned" if self.settings.loss == "trajectory_balance" else "batch_mean"
        return path_losses.variance_loss(log_w, variate, log_z), log_w

    def step(self, key, state: PisDdsTrainState) -> tuple[PisDdsTrainState, dict]:
        """One optimiser step of the network (and of ``log Z`` for trajectory balance) on fresh paths."""
        (loss, log_w), (grads, grad_log_z) = jax.value_and_grad(self.loss, argnums=(0, 1), has_aux=True)(
            state.params, state.log_z, key
        )
        updates, opt_state = self.optimizer.update(grads, state.opt_state, state.params)
        log_z_update, log_z_opt_state = self.log_z_optimizer.update(grad_log_z, state.log_z_opt_state)
        new = PisDdsTrainState(
            optax.apply_updates(state.params, updates),
            optax.apply_updates(state.log_z, log_z_update),
            opt_state,
            log_z_opt_state,
            state.step + 1,
            state.energy_evals + self.batch_size * self.evals_per_path,
        )
        weights = WeightedSamples(None, jax.lax.stop_gradient(log_w))
        metrics = {"loss": loss, "elbo": jnp.mean(log_w), "log_Z_hat": weights.log_Z, "ess": weights.ess,
                   "log_Z_learned": state.log_z, "target_evals": new.energy_evals,
                   "skipped_updates": opt_state.total_notfinite}
        return new, metrics

    def sample_at(self, key, params, num_samples: int) -> WeightedSamples:
        """``num_samples`` terminal states of the control of ``params`` with their path log-weights."""
        path = sde.simulate(self.chain, self.control(jax.lax.stop_gradient(params)), self.space, key, num_samples)
        return WeightedSamples(path.x, self.log_weights(path.x, path.log_rn), 0.0)

    def sample(self, key, state: PisDdsTrainState, num_samples: int) -> WeightedSamples:
        """``num_samples`` terminal states of the trained sampler with their path log-weights (``.log_Z``: log Z)."""
        return self.sample_at(key, state.params, num_samples)  # PIS and DDS keep no parameter average

    def backward_log_weights(self, key, params, x_target) -> jax.Array:
        """Path log-weights of reference paths drawn backward from target samples ``x_target`` (the EUBO's paths)."""
        states = sde.simulate_backward(self.chain, self.space, key, jnp.asarray(x_target))
        log_rn = sde.log_rn_along(self.chain, self.control(jax.lax.stop_gradient(params)), self.space, states)
        return self.log_weights(states[-1], log_rn)

    def evaluate(self, key, state: PisDdsTrainState, num_samples: int, **options) -> dict:
        """The protocol's figures of the trained sampler (:func:`~jaxsamp.learned.diffusion.evaluation.path_figures`).

        ``options``: ``reference``, ``forward``, ``sinkhorn``, ``num_sets`` (as that function takes them).
        """
        return path_figures(key, state.params, num_samples, target=self.target, sample_at=self._sample_at,
                            backward_log_weights=self._backward_log_weights, **check_options(options))


def _build(settings_class, target, settings, batch_size: int | None, optimizer) -> LearnedSampler:
    """``build_pis`` / ``build_dds``: the settings of the method (default its defaults) and the batch checked."""
    settings = settings_or_default(settings, settings_class)
    batch_size = check_int("batch_size", BATCH_SIZE if batch_size is None else batch_size, ge=1)
    sampler = PisDds(target, settings, batch_size, optimizer)
    # the path losses (KL, log-variance, trajectory balance) are fixed objectives of the drift: judged for progress
    return LearnedSampler(sampler.init, sampler.step, sampler.sample, sampler.evaluate,
                          TrainingHealth(judge_progress=True), density=sampler.target)


def build_pis(target, settings: PisSettings | None = None, *, batch_size: int | None = None,
              optimizer: optax.GradientTransformation | None = None) -> LearnedSampler:
    """PIS, the Path Integral Sampler (Zhang & Chen 2022, ICLR): a learned drift from a point, exact path weights.

    Parameters
    ----------
    target : Target
        A real-valued target with a flat state ``(d,)``.
    settings : PisSettings, optional
        Default ``PisSettings()`` (the Beyond-ELBOs benchmark's).
    batch_size : int, optional
        Paths per training step (default :data:`BATCH_SIZE`).
    optimizer : optax.GradientTransformation, optional
        Replaces the network's Adam and clip of ``settings``; a non-finite update is still skipped.

    Returns
    -------
    LearnedSampler
        Of :class:`PisDds`: one training step is one update on ``batch_size`` fresh paths.
    """
    return _build(PisSettings, target, settings, batch_size, optimizer)


def build_dds(target, settings: DdsSettings | None = None, *, batch_size: int | None = None,
              optimizer: optax.GradientTransformation | None = None) -> LearnedSampler:
    """DDS, the Denoising Diffusion Sampler (Vargas, Grathwohl & Doucet 2023, ICLR): a learned drift of an OU process.

    The parameters and the result are :func:`build_pis`'s, with :class:`DdsSettings`.
    """
    return _build(DdsSettings, target, settings, batch_size, optimizer)
