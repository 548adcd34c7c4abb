"""Boltzmann-curve neural samplers: a curve ``rho_t ∝ exp(-f_t)`` and its velocity trained by a PINN loss.

Chemseddine, Wald, Duong & Steidl (2025), "Neural Sampling from Boltzmann
Densities: Fisher-Rao Curves in the Wasserstein Geometry", ICLR (arXiv
2410.03282), and Máté & Fleuret (2023), "Learning interpolations between
Boltzmann densities", TMLR; research/paths.md §B, research/anchors2.md (no
tables or equations of the paper were found: the settings below are ours or
Máté & Fleuret's code's).

The pieces:

* the three interpolations (linear, learned, gradient flow) and the residual
  ``R_t = d/dt f_t - div v_t + <grad f_t, v_t> + C(t)``:
  :mod:`jaxsamp.learned.curves.interpolations`;
* sampling by ODE from ``N(0, s^2 I)`` with change-of-variables and Jarzynski
  weights, optional Langevin corrections, velocity diagnostics:
  :mod:`jaxsamp.learned.curves.ode`;
* here: the networks (flax nnx), the loss, :class:`Curves` (the method's numerics: training,
  ODE sampling, figures; key first) and :func:`build`, the
  :class:`~jaxsamp.core.LearnedSampler` that ``jaxsamp.fit("curves", ...)`` trains.

**Networks.** ``v_t(x)`` and ``g(x, t)`` are MLPs (SiLU, smooth enough for the
second derivatives the loss takes) of ``[x, fourier(t)]``
(:func:`~jaxsamp.nets.mlp.fourier_time_features`), their last layer at zero
(the curve starts as the linear interpolation, the velocity at 0). ``C(t)`` is a
small MLP of ``fourier(t)``; its output bias starts at ``C(0)`` of the initial
curve, ``-E_{rho_0}[d/dt f_0]``, estimated on 1024 base samples (without it a
target whose ``log Z`` is in the hundreds, many-well's 164.7, would take
thousands of Adam steps just to move ``C``).

**Loss.** ``mean R^2`` over ``batch_size`` collocation points ``(x, t)``,
``t ~ U[0, 1]``, with ``x`` either

* ``box``: uniform on ``[-box, box]^d`` (the paper, per its reviews), or
* ``trajectory``: ``x_t`` of the current flow from ``x_0 ~ rho_0``, by
  ``trajectory_steps`` RK4 steps, detached (Máté & Fleuret's code collocates
  along detached RK4 trajectories; here each point has its own ``t``). A
  trajectory that diverges (a stiff velocity, such as the gradient flow's
  ``-s^2 grad f_1`` on a quartic well, overflowing in a few explicit steps)
  gives a non-finite point; such points are left out of the mean (the
  ``diverged_points`` metric counts them), because one of them would otherwise
  make the whole batch's gradient non-finite, and after ``MAX_SKIPPED`` such
  batches in a row a non-finite update would go through and end the run.

The divergence is exact (``d`` Jacobian-vector products) or Hutchinson's
estimate with ``num_probes`` Rademacher probes (unbiased, so the loss is
unbiased up to the probe variance that ``R^2`` adds). Adam (gradient clip
``max_grad_norm``) on ``g`` and ``v``, a separate Adam with ``rate_learning_rate`` on
``C``; a batch whose gradient is not finite skips its update.

**Target evaluations** (the target's log density with any derivatives at one
state): one per collocation point per step, plus ``4 trajectory_steps`` per
point for trajectory collocation of the gradient-flow curve (whose velocity
needs the target's gradient), plus 1024 at initialisation.
"""

from __future__ import annotations

import dataclasses
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
    NonNegativeInt,
    OneOf,
    PositiveFloat,
    PositiveInt,
    check_fields,
    check_int,
    check_widths,
)
from jaxsamp.diagnostics.discrepancies import mmd
from jaxsamp.diagnostics.weights import figures
from jaxsamp.learned.curves import ode
from jaxsamp.learned.curves.interpolations import (
    INTERPOLATIONS,
    CurveFields,
    continuity_residual,
    make_interpolation,
    value_and_divergence,
)
from jaxsamp.learned.curves.transition import curve_proposal
from jaxsamp.nets.mlp import MLP, fourier_time_features

