"""TPS-DPS: transition path sampling with a diffusion path sampler trained off-policy.

Seong, Park, Kim, Kim & Ahn (2025), "Transition Path Sampling with Improved
Off-Policy Training of Diffusion Path Samplers", ICLR (arXiv 2405.19961), for
2-D systems (:class:`~jaxsamp.targets.transition_paths.TransitionPathTarget`),
as the reference's synthetic example computes it (``kiyoung98/tps-dps``,
``double-well.ipynb``; ../shared/research/paths.md section A).

The sampler is overdamped Langevin dynamics (unit mass and friction) with a
learned bias force, discretised by Euler-Maruyama, ``L`` steps of ``dt``::

    x_{s+1} = x_s + dt (F(x_s) + b_theta(x_s)) + sqrt(2 kB T_b dt) xi_s,   x_0 = x_A,

``F = -grad V``, ``b_theta = -grad_x U_theta`` with ``U_theta`` an MLP of
``(x, y, |x - x_B|)`` (the ``pot`` parameterisation). Paths are scored with the
Euler-Gaussian log-likelihood *averaged* (not summed) over the ``L`` steps and
the 2 coordinates, with ``sigma^2 = 2 kB T dt`` at the TARGET temperature ``T``
even when they were generated at an annealed behaviour temperature ``T_b``::

    log p_theta(tau) = mean_{s, d} log N(x_{s+1} - x_s - dt (F(x_s) + b_theta(x_s)); 0, sigma^2)

(``b_theta = 0``: the unbiased reference ``log p_0``). The unnormalised target
path density adds the relaxed end-state indicator at the path's closest approach
to ``x_B``, ``log q~ = log p_0 + max_s -mean_d (x_s - x_B)^2 / (2 sigma_ri^2)``
(``sigma_ri = 3``), computed once when a path enters the replay buffer. Training
minimises the log-variance loss ``E_buffer[(c - log w)^2]``,
``log w = log q~ - log p_theta`` (:func:`jaxsamp.learned.diffusion.path_losses.variance_loss`;
``c`` a learned ``log Z``, the batch mean or zero: the paper's ``global``,
``local`` and ``zero`` control variates), on paths from a FIFO buffer, so
nothing is differentiated through the simulation.

One training round (one step of the :class:`~jaxsamp.core.LearnedSampler` that
:func:`build` returns, what ``jaxsamp.fit("tps_dps", ...)`` trains) is one
rollout of ``N`` paths at the behaviour temperature -- annealed linearly from
``start_temperature`` to ``T`` over ``annealing_rollouts`` rounds, then held --
into the buffer, followed by ``updates_per_rollout`` Adam steps on buffer
batches, with the gradient clipped per parameter group (network, ``log Z``) and
separate learning rates. As in the reference, Adam's moments start afresh every
round. Evaluation follows the reference's synthetic metrics: each path is
truncated at its closest approach to ``x_B`` and :func:`path_metrics` reports
the RMSD of that final point, THP (percentage within ``hit_radius``) and ETS
(over hit paths, the mean and std of the maximum potential along the path).
The samples are the paths themselves
(:meth:`TpsDps.sample`: ``WeightedSamples`` whose ``x`` is a :class:`TransitionPaths`);
:class:`TpsDps` holds the method's numerics, key first.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Annotated, NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from jaxsamp.core.data_parallel import batch_constraint
from jaxsamp.core.errors import InputError
from jaxsamp.core.protocols import LearnedSampler, TrainingHealth, WeightedSamples
from jaxsamp.core.validation import OneOf, PositiveFloat, PositiveInt, check_fields, check_int, check_widths
from jaxsamp.diagnostics.weights import figures
from jaxsamp.learned import buffer as replay
from jaxsamp.learned.diffusion.path_losses import CONTROL_VARIATES, variance_loss
from jaxsamp.nets.mlp import MLP

#: paths per rollout when ``build`` is given no ``batch_size`` (the reference's 512)
BATCH_SIZE = 512

# --------------------------------------------------------------------------
# path densities and metrics
# --------------------------------------------------------------------------


def path_log_likelihood(positions: jax.Array, drifts: jax.Array, time_step: float, std) -> jax.Array:
    """Euler-Gaussian log-likelihood of paths, averaged over steps and coordinates (TPS-DPS's ``log p``).

    ``mean_{s, d} log N(x_{s+1,d} - x_{s,d} - dt drift_{s,d}; 0, std^2)``, the
    reference's ``log_prob(positions[:, 1:] - means[:, :-1]).mean((1, 2))``
    (paths.md A1): the mean, not the sum.

    Parameters
    ----------
    positions : (..., L + 1, D) the path ``x_0 .. x_L``.
    drifts : (..., L, D) the drift at ``x_0 .. x_{L-1}`` (force, plus the bias for ``p_theta``).
    time_step : float, ``dt``.
    std : scalar, ``sqrt(2 kB T dt)`` at the target temperature.

    Returns
    -------
    (...,) one log-likelihood per path.
    """
    chex.assert_equal_shape([positions[..., 1:, :], drifts])
    residuals = positions[..., 1:, :] - positions[..., :-1, :] - time_step * drifts
    return jnp.mean(jax.scipy.stats.norm.logpdf(residuals, scale=std), axis=(-2, -1))


def log_relaxed_indicator(positions: jax.Array, end: jax.Array, std: float) -> jax.Array:
    """``max_s -mean_d (x_{s,d} - x_{B,d})^2 / (2 std^2)``: TPS-DPS's relaxed end-state indicator.

    A Gaussian kernel on the mean squared distance over coordinates, at the
    path's closest approach to ``x_B`` (paths.md A1; ``std = 3`` for the
    synthetic system).

    Parameters
    ----------
    positions : (..., L + 1, D)
    end : (D,) the end state ``x_B``.
    std : float

    Returns
    -------
    (...,) one log-indicator per path.
    """
    return jnp.max(-jnp.mean((positions - end) ** 2, axis=-1) / (2.0 * std**2), axis=-1)


def closest_approach(positions: jax.Array, end: jax.Array) -> jax.Array:
    """The first step ``s`` at which each path (..., L + 1, D) is nearest to ``end``: where it is truncated."""
    return jnp.argmin(jnp.sum((positions - end) ** 2, axis=-1), axis=-1)


def path_metrics(positions: jax.Array, potentials: jax.Array, end: jax.Array, hit_radius: float = 0.5) -> dict:
    """The reference's synthetic metrics of paths truncated at their closest approach to ``end``.

    Each path ``x_0 .. x_L`` is cut after the first step where it is nearest to
    ``end`` (:func:`closest_approach`, the argmax of :func:`log_relaxed_indicator`);
    its last point is the final point.

    * ``rmsd``, ``rmsd_std``: mean and std (``ddof = 1``, as ``torch.std``) over
      paths of the distance of the final point to ``end``;
    * ``thp``: percentage of paths whose final point is within ``hit_radius``
      (a "hit"; 0.5 for the synthetic system);
    * ``ets``, ``ets_std``: over hit paths, the mean and std (``ddof = 1``) of
      the maximum potential energy along the truncated path (NaN without hits,
      and the std with one);
    * ``hits``: the number of hit paths.

    Parameters
    ----------
    positions : (N, L + 1, D)
    potentials : (N, L + 1) ``V`` at every state.
    end : (D,)
    hit_radius : float
    """
    chex.assert_rank([positions, potentials], [3, 2])
    closest = closest_approach(positions, end)
    distance = jnp.linalg.norm(positions[jnp.arange(positions.shape[0]), closest] - end, axis=-1)
    hit = distance < hit_radius
    steps = jnp.arange(positions.shape[1])
    barrier = jnp.max(jnp.where(steps <= closest[:, None], potentials, -jnp.inf), axis=-1)
    hits = jnp.sum(hit)
    ets = jnp.sum(jnp.where(hit, barrier, 0.0)) / hits
    ets_var = jnp.sum(jnp.where(hit, (barrier - ets) ** 2, 0.0)) / (hits - 1)
    return {
        "rmsd": jnp.mean(distance),
        "rmsd_std": jnp.std(distance, ddof=1),
        "thp": 100.0 * jnp.mean(hit),
        "ets": ets,
        "ets_std": jnp.where(hits > 1, jnp.sqrt(ets_var), jnp.nan),
        "hits": hits,
    }


def truncated_paths(positions, end) -> list[np.ndarray]:
    """Each path ``x_0 .. x_L`` of ``positions`` (N, L + 1, D) cut after its closest approach to ``end`` (NumPy)."""
    positions = np.asarray(positions)
    closest = np.asarray(closest_approach(jnp.asarray(positions), jnp.asarray(end)))
    return [p[: c + 1] for p, c in zip(positions, closest)]


# --------------------------------------------------------------------------
# dynamics
# --------------------------------------------------------------------------


class TransitionPaths(NamedTuple):
    """Simulated paths: a PyTree with a leading path axis ``N``.

    Attributes
    ----------
    positions : (N, L + 1, 2) ``x_0 .. x_L``.
    forces : (N, L, 2) the unbiased force ``F(x_s)`` at ``x_0 .. x_{L-1}``.
    potentials : (N, L + 1) ``V(x_s)``.
    """

    positions: jax.Array
    forces: jax.Array
    potentials: jax.Array


def simulate(
    potential: Callable, bias: Callable, start: jax.Array, key, num_paths: int, num_steps: int, time_step: float, noise_std
) -> TransitionPaths:
    """Euler-Maruyama of biased overdamped Langevin dynamics from ``start`` (``lax.scan``).

    ``x_{s+1} = x_s + dt (F(x_s) + b(x_s)) + noise_std xi_s`` with ``F = -grad V``
    (unit mass and friction; ``noise_std = sqrt(2 kB T_b dt)``). Each step costs
    one evaluation of ``V`` and its gradient per path; the start's is computed
    once and shared by all paths.

    Parameters
    ----------
    potential : callable, ``V`` at ONE point of shape (2,).
    bias : callable, ``b`` at a batch of points (N, 2) -> (N, 2).
    start : (2,)
    num_paths, num_steps : int, ``N`` and ``L``.
    time_step : float
    noise_std : scalar
    """
    minus_v_and_force = jax.vmap(jax.value_and_grad(lambda x: -potential(x)))
    minus_v0, f0 = minus_v_and_force(start[None])
    x0 = batch_constraint(jnp.broadcast_to(start, (num_paths, start.shape[0])))  # the batch of a data-parallel step
    f0, v0 = batch_constraint(jnp.broadcast_to(f0, x0.shape)), jnp.broadcast_to(-minus_v0, (num_paths,))

    def step(carry, k):
        x, f = carry
        x_new = x + time_step * (f + bias(x)) + noise_std * batch_constraint(jax.random.normal(k, x.shape, x.dtype))
        minus_v, f_new = minus_v_and_force(x_new)
        return (x_new, f_new), (x_new, f, -minus_v)

    _, (xs, fs, vs) = jax.lax.scan(step, (x0, f0), jax.random.split(key, num_steps))
    positions = jnp.concatenate([x0[None], xs], axis=0)
    potentials = jnp.concatenate([v0[None], vs], axis=0)
    return TransitionPaths(jnp.swapaxes(positions, 0, 1), jnp.swapaxes(fs, 0, 1), potentials.T)


# --------------------------------------------------------------------------
# the bias network
# --------------------------------------------------------------------------


class BiasPotential(nnx.Module):
    """``U_theta(x) = scale MLP(x, y, |x - x_B|)`` with ReLU; the bias force is ``-grad_x U_theta``.

    The reference's ``pot`` parameterisation for the synthetic system (paths.md
    A3): widths ``3 -> 32 -> 16 -> 1``, ReLU, and every layer initialised as
    PyTorch's ``nn.Linear`` (weights and biases ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``).
    The reference's last layer has no bias; here it is held at 0 -- a constant in
    ``U_theta`` does not enter ``-grad U_theta``, gets a zero gradient and never moves.
    ``scale`` (1 in the reference) is the energy unit of the network's output: a
    system whose forces are ``O(100)`` (Müller-Brown) needs a bias of that size,
    which Adam's ``O(learning_rate)`` steps would take thousands of updates to
    reach from an ``O(1)`` network.

    Parameters
    ----------
    end : (float, float) the end state ``x_B``.
    hidden : sequence of int, hidden widths.
    scale : float, the unit of ``U_theta``.
    rngs : nnx.Rngs
    """

    def __init__(self, end, hidden, scale: float = 1.0, *, rngs: nnx.Rngs):
        self.end = tuple(float(c) for c in end)
        self.scale = float(scale)
        self.mlp = MLP(3, list(hidden), 1, activation=jax.nn.relu, rngs=rngs)
        key = rngs.params()
        for i, layer in enumerate(self.mlp.layers):
            k_w, k_b = jax.random.split(jax.random.fold_in(key, i))
            bound = 1.0 / math.sqrt(layer.kernel.shape[0])
            layer.kernel[...] = jax.random.uniform(k_w, layer.kernel.shape, layer.kernel.dtype, -bound, bound)
            layer.bias[...] = jax.random.uniform(k_b, layer.bias.shape, layer.bias.dtype, -bound, bound)
        last = self.mlp.layers[-1]
        last.bias[...] = jnp.zeros(last.bias.shape, last.bias.dtype)

    def __call__(self, x: jax.Array) -> jax.Array:
        """``U_theta`` at points ``x`` (..., 2) -> (...)."""
        distance = jnp.linalg.norm(x - jnp.asarray(self.end, x.dtype), axis=-1, keepdims=True)
        return self.scale * self.mlp(jnp.concatenate([x, distance], axis=-1))[..., 0]


# --------------------------------------------------------------------------
# settings, state, trainer
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class TpsDpsSettings:
    """Hyper-parameters of TPS-DPS (defaults: the reference's synthetic double-well run, paths.md A2).

    Attributes
    ----------
    time_step : float
        ``dt`` of the Euler-Maruyama dynamics (0.01).
    num_time_steps : int
        ``L``, steps per path (1000).
    hidden : tuple of int
        Hidden widths of ``U_theta`` ((32, 16)).
    potential_scale : float
        Energy unit of ``U_theta``'s output (1; :class:`BiasPotential`).
    indicator_std : float
        ``sigma_ri`` of the relaxed end-state indicator (3).
    control_variate : {"learned", "batch_mean", "zero"}
        The paper's ``global`` (a learned ``log Z``), ``local`` and ``zero``.
    learning_rate, log_z_learning_rate : float
        Adam learning rates of the network (1e-4) and of ``log Z`` (1e-3).
    max_grad_norm : float
        Gradient norm clip, applied to each parameter group separately (1).
    buffer_size : int
        FIFO replay-buffer capacity in paths (10 000).
    batch_size : int
        Buffer paths per Adam step (512).
    updates_per_rollout : int
        Adam steps after each rollout (300).
    start_temperature : float
        Behaviour temperature of the first rollout (2400 K); it falls linearly to
        the target's temperature over ``annealing_rollouts`` rollouts, then stays.
    annealing_rollouts : int
        Length of the annealing (20, the reference's number of rollouts).
    hit_radius : float
        Distance to ``x_B`` under which a path's final point is a hit (0.5).
    """

    time_step: PositiveFloat = 0.01
    num_time_steps: PositiveInt = 1000
    hidden: tuple = (32, 16)
    potential_scale: PositiveFloat = 1.0
    indicator_std: PositiveFloat = 3.0
    control_variate: Annotated[str, OneOf(CONTROL_VARIATES)] = "learned"
    learning_rate: PositiveFloat = 1e-4
    log_z_learning_rate: PositiveFloat = 1e-3
    max_grad_norm: PositiveFloat = 1.0
    buffer_size: PositiveInt = 10_000
    batch_size: PositiveInt = 512
    updates_per_rollout: PositiveInt = 300
    start_temperature: PositiveFloat = 2400.0
    annealing_rollouts: PositiveInt = 20
    hit_radius: PositiveFloat = 0.5

    def __post_init__(self):
        check_fields(self)
        object.__setattr__(self, "hidden", check_widths(type(self).__name__, "hidden", self.hidden))


class TpsDpsParams(NamedTuple):
    """Trained quantities: the bias network (``nnx.split`` state) and the learned ``log Z``."""

    potential: nnx.State
    log_z: jax.Array


class TpsDpsTrainState(NamedTuple):
    """A plain PyTree the driver checkpoints.

    Attributes
    ----------
    params : TpsDpsParams
    buffer : ReplayBuffer of ``(positions (L+1, 2), forces (L, 2), log_target ())`` per path.
    rollout : int32, rollouts done.
    target_evals : int32, evaluations of ``V`` and its gradient so far.
    """

    params: TpsDpsParams
    buffer: replay.ReplayBuffer
    rollout: jax.Array
    target_evals: jax.Array


class TpsDps:
    """TPS-DPS' numerics on a 2-D transition-path target: its training rounds, its path sampler and their figures.

    Seong et al. (2025), ICLR (module docstring): overdamped Langevin dynamics
    with a learned bias force ``-grad U_theta``, trained off-policy by the
    log-variance loss on a replay buffer of paths (the paper's ``global`` /
    ``local`` / ``zero`` control variates, and its annealed behaviour temperature).
    :func:`build` wraps it as the :class:`~jaxsamp.core.LearnedSampler` that
    ``jaxsamp.fit("tps_dps", target, batch_size=N)`` trains (``fit``'s ``batch_size`` is
    the paths per rollout; the settings' own ``batch_size``, buffer paths per Adam step,
    goes in ``settings=``); construct it directly only for what lies beyond that contract
    (the path densities, :meth:`sample_paths` at a behaviour temperature). Every method
    takes the key first.

    Parameters
    ----------
    target : TransitionPathTarget
        Gives ``potential``, the start and end states and the temperature
        ``T`` (``target.spec``): ``jaxsamp.targets.get("double_well_2d")`` or
        ``"muller_brown"``.
    settings : TpsDpsSettings, optional
        Default ``TpsDpsSettings()``, the reference's synthetic run.
    batch_size : int
        ``N``, paths simulated per rollout (512 in the reference).
    optimizer : optax.GradientTransformation, optional
        The optimiser of the bias network, instead of Adam with the settings' learning
        rate and per-group clipping (``log Z`` keeps its own Adam). Its state starts
        afresh every round, as Adam's does in the reference.

    Notes
    -----
    **Metrics of** ``step`` (one value per round = one rollout plus
    ``updates_per_rollout`` Adam steps):

    * ``loss``: the log-variance loss ``mean((c - log w)^2)`` averaged over the
      round's Adam steps, in nats^2 of the per-step-averaged path log-weight;
      its data (the buffer, the behaviour temperature) move, so it need not fall;
    * ``rmsd``, ``rmsd_std``: distance of the rollout's final points (paths cut
      at their closest approach to ``x_B``) to ``x_B``, in the potential's length unit;
    * ``thp``: percentage of the rollout's paths that end within ``hit_radius`` of ``x_B``;
    * ``ets``, ``ets_std``: over hit paths, the highest potential energy ``V``
      along the path (the potential's energy unit; NaN without hits);
    * ``hits``: number of hit paths of the rollout;
    * ``temperature``: the rollout's behaviour temperature ``T_b`` (K, or the
      target's reduced unit);
    * ``log_Z_learned``: the learned control variate ``c`` (nats; it tracks the mean path log-weight);
    * ``target_evals``: evaluations of ``V`` and its gradient so far (``N L + 1`` per round).

    Its data (the buffer, the behaviour temperature) move, so the loss is not judged
    for progress; :meth:`training_checks` warns when training stopped before the
    annealing reached the target temperature.

    **Settings for a new 2-D system**: ``num_time_steps * time_step`` must be
    long enough for a biased path to cross (reference double well: 1000 steps
    of 0.01); ``time_step`` below ``2 / (largest curvature of V)`` (Müller-Brown:
    2e-4); ``start_temperature`` about twice the target's so early rollouts
    cross the barrier (reference: 2400 K for 1200 K, annealed over the 20
    rollouts); ``potential_scale`` about the barrier height in the potential's
    unit when the forces are large (Müller-Brown: 100); ``indicator_std`` the
    distance scale of the end basin (3 on the double well, 0.5 on Müller-Brown,
    where 3 gave no learning signal). ``configs/tps_dps_*.yaml`` hold both.

    Attributes
    ----------
    likelihood_std : float
        ``sqrt(2 kB T dt)`` at the target temperature: the std of every path likelihood.
    draw : callable
        ``jax.jit(self.sample_with)``, ``num_paths`` static.
    """

    def __init__(self, target, settings: TpsDpsSettings | None = None, batch_size: int = BATCH_SIZE,
                 optimizer: optax.GradientTransformation | None = None):
        settings = TpsDpsSettings() if settings is None else settings
        if not isinstance(settings, TpsDpsSettings):
            raise InputError(f"settings must be a TpsDpsSettings, got {type(settings).__name__}")
        spec = getattr(target, "spec", None)
        if spec is None or not hasattr(target, "potential"):
            raise InputError(f"TPS-DPS needs a transition-path target (with a potential and a spec); {target.name!r} has none")
        if target.event_shape != (2,):
            raise InputError(f"TPS-DPS here is for 2-D systems, got event shape {target.event_shape}")
        batch_size = check_int("batch_size", batch_size, ge=1)
        if batch_size > settings.buffer_size:
            raise InputError(f"a rollout of {batch_size} paths does not fit a buffer of buffer_size={settings.buffer_size}")
        self.target, self.settings, self.batch_size = target, settings, batch_size
        self.start = jnp.asarray(spec.start, jnp.float32)
        self.end = jnp.asarray(spec.end, jnp.float32)
        self.temperature = float(spec.temperature)
        self.likelihood_std = math.sqrt(2.0 * spec.kB * spec.temperature * settings.time_step)
        self.potential_optimizer = optimizer if optimizer is not None else optax.chain(
            optax.clip_by_global_norm(settings.max_grad_norm), optax.adam(settings.learning_rate))
        self.log_z_optimizer = optax.chain(optax.clip_by_global_norm(settings.max_grad_norm), optax.adam(settings.log_z_learning_rate))
        self.graphdef = nnx.graphdef(nnx.eval_shape(lambda: self._network(jax.random.key(0))))
        self.draw = jax.jit(self.sample_with, static_argnums=2)

    def _network(self, key) -> BiasPotential:
        return BiasPotential(self.target.spec.end, self.settings.hidden, self.settings.potential_scale, rngs=nnx.Rngs(key))

    # ---- the biased dynamics ------------------------------------------------

    def bias(self, params: TpsDpsParams) -> Callable:
        """``b_theta = -grad_x U_theta`` at points (..., 2) -> (..., 2)."""
        network = nnx.merge(self.graphdef, params.potential)
        return jax.grad(lambda x: -jnp.sum(network(x)))

    def noise_std(self, temperature) -> jax.Array:
        """``sqrt(2 kB T_b dt)``: the dynamics' noise at behaviour temperature ``T_b``."""
        return jnp.sqrt(2.0 * self.target.spec.kB * temperature * self.settings.time_step)

    def behaviour_temperature(self, rollout) -> jax.Array:
        """``T_b`` of rollout ``r``: ``linspace(start_temperature, T, annealing_rollouts)[r]``, then ``T``."""
        n = self.settings.annealing_rollouts
        fraction = jnp.minimum(rollout / (n - 1), 1.0) if n > 1 else 1.0
        return self.settings.start_temperature + (self.temperature - self.settings.start_temperature) * fraction

    def sample_paths(self, key, params: TpsDpsParams, num_paths: int, temperature=None) -> TransitionPaths:
        """``num_paths`` paths of the biased dynamics at ``temperature`` (default: the target's).

        Costs ``num_paths * L + 1`` energy evaluations.
        """
        temperature = self.temperature if temperature is None else temperature
        bias = self.bias(jax.lax.stop_gradient(params))
        s = self.settings
        return simulate(self.target.potential, bias, self.start, key, num_paths, s.num_time_steps, s.time_step, self.noise_std(temperature))

    # ---- path densities and the loss ----------------------------------------

    def log_target(self, positions: jax.Array, forces: jax.Array) -> jax.Array:
        """``log q~ = log p_0 + log_ri``: the unbiased path likelihood times the relaxed indicator, (N,)."""
        log_unbiased = path_log_likelihood(positions, forces, self.settings.time_step, self.likelihood_std)
        return log_unbiased + log_relaxed_indicator(positions, self.end, self.settings.indicator_std)

    def log_path_density(self, params: TpsDpsParams, positions: jax.Array, forces: jax.Array) -> jax.Array:
        """``log p_theta``: the biased path likelihood at the target temperature, (N,)."""
        drifts = forces + self.bias(params)(positions[..., :-1, :])
        return path_log_likelihood(positions, drifts, self.settings.time_step, self.likelihood_std)

    def loss(self, params: TpsDpsParams, positions, forces, log_target) -> jax.Array:
        """The log-variance loss ``mean((c - log w)^2)``, ``log w = log q~ - log p_theta``, on a batch of paths."""
        log_w = log_target - self.log_path_density(params, positions, forces)
        return variance_loss(log_w, self.settings.control_variate, params.log_z)

    # ---- the trainer ---------------------------------------------------------

    def init(self, key) -> TpsDpsTrainState:
        """A fresh bias network, ``log Z = 0`` and an empty buffer."""
        params = TpsDpsParams(nnx.state(self._network(key)), jnp.zeros((), jnp.float32))
        L = self.settings.num_time_steps
        example = (jnp.zeros((L + 1, 2)), jnp.zeros((L, 2)), jnp.zeros(()))
        buffer = replay.init(example, self.settings.buffer_size)
        return TpsDpsTrainState(params, buffer, jnp.zeros((), jnp.int32), jnp.zeros((), jnp.int32))

    def step(self, key, state: TpsDpsTrainState) -> tuple[TpsDpsTrainState, dict]:
        """One round: a rollout at the behaviour temperature into the buffer, then the Adam steps."""
        k_roll, k_train = jax.random.split(key)
        temperature = self.behaviour_temperature(state.rollout)
        paths = self.sample_paths(k_roll, state.params, self.batch_size, temperature)
        log_target = self.log_target(paths.positions, paths.forces)
        buffer = replay.add(state.buffer, (paths.positions, paths.forces, log_target))

        def update(carry, k):
            params, potential_opt, log_z_opt = carry
            loss, grads = jax.value_and_grad(self.loss)(params, *replay.sample(buffer, k, self.settings.batch_size))
            step_potential, potential_opt = self.potential_optimizer.update(grads.potential, potential_opt)
            step_log_z, log_z_opt = self.log_z_optimizer.update(grads.log_z, log_z_opt)
            params = TpsDpsParams(optax.apply_updates(params.potential, step_potential), params.log_z + step_log_z)
            return (params, potential_opt, log_z_opt), loss

        fresh = (state.params, self.potential_optimizer.init(state.params.potential), self.log_z_optimizer.init(state.params.log_z))
        (params, _, _), losses = jax.lax.scan(update, fresh, jax.random.split(k_train, self.settings.updates_per_rollout))
        target_evals = state.target_evals + self.batch_size * self.settings.num_time_steps + 1
        new = TpsDpsTrainState(params, buffer, state.rollout + 1, target_evals)
        metrics = path_metrics(paths.positions, paths.potentials, self.end, self.settings.hit_radius)
        metrics.update(
            loss=jnp.mean(losses),
            temperature=jnp.asarray(temperature, jnp.float32),
            log_Z_learned=params.log_z,
            target_evals=target_evals,
        )
        return new, metrics

    def training_checks(self, history: dict) -> list[str]:
        """TPS-DPS' own warning on a training history: it stopped before the annealing reached the target temperature."""
        rounds, annealing = len(history["loss"]), self.settings.annealing_rollouts
        if rounds >= annealing:
            return []
        return [f"training stopped after {rounds} of the {annealing} annealing rollouts: "
                "it never sampled at the target temperature"]

    # ---- samples and evaluation ----------------------------------------------

    def sample_with(self, key, params: TpsDpsParams, num_paths: int) -> WeightedSamples:
        """``num_paths`` paths at the target temperature with their path log-weights (see :meth:`sample`)."""
        paths = self.sample_paths(key, params, num_paths)
        log_w = self.log_target(paths.positions, paths.forces) - self.log_path_density(params, paths.positions, paths.forces)
        return WeightedSamples(paths, log_w)

    def sample(self, key, state: TpsDpsTrainState, num_samples: int) -> WeightedSamples:
        """``num_samples`` transition paths of the trained biased dynamics at the target temperature.

        The samples are whole paths: ``.x`` is a :class:`TransitionPaths` (a
        PyTree with a leading path axis: ``.x.positions`` (n, L + 1, 2),
        ``.x.forces``, ``.x.potentials``; :func:`truncated_paths` cuts them at
        their closest approach to ``x_B``), and ``.log_w`` (n,) the log-weight
        the loss uses, ``log q~ - log p_theta`` (per-step averaged path
        likelihoods, module docstring). So ``.ess`` measures how close the
        sampler is to the relaxed target path measure, and ``.log_Z`` estimates
        that measure's log-normaliser -- NOT the target's Boltzmann ``log Z``
        (``target.log_Z``, a density of states, not of paths). Costs
        ``num_samples * L + 1`` energy evaluations; the ``tps_dps`` experiment
        kind draws its evaluation paths with it.
        """
        return self.draw(key, state.params, num_samples)

    def path_figures(self, paths: TransitionPaths) -> dict:
        """:func:`path_metrics` of ``paths`` (``rmsd``, ``rmsd_std``, ``thp``, ``ets``, ``ets_std``, ``hits``) as floats."""
        metrics = path_metrics(paths.positions, paths.potentials, self.end, self.settings.hit_radius)
        return {name: float(value) for name, value in metrics.items()}

    def evaluation_figures(self, samples: WeightedSamples, state: TpsDpsTrainState) -> dict:
        """The figures of paths ``samples`` (what :meth:`sample` returns) after training to ``state``, as floats.

        The canonical figures of their path log-weights
        (:func:`jaxsamp.diagnostics.weights.figures`: ``ess``, ``log_Z_hat`` -- the log-normaliser
        of the relaxed path measure, not the target's Boltzmann ``log Z`` --, ``elbo``,
        ``nonfinite_samples``), :meth:`path_figures` (RMSD, THP %, ETS over hit paths) and
        ``target_evals``: the evaluations spent in TRAINING (``state.target_evals``; the
        ``num_samples * L + 1`` of drawing ``samples`` are not included).
        """
        return {**figures(samples), **self.path_figures(samples.x), "target_evals": int(state.target_evals)}

    def evaluate(self, key, state: TpsDpsTrainState, num_samples: int, **options) -> dict:
        """:meth:`evaluation_figures` of ``num_samples`` paths at the target temperature (the reference evaluates 512).

        It takes no options.
        """
        if options:
            raise InputError(f"evaluate takes no option {min(options)}", "its options: none")
        return self.evaluation_figures(self.sample(key, state, num_samples), state)


def build(target, settings: TpsDpsSettings | None = None, *, batch_size: int | None = None,
          optimizer: optax.GradientTransformation | None = None) -> LearnedSampler:
    """TPS-DPS (Seong et al. 2025): transition paths of a 2-D system; batch_size = paths per rollout, samples are paths.

    Parameters
    ----------
    target : TransitionPathTarget
        ``jaxsamp.targets.get("double_well_2d")`` or ``"muller_brown"``.
    settings : TpsDpsSettings, optional
        Default: the reference's synthetic double-well run.
    batch_size : int, optional
        Paths per rollout (default :data:`BATCH_SIZE`, the reference's 512).
    optimizer : optax.GradientTransformation, optional
        Replaces the bias network's Adam (:class:`TpsDps`).

    Returns
    -------
    LearnedSampler
        One step is one round (a rollout and ``updates_per_rollout`` Adam steps);
        ``sample(key, state, n)`` draws paths (``x`` a :class:`TransitionPaths`);
        ``evaluate(key, state, n)`` gives :meth:`TpsDps.evaluation_figures`. The log-variance
        loss is taken on a buffer of paths rolled out at an annealed behaviour temperature:
        its data move, so it is not judged for progress; :meth:`TpsDps.training_checks`
        warns when training stopped before the annealing ended.
    """
    tps_dps = TpsDps(target, settings, BATCH_SIZE if batch_size is None else batch_size, optimizer)
    health = TrainingHealth(judge_progress=False, checks=tps_dps.training_checks)
    return LearnedSampler(tps_dps.init, tps_dps.step, tps_dps.sample, tps_dps.evaluate, health, density=tps_dps.target)
