"""Training LEAPS: the PINN loss over a replay buffer, with the step-count curriculum of the paper.

Holderrieth, Albergo & Jaakkola (2025), "LEAPS", ICML: the PINN objective.
The weights of :mod:`jaxsamp.learned.leaps.simulation` have zero variance when the
integrand ``K_t(x)`` equals ``d_t log Z_t`` for every ``x``. The physics-informed
loss asks exactly that, with a learned free energy ``F_phi(t)`` (an MLP of
``t``; at the optimum ``F_phi(t) = -log Z_t + const``)::

    L(theta, phi) = E_{(x, t) ~ buffer} [ (K_t^theta(x) + d_t F_phi(t))^2 ].

It is off-policy: any distribution of ``(x, t)`` is a valid training set, so
rollouts (made with the current network, detached) are stored in a FIFO replay
buffer (:mod:`jaxsamp.learned.buffer`, spins as int8) and re-used. Following the
reference implementation (``malbergo/leaps``, ``src/modules/trainer.py``):

* a curriculum grows the number of Euler steps ``k`` from 1 to ``K`` over
  ``curriculum_steps`` updates, with linearly increasing repeats of each ``k``,
  so rollouts reach ``t = k / K`` (random step sizes, grid
  ``sort({0, k/K} ∪ (k-1) iid U(0, k/K))``);
* a fresh rollout every update until the buffer holds ``buffer_rollouts``,
  then every ``rollout_every`` updates; rollouts add ``mcmc_updates`` single-site
  Metropolis updates per step (200 for Ising, 1000 for Potts in the paper);
* Adam over ``theta`` and ``phi`` jointly, learning rate ``3e-4`` decayed by
  ``0.995`` every 1000 steps.

Unlike the reference, the buffer stores individual ``(x, t)`` pairs (a fixed
number of random times per walker) and the loss batch is drawn from all of them.
The whole update -- conditional rollout, buffer write, loss, Adam -- is one
pure function, so the driver jits and scans it and checkpoints the train state.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from jaxsamp.core.errors import InputError
from jaxsamp.core.protocols import Trainer, WeightedSamples
from jaxsamp.learned import buffer as replay
from jaxsamp.learned.leaps import simulation
from jaxsamp.mcmc import discrete
from jaxsamp.nets.locally_equivariant import NETWORKS
from jaxsamp.nets.mlp import MLP


@dataclasses.dataclass
class LeapsSettings:
    """Hyper-parameters of a LEAPS run (``sampler.params`` of a ``kind: leaps`` config).

    Defaults are the paper's Ising settings (L = 15); see ``configs/leaps_*.yaml``.
    """

    network: str = "conv"
    """``conv``, ``mlp`` or ``attention`` (:data:`jaxsamp.nets.locally_equivariant.NETWORKS`)."""
    network_params: dict = dataclasses.field(default_factory=dict)
    """Keyword arguments of the network class (e.g. ``kernel_sizes``, ``channels``)."""
    free_energy_hidden: list = dataclasses.field(default_factory=lambda: [200, 200, 200, 200])
    learning_rate: float = 3e-4
    lr_decay: float = 0.995
    lr_decay_every: int = 1000
    clip_norm: float = 1e5
    loss_batch: int = 400
    rollout_steps: int = 125
    """``K``: Euler steps of a full training rollout (step size ``1 / K``)."""
    curriculum_start: int = 1
    curriculum_steps: int = 20000
    warm_up: int = 0
    """Updates at ``k = curriculum_start`` before the curriculum (paper: 1000 for Potts)."""
    rollout_every: int = 100
    buffer_rollouts: int = 100
    states_per_walker: int = 16
    """``(x, t)`` pairs each walker of a rollout adds to the buffer (random times)."""
    mcmc_updates: int = 200
    eval_steps: int = 100
    eval_grid: str = "uniform"
    """``uniform`` or ``cubic_exponential`` (:data:`jaxsamp.learned.leaps.simulation.TIME_GRIDS`)."""
    eval_mcmc_updates: int = 0
    eval_batch: int = 1000
    weight_point: str = "exact"
    """The importance-weight rule (:func:`jaxsamp.learned.leaps.simulation.simulate`): ``exact`` (unbiased) or a quadrature."""
    jump_floor: float = simulation.JUMP_FLOOR
    """The exact rule's floor on each site's move probabilities, per step."""
    jump_floor_rate: float | None = None
    """A floor per unit time instead (:func:`jaxsamp.learned.leaps.simulation.simulate`): ``jump_floor_rate * h`` per step."""
    compare_weight_points: bool = True
    """Also evaluate the other weight conventions (the experiment reports ESS and log Z of each)."""
    resample_threshold: float | None = None
    reference_chains: int = 1000
    """Glauber chains for the observables' reference when the lattice is too big to enumerate."""
    reference_sweeps: int = 2000

    def __post_init__(self):
        if self.network not in NETWORKS:
            raise InputError(f"network must be one of {sorted(NETWORKS)}, got {self.network!r}")
        signature = inspect.signature(NETWORKS[self.network].__init__)
        accepted = set(signature.parameters) - {"self", "lattice_shape", "num_categories", "rngs"}
        unknown = sorted(set(self.network_params) - accepted)
        if unknown:
            raise InputError(
                f"network_params {unknown} are not parameters of network {self.network!r}; accepted: {sorted(accepted)}"
            )
        if self.eval_grid not in simulation.TIME_GRIDS:
            raise InputError(f"eval_grid must be one of {sorted(simulation.TIME_GRIDS)}, got {self.eval_grid!r}")
        if self.weight_point not in simulation.WEIGHT_POINTS:
            raise InputError(f"weight_point must be one of {simulation.WEIGHT_POINTS}, got {self.weight_point!r}")
        if not 0.0 < self.jump_floor < 0.5:
            raise InputError(f"jump_floor must lie in (0, 1/q) (below 0.5 for spins), got {self.jump_floor}")
        if self.jump_floor_rate is not None and not 0.0 < self.jump_floor_rate < 0.5:
            raise InputError(f"jump_floor_rate must lie in (0, 1/q) (below 0.5 for spins), got {self.jump_floor_rate}")
        if not 1 <= self.curriculum_start <= self.rollout_steps:
            raise InputError("need 1 <= curriculum_start <= rollout_steps")