COLLOCATIONS = ("box", "trajectory")
DIVERGENCES = ("exact", "hutchinson")
MAX_SKIPPED = 20  # consecutive non-finite updates skipped before one is let through
RATE_INIT_SAMPLES = 1024
#: collocation points per training step when ``build`` is given no ``batch_size`` (the configs' 256)
BATCH_SIZE = 256


# --------------------------------------------------------------------------
# networks
# --------------------------------------------------------------------------


def _zero_last_layer(mlp: MLP) -> None:
    last = mlp.layers[-1]
    last.kernel[...] = jnp.zeros(last.kernel.shape, last.kernel.dtype)
    last.bias[...] = jnp.zeros(last.bias.shape, last.bias.dtype)


class SpaceTimeField(nnx.Module):
    """``MLP([x, fourier(t)]) -> R^out`` at one state ``x`` (d,) and time ``t`` (), last layer at zero.

    With ``out_features = d`` it is the velocity ``v_t(x)``; with ``scalar=True`` the learned part ``g(x, t)`` of ``f_t``.
    """

    def __init__(
        self,
        dim: int,
        hidden,
        num_frequencies: int,
        scalar: bool = False,
        *,
        rngs: nnx.Rngs,
    ):
        self.num_frequencies, self.scalar = num_frequencies, scalar
        self.mlp = MLP(
            dim + 1 + 2 * num_frequencies, list(hidden), 1 if scalar else dim, rngs=rngs
        )
        _zero_last_layer(self.mlp)

    def __call__(self, x: jax.Array, t: jax.Array) -> jax.Array:
        out = self.mlp(
            jnp.concatenate(
                [x, fourier_time_features(t, self.num_frequencies).astype(x.dtype)]
            )
        )
        return out[0] if self.scalar else out


class RateNetwork(nnx.Module):
    """``C(t) = MLP(fourier(t))``, a scalar; its output bias is set by the trainer's ``init``."""

    def __init__(self, hidden, num_frequencies: int, *, rngs: nnx.Rngs):
        self.num_frequencies = num_frequencies
        self.mlp = MLP(1 + 2 * num_frequencies, list(hidden), 1, rngs=rngs)
        _zero_last_layer(self.mlp)

    def __call__(self, t: jax.Array) -> jax.Array:
        return self.mlp(fourier_time_features(t, self.num_frequencies))[0]


