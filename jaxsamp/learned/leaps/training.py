"""Training LEAPS: the PINN loss over a replay buffer, with the step-count curriculum of the paper.

Holderrieth, Albergo & Jaakkola (2025), "LEAPS", ICML. The loss and the curriculum are
:mod:`jaxsamp.learned.leaps.pinn`: the squared residual ``K_t^theta(x) + d_t F_phi(t)`` of the
Jarzynski integrand against a learned free energy, zero exactly when the weights of
:mod:`jaxsamp.learned.leaps.simulation` have zero variance.

The loss is off-policy: any distribution of ``(x, t)`` is a valid training set, so
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
:func:`build` makes LEAPS a :class:`~jaxsamp.core.LearnedSampler` (what
``jaxsamp.fit("leaps", ...)`` trains); :class:`Leaps` holds its numerics.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Annotated, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from jaxsamp.core.data_parallel import batch_constraint
from jaxsamp.core.errors import InputError
from jaxsamp.core.protocols import LearnedSampler, SMCProposal, TrainingHealth, WeightedSamples
from jaxsamp.core.validation import (
    Interval,
    NonNegativeInt,
    OneOf,
    PositiveFloat,
    PositiveInt,
    check_fields,
    check_int,
    check_widths,
)
from jaxsamp.diagnostics.observables import lattice_observables, observable_errors
from jaxsamp.diagnostics.weights import figures
from jaxsamp.learned import buffer as replay
from jaxsamp.learned.leaps import simulation
from jaxsamp.learned.leaps.pinn import curriculum_grid, curriculum_schedule, free_energy_log_Z, pinn_loss
from jaxsamp.learned.leaps.transition import leaps_transition
from jaxsamp.mcmc import discrete
from jaxsamp.mcmc.lattice_reference import reference_observables
from jaxsamp.nets.locally_equivariant import NETWORKS
from jaxsamp.nets.mlp import MLP
from jaxsamp.targets.lattice import LatticeModel, LatticePath


@dataclasses.dataclass(frozen=True)
class LeapsSettings:
    """Hyper-parameters of a LEAPS run (``sampler.params`` of a ``kind: leaps`` config), frozen and checked.

    Defaults are the paper's Ising settings (L = 15; Holderrieth, Albergo & Jaakkola 2025, ICML,
    appendix), with the network sized to the lattice (the paper's LE-conv from 8 x 8 up, shallower below:
    :func:`~jaxsamp.nets.locally_equivariant.default_kernel_sizes`); see ``configs/leaps_*.yaml``. Every field is checked by type and range when the
    settings are made (an :class:`~jaxsamp.core.errors.InputError` naming it).
    """

    network: Annotated[str, OneOf(tuple(NETWORKS))] = "conv"
    """``conv``, ``mlp`` or ``attention`` (:data:`jaxsamp.nets.locally_equivariant.NETWORKS`)."""
    network_params: dict = dataclasses.field(default_factory=dict)
    """Keyword arguments of the network class (e.g. ``kernel_sizes``, ``channels``); those left out take the class's
    defaults, the LE-conv's ``kernel_sizes`` sized to the lattice."""
    free_energy_hidden: tuple = (200, 200, 200, 200)
    """Hidden widths of the free-energy MLP ``F_phi(t)``."""
    learning_rate: PositiveFloat = 3e-4
    lr_decay: Annotated[float, Interval(gt=0, le=1)] = 0.995
    lr_decay_every: PositiveInt = 1000
    clip_norm: PositiveFloat = 1e5
    loss_batch: PositiveInt = 400
    rollout_steps: PositiveInt = 125
    """``K``: Euler steps of a full training rollout (step size ``1 / K``)."""
    curriculum_start: PositiveInt = 1
    curriculum_steps: NonNegativeInt = 20000
    warm_up: NonNegativeInt = 0
    """Updates at ``k = curriculum_start`` before the curriculum (paper: 1000 for Potts)."""
    rollout_every: PositiveInt = 100
    buffer_rollouts: PositiveInt = 100
    states_per_walker: PositiveInt = 16
    """``(x, t)`` pairs each walker of a rollout adds to the buffer (random times)."""
    mcmc_updates: NonNegativeInt = 200
    eval_steps: PositiveInt = 100
    eval_grid: Annotated[str, OneOf(tuple(simulation.TIME_GRIDS))] = "uniform"
    """``uniform`` or ``cubic_exponential`` (:data:`jaxsamp.learned.leaps.simulation.TIME_GRIDS`)."""
    eval_mcmc_updates: NonNegativeInt = 0
    eval_batch: PositiveInt = 1000
    weight_point: Annotated[str, OneOf(simulation.WEIGHT_POINTS)] = "exact"
    """The importance-weight rule (:func:`jaxsamp.learned.leaps.simulation.simulate`): ``exact`` (unbiased) or a quadrature."""
    jump_floor: Annotated[float, Interval(gt=0, lt=0.5)] = simulation.JUMP_FLOOR
    """The exact rule's floor on each site's move probabilities, per step (in (0, 1/q), below 0.5 for spins)."""
    jump_floor_rate: Annotated[float, Interval(gt=0, lt=0.5)] | None = None
    """A floor per unit time instead (:func:`jaxsamp.learned.leaps.simulation.simulate`): ``jump_floor_rate * h`` per step."""
    checkerboard: bool = False
    """Sample with the exact rule in colour-class sub-steps (:func:`jaxsamp.learned.leaps.simulation.simulate`):
    each Euler step moves one checkerboard colour class at a time, never two interacting sites at once, with
    the exact weights of every sub-step (twice the network passes per step on even sides). The quadrature
    rules, which have no sub-steps, are drawn on the unsplit chain; the evaluation then also records the
    exact weights of those unsplit walkers as ``exact_unsplit``. Needs ``eval_mcmc_updates = 0``."""
    compare_weight_points: bool = True
    """Also evaluate the other weight conventions (the experiment reports ESS and log Z of each)."""
    paper_quadrature: Annotated[str, OneOf(("auto", *simulation.QUADRATURE_POINTS))] = "auto"
    """Where LEAPS' Jarzynski quadrature, recorded beside the exact weights on the same walkers
    (``quadrature_paper``), evaluates its integrand: ``auto`` (the reference code's convention: ``post``
    for Ising, ``pre`` for Potts), ``pre`` or ``post``."""
    resample_threshold: Annotated[float, Interval(gt=0, le=1)] | None = None
    """Resample the walkers when their normalised ESS falls below it during sampling (None: never)."""
    reference_chains: PositiveInt = 1000
    """Glauber chains for the observables' reference when the lattice is too big to enumerate (the ``leaps``
    experiment's and ``evaluate(..., observables=True)``'s: :func:`jaxsamp.mcmc.lattice_reference.reference_observables`)."""
    reference_sweeps: PositiveInt = 2000
    """Heat-bath sweeps of each of those chains (the second half is kept)."""

    def __post_init__(self):
        check_fields(self)
        object.__setattr__(self, "free_energy_hidden",
                           check_widths(type(self).__name__, "free_energy_hidden", self.free_energy_hidden))
        signature = inspect.signature(NETWORKS[self.network].__init__)
        accepted = set(signature.parameters) - {"self", "lattice_shape", "num_categories", "rngs"}
        unknown = sorted(set(self.network_params) - accepted)
        if unknown:
            raise InputError(
                f"network_params {unknown} are not parameters of network {self.network!r}; accepted: {sorted(accepted)}"
            )
        if self.checkerboard and self.eval_mcmc_updates:
            raise InputError("checkerboard=True samples without the evaluation's Metropolis correction: "
                             f"set eval_mcmc_updates=0 (got {self.eval_mcmc_updates})")
        if self.checkerboard and self.weight_point != "exact":
            raise InputError(f"checkerboard=True has exact weights only: set weight_point='exact' (got {self.weight_point!r})")
        if not self.curriculum_start <= self.rollout_steps:
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
# the trainer
# --------------------------------------------------------------------------