class LeapsModel(NamedTuple):
    """The static halves (``nnx.GraphDef``) of the rate network and the free-energy MLP."""

    rates: nnx.GraphDef
    free_energy: nnx.GraphDef

    def rate_fn(self, params) -> simulation.RateFn:
        """``G(x, t)`` for one state with the rate network's parameters ``params["rates"]``."""
        return lambda x, t: nnx.merge(self.rates, params["rates"])(x, t)

    def free_energy_fn(self, params):
        """``F_phi(t)`` for a scalar ``t``."""
        return lambda t: nnx.merge(self.free_energy, params["free_energy"])(jnp.reshape(t, (1,)))[0]


class LeapsTrainState(NamedTuple):
    """A plain PyTree: network parameters (``nnx.State``), optimiser state, buffer and counters."""

    params: dict
    opt_state: optax.OptState
    buffer: replay.ReplayBuffer
    step: jax.Array
    rollout_ess: jax.Array


def _modules(path, settings: LeapsSettings, key: jax.Array) -> tuple[nnx.Module, nnx.Module]:
    rngs = nnx.Rngs(key)
    net = NETWORKS[settings.network](
        path.target.event_shape, discrete.lattice_categories(path.target), **settings.network_params, rngs=rngs
    )
    return net, MLP(1, list(settings.free_energy_hidden), 1, rngs=rngs)


def build_networks(path, settings: LeapsSettings, key: jax.Array) -> tuple[LeapsModel, dict]:
    """Create the rate network and ``F_phi`` for ``path.target``; return ``(model, params)``."""
    net, free_energy = _modules(path, settings, key)
    g_rates, p_rates = nnx.split(net)
    g_free, p_free = nnx.split(free_energy)
    return LeapsModel(g_rates, g_free), {"rates": p_rates, "free_energy": p_free}


def network_structure(path, settings: LeapsSettings) -> LeapsModel:
    """The :class:`LeapsModel` (graph definitions) alone, without computing any parameter."""
    net, free_energy = nnx.eval_shape(lambda: _modules(path, settings, jax.random.key(0)))
    return LeapsModel(nnx.split(net)[0], nnx.split(free_energy)[0])


# --------------------------------------------------------------------------
# curriculum
# --------------------------------------------------------------------------


