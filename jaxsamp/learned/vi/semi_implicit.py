"""The semi-implicit Gaussian family and the numerics of AISIVI and BSIVI (Pielok, Bischl & Ruegamer 2025, ICML).

The semi-implicit family is ``q_phi(z) = E_{p(eps)} q_phi(z | eps)`` with
``q_phi(z | eps) = N(mu_phi(eps), diag(s^2))``, ``mu_phi`` an MLP, ``s = alpha softplus(v)``
global (``alpha`` is ``scale_factor``: 1 by default, 0.1 in the reference code's toys,
whose ``v`` starts at 1, so ``s`` starts at ``0.1 softplus(1) = 0.131`` and moves a tenth as
fast per unit of ``v``) and ``p(eps) = N(0, I)``, or with ``latent_prior="uniform"`` the reference
code's ``U[0, 1]^d_eps``, under which the reverse model ends in a sigmoid (the reference's final Logit
layer) and proposes only inside the prior's support (:class:`SemiImplicitFamily`). Its density is
intractable, its score is not (UIVI's identity, Titsias & Ruiz 2019):
``grad_z log q(z) = E_{q(eps | z)}[grad_z log q(z | eps)]``.

**Score estimate.** A reverse model ``tau_psi(eps | z)`` (a conditional distrax
coupling flow, :class:`~jaxsamp.learned.vi.families.CouplingFlow` with ``context_dim = d``)
proposes ``eps_1..eps_K``; with ::

    log w_k = log p(eps_k) + log q_phi(z | eps_k) - log tau_psi(eps_k | z),

``q_hat(z) = mean_k w_k`` is unbiased for ``q(z)`` and
``s_hat(z) = sum_k softmax(log w)_k grad_z log q_phi(z | eps_k)`` is a
self-normalised, consistent estimate of the score (``eps_k`` and ``tau`` held
fixed in ``z``): AISIVI (:mod:`~jaxsamp.learned.vi.aisivi`). BSIVI
(:mod:`~jaxsamp.learned.vi.bsivi`) is the baseline without a reverse model: the
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
"""

from __future__ import annotations

from typing import NamedTuple

import distrax
import jax
import jax.numpy as jnp
import optax
from flax import nnx

from jaxsamp.core.data_parallel import batch_constraint
from jaxsamp.core.protocols import LearnedSampler, TrainingHealth, WeightedSamples
from jaxsamp.core.validation import check_int
from jaxsamp.learned.vi import training
from jaxsamp.learned.vi.families import CouplingFlow, inverse_softplus
from jaxsamp.nets.mlp import MLP

MAX_SKIPPED = 20  # consecutive non-finite updates skipped before one is let through
LATENT_PRIORS = ("normal", "uniform")  # p(eps): N(0, I), or the reference code's U[0, 1]^d


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