def _storage(x: jax.Array) -> jax.Array:
    return x.astype(jnp.int8)


def _decode(x: jax.Array, path) -> jax.Array:
    return x.astype(jnp.float32) if path.target.domain.kind == "spin" else x.astype(jnp.int32)


def as_lattice_path(target) -> LatticePath:
    """The uniform-to-target path LEAPS anneals along: ``target`` if it is a ``LatticePath``, built from a lattice
    model (Ising, Potts or :func:`~jaxsamp.targets.energy_lattice.lattice_energy`), else an InputError saying what
    LEAPS needs."""
    if isinstance(target, LatticePath):
        return target
    if isinstance(target, LatticeModel):
        return LatticePath(target)
    domain = getattr(getattr(target, "domain", None), "kind", "unknown")
    raise InputError(
        f"LEAPS needs an Ising or Potts lattice target or a lattice_energy, got "
        f"{getattr(target, 'name', type(target).__name__)!r} on domain {domain!r}",
        "pass jaxsamp.targets.get('ising', L=8, beta=0.4407) (or 'potts'), your own energy of a lattice configuration "
        "as jaxsamp.targets.lattice_energy(energy, shape, num_states), or a LatticePath",
    )


#: walkers per training rollout when ``build`` is given no ``batch_size`` (the paper's 200)
BATCH_SIZE = 200
#: ``evaluate``'s reference observables use ``fold_in(key, REFERENCE_STREAM)`` (its draws, ``fold_in(key, i)``)
REFERENCE_STREAM = 2**31 - 1


