"""Controlled SDEs on a time grid: the shared core of jaxsamp's diffusion samplers.

Every diffusion sampler here (Adjoint Sampling, PIS, DDS) simulates a
discretised controlled SDE that is a Gaussian Markov chain

    x_{k+1} = a_k x_k + b_k u(t_k, x_k) + c_k xi_k,    xi_k ~ N(0, I),    k = 0 .. K-1,

started at ``x_0 ~ N(0, v_0 I)`` (``v_0 = 0``: a point mass at the origin). With
``u = 0`` it is the *reference* chain, whose marginals are ``N(0, v_k I)`` with
``v_{k+1} = a_k^2 v_k + c_k^2`` exactly. Which SDE and which integrator is only a
choice of ``(a, b, c)``:

* Euler-Maruyama of ``dX = s(t)^p u dt + s(t) dW`` from ``X_0 = 0`` (:func:`euler_maruyama_chain`):
  ``a = 1, b = s^p h, c = s sqrt(h)``; PIS (Zhang & Chen 2022) has ``p = 1`` and a
  cosine schedule, Adjoint Sampling (Havens et al. 2025) ``p = 2`` and the geometric one;
* the exponential integrator of the Ornstein-Uhlenbeck SDE started at its
  stationary law ``N(0, sigma^2)`` (:func:`ou_chain`): ``a = sqrt(1 - beta^2), b = beta^2,
  c = beta sigma``, which keeps the reference chain exactly stationary (DDS, Vargas,
  Grathwohl & Doucet 2023; Berner, Richter & Ullrich 2024).

The discrete Girsanov theorem is then exact for the simulated chain (no
continuous-time limit is taken): the log Radon-Nikodym derivative of the
controlled path law against the reference one is, per step::

    log N(x'; a x + b u, c^2) - log N(x'; a x, c^2) = b u . xi / c + |b u|^2 / (2 c^2),

the *stochastic* and *running* costs of Richter & Berner (2024, "Improved sampling
via learned diffusions", ICLR, Sec. 2). The target path measure is the
reference chain reweighted at its end by ``exp(log_prob(x_K)) / N(x_K; 0, v_K)``
(the *terminal* cost), so the path log-weight

    log w = log_prob(x_K) - log N(x_K; 0, v_K I) - log dP^u/dP^ref(x_{0:K})

has ``E_u[w] = Z`` exactly and ``E_u[log w] <= log Z`` (the ELBO); on paths drawn
backward from exact target samples through the reference chain's own backward
kernels (:func:`simulate_backward`), ``E[log w] >= log Z`` (the EUBO).

For particle systems every state, increment and control lives on the
zero-centre-of-mass subspace (:class:`StateSpace`), and the Gaussians are taken
there (``free_dim`` coordinates).
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from jaxsamp.core.data_parallel import batch_constraint
from jaxsamp.targets.particles import remove_com

Control = Callable[[jax.Array, jax.Array], jax.Array]  # u(t (B,), x (B, D)) -> (B, D)


# --------------------------------------------------------------------------
# state spaces
# --------------------------------------------------------------------------


class StateSpace(NamedTuple):
    """Flattened states of ``n_particles`` points in ``spatial_dim`` dimensions.

    A plain vector target is one "particle" of dimension ``D`` with ``centred =
    False``; a particle target lives on the zero-centre-of-mass subspace.
    """

    n_particles: int
    spatial_dim: int
    centred: bool

    @property
    def dim(self) -> int:
        return self.n_particles * self.spatial_dim

    @property
    def free_dim(self) -> int:
        """Dimension of the subspace the process lives on."""
        return self.dim - self.spatial_dim if self.centred else self.dim

    def project(self, x):
        """Orthogonal projection onto the state subspace (zero COM for particles)."""
        return remove_com(x, self.n_particles, self.spatial_dim) if self.centred else x


def state_space(target) -> StateSpace:
    """The state space of ``target``: zero-COM particles if it has ``n_particles``."""
    if hasattr(target, "n_particles"):
        return StateSpace(target.n_particles, target.spatial_dim, True)
    (d,) = target.event_shape
    return StateSpace(1, d, False)


def centred_normal(key, space: StateSpace, shape: tuple[int, ...]):
    """Standard normal noise on the state subspace, shape ``(*shape, D)``."""
    return space.project(jax.random.normal(key, (*shape, space.dim)))


# --------------------------------------------------------------------------
# noise schedules s(t), t in [0, 1] from the prior (t = 0) to the target (t = 1)
# --------------------------------------------------------------------------


class GeometricNoiseSchedule(NamedTuple):
    """Geometric VE schedule ``g(t) = sigma_min r^(1-t) sqrt(2 ln r)``, ``r = sigma_max / sigma_min``.

    The noise is large at ``t = 0`` and small at ``t = 1``; the base variance is
    ``nu_t = int_0^t g^2 = sigma_max^2 (1 - r^(-2t))`` (Havens et al. 2025; reference code
    ``GeometricNoiseSchedule`` / ``VESDE``; Song et al. 2021's VE-SDE with time reversed).
    """

    sigma_min: float
    sigma_max: float

    @property
    def log_ratio(self) -> float:
        return math.log(self.sigma_max / self.sigma_min)

    def g(self, t):
        """Diffusion coefficient ``g(t)``."""
        return self.sigma_min * jnp.exp((1.0 - t) * self.log_ratio) * math.sqrt(2.0 * self.log_ratio)

    def nu(self, t):
        """Base variance ``nu_t`` of ``X_t`` given ``X_0 = 0``."""
        return self.nu_increment(0.0, t)

    @property
    def nu1(self) -> float:
        """Terminal base variance ``nu_1 = sigma_max^2 - sigma_min^2``."""
        return self.sigma_max**2 - self.sigma_min**2

    def nu_increment(self, s, t):
        """``nu_t - nu_s = sigma_max^2 r^(-2s) (1 - r^(-2(t - s)))``, without cancellation.

        The difference of two ``nu`` values loses the late steps in float32:
        ``nu`` is near ``sigma_max^2`` there while a step adds ``g^2 h``, about
        ``1e-8`` for ``sigma_min = 1e-3`` at 100 steps, below ``nu``'s rounding.
        """
        return self.sigma_max**2 * jnp.exp(-2.0 * s * self.log_ratio) * -jnp.expm1(-2.0 * (t - s) * self.log_ratio)


class CosineNoiseSchedule(NamedTuple):
    """``g(t) = (sigma_max - sigma_min)/2 cos^p(pi/2 (1 + s - (1 - t)) / (1 + s)) + sigma_min / 2``.

    The Beyond-ELBOs benchmark's cosine schedule (Blessing et al. 2024, code
    ``get_cosine_noise_schedule`` with ``reverse=True``, evaluated at the remaining
    time ``1 - t``): about ``sigma_max / 2`` at the prior, ``sigma_min / 2`` at the target.
    """

    sigma_min: float = 0.01
    sigma_max: float = 10.0
    s: float = 0.008
    power: float = 2.0

    def g(self, t):
        remaining = 1.0 - t
        offset = 1.0 + self.s
        wave = jnp.cos(0.5 * jnp.pi * (offset - remaining) / offset) ** self.power
        return 0.5 * (self.sigma_max - self.sigma_min) * wave + 0.5 * self.sigma_min


class LinearNoiseSchedule(NamedTuple):
    """``g(t) = ((1 - (1-t)) sigma_min + (1-t) sigma_max) / 2``: linear from ``sigma_max/2`` to ``sigma_min/2``.

    The Beyond-ELBOs code's ``get_linear_noise_schedule`` (``reverse=True``) at the remaining time ``1 - t``.
    """

    sigma_min: float = 0.01
    sigma_max: float = 10.0

    def g(self, t):
        remaining = 1.0 - t
        return 0.5 * ((1.0 - remaining) * self.sigma_min + remaining * self.sigma_max)


def cosine_ou_betas(num_steps: int, noise_scale: float = 1.0, s: float = 0.008):
    """DDS's per-step ``beta_k^2`` in forward (prior -> target) order: a squared-cosine step scheme.

    ``noise_scale`` times the normalised ``cos^4`` profile ``cos^4(pi/2 (u + s) / (1 + s))``
    at ``u = k / K``, ``k = 0 .. K-1``: the largest steps are on the prior side and they
    shrink towards the target, where the target's score is stiffest (DDS, Vargas,
    Grathwohl & Doucet 2023, sec. 3: the noising process adds little noise near the
    data). The total ``sum_k beta_k^2 = noise_scale`` sets how much of the prior the
    reference chain forgets, ``prod_k (1 - beta_k^2) ~ exp(-noise_scale)``. The
    Beyond-ELBOs ``cos_sq_fn_step_scheme`` (Blessing et al. 2024, DDS) has the same
    profile and order: it normalises the profile, takes its cumulative sum, clips that
    NORMALISED sum to ``[0, 0.999999]``, and only then multiplies by ``noise_scale``
    and differences it. The normalised sum ends at 1, so the clip only zeroes the
    last few target-side steps, whose shares are below ``1e-6`` (at K = 100 in
    float32, 95 steps stay non-zero; the total falls short of ``noise_scale`` by
    ``6e-6`` at ``noise_scale = 6``); every other step keeps its share of
    ``noise_scale``. So it is this scheme, up to that trim and its grid
    (``linspace(0, 1, K)``, whose last point ``u = 1`` has profile 0, against
    ``u = k / K`` here). Each ``beta^2`` is clipped below 1 here.
    """
    u = jnp.arange(num_steps) / num_steps
    weights = jnp.cos(0.5 * jnp.pi * (u + s) / (1.0 + s)) ** 4
    return jnp.clip(noise_scale * weights / weights.sum(), 0.0, 0.999999)


# --------------------------------------------------------------------------
# the Gaussian chain
# --------------------------------------------------------------------------


@struct.dataclass
class GaussianChain:
    """``x_{k+1} = a_k x_k + b_k u(t_k, x_k) + c_k xi_k`` from ``x_0 ~ N(0, v0 I)`` (module docstring).

    A PyTree of the per-step arrays; ``v0`` is static.

    Attributes
    ----------
    t : (K,) the time of each step, the control's time input.
    a, b, c : (K,) per-step coefficients.
    v0 : float, the start's variance (0: a point mass at the origin).
    """

    t: jax.Array
    a: jax.Array
    b: jax.Array
    c: jax.Array
    v0: float = struct.field(pytree_node=False, default=0.0)

    @property
    def num_steps(self) -> int:
        return self.t.shape[0]

    def reference_variances(self) -> jax.Array:
        """``v_0 .. v_K``: the reference chain's marginal variances, ``v_{k+1} = a_k^2 v_k + c_k^2``."""

        def step(v, coefficients):
            a, c = coefficients
            v = a**2 * v + c**2
            return v, v

        _, rest = jax.lax.scan(step, jnp.asarray(self.v0, self.c.dtype), (self.a, self.c))
        return jnp.concatenate([jnp.asarray([self.v0], self.c.dtype), rest])


