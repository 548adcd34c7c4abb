"""SCLD and CMCD: controlled Langevin diffusions along a learned geometric annealing path, run as SMC.

* **SCLD**, Sequential Controlled Langevin Diffusions (Chen, Richter, Berner, Blessing, Neumann &
  Anandkumar, ICLR 2025): ``T`` Euler-Maruyama steps of the controlled Langevin SDE
  ``dX = sigma^2 (grad log pi_s(X) + u(X, s)) ds + sqrt(2) sigma dW`` along the geometric path
  ``log pi_s = (1 - beta(s)) log prior + beta(s) log rho`` from a diagonal Gaussian prior to the
  target ``rho``, cut into ``K`` equal segments (sub-trajectories); at each segment end the
  particles are reweighted by the segment's exact discrete-time weight, resampled when their ESS
  falls below ``resample_threshold`` and moved by one MCMC step (blackjax HMC or MALA) that leaves
  ``pi_s`` invariant: an SMC sampler (Del Moral, Doucet & Jasra 2006) whose proposals are learned.
* **CMCD**, Controlled Monte Carlo Diffusions (Vargas, Padhy, Blessing & Nüsken, ICLR 2024): the case
  of one segment, without resampling or MCMC moves: importance sampling with whole paths.

Both share one numerics class (:class:`Scld`), in this one file: CMCD is SCLD's one-segment case, so its
settings (:class:`CmcdSettings`) are SCLD's less the SMC fields, and :func:`build_cmcd` runs the same code
with one segment, no resampling and no moves (a test checks the two give the same numbers).

The weights are the exact ones of :mod:`jaxsamp.smc.transitions` (the sub-trajectory weight of Chen et al. 2025), with
``h(s) = sigma(s)^2 / T`` the cosine noise schedule of the reference code
(:class:`~jaxsamp.learned.diffusion.sde.CosineNoiseSchedule`, ``sigma_min = 0.01``,
``sigma_max = max_diffusion``) at the step time ``s = n / T``::

    F(x' | x) = N(x + h (grad log pi_s(x) + u(x, s)), 2h I),
    B(x | x') = N(x' + h (grad log pi_s(x') - u(x', s')), 2h I),
    log w_[a, b] = log pi_b(x_b) - log pi_a(x_a) + sum_{n=a}^{b-1} log B_n - log F_n.

Learned, as in the reference code (``anonymous3141/SCLD``): the control ``u`` (a
:class:`~jaxsamp.nets.langevin_net.LangevinNet` fed the annealed score ``grad log pi_s``, its last
layers at zero, so that training starts from unadjusted Langevin annealing, "ULA-SMC"); optionally the
schedule ``beta_n = cumsum(softplus(b))_n / sum(softplus(b))`` (``b`` initialised to ones: uniform)
with its own Adam (``schedule_learning_rate``), and the prior's mean and log standard deviation.
The path's time is the step time ``s = n / T``, so that the noise schedule, the MCMC step sizes and
the network's time input do not move with a learned ``beta``; ``beta(s)`` interpolates ``beta_n``.

Training (one :meth:`Scld.step`): simulate ``batch_size`` particles through all segments with the
current parameters held fixed (reweighting, adaptive resampling and the MCMC moves at the inner
segment ends; the last segment's end needs neither) and keep the paths; then one gradient step of the
log-variance loss ``mean_k Var_i[log w_{k,i}]`` (each segment's variance capped at 1e7, as the reference code caps
it) with each segment's weights recomputed on stored, detached paths under the current parameters
(:func:`~jaxsamp.smc.transitions.langevin_log_increment`; the reference code's ``per_subtraj_log_is``). Which
paths: as the reference code's default (Chen et al. 2025, Algorithm 1), every rollout's sub-trajectories enter a
replay buffer of ``buffer_batches`` batches with their weights as priorities, and each segment trains on half a
batch drawn from it without replacement with probability proportional to ``exp(log w / buffer_temperature)`` and
half a batch of the fresh rollout; the drawn paths' recomputed weights become their new priorities. With
``buffer_batches = 0`` (their Algorithm 2) and for CMCD, the fresh rollout alone. The variance is
shift-invariant, so no ``log Z`` is learned and resampled start points are fine. Gradients flow through the
kernels' log densities, the path's end terms (learned prior and schedule) and the control, never through
resampling, moves or the paths. Optimiser: an elementwise gradient clip (``optax.clip(grad_clip)``, as the
reference code) and Adam; a non-finite update is skipped (``optax.apply_if_finite``, ``skipped_updates``).

Sampling (:meth:`Scld.sample`) is :func:`jaxsamp.smc.smc` with
``transition=langevin_transition(path, h, control=network)`` and ``segment_length = T / K``: its
``log_Z`` is the SMC estimate (unbiased in ``Z`` for any parameters).

Cost, in target evaluations per particle (``target_evals`` in the history, ``sample_target_evals``
in the evaluation): each Euler-Maruyama step costs what the transition counts (2 on a fixed linear
schedule, 3 with a learned one, whose path the transition does not see as affine in its time), plus
2 gradients for the network's score inputs (``langevin=True``: at ``(x, s)`` and ``(x', s')``); each
inner segment end one MCMC step (HMC: ``num_leapfrog_steps`` + 1, MALA: 2). Training pays the steps
twice (the simulation and the loss's recomputation).
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, NamedTuple

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from jaxsamp.core.data_parallel import batch_constraint
from jaxsamp.core.errors import InputError
from jaxsamp.core.combinators import num_chains
from jaxsamp.core.protocols import LearnedSampler, SMCProposal, TrainingHealth, WeightedSamples
from jaxsamp.core.target import AnnealingPath
from jaxsamp.core.validation import (
    NonNegativeInt,
    OneOf,
    PositiveFloat,
    PositiveInt,
    Probability,
    check_fields,
    check_int,
    settings_or_default,
)
from jaxsamp.diagnostics import weights
from jaxsamp.diagnostics.particles import sinkhorn_to_exact
from jaxsamp.learned import buffer as fifo
from jaxsamp.learned.diffusion.sde import CosineNoiseSchedule
from jaxsamp.nets.langevin_net import LangevinNet
from jaxsamp.smc.annealing import (
    RESAMPLERS,
    inner_target_evals,
    linear_schedule,
    smc,
    weighted_samples,
)
from jaxsamp.smc.transitions import langevin_log_increment, langevin_transition

#: Particles per training step when none is given (the registry's default; the reference code uses 2000).
BATCH_SIZE = 256
MAX_SKIPPED = 20  # consecutive non-finite updates skipped before one is let through
MCMC_MOVES = ("hmc", "mala", "none")
SIGMA_MIN = 0.01  # the cosine noise schedule's floor (the reference code's)
LOSS_CAP = 1e7  # the reference code's cap on each segment's log-weight variance
_lse = jax.scipy.special.logsumexp


@dataclasses.dataclass(frozen=True)
class _ControlledLangevinSettings:
    """The fields SCLD and CMCD share: the path, the SDE's steps, the network and the optimisers.

    Attributes
    ----------
    num_time_steps : int
        Euler-Maruyama steps (path levels) ``T``.
    max_diffusion : float
        ``sigma_max`` of the cosine noise schedule: ``sigma`` falls from about ``max_diffusion / 2`` at
        the prior to ``0.005`` at the target, and each step's variance is ``2 sigma^2 / T``.
    prior_scale : float
        Initial standard deviation of the Gaussian prior ``N(0, prior_scale^2 I)`` (mean 0).
    learn_schedule : bool
        Learn ``beta_n`` (``cumsum(softplus(b)) / sum``, uniform at the start); else ``beta(s) = s``.
    learn_prior : bool
        Learn the prior's mean and log standard deviation.
    hidden, num_layers : int
        Width and depth of :class:`~jaxsamp.nets.langevin_net.LangevinNet`.
    langevin : bool
        Feed the network the annealed score ``grad log pi_s(x)`` (2 gradients per step and particle).
    learning_rate : float
        Adam's learning rate of the network and the prior.
    schedule_learning_rate : float
        Adam's learning rate of the schedule's logits.
    grad_clip : float
        Elementwise gradient clip before each Adam (``optax.clip``, as the reference code).
    """

    num_time_steps: PositiveInt = 128
    max_diffusion: PositiveFloat = 1.0
    prior_scale: PositiveFloat = 1.0
    learn_schedule: bool = True
    learn_prior: bool = True
    hidden: PositiveInt = 64
    num_layers: PositiveInt = 2
    langevin: bool = True
    learning_rate: PositiveFloat = 1e-3
    schedule_learning_rate: PositiveFloat = 1e-2
    grad_clip: PositiveFloat = 1.0

    def __post_init__(self):
        check_fields(self)


@dataclasses.dataclass(frozen=True)
class CmcdSettings(_ControlledLangevinSettings):
    """Hyper-parameters of CMCD (``sampler.params`` of a ``kind: scld`` config with ``name: cmcd``).

    SCLD's path, steps, network and optimisers (:class:`ScldSettings` less its SMC fields): one
    segment, no resampling, no MCMC moves, the log-variance loss on whole paths.
    """


@dataclasses.dataclass(frozen=True)
class ScldSettings(_ControlledLangevinSettings):
    """Hyper-parameters of SCLD (``sampler.params`` of a ``kind: scld`` config with ``name: scld``).

    The path, steps, network and optimisers as :class:`CmcdSettings` has them, and the SMC around them
    (defaults: the reference code's ``configs/algorithm/scld.yaml``):

    Attributes
    ----------
    num_segments : int
        Sub-trajectories ``K``; ``num_time_steps`` must be a multiple. The reference uses 4 (many-well,
        GMM40) or 128 (funnel and most others: a check after every step).
    resample_threshold : float in [0, 1]
        Resample at a segment end when the normalised ESS falls below it (0: never).
    resampling : str
        A blackjax resampler: ``multinomial`` (the reference's), ``systematic``, ``stratified``, ``residual``.
    mcmc : {"hmc", "mala", "none"}
        One move per segment end, invariant for the segment end's ``pi_s``.
    mcmc_step_size_start, mcmc_step_size_end : float
        The move's step size at ``s = 0`` and from ``s = 0.5`` on, linear in between (the reference's
        ``InterpolatedStepSize``; funnel 0.001 and 0.1).
    num_leapfrog_steps : int
        Leapfrog steps of one HMC move.
    buffer_batches : int
        Capacity of the prioritised replay buffer of sub-trajectories, in batches (the reference's 20); each
        update then trains on half a batch drawn from it without replacement with probability proportional to
        ``exp(log w / buffer_temperature)`` per segment and half a batch of the fresh rollout, and writes the
        recomputed weights back as the drawn paths' priorities (Chen et al. 2025, Algorithm 1). 0: no buffer,
        the fresh rollout alone (their Algorithm 2).
    buffer_temperature : float
        Temperature of the buffer's priorities (the reference's 1).
    """

    num_segments: PositiveInt = 4
    resample_threshold: Probability = 0.3
    resampling: Annotated[str, OneOf(tuple(RESAMPLERS))] = "multinomial"
    mcmc: Annotated[str, OneOf(MCMC_MOVES)] = "hmc"
    mcmc_step_size_start: PositiveFloat = 0.1
    mcmc_step_size_end: PositiveFloat = 0.1
    num_leapfrog_steps: PositiveInt = 10
    buffer_batches: NonNegativeInt = 20
    buffer_temperature: PositiveFloat = 1.0

    def __post_init__(self):
        check_fields(self)
        if self.num_time_steps % self.num_segments:
            raise InputError(f"ScldSettings: num_time_steps={self.num_time_steps} is not a multiple of "
                             f"num_segments={self.num_segments}", "segments are equal runs of steps")


class DiagonalGaussian(NamedTuple):
    """The prior ``N(mean, diag(exp(2 log_std)))``, normalised (so the path's ``log_Z0`` is 0); traceable."""

    mean: jax.Array
    log_std: jax.Array

    def log_prob(self, x):
        z = (x - self.mean) * jnp.exp(-self.log_std)
        return -0.5 * jnp.sum(z**2) - jnp.sum(self.log_std) - 0.5 * z.size * jnp.log(2 * jnp.pi)

    def sample(self, key, num_samples: int):
        return self.mean + jnp.exp(self.log_std) * jax.random.normal(key, (num_samples, *self.mean.shape))


def schedule_betas(logits: jax.Array) -> jax.Array:
    """``beta_0 = 0, beta_n = cumsum(softplus(b))_n / sum(softplus(b))``: monotone from 0 to exactly 1 (SCLD)."""
    steps = jnp.cumsum(jax.nn.softplus(logits))
    return jnp.concatenate([jnp.zeros((1,), steps.dtype), steps / steps[-1]])


class ScldPath(AnnealingPath):
    """``log pi_s = (1 - beta(s)) log prior + beta(s) log rho`` at the step time ``s`` in ``[0, 1]``.

    Parameters
    ----------
    target : Target
    prior : DiagonalGaussian
    betas : array (T + 1,), optional
        ``beta`` at the step times ``n / T``, linearly interpolated between them; None: ``beta(s) = s``
        (the plain geometric path, affine in ``s``).
    """

    def __init__(self, target, prior: DiagonalGaussian, betas: jax.Array | None = None):
        self.target, self.base, self.log_Z0, self.betas = target, prior, 0.0, betas

    def beta(self, s):
        if self.betas is None:
            return s
        grid = jnp.asarray(linear_schedule(len(self.betas) - 1), jnp.float32)  # the smc schedule's float32 times
        return jnp.interp(s, grid, self.betas)

    def log_prob(self, x, s):
        beta = self.beta(s)
        return (1.0 - beta) * self.base.log_prob(x) + beta * self.target.log_prob(x)

    def dlog_prob_dt(self, x, s):
        if self.betas is None:
            return self.target.log_prob(x) - self.base.log_prob(x)
        return super().dlog_prob_dt(x, s)


class ScldTrainState(NamedTuple):
    """Training state: a plain PyTree the driver checkpoints.

    ``model`` is ``(network parameters, prior mean, prior log std)`` (one optimiser), ``schedule_logits``
    the schedule's ``b`` (its own optimiser; unused when the schedule is not learned), ``buffer`` the replay
    buffer of sub-trajectories (None without one): items ``(paths (K, L + 1, d), log w (K,))``, the log
    weights being the paths' priorities.
    """

    model: tuple
    schedule_logits: jax.Array
    opt_state: optax.OptState
    schedule_opt_state: optax.OptState
    step: jax.Array
    target_evals: jax.Array
    buffer: fifo.ReplayBuffer | None = None


class Rollout(NamedTuple):
    """One simulation through every segment (:meth:`Scld.rollout`).

    Attributes
    ----------
    states : array (K, L + 1, n, d)
        Each segment's path, from its start (after the previous end's resampling and move) to its end.
    log_w : array (K, n)
        Each segment's log weight per particle.
    log_Z_hat, elbo : scalar
        ``sum_k log sum_i W_i w_{k,i}`` and ``sum_k sum_i W_i log w_{k,i}`` (``W`` the normalised
        weights entering segment ``k``): the SMC estimate of ``log Z`` and its ELBO (the reference code's
        ``get_lnz_elbo_increment``).
    ess : array (K,)
        Normalised ESS of the weights at each segment end, before any resampling.
    num_resamplings : int32
    transition_evals, move_evals : int32
        Target evaluations of the Euler-Maruyama steps (as the transition counts them) and of the moves.
    """

    states: jax.Array
    log_w: jax.Array
    log_Z_hat: jax.Array
    elbo: jax.Array
    ess: jax.Array
    num_resamplings: jax.Array
    transition_evals: jax.Array
    move_evals: jax.Array


def segment_log_weights(path: AnnealingPath, states: jax.Array, times: jax.Array, step_size, control) -> jax.Array:
    """Each segment's log weight ``log w_[a,b]`` recomputed on given paths (Chen et al. 2025; the
    reference code's ``per_subtraj_log_is``).

    Parameters
    ----------
    path : AnnealingPath
    states : array (K, L + 1, n, d)
        Segment paths (:attr:`Rollout.states`).
    times : array (K L + 1,)
        The path times of the levels.
    step_size, control
        As :func:`~jaxsamp.smc.transitions.langevin_log_increment` takes them.

    Returns
    -------
    array (K, n)
        Differentiable in whatever ``path`` and ``control`` close over.
    """
    num_segments, length = states.shape[0], states.shape[1] - 1
    starts, ends = times[:-1].reshape(num_segments, length), times[1:].reshape(num_segments, length)

    def increment(x, x_next, t, t_next):
        return langevin_log_increment(path, x, x_next, t, t_next, step_size, control)

    per_level = jax.vmap(increment, in_axes=(0, 0, None, None))  # particles
    per_segment = jax.vmap(per_level)  # levels
    return jnp.sum(jax.vmap(per_segment)(states[:, :-1], states[:, 1:], starts, ends), axis=1)


def log_variance_loss(segment_log_w: jax.Array) -> jax.Array:
    """``mean_k min(Var_i[log w_{k,i}], 1e7)``: SCLD's log-variance loss, averaged over the segments (Chen et al.
    2025), each segment's variance capped at :data:`LOSS_CAP` as the reference code caps it.

    Zero exactly when every segment's weight is constant over particles, i.e. the control transports
    the path (Richter & Berner 2024; Chen et al. 2025). A capped segment gives no gradient.
    """
    return jnp.mean(jnp.minimum(jnp.var(segment_log_w, axis=-1), LOSS_CAP))


class _SmcOptions(NamedTuple):
    """The SMC around the diffusion: SCLD's settings, or CMCD's fixed choice (one segment, nothing else)."""

    num_segments: int
    resample_threshold: float
    resampling: str
    mcmc: str
    mcmc_step_size_start: float = 0.1
    mcmc_step_size_end: float = 0.1
    num_leapfrog_steps: int = 10


#: CMCD: one segment, no resampling, no moves.
CMCD = _SmcOptions(1, 0.0, "multinomial", "none")


class Scld:
    """The numerics of SCLD and CMCD for ``target``: training, SMC sampling and evaluation, key first.

    :func:`build_scld` and :func:`build_cmcd` construct it and return its functions as a
    :class:`~jaxsamp.core.LearnedSampler`.

    Parameters
    ----------
    target : Target
        A real-valued target with a flat event shape ``(d,)``.
    settings : ScldSettings or CmcdSettings
    batch_size : int
        Particles simulated per training step.
    optimizer : optax.GradientTransformation, optional
        The optimiser of the network and the prior (default: ``optax.clip(grad_clip)`` then Adam at
        ``learning_rate``); the schedule keeps its own. A non-finite update is skipped either way.

    Notes
    -----
    ``step`` returns these metrics (one value per step, on the step's ``batch_size`` particles):

    * ``loss``: the log-variance loss (nats squared);
    * ``log_Z_hat``: the training run's SMC estimate of ``log Z``; ``elbo``: its ELBO (nats);
    * ``ess``: the normalised ESS of the weights at the last segment's end;
    * ``num_resamplings``: segment ends at which the particles were resampled;
    * ``target_evals``: target evaluations so far (simulation, moves and the loss's recomputation);
    * ``skipped_updates``: batches whose gradient was not finite and were skipped, so far.
    """

    def __init__(self, target, settings: ScldSettings | CmcdSettings, batch_size: int, optimizer=None):
        self.method = "scld" if isinstance(settings, ScldSettings) else "cmcd"
        if target.domain.kind != "real" or target.event_shape is None or len(target.event_shape) != 1:
            raise InputError(f"{self.method} needs a real-valued target with a flat state (d,), got {target.name!r}")
        self.target, self.settings, self.batch_size = target, settings, batch_size
        self.options = _SmcOptions(*(getattr(settings, f) for f in _SmcOptions._fields)) \
            if isinstance(settings, ScldSettings) else CMCD
        # CMCD trains on its fresh paths alone (the reference runs it with one segment and no buffer)
        self.buffer_capacity = settings.buffer_batches * batch_size if isinstance(settings, ScldSettings) else 0
        (self.dim,) = target.event_shape
        num_steps = settings.num_time_steps
        self.segment_length = num_steps // self.options.num_segments
        self.schedule = linear_schedule(num_steps)  # the step times n / T (float64, as smc takes them)
        self.times = jnp.asarray(self.schedule, jnp.float32)  # as smc reads them
        noise = CosineNoiseSchedule(SIGMA_MIN, settings.max_diffusion)
        self.step_size = lambda s: noise.g(s) ** 2 / num_steps  # sigma(s)^2 dt
        self.graphdef, _ = nnx.split(self._network(jax.random.key(0)))
        if optimizer is None:
            optimizer = optax.chain(optax.clip(settings.grad_clip), optax.adam(settings.learning_rate))
        self.optimizer = optax.apply_if_finite(optimizer, MAX_SKIPPED)
        self.schedule_optimizer = optax.apply_if_finite(
            optax.chain(optax.clip(settings.grad_clip), optax.adam(settings.schedule_learning_rate)), MAX_SKIPPED)
        # the network's score inputs, per particle and step: at (x, s) for F and at (x', s') for B
        self.control_evals = 2 * num_steps if settings.langevin else 0
        self._smc_run = jax.jit(self.smc_run, static_argnums=2)

    def _network(self, key) -> LangevinNet:
        s = self.settings
        # both last layers at (near) zero, the gain's bias too: u = 0 at the start, unadjusted Langevin annealing
        return LangevinNet(self.dim, s.hidden, s.num_layers, weight_init=1e-8, bias_init=0.0, rngs=nnx.Rngs(key))

    def init(self, key) -> ScldTrainState:
        """Fresh network (control near 0), the prior ``N(0, prior_scale^2 I)``, a uniform schedule, optimisers."""
        _, params = nnx.split(self._network(key))
        model = (params, jnp.zeros((self.dim,)), jnp.full((self.dim,), jnp.log(self.settings.prior_scale)))
        logits = jnp.ones((self.settings.num_time_steps,))
        buffer = None
        if self.buffer_capacity:
            item = (jnp.zeros((self.options.num_segments, self.segment_length + 1, self.dim)),
                    jnp.zeros((self.options.num_segments,)))
            buffer = fifo.init(item, self.buffer_capacity)
        return ScldTrainState(model, logits, self.optimizer.init(model), self.schedule_optimizer.init(logits),
                              jnp.int32(0), jnp.int32(0), buffer)

    def path(self, model, schedule_logits) -> ScldPath:
        """The annealing path of the parameters (the prior and schedule held fixed where not learned)."""
        _, mean, log_std = model
        if not self.settings.learn_prior:
            mean, log_std = jax.lax.stop_gradient(mean), jax.lax.stop_gradient(log_std)
        betas = schedule_betas(schedule_logits) if self.settings.learn_schedule else None
        return ScldPath(self.target, DiagonalGaussian(mean, log_std), betas)

    def control(self, model, path: ScldPath):
        """``u(x, s)`` for one particle: the network of ``model`` at time ``s``, fed ``grad log pi_s(x)`` (detached)."""
        network = nnx.merge(self.graphdef, model[0])
        score_fn = jax.grad(path.log_prob)

        def u(x, s):
            s = jnp.reshape(s, (1,))
            score = jax.lax.stop_gradient(score_fn(x, s[0])) if self.settings.langevin else jnp.zeros_like(x)
            return network(s, x[None], score[None])[0]

        return u

    def mcmc_kernel(self, path: ScldPath):
        """``make_kernel(s)``: one blackjax HMC or MALA kernel for ``pi_s``, its step size interpolated in ``s``."""
        o = self.options

        def make(s):
            step_size = o.mcmc_step_size_start + (o.mcmc_step_size_end - o.mcmc_step_size_start) * jnp.clip(2 * s, 0, 1)

            def log_density(x):
                return path.log_prob(x, s)

            if o.mcmc == "hmc":
                return blackjax.hmc(log_density, step_size, jnp.ones(self.dim), o.num_leapfrog_steps)
            return blackjax.mala(log_density, step_size)

        return make

    def _move(self, key, path, x, s):
        """One MCMC step per particle for ``pi_s``; returns the moved particles and the target evaluations spent."""
        kernel = self.mcmc_kernel(path)(s)

        def move_one(k, xi):
            state, info = kernel.step(k, kernel.init(xi))
            return state.position, 1 + inner_target_evals(info)  # 1: the kernel's initial value and gradient

        moved, evals = jax.vmap(move_one)(jax.random.split(key, x.shape[0]), x)
        return moved, jnp.sum(evals, dtype=jnp.int32)

    def rollout(self, key, model, schedule_logits, num_particles: int) -> Rollout:
        """Simulate ``num_particles`` through every segment with the parameters held fixed (:class:`Rollout`).

        At each inner segment end: reweight, resample (blackjax's resampler) when the ESS is below
        the threshold, then one MCMC move; the last segment's end needs neither (the loss and the
        estimates are complete there).
        """
        model, schedule_logits = jax.lax.stop_gradient((model, schedule_logits))
        o, length, times, n = self.options, self.segment_length, self.times, num_particles
        path = self.path(model, schedule_logits)
        transition = langevin_transition(path, self.step_size, control=self.control(model, path))
        key_prior, key_run = jax.random.split(key)
        resampler = RESAMPLERS[o.resampling]

        def segment(carry, k):
            x, log_W, log_Z, elbo, resamplings, evals, move_evals = carry
            key_segment = jax.random.fold_in(key_run, k)

            def level(x, j):
                n_level = k * length + j
                x_next, increment, spent = transition(jax.random.fold_in(key_segment, j), x, times[n_level],
                                                      times[n_level + 1])
                return x_next, (x, increment, spent)

            x_end, (xs, increments, spent) = jax.lax.scan(level, x, jnp.arange(length))
            log_w = jnp.sum(increments, axis=0)
            log_Z_increment = _lse(log_W + log_w)  # log sum_i W_i w_i, W normalised
            elbo = elbo + jnp.sum(jnp.exp(log_W) * log_w)
            log_W_end = log_W + log_w - log_Z_increment
            ess = jnp.exp(-_lse(2.0 * log_W_end)) / n
            key_resample, key_move = jax.random.split(jax.random.fold_in(key_segment, length))

            def boundary(x, log_W):
                resample = ess < o.resample_threshold
                x, log_W = jax.lax.cond(
                    resample,
                    lambda: (x[resampler(key_resample, jnp.exp(log_W), n)], jnp.full_like(log_W, -jnp.log(n))),
                    lambda: (x, log_W))
                if o.mcmc == "none":
                    return x, log_W, resample, jnp.int32(0)
                x, spent = self._move(key_move, path, x, times[(k + 1) * length])
                return x, log_W, resample, spent

            inner = k < o.num_segments - 1
            x_next, log_W_next, resampled, spent_moving = jax.lax.cond(
                inner, boundary, lambda x, log_W: (x, log_W, jnp.bool_(False), jnp.int32(0)), x_end, log_W_end)
            carry = (x_next, log_W_next, log_Z + log_Z_increment, elbo, resamplings + resampled.astype(jnp.int32),
                     evals + jnp.sum(spent, dtype=jnp.int32), move_evals + spent_moving)
            return carry, (jnp.concatenate([xs, x_end[None]]), log_w, ess)

        x0 = batch_constraint(path.base.sample(key_prior, n))  # the particles are the batch a data-parallel step splits
        start = (x0, jnp.full((n,), -jnp.log(n)), jnp.float32(path.log_Z0), jnp.float32(path.log_Z0), jnp.int32(0),
                 jnp.int32(0), jnp.int32(0))
        (_, _, log_Z, elbo, resamplings, evals, move_evals), (states, log_w, ess) = jax.lax.scan(
            segment, start, jnp.arange(o.num_segments))
        return Rollout(states, log_w, log_Z, elbo, ess, resamplings, evals, move_evals)

    def loss(self, model, schedule_logits, states) -> tuple[jax.Array, jax.Array]:
        """The log-variance loss of the stored segment paths ``states`` under the parameters (differentiable),
        and the paths' recomputed segment log weights ``(K, n)`` (auxiliary)."""
        path = self.path(model, schedule_logits)
        log_w = segment_log_weights(path, states, self.times, self.step_size, self.control(model, path))
        return log_variance_loss(log_w), jax.lax.stop_gradient(log_w)

    def training_paths(self, key, buffer: fifo.ReplayBuffer, run: Rollout):
        """The rollout's paths into the buffer, then the paths one update trains on.

        Per segment, half a batch drawn from the buffer without replacement with probability proportional to
        ``exp(log w / temperature)`` (Gumbel top-k), then the rest of the batch drawn without replacement from
        the fresh rollout, the same particles in every segment (the reference code's ``sample_and_concat``).

        Returns
        -------
        buffer : ReplayBuffer
            With the rollout's paths and their simulated segment weights added.
        states : array (K, L + 1, batch_size, d)
        index : array (K, batch_size // 2)
            The buffer slots of each segment's drawn paths (their priorities are updated after the loss).
        """
        num_segments, num_drawn = self.options.num_segments, self.batch_size // 2
        log_w = jnp.where(jnp.isfinite(run.log_w), run.log_w, -jnp.inf)
        buffer = fifo.add(buffer, (jnp.moveaxis(run.states, 2, 0), log_w.T))
        stored, priority = buffer.data
        filled = jnp.arange(buffer.capacity) < buffer.size
        key_buffer, key_fresh = jax.random.split(key)

        def draw(k, segment_key):
            scores = jnp.where(filled, priority[:, k] / self.settings.buffer_temperature, -jnp.inf)
            return jax.lax.top_k(scores + jax.random.gumbel(segment_key, scores.shape), num_drawn)[1]

        index = jax.vmap(draw)(jnp.arange(num_segments), jax.random.split(key_buffer, num_segments))
        drawn = stored[index, jnp.arange(num_segments)[:, None]]  # (K, m, L + 1, d)
        fresh = jax.random.choice(key_fresh, self.batch_size, (self.batch_size - num_drawn,), replace=False)
        states = jnp.concatenate([jnp.moveaxis(drawn, 1, 2), run.states[:, :, fresh]], axis=2)
        return buffer, states, index

    def step(self, key, state: ScldTrainState) -> tuple[ScldTrainState, dict]:
        """One outer iteration: a rollout of ``batch_size`` particles, then one update of the log-variance loss on
        them, or with a buffer on half of them and half a batch of stored paths (:meth:`training_paths`)."""
        key_run, key_draw = jax.random.split(key) if state.buffer is not None else (key, None)
        run = self.rollout(key_run, state.model, state.schedule_logits, self.batch_size)
        buffer, states = state.buffer, run.states
        if buffer is not None:
            buffer, states, index = self.training_paths(key_draw, buffer, run)
        (loss, log_w), (grads, schedule_grads) = jax.value_and_grad(self.loss, argnums=(0, 1), has_aux=True)(
            state.model, state.schedule_logits, jax.lax.stop_gradient(states))
        if buffer is not None:  # the drawn paths' priorities: their weights under the parameters just used
            stored, priority = buffer.data
            recomputed = log_w[:, :index.shape[1]]
            priority = priority.at[index, jnp.arange(index.shape[0])[:, None]].set(
                jnp.where(jnp.isfinite(recomputed), recomputed, -jnp.inf))
            buffer = buffer._replace(data=(stored, priority))
        updates, opt_state = self.optimizer.update(grads, state.opt_state, state.model)
        schedule_updates, schedule_opt_state = self.schedule_optimizer.update(
            schedule_grads, state.schedule_opt_state, state.schedule_logits)
        # the loss recomputes every step's weight (what the simulation's transition counted) and score inputs
        control = self.batch_size * self.control_evals
        evals = 2 * (run.transition_evals + control) + run.move_evals
        new = ScldTrainState(optax.apply_updates(state.model, updates),
                             optax.apply_updates(state.schedule_logits, schedule_updates), opt_state,
                             schedule_opt_state, state.step + 1, state.target_evals + evals, buffer)
        metrics = {"loss": loss, "log_Z_hat": run.log_Z_hat, "elbo": run.elbo, "ess": run.ess[-1],
                   "num_resamplings": run.num_resamplings, "target_evals": new.target_evals,
                   "skipped_updates": opt_state.total_notfinite}
        return new, metrics

    def smc_proposal(self, state: ScldTrainState) -> SMCProposal:
        """The learned controlled Langevin steps on the learned path, as SMC moves (parameters detached).

        ``langevin_transition(path, h, control=network)`` on the path of ``state`` and the step
        times ``n / T``; its evaluations include the network's score inputs (2 per particle and
        step with ``langevin=True``). What :meth:`smc_run` runs and :meth:`jaxsamp.Fitted.smc` takes.
        """
        model, schedule_logits = jax.lax.stop_gradient((state.model, state.schedule_logits))
        path = self.path(model, schedule_logits)
        langevin_step = langevin_transition(path, self.step_size, control=self.control(model, path))
        score_inputs = 2 if self.settings.langevin else 0

        def transition(key, positions, t, t_next):
            moved, log_increment, evals = langevin_step(key, positions, t, t_next)
            return moved, log_increment, evals + score_inputs * num_chains(positions)

        return SMCProposal(path, transition, self.schedule)

    def smc_run(self, key, state: ScldTrainState, num_samples: int):
        """An SMC run with the learned transitions: ``(WeightedSamples, SMCInfo trace, target evaluations)``.

        :func:`jaxsamp.smc.smc` with the transition of :meth:`smc_proposal`,
        ``segment_length = T / K``, the resampling and the MCMC move of the settings (none for CMCD).
        """
        o = self.options
        proposal = self.smc_proposal(state)
        path = proposal.path
        kernel = smc(path, self.mcmc_kernel(path), schedule=proposal.schedule,
                     num_mcmc_steps=0 if o.mcmc == "none" else 1, ess_threshold=o.resample_threshold,
                     resampling_fn=o.resampling, segment_length=self.segment_length, transition=proposal.transition)
        key_prior, key_run = jax.random.split(key)

        def level(smc_state, i):
            return kernel.step(jax.random.fold_in(key_run, i), smc_state)

        final, trace = jax.lax.scan(level, kernel.init(path.base.sample(key_prior, num_samples)),
                                    jnp.arange(self.settings.num_time_steps))
        return weighted_samples(final, path), trace, jnp.sum(trace.num_target_evals, dtype=jnp.int32)

    def sample(self, key, state: ScldTrainState, num_samples: int) -> WeightedSamples:
        """``num_samples`` particles of an SMC run with the learned transitions; ``.log_Z`` is its estimate.

        The weights are those since the last resampling; the resamplings' normalisers are in ``log_Z0``.
        """
        return self.smc_run(key, state, num_samples)[0]

    def evaluate(self, key, state: ScldTrainState, num_samples: int, **options) -> dict:
        """:func:`jaxsamp.diagnostics.weights.figures` of an SMC run, and the run's per-segment figures.

        ``log_Z_hat`` is the SMC estimate (the resamplings' normalisers times the final mean weight),
        ``ess`` the final weights' ESS, ``elbo`` the cashed normalisers plus the final mean log weight (a
        lower bound on ``log Z`` in expectation); with the target's ``log_Z``, their errors. Added:
        ``segment_ess_min`` and ``segment_ess_mean`` (the normalised ESS at the segment ends, before
        resampling), ``num_resamplings`` and ``sample_target_evals`` (the run's target evaluations).

        Where the target has exact samples, ``sinkhorn``: the paper's sample figure as its code computes it, the
        Sinkhorn divergence of the final particles' positions (without their weights) to as many exact samples
        at ott's default epsilon (:func:`~jaxsamp.diagnostics.particles.sinkhorn_to_exact`, the samples drawn at
        ``fold_in(key, 1)``).

        Where the target has a reference posterior (an Inference Gym model's ground truth),
        ``reference_mean_err``: the largest error of the weighted posterior mean over its coordinates, in reference
        standard deviations (:meth:`~jaxsamp.targets.InferenceGymTarget.reference_mean_error`).

        ``options``: ``num_sets`` (as :func:`~jaxsamp.diagnostics.weights.figures` takes it), ``sinkhorn``
        (``False`` skips the Sinkhorn divergence, the costliest figure).
        """
        unknown = sorted(set(options) - {"num_sets", "sinkhorn"})
        if unknown:
            raise InputError(f"evaluate takes no option {', '.join(unknown)}", "its options: num_sets, sinkhorn")
        samples, trace, evals = self._smc_run(key, state, num_samples)
        x, log_w = np.asarray(samples.x), np.asarray(samples.log_w, np.float64)
        finite = np.isfinite(log_w) & np.all(np.isfinite(x), axis=-1)
        log_w = np.where(finite, log_w, np.nan)  # a non-finite draw is left out of every figure
        out = weights.figures(WeightedSamples(x, log_w, samples.log_Z0),
                              log_Z_exact=self.target.log_Z, num_sets=options.get("num_sets", 1))
        ends = np.asarray(trace.ess)[self.segment_length - 1::self.segment_length]
        out.update(segment_ess_min=float(np.min(ends)), segment_ess_mean=float(np.mean(ends)),
                   num_resamplings=float(np.sum(np.asarray(trace.resampled))), sample_target_evals=float(evals))
        if options.get("sinkhorn", True):
            sinkhorn = sinkhorn_to_exact(self.target, jax.random.fold_in(key, 1), x)
            if sinkhorn is not None:
                out["sinkhorn"] = sinkhorn
        if getattr(self.target, "reference_mean", None) is not None:
            out["reference_mean_err"] = self.target.reference_mean_error(x, log_w)
        return out


def _build(settings_class, target, settings, batch_size: int | None, optimizer) -> LearnedSampler:
    """``build_scld`` / ``build_cmcd``: the method's settings (default its defaults) and the batch checked."""
    settings = settings_or_default(settings, settings_class)
    batch_size = check_int("batch_size", BATCH_SIZE if batch_size is None else batch_size, ge=2)
    sampler = Scld(target, settings, batch_size, optimizer)
    # the log-variance loss is a fixed objective of the parameters (on the current sampler's paths): judged for progress
    return LearnedSampler(sampler.init, sampler.step, sampler.sample, sampler.evaluate,
                          TrainingHealth(judge_progress=True), smc_proposal=sampler.smc_proposal,
                          density=sampler.target)


def build_scld(target, settings: ScldSettings | None = None, *, batch_size: int | None = None,
               optimizer: optax.GradientTransformation | None = None) -> LearnedSampler:
    """SCLD (Chen et al., ICLR 2025): controlled Langevin diffusions on a learned geometric path, run as SMC.

    Parameters
    ----------
    target : Target
        A real-valued target with a flat state ``(d,)``.
    settings : ScldSettings, optional
        Default ``ScldSettings()`` (the reference code's, with 4 segments).
    batch_size : int, optional
        Particles per training step (default :data:`BATCH_SIZE`).
    optimizer : optax.GradientTransformation, optional
        Replaces the clip and Adam of the network and the prior; a non-finite update is still skipped.

    Returns
    -------
    LearnedSampler
        Of :class:`Scld`: one training step is one rollout of ``batch_size`` particles through every
        segment and one update; ``sample`` is an SMC run (its ``log_Z`` unbiased in ``Z``).
    """
    return _build(ScldSettings, target, settings, batch_size, optimizer)


def build_cmcd(target, settings: CmcdSettings | None = None, *, batch_size: int | None = None,
               optimizer: optax.GradientTransformation | None = None) -> LearnedSampler:
    """CMCD (Vargas et al., ICLR 2024): SCLD's one-segment case, without resampling or MCMC moves.

    The parameters and the result are :func:`build_scld`'s, with :class:`CmcdSettings`; ``sample``
    draws whole paths with their importance weights.
    """
    return _build(CmcdSettings, target, settings, batch_size, optimizer)