class Leaps:
    """LEAPS' numerics on a spin or categorical lattice: its training, its weighted sampler and their figures.

    Holderrieth, Albergo & Jaakkola (2025), "LEAPS", ICML: walkers start uniform
    (``pi_0``) and follow a CTMC with locally equivariant rates along the linear
    path ``pi_t ∝ exp(t log p)`` (:class:`~jaxsamp.targets.lattice.LatticePath`);
    the PINN loss of the paper (:func:`~jaxsamp.learned.leaps.pinn.pinn_loss`) is trained on a replay
    buffer of the walkers' own states under the step-count curriculum (module
    docstring), and samples carry the exact Jarzynski / Radon-Nikodym weights of
    :mod:`jaxsamp.learned.leaps.simulation`, so ``log Z`` is
    unbiased in ``Z`` whatever the training reached.

    :func:`build` wraps it as the :class:`~jaxsamp.core.LearnedSampler` that
    ``jaxsamp.fit("leaps", ...)`` trains; construct it directly only for what lies
    beyond that contract (the draws of every weight rule, :meth:`evaluation_samples`,
    and the jitted :attr:`draw`). Every method takes the key first. ``init(key)``
    makes the networks, the optimiser state and an empty buffer; ``step(key,
    state)`` is one Adam update (after a rollout when the schedule asks for one).

    Parameters
    ----------
    target : LatticeModel or LatticePath
        ``jaxsamp.targets.get("ising", L=..., beta=...)`` or ``"potts"``, or your
        own energy (:func:`~jaxsamp.targets.energy_lattice.lattice_energy`); the
        uniform-to-target path is built here (or pass the
        :class:`~jaxsamp.targets.lattice.LatticePath` itself).
    settings : LeapsSettings, optional
        Defaults are the paper's Ising settings at L = 15 (hours on a GPU), the
        network sized to the lattice (:class:`LeapsSettings`).
    batch_size : int
        Walkers per training rollout (paper: 200).
    optimizer : optax.GradientTransformation, optional
        The optimiser of the rate and free-energy networks (jointly), instead of
        Adam with the settings' decayed learning rate and clipping.

    Notes
    -----
    **Metrics of** ``step`` (one value per update):

    * ``loss``: the PINN loss, the mean squared residual ``(K_t(x) + d_t F_phi(t))^2``
      over ``loss_batch`` buffer pairs, in (log-density per unit time)^2; zero iff
      the rates transport ``pi_t`` (and then the weights have zero variance). Its
      data move with training (the buffer and the curriculum's horizon), so it
      need not fall.
    * ``k``: the curriculum's Euler steps of this update's rollouts (their final
      time is ``k / rollout_steps``); reaches ``rollout_steps`` after ``warm_up +
      curriculum_steps`` updates.
    * ``rollout_ess``: normalised ESS in (0, 1] of the newest rollout at its final
      time, with the cheap ``pre`` weights and the training's Metropolis
      updates: a monitor, not the sampler's ESS.
    * ``rollout_target_evals``: target evaluations of this update's rollout (0 when there is none): ``k``
      steps of ``batch_size`` walkers, each one ``flip_log_ratios`` call and ``mcmc_updates`` single-site
      Metropolis updates counted as ``mcmc_updates / N`` evaluations (a sweep of the ``N`` sites costs one);
      network passes are not counted, as in the paper. Summed over updates: the training's cost.
    * ``learning_rate``: Adam's step size at this update (not recorded with an
      ``optimizer`` of your own, whose schedule is its own).

    **Settings for a new lattice** (``configs/leaps_*.yaml``): the network's
    receptive field should cover the lattice -- the paper's LE-conv has kernel
    sizes ``[3, 5, 7, 9, 15]`` with 20 channels at L = 15, the L = 8 CPU config
    ``[3, 5, 7]`` with 8; ``rollout_steps`` 125 (paper) to 100 and
    ``eval_steps`` 100 uniform steps for Ising, 300 on the ``cubic_exponential``
    grid for Potts; ``mcmc_updates`` 200 (Ising) / 1000 (Potts) in the paper,
    32 at L = 8 on a CPU; ``curriculum_steps`` a third of the training updates
    at L = 8 (3000 of 9000; paper: 20 000 of 1e5 to 4e5); learning rate 3e-4 (paper) to 1e-3
    for short runs. The paper reached ESS 0.67 (Ising) and 0.20 (Potts) at
    L = 15 with 100- and 300-step samplers.

    Attributes
    ----------
    path : LatticePath
    target : LatticeModel
    settings : LeapsSettings
    batch_size : int
    model : LeapsModel
        The networks' graph definitions (the parameters are ``state.params``).
    draw, draw_paired : callable
        :meth:`sample_with` and :meth:`sample_paired_with` jitted (the walker count,
        rule and split static): the trained and untrained parameters share one compilation.
    """

    def __init__(self, target, settings: LeapsSettings | None = None, batch_size: int = BATCH_SIZE,
                 optimizer: optax.GradientTransformation | None = None):
        path = as_lattice_path(target)
        settings = LeapsSettings() if settings is None else settings
        if not isinstance(settings, LeapsSettings):
            raise InputError(f"settings must be a LeapsSettings, got {type(settings).__name__}")
        self.path, self.target, self.settings = path, path.target, settings
        self.batch_size = check_int("batch_size", batch_size, ge=1)
        self.model = network_structure(path, settings)
        if optimizer is None:
            self._schedule = optax.exponential_decay(
                settings.learning_rate, settings.lr_decay_every, settings.lr_decay, staircase=True
            )
            optimizer = optax.chain(optax.clip_by_global_norm(settings.clip_norm), optax.adam(self._schedule))
        else:
            self._schedule = None
        # one flat parameter vector: the same updates, far fewer kernels to compile than one per leaf
        self._optimizer = optax.flatten(optimizer)
        self._ks = np.asarray(
            curriculum_schedule(settings.curriculum_start, settings.rollout_steps, settings.curriculum_steps,
                                settings.warm_up)
        )
        self._correction = (
            simulation.metropolis_correction(path, settings.mcmc_updates) if settings.mcmc_updates > 0 else None
        )
        self._eval_correction = (
            simulation.metropolis_correction(path, settings.eval_mcmc_updates)
            if settings.eval_mcmc_updates > 0 else None
        )
        self.quadrature_point = (("post" if path.target.domain.kind == "spin" else "pre")
                                 if settings.paper_quadrature == "auto" else settings.paper_quadrature)
        self.draw = jax.jit(self.sample_with, static_argnums=(2, 3, 4))
        self.draw_paired = jax.jit(self.sample_paired_with, static_argnums=2)

    # ---- training -------------------------------------------------------------

    def init(self, key: jax.Array) -> LeapsTrainState:
        """Fresh networks, optimiser state and an empty buffer (``jax.jit(init)`` compiles the initialisers at once)."""
        _, params = build_networks(self.path, self.settings, key)
        example = {"x": jnp.zeros(self.target.event_shape, jnp.int8), "t": jnp.zeros((), jnp.float32)}
        buffer = replay.init(example, self.settings.buffer_rollouts * self.batch_size * self.settings.states_per_walker)
        return LeapsTrainState(params, self._optimizer.init(params), buffer, jnp.zeros((), jnp.int32),
                               jnp.float32(jnp.nan))

    def _rollout(self, key, params, k, buffer):
        s, n = self.settings, self.batch_size
        key_ts, key_x0, key_sim, key_pick = jax.random.split(key, 4)
        ts = curriculum_grid(key_ts, k, s.rollout_steps)
        x0 = batch_constraint(self.path.sample_base(key_x0, n))  # the walkers: a data-parallel step's batch
        frozen = jax.lax.stop_gradient(params)
        out = simulation.simulate(
            key_sim, self.model.rate_fn(frozen), self.path, x0, ts, correction=self._correction, num_active=k,
            record=True, weight_point="pre",  # the weights only feed the rollout_ess monitor: one pass per step
        )
        t_idx = jax.random.randint(key_pick, (n, s.states_per_walker), 0, k + 1)
        xs = out.trajectory[t_idx, jnp.arange(n)[:, None]]
        pairs = n * s.states_per_walker
        batch = {"x": _storage(xs.reshape(pairs, *self.target.event_shape)), "t": ts[t_idx].reshape(pairs)}
        return replay.add(buffer, batch), WeightedSamples(out.x, out.log_w).ess.astype(jnp.float32)

    def step(self, key: jax.Array, state: LeapsTrainState) -> tuple[LeapsTrainState, dict]:
        """One update: a rollout into the buffer when due, then Adam on the PINN loss of a buffer batch."""
        s = self.settings
        key_roll, key_batch = jax.random.split(key)
        ks = jnp.asarray(self._ks)
        k = ks[jnp.minimum(state.step, ks.shape[0] - 1)]
        fresh = (state.step < s.buffer_rollouts) | (state.step % s.rollout_every == 0)
        buffer, ess = jax.lax.cond(
            fresh,
            lambda: self._rollout(key_roll, state.params, k, state.buffer),
            lambda: (state.buffer, state.rollout_ess),
        )
        batch = replay.sample(buffer, key_batch, s.loss_batch)
        x, t = _decode(batch["x"], self.path), batch["t"]
        loss, grads = jax.value_and_grad(lambda p: pinn_loss(self.model, p, self.path, x, t))(state.params)
        updates, opt_state = self._optimizer.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        sites = int(np.prod(self.target.event_shape))
        metrics = {"loss": loss, "k": k, "rollout_ess": ess,
                   "rollout_target_evals": jnp.where(fresh, k, 0).astype(jnp.float32) * self.batch_size
                   * (1.0 + s.mcmc_updates / sites)}
        if self._schedule is not None:
            metrics["learning_rate"] = self._schedule(state.step)
        return LeapsTrainState(params, opt_state, buffer, state.step + 1, ess), metrics

    # ---- sampling and evaluation --------------------------------------------

    def sample_with(self, key: jax.Array, params, num_walkers: int, weight_point: str | None = None,
                    checkerboard: bool | None = None) -> WeightedSamples:
        """``num_walkers`` walkers with rates ``params`` on the evaluation grid (``eval_steps``, ``eval_grid``).

        ``weight_point`` is the weight rule (default ``settings.weight_point``,
        :data:`~jaxsamp.learned.leaps.simulation.WEIGHT_POINTS`). ``checkerboard``
        splits every Euler step into colour-class sub-steps, each an exact AIS
        move (:func:`~jaxsamp.learned.leaps.simulation.simulate`; exact rule
        only, without ``eval_mcmc_updates``); by default ``settings.checkerboard``
        for the exact rule and no split for the quadrature rules. Pure; :attr:`draw` is
        its jitted form (``num_walkers``, ``weight_point`` and ``checkerboard`` static).
        """
        s = self.settings
        weight_point = weight_point or s.weight_point
        if checkerboard is None:
            checkerboard = s.checkerboard and weight_point == "exact"
        return simulation.sample(
            key, self.model.rate_fn(params), self.path, num_walkers, simulation.TIME_GRIDS[s.eval_grid](s.eval_steps),
            weight_point=weight_point, correction=self._eval_correction,
            resample_threshold=s.resample_threshold, jump_floor=s.jump_floor, jump_floor_rate=s.jump_floor_rate,
            checkerboard=checkerboard,
        )

    def smc_proposal(self, state: LeapsTrainState) -> SMCProposal:
        """The trained rates' Euler steps as SMC moves along LEAPS' lattice path, on its evaluation grid.

        :func:`~jaxsamp.learned.leaps.transition.leaps_transition` with the rates of
        ``state.params``, the settings' floor and ``checkerboard``, on the path
        ``pi_t ∝ exp(t log p)`` from the uniform base and the grid of :meth:`sample_with`
        (``eval_steps`` steps of ``eval_grid``). The settings' ``eval_mcmc_updates`` and
        ``resample_threshold`` are not part of it: the SMC run takes its own moves and
        resampling (:meth:`jaxsamp.Fitted.smc`).
        """
        s = self.settings
        schedule = np.array(simulation.TIME_GRIDS[s.eval_grid](s.eval_steps), np.float64)
        schedule[0], schedule[-1] = 0.0, 1.0  # the grid's float32 ends, exactly the path's
        transition = leaps_transition(self.model.rate_fn(state.params), self.path, jump_floor=s.jump_floor,
                                      jump_floor_rate=s.jump_floor_rate, checkerboard=s.checkerboard)
        return SMCProposal(self.path, transition, schedule)

    def sample_paired_with(self, key: jax.Array, params, num_walkers: int) -> tuple[WeightedSamples, WeightedSamples]:
        """Both estimators on the SAME walkers: ``(exact, quadrature_paper)``.

        The exact discrete-time weights and LEAPS' Jarzynski quadrature at
        :attr:`quadrature_point` (the reference code's: after the jump for Ising,
        before it for Potts), on one simulation of the exact rule's (floored)
        chain (:func:`~jaxsamp.learned.leaps.simulation.sample_paired`). Same
        grid and floor as :meth:`sample_with`; no resampling. Pure;
        :attr:`draw_paired` is its jitted form.
        """
        s = self.settings
        return simulation.sample_paired(
            key, self.model.rate_fn(params), self.path, num_walkers, simulation.TIME_GRIDS[s.eval_grid](s.eval_steps),
            self.quadrature_point, correction=self._eval_correction, jump_floor=s.jump_floor,
            jump_floor_rate=s.jump_floor_rate,
        )

    def sample_paired(self, key: jax.Array, state: LeapsTrainState, num_samples: int) -> dict[str, WeightedSamples]:
        """``{"exact": ..., "quadrature_paper": ...}``: :meth:`sample_paired_with` in batches, as :meth:`sample` draws.

        With the same key, ``exact`` is what ``sample(key, state, n, "exact")`` returns (without
        ``settings.checkerboard``).
        """
        exact, quadrature = draw_samples(lambda k, n: self.draw_paired(k, state.params, n), key, num_samples,
                                         self.settings.eval_batch)
        return {"exact": exact, "quadrature_paper": quadrature}

    def evaluation_samples(self, key: jax.Array, state: LeapsTrainState, num_samples: int,
                           compare_weight_points: bool | None = None) -> dict[str, WeightedSamples]:
        """The evaluation's weighted samples by rule, every rule drawn with ``key``.

        Always ``exact`` and, on the same walkers, ``quadrature_paper`` (:meth:`sample_paired`;
        without resampling, which follows one weight only); the headline rule
        ``settings.weight_point``; and every other rule when ``compare_weight_points``
        (default: the settings'). With ``settings.checkerboard``, ``exact`` comes from the
        colour-class sub-steps and the paired walkers' exact weights are kept as
        ``exact_unsplit`` beside their ``quadrature_paper``.
        """
        s = self.settings
        compare = s.compare_weight_points if compare_weight_points is None else compare_weight_points
        rules = simulation.WEIGHT_POINTS if compare else ("exact", s.weight_point)
        samples = self.sample_paired(key, state, num_samples) if s.resample_threshold is None else {}
        if s.checkerboard and "exact" in samples:
            samples["exact_unsplit"] = samples.pop("exact")
        for rule in rules:
            if rule not in samples:
                samples[rule] = self.sample(key, state, num_samples, weight_point=rule)
        return samples

    def sample(self, key: jax.Array, state: LeapsTrainState, num_samples: int,
               weight_point: str | None = None) -> WeightedSamples:
        """``num_samples`` lattice states with their log-weights: ``.x`` (n, Lx, Ly), ``.log_Z`` estimates log Z.

        Drawn in batches of at most ``settings.eval_batch`` walkers, batch ``i``
        with key ``fold_in(key, i)`` (:func:`draw_samples`), as the ``leaps``
        experiment kind draws them.
        """
        weight_point = weight_point or self.settings.weight_point  # one compiled draw for the default and evaluate
        return draw_samples(lambda k, n: self.draw(k, state.params, n, weight_point), key, num_samples,
                            self.settings.eval_batch)

    def evaluate(self, key: jax.Array, state: LeapsTrainState, num_samples: int, *,
                 compare_weight_points: bool | None = None, observables: bool = False, reference: dict | None = None,
                 **options) -> dict:
        """The weight figures of every rule (:func:`weight_figures`), the free-energy network's log Z, and on request
        the lattice observables against their reference.

        The canonical figures (``log_Z_hat``, ``ess``, ``elbo``, ``log_Z_abs_err``, ...)
        of the headline rule ``settings.weight_point`` with its ``log_w_var``; ``ess_<rule>``,
        ``log_Z_hat_<rule>`` and ``log_Z_abs_err_<rule>`` of every other rule drawn
        (:meth:`evaluation_samples`: the exact weights and the paper's quadrature on the
        same walkers, every rule when ``compare_weight_points``); ``log_Z_learned``
        (:func:`~jaxsamp.learned.leaps.pinn.free_energy_log_Z`) and its ``log_Z_learned_abs_err``. Every rule draws
        with the same key (as the experiment does).

        Parameters
        ----------
        key, state, num_samples
            As :meth:`sample`.
        compare_weight_points : bool, optional
            Draw every weight rule (True) or only the exact weights with the paper's
            quadrature on their walkers and the headline rule (False); default the
            settings'. False is what a learning curve of the ESS needs: one draw.
        observables : bool
            Also the observables of the headline rule's weighted walkers
            (:func:`~jaxsamp.diagnostics.observables.lattice_observables`, as in the
            paper's Sec. 6) against their reference
            (:func:`~jaxsamp.diagnostics.observables.observable_errors`): ``abs_order``,
            ``abs_order_reference``, ``order_hist_tv`` and, for Ising,
            ``two_point_max_abs_err``. The reference is computed here
            (:func:`~jaxsamp.mcmc.lattice_reference.reference_observables`): exact on a
            lattice small enough to enumerate, else ``settings.reference_chains`` Glauber
            chains of ``settings.reference_sweeps`` sweeps (minutes at L = 15 on a CPU;
            pass ``reference`` to reuse one).
        reference : dict, optional
            The reference observables, as ``reference_observables`` returns them (its
            first element); implies ``observables``.
        """
        if options:
            raise InputError(f"evaluate takes no option {min(options)}",
                             "its options: compare_weight_points, observables, reference")
        s = self.settings
        exact = self.target.log_Z
        samples = self.evaluation_samples(key, state, num_samples, compare_weight_points)
        out = weight_figures(samples, s.weight_point, s.resample_threshold, exact)
        out["log_Z_learned"] = float(free_energy_log_Z(self.model, state.params, self.path))
        if exact is not None:
            out["log_Z_learned_abs_err"] = abs(out["log_Z_learned"] - exact)
        if observables or reference is not None:
            if reference is None:  # the draws use fold_in(key, i) for their batches i: a stream of its own
                reference, _ = reference_observables(
                    self.target, jax.random.fold_in(key, REFERENCE_STREAM), num_chains=s.reference_chains,
                    num_sweeps=s.reference_sweeps)
            main = samples[s.weight_point]
            out.update(observable_errors(self.target, lattice_observables(self.target, main.x, main.log_w), reference))
        return out