def euler_maruyama_chain(schedule, times: jax.Array, control_power: int = 1) -> GaussianChain:
    """Euler-Maruyama of ``dX = g^p u dt + g dW`` from ``X_0 = 0`` on the grid ``times`` (left points).

    ``control_power`` ``p``: 1 for PIS (``dX = sigma u dt + sigma dW``), 2 for
    Adjoint Sampling (``dX = g^2 u dt + g dW``).
    """
    t, h = times[:-1], jnp.diff(times)
    g = schedule.g(t)
    return GaussianChain(t, jnp.ones_like(t), g**control_power * h, g * jnp.sqrt(h), v0=0.0)


def exact_variance_chain(schedule, times: jax.Array, v0: float = 0.0) -> GaussianChain:
    """``dX = g^2 u dt + g dW`` with exact-variance increments: ``b_k = c_k^2 = nu(t_{k+1}) - nu(t_k)``.

    Euler-Maruyama with ``g(t_k)^2 h_k`` at the left point makes the reference
    chain's terminal variance ``sum_k g(t_k)^2 h_k`` overshoot ``nu_1`` (by 7.6 %
    at 100 steps of the geometric schedule from 1e-3 to 1.5), while the adjoint
    target assumes ``nu_1``; integrating ``g^2`` exactly over each step removes the
    mismatch for the reference process (``v_K = v0 + nu_1`` to rounding) and
    applies the same weight to the control's drift. Needs ``schedule.nu_increment``.
    ``v0`` is the variance of a centred Gaussian start (0: the point mass of
    Adjoint Sampling; ASBS priors otherwise).
    """
    increments = schedule.nu_increment(times[:-1], times[1:])
    return GaussianChain(times[:-1], jnp.ones_like(increments), increments, jnp.sqrt(increments), v0=float(v0))