class SemiImplicitFamily:
    """The semi-implicit Gaussian family ``q_phi(z) = E_{p(eps)} N(z; mu_phi(eps), diag(s^2))`` on ``R^dim``.

    Parameters
    ----------
    dim : int
        The dimension of ``z``.
    settings : BSIVISettings or AISIVISettings
        Its ``latent_dim``, ``latent_prior``, ``hidden_width``, ``hidden_layers``,
        ``init_scale`` and ``scale_factor``.

    Attributes
    ----------
    epsilon_prior : distrax.Distribution
        ``p(eps)``, event shape ``(latent_dim,)``.
    """

    def __init__(self, dim: int, settings):
        self.dim, self.settings = check_int("dim", dim, ge=1), settings
        latent = settings.latent_dim
        if settings.latent_prior == "uniform":
            self.epsilon_prior = distrax.Independent(distrax.Uniform(jnp.zeros(latent), jnp.ones(latent)), 1)
        else:
            self.epsilon_prior = distrax.MultivariateNormalDiag(jnp.zeros(latent), jnp.ones(latent))
        self.graphdef = nnx.graphdef(nnx.eval_shape(lambda: self._module(nnx.Rngs(0))))

    def _module(self, rngs: nnx.Rngs) -> ConditionalGaussianModule:
        s = self.settings
        return ConditionalGaussianModule(self.dim, s.latent_dim, (s.hidden_width,) * s.hidden_layers, s.init_scale, rngs,
                                         s.scale_factor)

    def init(self, key: jax.Array) -> nnx.State:
        """Fresh ``phi``: the mean network initialised from ``key``, ``s = init_scale``."""
        return nnx.split(self._module(nnx.Rngs(key)))[1]

    def conditional(self, phi: nnx.State) -> ConditionalGaussianModule:
        """``eps -> q_phi(. | eps)`` as the nnx module holding ``phi``."""
        return nnx.merge(self.graphdef, phi)

    def draw(self, key: jax.Array, phi: nnx.State, n: int) -> tuple[jax.Array, jax.Array]:
        """``n`` pairs ``eps ~ p``, ``z = mu_phi(eps) + s * eta``: shapes ``(n, latent_dim)``, ``(n, d)``; ``z`` reparameterised."""
        eps_key, z_key = jax.random.split(key)
        eps = batch_constraint(self.epsilon_prior.sample(seed=eps_key, sample_shape=(n,)))  # a data-parallel batch
        return eps, batch_constraint(self.conditional(phi)(eps).sample(seed=z_key))

    def marginal_log_density(self, key: jax.Array, phi: nnx.State, z: jax.Array, num_eps: int = 10_000,
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


class SemiImplicitState(NamedTuple):
    """Train state: a plain PyTree the driver checkpoints (``psi`` and its optimiser state are None for BSIVI)."""

    phi: nnx.State
    psi: nnx.State | None
    phi_opt_state: optax.OptState
    psi_opt_state: optax.OptState | None
    step: jax.Array


class SemiImplicit:
    """The numerics of AISIVI (``reverse_model=True``) and BSIVI: a semi-implicit family fitted by its score estimate.

    ``aisivi.build`` and ``bsivi.build`` make the methods of it; its functions take the key first.

    Parameters
    ----------
    name : str
        The method's name, for messages.
    target : Target
        Real-valued with a flat state ``(d,)``.
    settings : BSIVISettings or AISIVISettings
        AISIVI's with ``reverse_model``.
    batch_size : int
        Draws ``z`` per step, for both updates.
    optimizer : optax.GradientTransformation, optional
        ``phi``'s optimiser instead of Adam at ``settings.learning_rate`` (with its
        ``decay_step``); a non-finite gradient still skips its update.
    reverse_model : bool
        Estimate the score with the reverse model ``tau`` (AISIVI), else with prior
        draws after ``z``'s own latent (BSIVI).

    Attributes
    ----------
    family : SemiImplicitFamily
    tau_family : CouplingFlow or None
        The reverse model's conditional flow (None for BSIVI).
    pretrain_steps : int
        Leading steps in which ``phi`` does not move (0 for BSIVI).
    """

    def __init__(self, name: str, target, settings, batch_size: int,
                 optimizer: optax.GradientTransformation | None = None, reverse_model: bool = True):
        self.target, self.settings = target, settings
        self.batch_size = check_int("batch_size", batch_size, ge=1)
        self.family = SemiImplicitFamily(training.flat_dim(target, name), settings)
        self.log_density = jax.vmap(target.log_prob)
        self.score = jax.vmap(jax.grad(target.log_prob))
        self.tau_family = None
        if reverse_model:
            hidden = (settings.tau_hidden_width,) * settings.tau_hidden_layers
            self.tau_family = CouplingFlow(settings.latent_dim, settings.tau_layers, hidden, context_dim=self.family.dim,
                                           max_log_scale=settings.tau_max_log_scale)
        # steps in which only tau trains (none without tau); phi's updates start after them, psi's at
        # step 0, so both rates drop at decay_step past pretraining
        self.pretrain_steps = settings.pretrain_steps if reverse_model else 0
        self.optimizer = optax.apply_if_finite(
            optimizer or self._adam(settings.learning_rate, settings.decay_step), MAX_SKIPPED)
        if reverse_model:
            decay_at = None if settings.decay_step is None else settings.decay_step + self.pretrain_steps
            self.tau_optimizer = optax.apply_if_finite(self._adam(settings.tau_learning_rate, decay_at), MAX_SKIPPED)

    def _adam(self, learning_rate: float, decay_at: int | None) -> optax.GradientTransformation:
        """Adam at ``learning_rate``, times ``decay_factor`` from update ``decay_at`` on."""
        if decay_at is not None:
            learning_rate = optax.piecewise_constant_schedule(learning_rate, {decay_at: self.settings.decay_factor})
        return optax.adam(learning_rate)

    def init(self, key: jax.Array) -> SemiImplicitState:
        """Fresh ``mu_phi`` and ``s = init_scale``, a fresh reverse flow (AISIVI), their optimiser states."""
        phi_key, psi_key = jax.random.split(key)
        phi = self.family.init(phi_key)
        psi = self.tau_family.init(psi_key) if self.tau_family is not None else None
        psi_opt_state = self.tau_optimizer.init(psi) if psi is not None else None
        return SemiImplicitState(phi, psi, self.optimizer.init(phi), psi_opt_state, jnp.int32(0))

    def reverse_model(self, psi: nnx.State, z: jax.Array) -> distrax.Distribution:
        """``tau_psi(. | z)`` for one ``z`` ``(d,)``: the conditional flow, followed by a sigmoid under the uniform prior."""
        flow = self.tau_family.module(psi)(z)
        if self.settings.latent_prior == "uniform":
            return distrax.Transformed(flow, distrax.Block(distrax.Sigmoid(), 1))
        return flow

    def log_weights(self, phi: nnx.State, z: jax.Array, eps: jax.Array, log_proposal: jax.Array) -> jax.Array:
        """``log w_k = log p(eps_k) + log q_phi(z | eps_k) - log_proposal_k`` for one ``z`` ``(d,)``, ``eps`` ``(K, latent_dim)``."""
        return self.family.epsilon_prior.log_prob(eps) + self.family.conditional(phi)(eps).log_prob(z) - log_proposal

    def score_estimate(self, phi: nnx.State, z: jax.Array, eps: jax.Array, log_w: jax.Array) -> jax.Array:
        """``s_hat(z) = sum_k softmax(log w)_k grad_z log q_phi(z | eps_k)`` for one ``z``; shape ``(d,)``."""
        conditional = self.family.conditional(phi)
        grads = jax.vmap(jax.grad(lambda z, e: conditional(e).log_prob(z)), in_axes=(None, 0))(z, eps)
        return jax.nn.softmax(log_w) @ grads

    def inner_draws(self, key: jax.Array, phi: nnx.State, psi: nnx.State | None, z: jax.Array,
                    eps_z: jax.Array) -> tuple[jax.Array, jax.Array]:
        """``K`` inner draws ``eps_k`` ``(K, latent_dim)`` for one ``z`` ``(d,)`` and their ``log w`` ``(K,)``.

        AISIVI: ``K`` draws of ``tau_psi(. | z)``. BSIVI: ``eps_z``, the latent that
        generated ``z``, then ``K - 1`` prior draws (SIVI's estimate; ``log w_k =
        log q_phi(z | eps_k)``).
        """
        k, prior = self.settings.num_inner, self.family.epsilon_prior
        if self.tau_family is not None:
            eps, log_proposal = self.reverse_model(psi, z).sample_and_log_prob(seed=key, sample_shape=(k,))
        else:
            eps = jnp.concatenate([eps_z[None], prior.sample(seed=key, sample_shape=(k - 1,))])
            log_proposal = prior.log_prob(eps)
        return eps, self.log_weights(phi, z, eps, log_proposal)

    def phi_loss(self, key: jax.Array, phi: nnx.State, psi: nnx.State | None) -> tuple[jax.Array, dict]:
        """The path-gradient surrogate ``mean_b stopgrad(s_hat - grad log p~)(z_b) . z_b`` and the draws' diagnostics."""
        draw_key, inner_key = jax.random.split(key)
        eps_z, z = self.family.draw(draw_key, phi, self.batch_size)
        z_fixed, phi_fixed = jax.lax.stop_gradient(z), jax.lax.stop_gradient(phi)

        def estimate(z_b, eps_b, key_b):
            eps, log_w = self.inner_draws(key_b, phi_fixed, psi, z_b, eps_b)
            return self.score_estimate(phi_fixed, z_b, eps, log_w), log_w

        s_hat, log_w = jax.vmap(estimate)(z_fixed, eps_z, jax.random.split(inner_key, self.batch_size))
        gap = jax.lax.stop_gradient(s_hat - self.score(z_fixed))
        log_q_hat = jax.scipy.special.logsumexp(log_w, axis=1) - jnp.log(self.settings.num_inner)
        inner_ess = jax.vmap(lambda lw: WeightedSamples(None, lw).ess)(log_w)
        return jnp.mean(jnp.sum(gap * z, axis=-1)), {
            "log_w": self.log_density(z_fixed) - log_q_hat, "inner_ess": jnp.mean(inner_ess)
        }

    def tau_loss(self, key: jax.Array, psi: nnx.State, phi: nnx.State) -> jax.Array:
        """``-mean log tau_psi(eps | z)`` over fresh pairs ``(eps, z)`` of the model (no gradient to ``phi``)."""
        eps, z = self.family.draw(key, jax.lax.stop_gradient(phi), self.batch_size)
        return -jnp.mean(jax.vmap(lambda e, c: self.reverse_model(psi, c).log_prob(e))(eps, z))

    def step(self, key: jax.Array, state: SemiImplicitState) -> tuple[SemiImplicitState, dict]:
        """One optimiser step of ``psi`` (AISIVI), then, after pretraining, one of ``phi`` with the updated ``tau``.

        The metrics: ``loss`` (the negated ``elbo``, what the ``phi`` update descends in
        expectation, nats; NaN during pretraining: the ``phi`` update's own surrogate value
        means nothing), ``tau_nll`` (``-mean log tau(eps | z)`` of the reverse model's update,
        nats; NaN for BSIVI), ``elbo`` (mean of ``log p~(z) - log q_hat(z)`` over the batch,
        nats; NaN during pretraining), ``ess`` and ``log_Z_hat`` (of those weights),
        ``inner_ess`` (mean normalised ESS of the ``K`` inner weights per ``z``: near 1 when
        ``tau`` matches ``q(eps | z)``), ``skipped_updates`` and ``skipped_tau_updates``
        (non-finite gradients skipped so far: ``phi``'s, ``psi``'s; 0 for BSIVI).
        """
        phi_key, tau_key = jax.random.split(key)
        psi, psi_opt_state, tau_nll = state.psi, state.psi_opt_state, jnp.full((), jnp.nan)
        if self.tau_family is not None:
            tau_nll, grads = jax.value_and_grad(self.tau_loss, argnums=1)(tau_key, state.psi, state.phi)
            updates, psi_opt_state = self.tau_optimizer.update(grads, state.psi_opt_state, state.psi)
            psi = optax.apply_updates(state.psi, updates)

        def update_phi(_):
            (_, diagnostics), grads = jax.value_and_grad(self.phi_loss, argnums=1, has_aux=True)(phi_key, state.phi, psi)
            updates, opt_state = self.optimizer.update(grads, state.phi_opt_state, state.phi)
            return optax.apply_updates(state.phi, updates), opt_state, diagnostics

        def hold_phi(_):
            diagnostics = {"log_w": jnp.full(self.batch_size, jnp.nan), "inner_ess": jnp.full((), jnp.nan)}
            return state.phi, state.phi_opt_state, diagnostics

        phi, phi_opt_state, diagnostics = jax.lax.cond(state.step >= self.pretrain_steps, update_phi, hold_phi, None)
        weights = WeightedSamples(None, diagnostics["log_w"])
        skipped_tau = psi_opt_state.total_notfinite if psi_opt_state is not None else jnp.int32(0)
        elbo = jnp.mean(weights.log_w)
        metrics = {"loss": -elbo, "tau_nll": tau_nll, "elbo": elbo, "ess": weights.ess,
                   "log_Z_hat": weights.log_Z, "inner_ess": diagnostics["inner_ess"],
                   "skipped_updates": phi_opt_state.total_notfinite, "skipped_tau_updates": skipped_tau}
        return SemiImplicitState(phi, psi, phi_opt_state, psi_opt_state, state.step + 1), metrics

    def sample(self, key: jax.Array, state: SemiImplicitState, num_samples: int) -> WeightedSamples:
        """``num_samples`` draws of ``q_phi`` weighted by ``log p~(z) - log q_hat(z)``, ``q_hat`` the ``K``-draw estimate.

        AISIVI's ``q_hat`` is unbiased, so ``log q_hat`` is biased low (Jensen) and these
        weights are approximate; with ``tau`` equal to ``q(eps | z)`` they are exact.
        BSIVI's ``q_hat`` holds the own ``eps`` and is biased high (SIVI's bound), so its
        weights are biased low.
        """
        num_samples = check_int("num_samples", num_samples, ge=1)
        draw_key, inner_key = jax.random.split(key)
        eps_z, z = self.family.draw(draw_key, state.phi, num_samples)
        log_w = jax.vmap(lambda z_b, e_b, k_b: self.inner_draws(k_b, state.phi, state.psi, z_b, e_b)[1])(
            z, eps_z, jax.random.split(inner_key, num_samples))
        log_q_hat = jax.scipy.special.logsumexp(log_w, axis=1) - jnp.log(self.settings.num_inner)
        return WeightedSamples(z, self.log_density(z) - log_q_hat, 0.0)

    def log_q(self, key: jax.Array, state: SemiImplicitState, z: jax.Array) -> jax.Array:
        """``log q(z)`` of points ``z`` ``(n, d)``: the family's Monte Carlo marginal with ``settings.marginal_draws`` prior draws."""
        return self.family.marginal_log_density(key, state.phi, z, self.settings.marginal_draws)

    def learned_sampler(self, health: TrainingHealth) -> LearnedSampler:
        """These numerics as a :class:`~jaxsamp.core.LearnedSampler` judged by ``health``.

        Its ``evaluate`` is :func:`~jaxsamp.learned.vi.training.evaluation`'s, with the
        Monte Carlo ``log q`` (:meth:`log_q`) and the ``K``-draw weights of :meth:`sample`,
        so ``elbo``, ``log_Z_hat`` and ``eubo`` carry those estimates' biases.
        """
        return LearnedSampler(self.init, self.step, self.sample, training.evaluation(self.target, self.sample, self.log_q),
                              health, density=self.target)