def build(target, settings: LeapsSettings | None = None, *, batch_size: int | None = None,
          optimizer: optax.GradientTransformation | None = None) -> LearnedSampler:
    """LEAPS (Holderrieth, Albergo & Jaakkola 2025): a CTMC with locally equivariant rates on a spin or categorical lattice.

    Parameters
    ----------
    target : LatticeModel or LatticePath
        Ising, Potts or your own energy (:func:`~jaxsamp.targets.energy_lattice.lattice_energy`).
    settings : LeapsSettings, optional
        Default: the paper's Ising settings at L = 15, the network sized to the lattice.
    batch_size : int, optional
        Walkers per training rollout (default :data:`BATCH_SIZE`, the paper's 200).
    optimizer : optax.GradientTransformation, optional
        Replaces Adam with the settings' decayed learning rate and clipping (:class:`Leaps`).

    Returns
    -------
    LearnedSampler
        ``sample(key, state, n)`` draws lattice states with the headline rule's weights;
        ``evaluate(key, state, n, **options)`` gives :meth:`Leaps.evaluate`'s figures (options
        ``compare_weight_points``, ``observables``, ``reference``); ``smc_proposal(state)`` the
        trained Euler steps as SMC moves (:meth:`Leaps.smc_proposal`, run by
        :meth:`jaxsamp.Fitted.smc`). The PINN loss
        is taken on a replay buffer of the walkers' own states over a curriculum that
        lengthens the horizon: its data move with training, so it is not judged for progress.
    """
    leaps = Leaps(target, settings, BATCH_SIZE if batch_size is None else batch_size, optimizer)
    return LearnedSampler(leaps.init, leaps.step, leaps.sample, leaps.evaluate, TrainingHealth(judge_progress=False),
                          smc_proposal=leaps.smc_proposal, density=leaps.target)


