"""AISIVI: unbiased implicit VI with an importance-sampled score (Pielok, Bischl & Ruegamer 2025, ICML), and BSIVI.

The semi-implicit family is ``q_phi(z) = E_{p(eps)} q_phi(z | eps)`` with
``q_phi(z | eps) = N(mu_phi(eps), diag(s^2))``, ``mu_phi`` an MLP, ``s = alpha softplus(v)``
global (``alpha`` is ``scale_factor``: 1 by default, 0.1 in the reference code's toys,
whose ``v`` starts at 1, so ``s`` starts at ``0.1 softplus(1) = 0.131`` and moves a tenth as
fast per unit of ``v``) and ``p(eps) = N(0, I)``, or with ``latent_prior="uniform"`` the reference
code's ``U[0, 1]^d_eps``, under which the reverse model ends in a sigmoid (the reference's final Logit
layer) and proposes only inside the prior's support. Its density is
intractable, its score is not (UIVI's identity, Titsias & Ruiz 2019):
``grad_z log q(z) = E_{q(eps | z)}[grad_z log q(z | eps)]``.

**Score estimate.** A reverse model ``tau_psi(eps | z)`` (a conditional distrax
coupling flow, :class:`~jaxsamp.vi.families.CouplingFlow` with ``context_dim = d``)
proposes ``eps_1..eps_K``; with ::

    log w_k = log p(eps_k) + log q_phi(z | eps_k) - log tau_psi(eps_k | z),

``q_hat(z) = mean_k w_k`` is unbiased for ``q(z)`` and
``s_hat(z) = sum_k softmax(log w)_k grad_z log q_phi(z | eps_k)`` is a
self-normalised, consistent estimate of the score (``eps_k`` and ``tau`` held
fixed in ``z``). :class:`BSIVI` is the baseline without a reverse model: the
``eps`` that generated ``z`` and ``K - 1`` draws ``eps_k ~ p`` (so ``log w_k =
log q_phi(z | eps_k)``), SIVI's mixture estimate (Yin & Zhou 2018, ICML) as in the
reference code's ``bsivi`` (``experiments/toy_examples/run.py``). Leaving the own ``eps``
out is not a milder variant: once ``s`` falls below the spacing of the ``K`` prior means
near ``z``, the estimate follows the nearest other mean, ``-(z - mu_k) / s^2``, whose size
swamps the target's score and whose bias throws ``q`` far from the target.

**Reverse model.** ``tau``'s affine couplings have soft-clamped log-scales
(``tau_max_log_scale``): with ``exp`` of unbounded conditioner outputs, the scales
of successive couplings compound and a moderately trained ``tau`` maps an ordinary
base draw to ``inf``, whose NaN weight then poisons the whole ``phi`` step.

**Non-finite updates.** A ``phi`` or ``psi`` gradient that is not finite skips its
update (``optax.apply_if_finite``), counted in the ``skipped_updates`` and
``skipped_tau_updates`` metrics; after ``MAX_SKIPPED`` in a row the update goes
through and the run visibly fails.

**Updates, alternating every step** (the reference code, ``aisivi/model.py``):

* ``phi`` (reverse KL by the path gradient): draw ``z = mu_phi(eps) + s * eta`` and
  minimise ``mean_b stopgrad(s_hat(z_b) - grad log p~(z_b)) . z_b``, whose gradient
  is ``E[(grad log q - grad log p~)(z) dz/dphi]``;
* ``psi`` (expected forward KL): minimise ``-E_{eps ~ p, z ~ q(z|eps)} log tau_psi(eps | z)``
  ``= E_z KL(q(eps | z) || tau_psi(eps | z)) + const``; for ``pretrain_steps`` steps
  only ``psi`` moves.

:class:`AISIVI` and :class:`BSIVI` are the methods (``jaxsamp.fit("aisivi", ...)``,
``jaxsamp.fit("bsivi", ...)``); the draws ``z`` per step are their ``batch_size``.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, NamedTuple

import distrax
import jax
import jax.numpy as jnp
import optax
from flax import nnx

from jaxsamp.core.data_parallel import batch_constraint
from jaxsamp.core.protocols import WeightedSamples
from jaxsamp.core.validation import (
    Interval,
    NonNegativeInt,
    OneOf,
    PositiveFloat,
    PositiveInt,
    check_fields,
    check_int,
)
from jaxsamp.diagnostics import health
from jaxsamp.nets.mlp import MLP
from jaxsamp.vi.families import CouplingFlow, inverse_softplus
from jaxsamp.vi.training import VariationalEvaluation, batch_log_density, flat_dim

MAX_SKIPPED = 20  # consecutive non-finite updates skipped before one is let through
LATENT_PRIORS = ("normal", "uniform")  # p(eps): N(0, I), or the reference code's U[0, 1]^d


@dataclasses.dataclass(frozen=True)
class AISIVISettings:
    """Hyper-parameters of AISIVI / BSIVI (the draws ``z`` per step are the method's ``batch_size``).

    Attributes
    ----------
    latent_dim : int
        Dimension of ``eps`` (at least 2: ``tau`` is a coupling flow on it).
    latent_prior : {"normal", "uniform"}
        ``p(eps)``: ``N(0, I)``, or the reference code's ``U[0, 1]^d``, with which ``tau`` ends in a
        sigmoid (the reference's final Logit layer) so that it proposes only inside the prior's support.
    hidden_width, hidden_layers : int
        The mean network ``mu_phi``; ``hidden_layers = 0`` makes it affine.
    init_scale : float
        Initial ``s`` (the raw parameter starts at ``softplus^-1(init_scale / scale_factor)``).
    scale_factor : float
        ``alpha`` in ``s = alpha softplus(v)``: 1, or the reference code's 0.1 (with ``init_scale``
        ``0.1 softplus(1) = 0.1313262``, its start ``v = 1``).
    num_inner : int
        ``K``, inner draws of ``eps`` per ``z`` (for BSIVI, counting the ``eps`` that generated ``z``).
    tau_layers, tau_hidden_width, tau_hidden_layers : int
        Couplings of ``tau``, and the width and number of hidden layers of their conditioners
        (AISIVI only, as are ``tau_max_log_scale``, ``pretrain_steps`` and ``tau_learning_rate``).
        The reference code's toys use one hidden layer of width ``2 (latent_dim + d)``
        (8 on a 2-D target with a 2-d latent).
    tau_max_log_scale : float
        Bound on each coupling's log-scale in ``tau`` (soft clamp, see
        :class:`~jaxsamp.vi.families.CouplingFlow`).
    pretrain_steps : int
        Initial steps in which only ``tau`` is trained.
    learning_rate, tau_learning_rate : float
        Adam's learning rates of ``phi`` and ``psi``.
    decay_step : int or None
        After this many steps past pretraining both learning rates are multiplied
        by ``decay_factor`` (the reference code's ``StepLR``: a factor 0.1 at step
        2000 of 4000 on the toys); None keeps them constant.
    decay_factor : float
        The factor of that single drop, in (0, 1].
    marginal_draws : int
        Prior draws of the Monte Carlo marginal ``log q(z)`` used to score a fit
        (:meth:`AISIVI.marginal_log_density`), not in training.
    """

    latent_dim: Annotated[int, Interval(ge=2)] = 3
    latent_prior: Annotated[str, OneOf(LATENT_PRIORS)] = "normal"
    hidden_width: PositiveInt = 64
    hidden_layers: NonNegativeInt = 2
    init_scale: PositiveFloat = 1.0
    scale_factor: PositiveFloat = 1.0
    num_inner: PositiveInt = 256
    tau_layers: PositiveInt = 6
    tau_hidden_width: PositiveInt = 64
    tau_hidden_layers: PositiveInt = 2
    tau_max_log_scale: PositiveFloat = 3.0
    pretrain_steps: NonNegativeInt = 100
    learning_rate: PositiveFloat = 1e-2
    tau_learning_rate: PositiveFloat = 1e-2
    decay_step: PositiveInt | None = None
    decay_factor: Annotated[float, Interval(gt=0, le=1)] = 0.1
    marginal_draws: PositiveInt = 10_000

    def __post_init__(self):
        check_fields(self)


class ConditionalGaussianModule(nnx.Module):
    """``q_phi(z | eps) = N(mu_phi(eps), diag(s^2))``, ``s = scale_factor * softplus(raw_scale)``, starting at ``init_scale``."""

    def __init__(self, dim: int, latent_dim: int, hidden: tuple[int, ...], init_scale: float, rngs: nnx.Rngs,
                 scale_factor: float = 1.0):
        self.mean = MLP(latent_dim, hidden, dim, rngs=rngs)
        self.scale_factor = float(scale_factor)
        self.raw_scale = nnx.Param(jnp.full(dim, inverse_softplus(init_scale / self.scale_factor)))

    def scale(self) -> jax.Array:
        """The global conditional standard deviations ``s`` ``(dim,)``."""
        return self.scale_factor * jax.nn.softplus(self.raw_scale[...])

    def __call__(self, eps: jax.Array) -> distrax.Distribution:
        """The conditionals of ``eps`` of shape ``(..., latent_dim)``: batch shape ``eps.shape[:-1]``."""
        return distrax.MultivariateNormalDiag(self.mean(eps), self.scale())


class AISIVIState(NamedTuple):
    """Train state: a plain PyTree the driver checkpoints (``psi`` and its optimiser state are None for BSIVI)."""

    phi: nnx.State
    psi: nnx.State | None
    phi_opt_state: optax.OptState
    psi_opt_state: optax.OptState | None
    step: jax.Array


class AISIVI(VariationalEvaluation):
    """AISIVI (Pielok, Bischl & Ruegamer 2025, ICML): a semi-implicit Gaussian family fitted with a reverse model.

    ``AISIVI(target, settings, batch_size)`` is a :class:`~jaxsamp.core.Trainer`
    (``init``, ``step``) with ``sample(state, key, n)`` (draws of ``q`` weighted by
    ``log p~ - log q_hat``), ``log_q(state, z, key)`` (the Monte Carlo marginal
    :meth:`marginal_log_density`) and ``evaluate(state, key, n)``
    (:class:`~jaxsamp.vi.training.VariationalEvaluation` lists its figures; its
    ``log q`` is the estimated one, so ``elbo``, ``log_Z`` and ``forward_kl`` carry
    that estimate's bias). :class:`BSIVI` is the same without the reverse model.

    Parameters
    ----------
    target : Target
        Real-valued with a flat state ``(d,)``.
    settings : AISIVISettings
    batch_size : int
        Draws ``z`` per step, for both updates.

    Attributes
    ----------
    tau_family : CouplingFlow or None
        The reverse model's conditional flow (None for BSIVI).
    pretrain_steps : int
        Leading steps in which ``phi`` does not move (0 for BSIVI).

    Notes
    -----
    The step's metrics (no ``loss``: the ``phi`` update is a path-gradient surrogate
    whose value means nothing): ``tau_nll`` (``-mean log tau(eps | z)`` of the reverse
    model's update, nats; NaN for BSIVI), ``elbo`` (mean of ``log p~(z) - log q_hat(z)``
    over the batch, nats; NaN during pretraining), ``ess`` and ``log_Z_hat`` (of those
    weights), ``inner_ess`` (mean normalised ESS of the ``K`` inner weights per ``z``:
    near 1 when ``tau`` matches ``q(eps | z)``), ``skipped_updates`` and
    ``skipped_tau_updates`` (non-finite gradients skipped so far).

    Settings per target: the paper's toys used a 2-d latent, a 2 x 128 mean network,
    batches of 128, ``K`` = 2 x 4096 inner draws, Adam at 1e-2 with a tenfold drop
    half-way through 4000 steps (``decay_step``) and ``s = 0.1 softplus(v)`` from ``v = 1``
    (``scale_factor`` 0.1, ``init_scale`` 0.1313262); its logistic regression a 10-d
    latent, 2 x 100, learning rate 1e-3. ``latent_dim`` sets how non-Gaussian ``q``
    can be (2-3 for 2-D toys, about ``d`` for a posterior); ``init_scale`` should
    match the target's per-coordinate scale (``q`` starts at ``N(mu(eps), s^2)``);
    ``num_inner`` trades the score estimate's bias for cost (each step costs
    ``batch_size x num_inner`` conditional densities), and ``pretrain_steps`` lets
    ``tau`` learn ``q(eps | z)`` before ``phi`` follows its score.
    """

    name = "aisivi"
    uses_reverse_model = True

    def __init__(self, target, settings: AISIVISettings = AISIVISettings(), batch_size: int = 128):
        self.target, self.settings = target, settings
        self.batch_size = check_int("batch_size", batch_size, ge=1)
        self.dim = flat_dim(target, self.name)
        self.log_density = batch_log_density(target, self.dim, self.name)
        self.score = jax.vmap(jax.grad(target.log_prob))
        latent = settings.latent_dim
        if settings.latent_prior == "uniform":
            self.epsilon_prior = distrax.Independent(distrax.Uniform(jnp.zeros(latent), jnp.ones(latent)), 1)
        else:
            self.epsilon_prior = distrax.MultivariateNormalDiag(jnp.zeros(latent), jnp.ones(latent))
        self.tau_family = None
        if self.uses_reverse_model:
            hidden = (settings.tau_hidden_width,) * settings.tau_hidden_layers
            self.tau_family = CouplingFlow(latent, settings.tau_layers, hidden, context_dim=self.dim,
                                           max_log_scale=settings.tau_max_log_scale)
        self.graphdef = nnx.graphdef(nnx.eval_shape(lambda: self._module(nnx.Rngs(0))))
        # steps in which only tau trains (none without tau); phi's updates start after them, psi's at
        # step 0, so both rates drop at decay_step past pretraining
        self.pretrain_steps = settings.pretrain_steps if self.tau_family is not None else 0
        self.optimizer = self._adam(settings.learning_rate, settings.decay_step)
        self.tau_optimizer = self._adam(
            settings.tau_learning_rate, None if settings.decay_step is None else settings.decay_step + self.pretrain_steps
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.target.name!r}, batch_size={self.batch_size})"

    def _adam(self, learning_rate: float, decay_at: int | None) -> optax.GradientTransformation:
        """Adam at ``learning_rate``, times ``decay_factor`` from update ``decay_at`` on, skipping non-finite gradients."""
        if decay_at is not None:
            learning_rate = optax.piecewise_constant_schedule(learning_rate, {decay_at: self.settings.decay_factor})
        return optax.apply_if_finite(optax.adam(learning_rate), MAX_SKIPPED)

    def _module(self, rngs: nnx.Rngs) -> ConditionalGaussianModule:
        s = self.settings
        return ConditionalGaussianModule(self.dim, s.latent_dim, (s.hidden_width,) * s.hidden_layers, s.init_scale, rngs,
                                         s.scale_factor)

    def conditional(self, phi: nnx.State) -> ConditionalGaussianModule:
        """``eps -> q_phi(. | eps)`` as the nnx module holding ``phi``."""
        return nnx.merge(self.graphdef, phi)

    def init(self, key: jax.Array) -> AISIVIState:
        """Fresh ``mu_phi`` and ``s = init_scale``, a fresh reverse flow (AISIVI), their Adam states."""
        phi_key, psi_key = jax.random.split(key)
        phi = nnx.split(self._module(nnx.Rngs(phi_key)))[1]
        psi = self.tau_family.init(psi_key) if self.tau_family is not None else None
        psi_opt_state = self.tau_optimizer.init(psi) if psi is not None else None
        return AISIVIState(phi, psi, self.optimizer.init(phi), psi_opt_state, jnp.int32(0))

    def draw(self, phi: nnx.State, key: jax.Array, n: int) -> tuple[jax.Array, jax.Array]:
        """``n`` pairs ``eps ~ p``, ``z = mu_phi(eps) + s * eta``: shapes ``(n, latent_dim)``, ``(n, d)``; ``z`` reparameterised."""
        eps_key, z_key = jax.random.split(key)
        eps = batch_constraint(self.epsilon_prior.sample(seed=eps_key, sample_shape=(n,)))  # a data-parallel batch
        return eps, batch_constraint(self.conditional(phi)(eps).sample(seed=z_key))

    def reverse_model(self, psi: nnx.State, z: jax.Array) -> distrax.Distribution:
        """``tau_psi(. | z)`` for one ``z`` ``(d,)``: the conditional flow, followed by a sigmoid under the uniform prior."""
        flow = self.tau_family.module(psi)(z)
        if self.settings.latent_prior == "uniform":
            return distrax.Transformed(flow, distrax.Block(distrax.Sigmoid(), 1))
        return flow

    def log_weights(self, phi: nnx.State, z: jax.Array, eps: jax.Array, log_proposal: jax.Array) -> jax.Array:
        """``log w_k = log p(eps_k) + log q_phi(z | eps_k) - log_proposal_k`` for one ``z`` ``(d,)``, ``eps`` ``(K, latent_dim)``."""
        return self.epsilon_prior.log_prob(eps) + self.conditional(phi)(eps).log_prob(z) - log_proposal

    def score_estimate(self, phi: nnx.State, z: jax.Array, eps: jax.Array, log_w: jax.Array) -> jax.Array:
        """``s_hat(z) = sum_k softmax(log w)_k grad_z log q_phi(z | eps_k)`` for one ``z``; shape ``(d,)``."""
        conditional = self.conditional(phi)
        grads = jax.vmap(jax.grad(lambda z, e: conditional(e).log_prob(z)), in_axes=(None, 0))(z, eps)
        return jax.nn.softmax(log_w) @ grads

    def inner_draws(self, phi: nnx.State, psi: nnx.State | None, key: jax.Array, z: jax.Array,
                    eps_z: jax.Array) -> tuple[jax.Array, jax.Array]:
        """``K`` inner draws ``eps_k`` ``(K, latent_dim)`` for one ``z`` ``(d,)`` and their ``log w`` ``(K,)``.

        AISIVI: ``K`` draws of ``tau_psi(. | z)``. BSIVI: ``eps_z``, the latent that
        generated ``z``, then ``K - 1`` prior draws (SIVI's estimate; ``log w_k =
        log q_phi(z | eps_k)``).
        """
        k = self.settings.num_inner
        if self.tau_family is not None:
            eps, log_proposal = self.reverse_model(psi, z).sample_and_log_prob(seed=key, sample_shape=(k,))
        else:
            eps = jnp.concatenate([eps_z[None], self.epsilon_prior.sample(seed=key, sample_shape=(k - 1,))])
            log_proposal = self.epsilon_prior.log_prob(eps)
        return eps, self.log_weights(phi, z, eps, log_proposal)

    def phi_loss(self, phi: nnx.State, psi: nnx.State | None, key: jax.Array) -> tuple[jax.Array, dict]:
        """The path-gradient surrogate ``mean_b stopgrad(s_hat - grad log p~)(z_b) . z_b`` and the draws' diagnostics."""
        draw_key, inner_key = jax.random.split(key)
        eps_z, z = self.draw(phi, draw_key, self.batch_size)
        z_fixed, phi_fixed = jax.lax.stop_gradient(z), jax.lax.stop_gradient(phi)

        def estimate(z_b, eps_b, key_b):
            eps, log_w = self.inner_draws(phi_fixed, psi, key_b, z_b, eps_b)
            return self.score_estimate(phi_fixed, z_b, eps, log_w), log_w

        s_hat, log_w = jax.vmap(estimate)(z_fixed, eps_z, jax.random.split(inner_key, self.batch_size))
        gap = jax.lax.stop_gradient(s_hat - self.score(z_fixed))
        log_q_hat = jax.scipy.special.logsumexp(log_w, axis=1) - jnp.log(self.settings.num_inner)
        inner_ess = jax.vmap(lambda lw: WeightedSamples(None, lw).ess)(log_w)
        return jnp.mean(jnp.sum(gap * z, axis=-1)), {
            "log_w": self.log_density(z_fixed) - log_q_hat, "inner_ess": jnp.mean(inner_ess)
        }

    def tau_loss(self, psi: nnx.State, phi: nnx.State, key: jax.Array) -> jax.Array:
        """``-mean log tau_psi(eps | z)`` over fresh pairs ``(eps, z)`` of the model (no gradient to ``phi``)."""
        eps, z = self.draw(jax.lax.stop_gradient(phi), key, self.batch_size)
        return -jnp.mean(jax.vmap(lambda e, c: self.reverse_model(psi, c).log_prob(e))(eps, z))

    def step(self, key: jax.Array, state: AISIVIState) -> tuple[AISIVIState, dict]:
        """One Adam step of ``psi`` (AISIVI), then, after pretraining, one of ``phi`` with the updated ``tau``.

        A non-finite gradient skips its update; ``skipped_updates`` (``phi``) and
        ``skipped_tau_updates`` (``psi``; 0 for BSIVI) count them over the run.
        """
        phi_key, tau_key = jax.random.split(key)
        psi, psi_opt_state, tau_nll = state.psi, state.psi_opt_state, jnp.full((), jnp.nan)
        if self.tau_family is not None:
            tau_nll, grads = jax.value_and_grad(self.tau_loss)(state.psi, state.phi, tau_key)
            updates, psi_opt_state = self.tau_optimizer.update(grads, state.psi_opt_state, state.psi)
            psi = optax.apply_updates(state.psi, updates)

        def update_phi(_):
            (_, diagnostics), grads = jax.value_and_grad(self.phi_loss, has_aux=True)(state.phi, psi, phi_key)
            updates, opt_state = self.optimizer.update(grads, state.phi_opt_state, state.phi)
            return optax.apply_updates(state.phi, updates), opt_state, diagnostics

        def hold_phi(_):
            diagnostics = {"log_w": jnp.full(self.batch_size, jnp.nan), "inner_ess": jnp.full((), jnp.nan)}
            return state.phi, state.phi_opt_state, diagnostics

        phi, phi_opt_state, diagnostics = jax.lax.cond(state.step >= self.pretrain_steps, update_phi, hold_phi, None)
        weights = WeightedSamples(None, diagnostics["log_w"])
        skipped_tau = psi_opt_state.total_notfinite if psi_opt_state is not None else jnp.int32(0)
        metrics = {"tau_nll": tau_nll, "elbo": jnp.mean(weights.log_w), "ess": weights.ess,
                   "log_Z_hat": weights.log_Z, "inner_ess": diagnostics["inner_ess"],
                   "skipped_updates": phi_opt_state.total_notfinite, "skipped_tau_updates": skipped_tau}
        return AISIVIState(phi, psi, phi_opt_state, psi_opt_state, state.step + 1), metrics

    def health_warnings(self, history: dict) -> list[str]:
        """The method's own run-health check on the training ``history`` (the driver's per-step metrics), which
        :func:`jaxsamp.fit` and ``jaxsamp run`` add to the generic ones: a collapsed reverse model
        (:func:`~jaxsamp.diagnostics.health.inner_ess_warnings`). None for BSIVI, which has no reverse model
        (its own ``eps`` dominates its inner weights by design)."""
        if self.tau_family is None or "inner_ess" not in history:
            return []
        return health.inner_ess_warnings(history["inner_ess"], self.settings.num_inner)

    def marginal_log_density(self, phi: nnx.State, z: jax.Array, key: jax.Array, num_eps: int = 10_000,
                             chunk: int = 512) -> jax.Array:
        """``log q_phi(z)`` of points ``z`` ``(n, d)`` by Monte Carlo over ``num_eps`` prior draws shared by all points.

        ``log mean_m N(z; mu_phi(eps_m), diag(s^2))``: consistent, biased low by
        about ``Var[q(z | eps)] / (2 num_eps q(z)^2)`` (Jensen). Used to score a
        fitted family against a density (the forward KL of the toy benchmarks);
        points are processed ``chunk`` at a time so memory stays ``chunk x num_eps``.
        """
        num_eps, chunk = check_int("num_eps", num_eps, ge=1), check_int("chunk", chunk, ge=1)
        conditional = self.conditional(phi)
        means = conditional.mean(self.epsilon_prior.sample(seed=key, sample_shape=(num_eps,)))
        scale = conditional.scale()
        log_norm = -jnp.sum(jnp.log(scale)) - 0.5 * self.dim * jnp.log(2 * jnp.pi)

        def block(zs):
            squared = jnp.sum((((zs[:, None, :] - means[None]) / scale) ** 2), axis=-1)
            return jax.scipy.special.logsumexp(-0.5 * squared, axis=1) - jnp.log(num_eps) + log_norm

        n = z.shape[0]
        padded = jnp.concatenate([z, jnp.zeros(((-n) % chunk, self.dim), z.dtype)])
        return jax.lax.map(block, padded.reshape(-1, chunk, self.dim)).reshape(-1)[:n]

    def sample(self, state: AISIVIState, key: jax.Array, n: int) -> WeightedSamples:
        """``n`` draws of ``q_phi`` weighted by ``log p~(z) - log q_hat(z)``, ``q_hat`` the ``K``-draw estimate.

        AISIVI's ``q_hat`` is unbiased, so ``log q_hat`` is biased low (Jensen) and these
        weights are approximate; with ``tau`` equal to ``q(eps | z)`` they are exact.
        BSIVI's ``q_hat`` holds the own ``eps`` and is biased high (SIVI's bound).
        """
        n = check_int("n", n, ge=1)
        draw_key, inner_key = jax.random.split(key)
        eps_z, z = self.draw(state.phi, draw_key, n)
        log_w = jax.vmap(lambda z_b, e_b, k_b: self.inner_draws(state.phi, state.psi, k_b, z_b, e_b)[1])(
            z, eps_z, jax.random.split(inner_key, n))
        log_q_hat = jax.scipy.special.logsumexp(log_w, axis=1) - jnp.log(self.settings.num_inner)
        return WeightedSamples(z, self.log_density(z) - log_q_hat, 0.0)

    def log_q(self, state: AISIVIState, z: jax.Array, key: jax.Array) -> jax.Array:
        """``log q(z)`` of points ``z`` ``(n, d)``: :meth:`marginal_log_density` with ``settings.marginal_draws`` prior draws."""
        return self.marginal_log_density(state.phi, z, key, self.settings.marginal_draws)


class BSIVI(AISIVI):
    """BSIVI, AISIVI's baseline: the score estimated from the own latent and ``K - 1`` prior draws, no reverse model.

    The same family, settings, metrics and methods as :class:`AISIVI` (the ``tau_*``
    settings and ``pretrain_steps`` are unused; ``tau_nll`` is NaN). Its ``q_hat``
    holds the own ``eps`` and is biased high (SIVI's bound, Yin & Zhou 2018), so
    the weights of :meth:`AISIVI.sample` are biased low.
    """

    name = "bsivi"
    uses_reverse_model = False