def curriculum_schedule(start: int, k_max: int, num_steps: int, warm_up: int = 0) -> np.ndarray:
    """Number of Euler steps ``k`` for each update: ``start .. k_max``, repeats growing linearly.

    Value ``start + i`` is repeated about ``1 + i d`` times with ``d`` chosen so
    that the counts sum to ``num_steps`` (the reference's
    ``inverse_repeat_quadratic``), after ``warm_up`` updates at ``start``. Past the
    end of the schedule training uses ``k_max``.
    """
    n = k_max - start + 1
    if num_steps <= 0 or n == 1:
        body = np.full(max(num_steps, 0), k_max, np.int32)
    else:
        if num_steps < n:
            raise InputError(f"curriculum_steps={num_steps} must be >= the {n} step counts it visits")
        d = 2.0 * (num_steps - n) / (n * (n - 1))
        cum = np.concatenate([[0.0], np.cumsum(1.0 + d * np.arange(n))])
        bounds = np.round(cum * num_steps / cum[-1]).astype(np.int64)
        bounds[0], bounds[-1] = 0, num_steps
        body = np.repeat(np.arange(start, k_max + 1, dtype=np.int32), np.diff(bounds))
    out = np.concatenate([np.full(warm_up, start, np.int32), body, [np.int32(k_max)]])
    return out.astype(np.int32)


def curriculum_grid(key: jax.Array, k: jax.Array, k_max: int) -> jax.Array:
    """A random grid of ``k`` steps on ``[0, k / k_max]``, padded to ``k_max + 1`` points.

    ``sort({0, k/k_max} ∪ (k - 1) iid U(0, k/k_max))`` followed by copies of
    ``k / k_max`` (zero-length steps, skipped by ``simulate(num_active=k)``).
    """
    final_t = k / k_max
    u = jax.random.uniform(key, (k_max - 1,)) * final_t
    u = jnp.where(jnp.arange(k_max - 1) < k - 1, u, final_t)
    return jnp.concatenate([jnp.zeros((1,)), jnp.sort(u), jnp.reshape(final_t, (1,))]).astype(jnp.float32)


# --------------------------------------------------------------------------
# loss
# --------------------------------------------------------------------------


def pinn_residuals(model: LeapsModel, params, path, x: jax.Array, t: jax.Array) -> jax.Array:
    """``K_t(x) + d_t F_phi(t)`` for a batch of pairs ``x`` (B, *event_shape), ``t`` (B,)."""
    rate_fn = model.rate_fn(params)
    free_energy = model.free_energy_fn(params)

    def one(xi, ti):
        G = rate_fn(xi, ti)
        K = simulation.jarzynski_integrand(G, path.flip_log_ratios(xi, ti), path.dlog_prob_dt(xi, ti))
        dF = jax.jvp(free_energy, (ti,), (jnp.ones_like(ti),))[1]
        return K + dF

    return jax.vmap(one)(x, t)


def pinn_loss(model: LeapsModel, params, path, x: jax.Array, t: jax.Array) -> jax.Array:
    """LEAPS' physics-informed loss: the mean squared residual of :func:`pinn_residuals`."""
    return jnp.mean(pinn_residuals(model, params, path, x, t) ** 2)


def free_energy_log_Z(model: LeapsModel, params, path) -> jax.Array:
    """``log Z_0 + F_phi(0) - F_phi(1)``: the free-energy network's own estimate of ``log Z_1``."""
    free_energy = model.free_energy_fn(params)
    return path.log_Z0 + free_energy(jnp.float32(0.0)) - free_energy(jnp.float32(1.0))


# --------------------------------------------------------------------------
# the trainer
# --------------------------------------------------------------------------


def _storage(x: jax.Array) -> jax.Array:
    return x.astype(jnp.int8)


def _decode(x: jax.Array, path) -> jax.Array:
    return x.astype(jnp.float32) if path.target.domain.kind == "spin" else x.astype(jnp.int32)