# --------------------------------------------------------------------------
# settings and state
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class CurvesSettings:
    """Hyper-parameters of the Boltzmann-curve sampler ``curves`` (``sampler.params`` of a ``kind: curves`` config).

    Attributes
    ----------
    interpolation : {"linear", "learned", "gradient_flow"}
    base_scale : float
        ``s`` of the base ``N(0, s^2 I)`` (for the gradient flow, the OU process's stationary law).
    hidden : tuple of int
        Hidden widths of ``v_t`` and ``g`` ((64, 64, 64)).
    rate_hidden : tuple of int
        Hidden widths of ``C(t)`` ((32, 32)).
    num_frequencies : int
        Sine/cosine pairs of the time features (4).
    collocation : {"box", "trajectory"}
    box : float
        Half-width of the collocation box.
    trajectory_steps : int
        RK4 steps of the collocation trajectories (16).
    divergence : {"exact", "hutchinson"}
        Of the loss's ``div v`` (sampling always uses the exact trace).
    num_probes : int
        Hutchinson probes per point.
    learning_rate, rate_learning_rate : float
        Adam learning rates of ``(g, v)`` and of ``C``.
    max_grad_norm : float
        Global-norm clip of the ``(g, v)`` gradient.
    ode_steps : int
        RK4 steps of the sampling ODE (64).
    langevin_steps : int
        MALA moves per correction (0: none).
    langevin_every : int
        ODE steps between corrections (must divide ``ode_steps``).
    langevin_step_size : float
    """

    interpolation: Annotated[str, OneOf(INTERPOLATIONS)] = "learned"
    base_scale: PositiveFloat = 1.0
    hidden: tuple = (64, 64, 64)
    rate_hidden: tuple = (32, 32)
    num_frequencies: PositiveInt = 4
    collocation: Annotated[str, OneOf(COLLOCATIONS)] = "box"
    box: PositiveFloat = 6.0
    trajectory_steps: PositiveInt = 16
    divergence: Annotated[str, OneOf(DIVERGENCES)] = "exact"
    num_probes: PositiveInt = 4
    learning_rate: PositiveFloat = 1e-3
    rate_learning_rate: PositiveFloat = 1e-2
    max_grad_norm: PositiveFloat = 10.0
    ode_steps: PositiveInt = 64
    langevin_steps: NonNegativeInt = 0
    langevin_every: PositiveInt = 1
    langevin_step_size: PositiveFloat = 0.05

    def __post_init__(self):
        check_fields(self)
        object.__setattr__(self, "hidden", check_widths("CurvesSettings", "hidden", self.hidden))
        object.__setattr__(
            self, "rate_hidden", check_widths("CurvesSettings", "rate_hidden", self.rate_hidden)
        )
        if self.langevin_steps and self.ode_steps % self.langevin_every:
            raise InputError(
                f"CurvesSettings: langevin_every={self.langevin_every} must divide ode_steps={self.ode_steps}"
            )

    @property
    def fixed_objective(self) -> bool:
        """Whether the loss is a fixed objective (box collocation), so that a loss that does not fall means trouble.

        Trajectory collocation draws its points along the flow being trained: its data move with training.
        """
        return self.collocation == "box"

    @property
    def langevin(self) -> ode.LangevinCorrection | None:
        """The sampling ODE's Langevin corrections (``None`` without)."""
        if not self.langevin_steps:
            return None
        return ode.LangevinCorrection(
            self.langevin_steps, self.langevin_every, self.langevin_step_size
        )


class CurveParams(NamedTuple):
    """The trained networks as ``nnx.split`` states; an empty dict for a network the interpolation does not have."""

    f: nnx.State | dict
    velocity: nnx.State | dict
    rate: nnx.State


class CurveTrainState(NamedTuple):
    """Training state: a plain PyTree the driver checkpoints."""

    params: CurveParams
    opt_state: optax.OptState
    rate_opt_state: optax.OptState
    step: jax.Array
    target_evals: jax.Array


# --------------------------------------------------------------------------
# the sampler
# --------------------------------------------------------------------------