def ou_chain(beta_squared: jax.Array, sigma: float) -> GaussianChain:
    """The exponential integrator of the OU SDE stationary at ``N(0, sigma^2)``: DDS's chain.

    ``x' = sqrt(1 - beta^2) x + beta^2 u + beta sigma xi`` with ``x_0 ~ N(0, sigma^2)``;
    step ``k`` happens at time ``k / K``.
    """
    beta = jnp.clip(jnp.sqrt(beta_squared), 0.0, 1.0)
    k = beta.shape[0]
    return GaussianChain(jnp.arange(k) / k, jnp.sqrt(1.0 - beta**2), beta**2, beta * sigma, v0=float(sigma) ** 2)


# --------------------------------------------------------------------------
# simulation and path weights
# --------------------------------------------------------------------------


class Path(NamedTuple):
    """Simulated paths.

    Attributes
    ----------
    x : (B, D) terminal states ``x_K``.
    log_rn : (B,) ``log dP^u/dP^ref`` of each path.
    states : (K + 1, B, D) every state, or ``None`` unless ``keep_states``.
    x0 : (B, D) the start states (zeros for a point-mass start).
    stochastic : (B,) the stochastic part of ``log_rn``, ``sum_k (b_k / c_k) u_k . xi_k``: zero mean under
        the simulated law for every control, since ``xi_k`` is independent of ``x_k`` (``log_rn`` minus it
        is the running cost ``sum_k |b_k u_k|^2 / (2 c_k^2)``).
    """

    x: jax.Array
    log_rn: jax.Array
    states: jax.Array | None
    x0: jax.Array
    stochastic: jax.Array