def make_trainer(path, settings: LeapsSettings, num_walkers: int) -> tuple[Trainer, LeapsModel]:
    """The LEAPS :class:`~jaxsamp.core.Trainer` for a lattice path, and the static model.

    ``init(key)`` builds the networks, the optimiser state and an empty buffer
    (``jax.jit(trainer.init)`` compiles all the initialisers at once);
    ``step(key, state)`` does one update (a rollout first when the schedule asks
    for one) and returns metrics ``loss``, ``k`` (curriculum steps),
    ``rollout_ess`` (ESS of the newest rollout at its final time, pre-jump weights: a monitor) and
    ``learning_rate``. Run it with :func:`jaxsamp.core.run`.

    Parameters
    ----------
    path : LatticePath
    settings : LeapsSettings
    num_walkers : int
        Walkers per training rollout (paper: 200).
    """
    model = network_structure(path, settings)
    schedule = optax.exponential_decay(
        settings.learning_rate, settings.lr_decay_every, settings.lr_decay, staircase=True
    )
    # one flat parameter vector: the same updates, far fewer kernels to compile than one per leaf
    optimizer = optax.flatten(optax.chain(optax.clip_by_global_norm(settings.clip_norm), optax.adam(schedule)))
    ks = jnp.asarray(
        curriculum_schedule(settings.curriculum_start, settings.rollout_steps, settings.curriculum_steps, settings.warm_up)
    )
    k_max = settings.rollout_steps
    correction = simulation.metropolis_correction(path, settings.mcmc_updates) if settings.mcmc_updates > 0 else None
    event_shape = path.target.event_shape
    pairs = num_walkers * settings.states_per_walker

    def init(key):
        _, params = build_networks(path, settings, key)
        example = {"x": jnp.zeros(event_shape, jnp.int8), "t": jnp.zeros((), jnp.float32)}
        buffer = replay.init(example, settings.buffer_rollouts * pairs)
        return LeapsTrainState(params, optimizer.init(params), buffer, jnp.zeros((), jnp.int32), jnp.float32(jnp.nan))

    def rollout(key, params, k, buffer):
        key_ts, key_x0, key_sim, key_pick = jax.random.split(key, 4)
        ts = curriculum_grid(key_ts, k, k_max)
        x0 = path.sample_base(key_x0, num_walkers)
        frozen = jax.lax.stop_gradient(params)
        out = simulation.simulate(
            key_sim, model.rate_fn(frozen), path, x0, ts, correction=correction, num_active=k, record=True,
            weight_point="pre",  # the weights only feed the rollout_ess monitor: the rule with one pass per step
        )
        t_idx = jax.random.randint(key_pick, (num_walkers, settings.states_per_walker), 0, k + 1)
        xs = out.trajectory[t_idx, jnp.arange(num_walkers)[:, None]]
        batch = {"x": _storage(xs.reshape(pairs, *event_shape)), "t": ts[t_idx].reshape(pairs)}
        return replay.add(buffer, batch), WeightedSamples(out.x, out.log_w).ess.astype(jnp.float32)

    def step(key, state):
        key_roll, key_batch = jax.random.split(key)
        k = ks[jnp.minimum(state.step, ks.shape[0] - 1)]
        fresh = (state.step < settings.buffer_rollouts) | (state.step % settings.rollout_every == 0)
        buffer, ess = jax.lax.cond(
            fresh,
            lambda: rollout(key_roll, state.params, k, state.buffer),
            lambda: (state.buffer, state.rollout_ess),
        )
        batch = replay.sample(buffer, key_batch, settings.loss_batch)
        x, t = _decode(batch["x"], path), batch["t"]
        loss, grads = jax.value_and_grad(lambda p: pinn_loss(model, p, path, x, t))(state.params)
        updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        metrics = {"loss": loss, "k": k, "rollout_ess": ess, "learning_rate": schedule(state.step)}
        return LeapsTrainState(params, opt_state, buffer, state.step + 1, ess), metrics

    return Trainer(init, step), model


def sampler(model: LeapsModel, params, path, settings: LeapsSettings, weight_point: str | None = None):
    """``draw(key, num_walkers) -> WeightedSamples`` with the trained rates and the evaluation settings."""
    ts = simulation.TIME_GRIDS[settings.eval_grid](settings.eval_steps)
    correction = (
        simulation.metropolis_correction(path, settings.eval_mcmc_updates) if settings.eval_mcmc_updates > 0 else None
    )

    def draw(key, num_walkers):
        return simulation.sample(
            key,
            model.rate_fn(params),
            path,
            num_walkers,
            ts,
            weight_point=weight_point or settings.weight_point,
            correction=correction,
            resample_threshold=settings.resample_threshold,
            jump_floor=settings.jump_floor,
            jump_floor_rate=settings.jump_floor_rate,
        )

    return draw