class Curves:
    """The numerics of the Boltzmann-curve sampler ``curves`` for ``target``: its training, ODE sampling and figures.

    The training (``init(key)``, ``step(key, state)``) of the
    curve ``rho_t ∝ exp(-f_t)`` from ``N(0, s^2 I)`` to the target and of its
    velocity ``v_t``, by the PINN continuity loss (module docstring; Chemseddine
    et al. 2025, ICLR; Máté & Fleuret 2023, TMLR, Eqs. 11-12), and an ODE
    sampler of the trained curve: :meth:`sample` (``WeightedSamples``),
    :meth:`transport` (the whole ODE run: both weights, speeds, evaluations) and
    :meth:`evaluate` (figures), each taking the key first and then the train state. The three
    interpolations (``linear``, ``learned``, ``gradient_flow``) are the setting
    ``interpolation`` of this one method. :func:`build` wraps it as the
    :class:`~jaxsamp.core.LearnedSampler` that ``jaxsamp.fit("curves", ...)`` trains;
    construct it directly only for what lies beyond that contract (:meth:`transport`,
    :meth:`fields`, the loss).

    Parameters
    ----------
    target : Target
        Real-valued, flat state ``(d,)`` (an :class:`~jaxsamp.core.errors.InputError` otherwise).
    settings : CurvesSettings, optional
        Default ``CurvesSettings()``.
    batch_size : int
        Collocation points per training step (the configs use 256).
    optimizer : optax.GradientTransformation, optional
        The optimiser of ``(g, v)``, instead of Adam with the settings' learning rate and
        clipping; a non-finite update is still skipped (``optax.apply_if_finite``). ``C``
        keeps its own Adam.

    Attributes
    ----------
    interpolation : Interpolation
    evals_per_step : int
        Target evaluations of one training step.

    Notes
    -----
    **Metrics of** ``step`` (one value per update):

    * ``loss``: ``mean R^2`` over the batch's finite collocation points, in
      (nats per unit time)^2 (``R`` is a rate of change of a log density);
    * ``residual_abs``: ``mean |R|`` over the same points, nats per unit time;
    * ``diverged_points``: collocation points left out for a non-finite
      trajectory (always 0 with box collocation);
    * ``log_Z_learned``: ``log Z_0 + int_0^1 C(t) dt`` after the update, nats
      (the curve's own log Z, without sampling);
    * ``target_evals``: target evaluations so far (log density with its
      derivatives at one state), initialisation included;
    * ``skipped_updates``: updates skipped so far for a non-finite gradient (a running total).

    The loss of box collocation is a fixed objective (judged for progress by
    the run-health check); trajectory collocation's points move with the flow.
    :func:`training_checks` warns about skipped updates and diverged points.

    **Settings for a new target** (no settings of the paper were found; those
    here are Máté & Fleuret's code's or ours, measured in the ``curves`` benchmark suite, ``jaxsamp bench run curves``):

    * ``interpolation``: ``learned`` on multimodal targets (gmm2d: log Z error
      0.0025 at ESS 0.96 against linear's 0.37 at ESS 0.003, whose mass must
      "teleport" between modes); ``linear`` when ``f_0`` and ``f_1`` overlap well
      (the 8-site lattice double well: 0.004 at ESS 0.97); ``gradient_flow``
      has a velocity fixed by ``grad f_1``, stiff on steep walls (quartic wells).
    * ``base_scale``: the target's scale (e.g. the square root of the largest
      eigenvalue of a short MCMC run's covariance, or 1 for a standardised
      target); the base must cover the target's mass, centred at 0 (shift the
      target if its mean is far from 0).
    * ``collocation`` and ``box``: ``box`` in low dimension, with ``box`` about
      the target's extent (its modes' ``|mean| + 4 sd``; gmm2d uses 6); ``trajectory``
      from about d = 8 up, where a box holds almost none of the mass (the
      lattice double well and many-well configs).
    * ``divergence``: ``exact`` costs ``d`` Jacobian-vector products per point;
      ``hutchinson`` (4 probes) for d in the tens.
    * ``ode_steps``: 64 RK4 steps (Máté & Fleuret use 50); ``evaluate``'s
      ``log_Z_hat - log_Z_hat_jarzynski`` is the ODE error: raise the steps when it is
      above the Monte Carlo error.
    * Training length: the learned curve on gmm2d needs thousands of updates
      (ESS 0.12 after 3000 updates of 256 points, 0.96 after 14 000).
    """

    def __init__(self, target, settings: CurvesSettings | None = None, batch_size: int = BATCH_SIZE,
                 optimizer: optax.GradientTransformation | None = None):
        settings = CurvesSettings() if settings is None else settings
        if not isinstance(settings, CurvesSettings):
            raise InputError(f"settings must be a CurvesSettings, got {type(settings).__name__}")
        self.target, self.settings = target, settings
        self.batch_size = batch_size = check_int("batch_size", batch_size, ge=1)
        self.interpolation = make_interpolation(
            settings.interpolation, target, settings.base_scale
        )
        self.dim = self.interpolation.dim
        if optimizer is None:
            optimizer = optax.chain(
                optax.clip_by_global_norm(settings.max_grad_norm),
                optax.adam(settings.learning_rate),
            )
        self.optimizer = optax.apply_if_finite(optimizer, MAX_SKIPPED)
        self.rate_optimizer = optax.apply_if_finite(
            optax.adam(settings.rate_learning_rate), MAX_SKIPPED
        )
        nets = nnx.eval_shape(lambda: self._networks(jax.random.key(0)))
        self.graphdefs = tuple(nnx.graphdef(n) if n is not None else None for n in nets)
        gf_trajectory = (
            settings.collocation == "trajectory"
            and not self.interpolation.learns_velocity
        )
        self.evals_per_step = batch_size * (
            1 + (4 * settings.trajectory_steps if gf_trajectory else 0)
        )
        self._compiled_transport = jax.jit(self._transport, static_argnums=(2, 3, 4))

    def _networks(self, key):
        s, interp = self.settings, self.interpolation
        k_f, k_v, k_c = jax.random.split(key, 3)
        f_net = (
            SpaceTimeField(
                self.dim, s.hidden, s.num_frequencies, scalar=True, rngs=nnx.Rngs(k_f)
            )
            if interp.learns_f
            else None
        )
        v_net = (
            SpaceTimeField(self.dim, s.hidden, s.num_frequencies, rngs=nnx.Rngs(k_v))
            if interp.learns_velocity
            else None
        )
        return (
            f_net,
            v_net,
            RateNetwork(s.rate_hidden, s.num_frequencies, rngs=nnx.Rngs(k_c)),
        )

    # ---- the curve's fields at given parameters ----------------------------

    def fields(self, params: CurveParams) -> CurveFields:
        """``g``, ``v`` and ``C`` of ``params`` as callables at one state (``v`` from ``g`` for the gradient flow)."""
        f_def, v_def, c_def = self.graphdefs
        g = nnx.merge(f_def, params.f) if f_def is not None else None
        rate = nnx.merge(c_def, params.rate)
        if v_def is not None:
            velocity = nnx.merge(v_def, params.velocity)
        else:
            interp = self.interpolation
            velocity = lambda x, t: interp.velocity(g, x, t)
        return CurveFields(g, velocity, rate)

    def residual(
        self, params: CurveParams, x: jax.Array, t: jax.Array, key=None
    ) -> jax.Array:
        """``R_t(x)`` at one state (d,) and time (); ``key`` selects Hutchinson's divergence (else exact)."""
        fields = self.fields(params)
        v, div = value_and_divergence(
            lambda z: fields.velocity(z, t), x, key, self.settings.num_probes
        )
        return continuity_residual(
            self.interpolation.terms(fields.g, x, t), v, div, fields.rate(t)
        )

    # ---- collocation and loss ------------------------------------------------

    def collocation(self, params: CurveParams, key) -> tuple[jax.Array, jax.Array]:
        """``batch_size`` points ``(x (n, d), t (n,))`` of the configured scheme (module docstring), detached."""
        s, n = self.settings, self.batch_size
        k_t, k_x = jax.random.split(key)
        t = batch_constraint(jax.random.uniform(k_t, (n,)))  # the batch of a data-parallel step
        if s.collocation == "box":
            return batch_constraint(jax.random.uniform(k_x, (n, self.dim), minval=-s.box, maxval=s.box)), t
        velocity = self.fields(jax.lax.stop_gradient(params)).velocity
        x0 = batch_constraint(self.interpolation.base_scale * jax.random.normal(k_x, (n, self.dim)))
        x = jax.vmap(lambda x, te: ode.integrate(velocity, x, te, s.trajectory_steps))(
            x0, t
        )
        return jax.lax.stop_gradient(x), t

    def loss(
        self, params: CurveParams, x: jax.Array, t: jax.Array, key
    ) -> tuple[jax.Array, tuple[jax.Array, jax.Array]]:
        """``mean R^2`` over the finite points (module docstring); returns ``(loss, (R, finite))``.

        Non-finite points are replaced by the origin before the networks see
        them, so that they add nothing, not ``0 * nan``, to the gradient.
        """
        finite = jnp.all(jnp.isfinite(x), axis=-1)
        x = jnp.where(finite[:, None], x, 0.0)
        if self.settings.divergence == "exact":
            residuals = jax.vmap(lambda a, b: self.residual(params, a, b))(x, t)
        else:
            keys = jax.random.split(key, x.shape[0])
            residuals = jax.vmap(lambda a, b, k: self.residual(params, a, b, k))(
                x, t, keys
            )
        residuals = jnp.where(finite, residuals, 0.0)
        loss = jnp.sum(residuals**2) / jnp.maximum(jnp.sum(finite), 1)
        return loss, (residuals, finite)

    # ---- the trainer ---------------------------------------------------------

    def init(self, key) -> CurveTrainState:
        """Fresh networks (``v = 0``, ``g = 0``), ``C``'s bias at ``C(0) = -E_{rho_0}[d/dt f_0]`` (module docstring)."""
        k_net, k_base = jax.random.split(key)
        f_net, v_net, c_net = self._networks(k_net)
        x = self.interpolation.base_scale * jax.random.normal(
            k_base, (RATE_INIT_SAMPLES, self.dim)
        )
        g0 = (lambda z, s: jnp.zeros((), z.dtype)) if f_net is not None else None
        dt_f = jax.vmap(lambda z: self.interpolation.terms(g0, z, jnp.zeros(())).dt_f)(
            x
        )
        bias = c_net.mlp.layers[-1].bias
        bias[...] = jnp.full(bias.shape, -jnp.mean(dt_f), bias.dtype)
        params = CurveParams(
            nnx.state(f_net) if f_net is not None else {},
            nnx.state(v_net) if v_net is not None else {},
            nnx.state(c_net),
        )
        trained = (params.f, params.velocity)
        return CurveTrainState(
            params,
            self.optimizer.init(trained),
            self.rate_optimizer.init(params.rate),
            jnp.zeros((), jnp.int32),
            jnp.asarray(RATE_INIT_SAMPLES, jnp.int32),
        )

    def step(self, key, state: CurveTrainState) -> tuple[CurveTrainState, dict]:
        """One Adam update of ``(g, v)`` and of ``C`` on a fresh collocation batch."""
        k_points, k_probes = jax.random.split(key)
        x, t = self.collocation(state.params, k_points)
        (loss, (residuals, finite)), grads = jax.value_and_grad(
            self.loss, has_aux=True
        )(state.params, x, t, k_probes)
        trained = (state.params.f, state.params.velocity)
        updates, opt_state = self.optimizer.update(
            (grads.f, grads.velocity), state.opt_state, trained
        )
        f_params, v_params = optax.apply_updates(trained, updates)
        rate_updates, rate_opt_state = self.rate_optimizer.update(
            grads.rate, state.rate_opt_state, state.params.rate
        )
        params = CurveParams(
            f_params, v_params, optax.apply_updates(state.params.rate, rate_updates)
        )
        evals = state.target_evals + self.evals_per_step
        new = CurveTrainState(params, opt_state, rate_opt_state, state.step + 1, evals)
        metrics = {
            "loss": loss,
            "residual_abs": jnp.sum(jnp.abs(residuals))
            / jnp.maximum(jnp.sum(finite), 1),
            "diverged_points": jnp.sum(~finite),
            "log_Z_learned": self.learned_log_z(params),
            "target_evals": evals,
            "skipped_updates": opt_state.total_notfinite,
        }
        return new, metrics

    # ---- sampling and evaluation ----------------------------------------------

    def learned_log_z(self, params: CurveParams) -> jax.Array:
        """``log Z_0 + int_0^1 C(t) dt``: the curve's own ``log Z`` estimate (no sampling)."""
        return self.interpolation.log_Z0 + ode.rate_integral(self.fields(params).rate)

    def transport(
        self,
        key,
        state: CurveTrainState,
        num_samples: int,
        langevin: ode.LangevinCorrection | None = None,
        ode_steps: int | None = None,
    ) -> ode.CurveSamples:
        """The trained curve's ODE run, everything it carries (:func:`~jaxsamp.learned.curves.ode.transport`).

        ``num_samples`` states ``x_1`` with the change-of-variables weights
        (``.samples``), the Jarzynski-type weights ``-int R dt`` (``.jarzynski``,
        whose ``log_Z0`` includes ``int C``), ``|v_t(x_t)|`` along ``t`` and the
        target evaluations. Default ODE and Langevin corrections: the settings'
        (``ode_steps``, ``langevin_*``); ``langevin`` and ``ode_steps`` override them.

        Compiled once per sample count and ODE (``jax.jit``, the count and the ODE
        static): outside ``jit`` the ODE's surrounding operations would each compile
        on their own, which made a first call 2.5 times slower.
        """
        steps = self.settings.ode_steps if ode_steps is None else ode_steps
        langevin = self.settings.langevin if langevin is None else langevin
        return self._compiled_transport(key, state, num_samples, langevin, steps)

    def _transport(self, key, state: CurveTrainState, num_samples: int, langevin, num_steps: int) -> ode.CurveSamples:
        fields = self.fields(jax.lax.stop_gradient(state.params))
        return ode.transport(self.interpolation, fields, key, num_samples, num_steps, langevin)

    def smc_proposal(self, state: CurveTrainState) -> SMCProposal:
        """The trained curve's flow as SMC moves along its interpolation, one RK4 step per level.

        :func:`~jaxsamp.learned.curves.transition.curve_proposal`: the path ``-f_t`` of the
        trained ``g``, the flow of the trained ``v`` with its change-of-variables increments,
        ``ode_steps`` equal levels (the grid of :meth:`sample`). The settings' Langevin
        corrections are not part of it: the SMC run takes its own moves (:meth:`jaxsamp.Fitted.smc`).
        """
        fields = self.fields(jax.lax.stop_gradient(state.params))
        return curve_proposal(self.interpolation, fields, self.settings.ode_steps)

    def sample(self, key, state: CurveTrainState, num_samples: int) -> WeightedSamples:
        """``num_samples`` ODE samples ``x_1`` (n, d) with their change-of-variables log-weights; ``.log_Z`` estimates log Z."""
        return self.transport(key, state, num_samples).samples

    def evaluate(self, key, state: CurveTrainState, num_samples: int, *, reference=None, **options) -> dict:
        """The figures of the trained curve on ``num_samples`` ODE samples (:meth:`evaluate_with_transport`).

        Its one option, ``reference``: samples of the target to score the MMD against.
        """
        if options:
            raise InputError(f"evaluate takes no option {min(options)}", "its options: reference")
        return self.evaluate_with_transport(key, state, num_samples, reference)[0]

    def evaluate_with_transport(
        self, key, state: CurveTrainState, num_samples: int, reference=None
    ) -> tuple[dict, ode.CurveSamples]:
        """The figures of the trained curve, as plain numbers, and the :meth:`transport` they come from.

        * the canonical figures (:func:`jaxsamp.diagnostics.weights.figures`) of the
          change-of-variables weights, the headline: ``log_Z_hat``, ``ess``, ``elbo``,
          ``nonfinite_samples`` (samples whose state or either weight is NaN/inf, left out
          of every figure) and, when the target's ``log Z`` is known, ``log_Z_exact`` and
          the ``*_abs_err``;
        * ``ess_jarzynski``, ``log_Z_hat_jarzynski`` and ``log_Z_abs_err_jarzynski``: the same
          of the Jarzynski-type weights (``log Z_0 + int C + log mean exp(-int R)``);
        * ``log_Z_learned`` (``log Z_0 + int C``, no sampling) and its ``log_Z_learned_abs_err``;
        * ``mmd``: Gaussian-kernel MMD (median bandwidth, :func:`~jaxsamp.diagnostics.discrepancies.mmd`)
          between the unweighted samples and ``reference`` (default: as many exact
          target samples, when the target has them);
        * ``max_velocity`` and ``peak_mean_velocity``: the largest over ``t`` of the
          maximum and of the mean of ``|v_t(x_t)|`` over the samples;
        * ``sample_target_evals`` and ``langevin_acceptance`` (NaN without corrections).
        """
        k_sample, k_ref = jax.random.split(key)
        out = self.transport(k_sample, state, num_samples)
        x = np.asarray(out.samples.x)
        log_w, log_w_j = np.asarray(out.samples.log_w), np.asarray(out.jarzynski.log_w)
        finite = np.all(np.isfinite(x), axis=1) & np.isfinite(log_w) & np.isfinite(log_w_j)
        log_z = getattr(self.target, "log_Z", None)
        found = figures(WeightedSamples(None, np.where(finite, log_w, np.nan), out.samples.log_Z0), log_Z_exact=log_z)
        jarzynski = figures(WeightedSamples(None, np.where(finite, log_w_j, np.nan), out.jarzynski.log_Z0),
                            log_Z_exact=log_z)
        for name, renamed in (("ess", "ess_jarzynski"), ("log_Z_hat", "log_Z_hat_jarzynski"),
                              ("log_Z_abs_err", "log_Z_abs_err_jarzynski")):
            if name in jarzynski:
                found[renamed] = jarzynski[name]
        found["sample_target_evals"] = int(out.target_evals)
        found["log_Z_learned"] = float(self.learned_log_z(state.params))
        if log_z is not None:
            found["log_Z_learned_abs_err"] = abs(found["log_Z_learned"] - float(log_z))
        if reference is None and self.target.has_exact_samples:
            reference = self.target.sample(k_ref, num_samples)
        if reference is not None and finite.sum() >= 2:
            found["mmd"] = float(mmd(jnp.asarray(x[finite]), jnp.asarray(reference, jnp.float32)))
        found["max_velocity"] = float(np.max(np.asarray(out.speed_max)))
        found["peak_mean_velocity"] = float(np.max(np.asarray(out.speed_mean)))
        found["langevin_acceptance"] = float(out.acceptance)
        return found, out