def simulate(
    chain: GaussianChain,
    control: Control,
    space: StateSpace,
    key,
    num_samples: int,
    *,
    keep_states: bool = False,
    remat: bool = False,
) -> Path:
    """Simulate ``num_samples`` paths of the controlled chain, accumulating the Girsanov log-RN.

    Parameters
    ----------
    chain : GaussianChain
    control : callable
        ``u(t, x)`` with ``t`` (B,) and ``x`` (B, D) -> (B, D); projected onto the state subspace.
    space : StateSpace
    key : PRNG key
        One key per step (``jax.random.split(key, K)``); with a Gaussian start
        the key is first split into the start's and the steps'.
    num_samples : int
    keep_states : bool
        Also return every state (memory ``(K + 1) B D``).
    remat : bool
        Recompute each step in the backward pass (``jax.checkpoint``): a loss that
        differentiates through the path (the reverse KL) then stores one state per
        step instead of every intermediate of the control network.

    Returns
    -------
    Path
    """
    if chain.v0 == 0.0:  # a point-mass start: every key goes to the steps
        k_steps, x0 = key, jnp.zeros((num_samples, space.dim))
    else:
        k_start, k_steps = jax.random.split(key)
        x0 = math.sqrt(chain.v0) * centred_normal(k_start, space, (num_samples,))
    x0 = batch_constraint(x0)  # the paths are the batch a data-parallel step splits over devices

    def body(carry, inputs):
        x, running, stochastic = carry
        t, a, b, c, k = inputs
        u = space.project(control(jnp.full((num_samples,), t), x))
        xi = batch_constraint(centred_normal(k, space, (num_samples,)))
        x = a * x + b * u + c * xi
        running = running + 0.5 * (b / c) ** 2 * jnp.sum(u**2, -1)
        stochastic = stochastic + (b / c) * jnp.sum(u * xi, -1)
        return (x, running, stochastic), (x if keep_states else None)

    keys = jax.random.split(k_steps, chain.num_steps)
    step = jax.checkpoint(body) if remat else body
    zeros = jnp.zeros(num_samples)
    (x, running, stochastic), states = jax.lax.scan(step, (x0, zeros, zeros), (chain.t, chain.a, chain.b, chain.c, keys))
    if keep_states:
        states = jnp.concatenate([x0[None], states], axis=0)
    return Path(x, running + stochastic, states, x0, stochastic)