def draw_samples(draw, key: jax.Array, num_samples: int, batch: int) -> WeightedSamples:
    """``num_samples`` walkers from ``draw(key, n)`` in batches of at most ``batch`` (one weighted sample set).

    Batch ``i`` uses ``fold_in(key, i)``. ``draw`` may return a tuple of
    :class:`WeightedSamples` (:meth:`Leaps.sample_paired_with`); the result is
    then the tuple of the joined sets.
    """
    parts, done, i = [], 0, 0
    while done < num_samples:
        n = min(batch, num_samples - done)
        parts.append(draw(jax.random.fold_in(key, i), n))
        done, i = done + n, i + 1

    def join(sets):
        return WeightedSamples(jnp.concatenate([p.x for p in sets]), jnp.concatenate([p.log_w for p in sets]),
                               sets[0].log_Z0)

    if isinstance(parts[0], WeightedSamples):
        return join(parts)
    return tuple(join(sets) for sets in zip(*parts))


def weight_figures(samples: dict[str, WeightedSamples], headline: str, resample_threshold: float | None,
                   log_Z_exact: float | None) -> dict:
    """The canonical figures of the headline rule's walkers, and the ESS and log Z of every other rule.

    :func:`jaxsamp.diagnostics.weights.figures` of ``samples[headline]`` (``log_Z_hat``,
    ``ess``, ``elbo``, ``nonfinite_samples``, and with ``log_Z_exact`` the errors) and its
    ``log_w_var``; for every other rule ``<rule>`` of ``samples``, ``ess_<rule>``,
    ``log_Z_hat_<rule>`` and ``log_Z_abs_err_<rule>`` (each figure under one name: the
    headline rule's are the unsuffixed ones only). With resampling on (``resample_threshold``
    set) the final weights only describe the steps since the last resampling, so the ESS
    figures are named ``ess_since_last_resample*`` instead of ``ess*``; ``log Z``
    accumulates over the whole run either way.
    """
    ess = "ess" if resample_threshold is None else "ess_since_last_resample"
    main = samples[headline]
    out = figures(main, log_Z_exact=log_Z_exact)
    if "ess" in out:
        out[ess] = out.pop("ess")
    out["log_w_var"] = float(jnp.var(main.log_w))
    for rule, ws in samples.items():
        if rule == headline:
            continue
        got = figures(ws, log_Z_exact=log_Z_exact)
        for name, renamed in (("ess", f"{ess}_{rule}"), ("log_Z_hat", f"log_Z_hat_{rule}"),
                              ("log_Z_abs_err", f"log_Z_abs_err_{rule}")):
            if name in got:
                out[renamed] = got[name]
    return out