def training_checks(history: dict) -> list[str]:
    """The curves' own warnings on a training history (:class:`~jaxsamp.core.TrainingHealth` ``checks``).

    Updates skipped for a non-finite gradient (``skipped_updates``, a running total), and
    collocation trajectories that diverged and were left out of the loss (``diverged_points``).
    """
    out = []
    skipped = int(np.asarray(history["skipped_updates"]).reshape(-1)[-1])
    if skipped:
        out.append(f"{skipped} updates were skipped for a non-finite gradient")
    diverged = int(np.sum(history["diverged_points"]))
    if diverged:
        out.append(f"{diverged} collocation trajectories diverged and were left out of the loss")
    return out


def build(target, settings: CurvesSettings | None = None, *, batch_size: int | None = None,
          optimizer: optax.GradientTransformation | None = None) -> LearnedSampler:
    """Boltzmann curves (Chemseddine et al. 2025; Máté & Fleuret 2023): a PINN-trained curve and velocity, ODE samples.

    Parameters
    ----------
    target : Target
        Real-valued, flat state ``(d,)``.
    settings : CurvesSettings, optional
        Default ``CurvesSettings()`` (the learned interpolation).
    batch_size : int, optional
        Collocation points per training step (default :data:`BATCH_SIZE`).
    optimizer : optax.GradientTransformation, optional
        Replaces Adam on ``(g, v)`` (:class:`Curves`); non-finite updates are still skipped.

    Returns
    -------
    LearnedSampler
        ``sample(key, state, n)``: ODE samples with their change-of-variables weights;
        ``evaluate(key, state, n, reference=None)``: :meth:`Curves.evaluate_with_transport`'s
        figures; ``smc_proposal(state)``: the flow as SMC moves along the curve
        (:meth:`Curves.smc_proposal`, run by :meth:`jaxsamp.Fitted.smc`). The loss is judged
        for progress with box collocation only (a fixed
        objective; trajectory collocation's points move with the flow), and
        :func:`training_checks` adds skipped updates and diverged points.
    """
    curves = Curves(target, settings, BATCH_SIZE if batch_size is None else batch_size, optimizer)
    health = TrainingHealth(judge_progress=curves.settings.fixed_objective, checks=training_checks)
    return LearnedSampler(curves.init, curves.step, curves.sample, curves.evaluate, health,
                          smc_proposal=curves.smc_proposal, density=curves.target)