def log_rn_along(chain: GaussianChain, control: Control, space: StateSpace, states: jax.Array) -> jax.Array:
    """``log dP^u/dP^ref`` of given paths ``states`` (K + 1, B, D), from their states alone.

    Per step, with the residual ``r = x_{k+1} - a_k x_k``:
    ``log N(r; b u, c^2) - log N(r; 0, c^2) = b u . r / c^2 - |b u|^2 / (2 c^2)``.
    This is the off-policy form used by the log-variance and trajectory-balance
    losses (the paths come from a buffer or another control) and by the EUBO
    (paths simulated backward from target samples): only ``u`` is differentiated.
    """
    num_samples = states.shape[1]

    def body(total, inputs):
        t, a, b, c, x, x_next = inputs
        u = space.project(control(jnp.full((num_samples,), t), x))
        r = x_next - a * x
        return total + (b / c**2) * jnp.sum(u * r, -1) - 0.5 * (b / c) ** 2 * jnp.sum(u**2, -1), None

    inputs = (chain.t, chain.a, chain.b, chain.c, states[:-1], states[1:])
    total, _ = jax.lax.scan(body, jnp.zeros(num_samples), inputs)
    return total


def terminal_log_reference(chain: GaussianChain, space: StateSpace, x: jax.Array) -> jax.Array:
    """``log N(x_K; 0, v_K I)`` on the state subspace, for each row of ``x`` (B, D)."""
    v = chain.reference_variances()[-1]
    return -0.5 * space.free_dim * jnp.log(2.0 * jnp.pi * v) - 0.5 * jnp.sum(x**2, -1) / v


def path_log_weights(chain: GaussianChain, space: StateSpace, log_prob: Callable, x: jax.Array, log_rn: jax.Array):
    """``log w = log_prob(x_K) - log N(x_K; 0, v_K) - log dP^u/dP^ref``: ``E[w] = Z`` (module docstring)."""
    return jax.vmap(log_prob)(x) - terminal_log_reference(chain, space, x) - log_rn


def simulate_backward(chain: GaussianChain, space: StateSpace, key, x_final: jax.Array) -> jax.Array:
    """Reference paths ending at ``x_final`` (B, D), drawn backward through the reference chain's own kernels.

    The reference chain is linear-Gaussian with marginals ``N(0, v_k)``, so
    ``x_k | x_{k+1} ~ N(a_k v_k x_{k+1} / v_{k+1}, v_k c_k^2 / v_{k+1})`` (a point
    mass at 0 when ``v_k = 0``). With ``x_final`` drawn from the target this
    samples the target path measure; returns every state, (K + 1, B, D).
    """
    v = chain.reference_variances()
    keys = jax.random.split(key, chain.num_steps)

    def body(x_next, inputs):
        a, c, v_k, v_next, k = inputs
        mean = a * v_k / v_next * x_next
        std = jnp.sqrt(jnp.maximum(v_k * c**2 / v_next, 0.0))
        x = mean + std * centred_normal(k, space, (x_next.shape[0],))
        return x, x

    inputs = (chain.a, chain.c, v[:-1], v[1:], keys)
    _, earlier = jax.lax.scan(body, x_final, inputs, reverse=True)
    return jnp.concatenate([earlier, x_final[None]], axis=0)
