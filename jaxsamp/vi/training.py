"""What every variational method shares: the train state, the optax step, the target check, weights and evaluation.

A variational method is a :class:`~jaxsamp.core.Trainer` (``init(key)``,
``step(key, state) -> (state, metrics)``) with, on the train state,
``sample(state, key, n) -> WeightedSamples`` (draws of ``q`` weighted by
``log p~ - log q``), ``log_q(state, z, key)`` (the fitted density at points) and
``evaluate(state, key, n) -> dict``: what :func:`jaxsamp.fit` and the ``vi``
experiment kind call.

:class:`VariationalObjective` is the base of the objectives on an explicit family
(:class:`~jaxsamp.vi.elbo.ELBO`, :class:`~jaxsamp.vi.snis_forward_kl.SNISForwardKL`,
:class:`~jaxsamp.vi.softcvi.SoftCVI`): a subclass defines its ``loss(params, key)
-> (loss, log_w)``, ``log_w`` the log importance weights ``log p~(x) - log q(x)``
of the draws it used (no gradient through them); the base trains it with optax on
the family the settings name (:func:`~jaxsamp.vi.families.family_from_spec`, the
dimension read from the target).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxsamp.core.errors import InputError
from jaxsamp.core.protocols import WeightedSamples
from jaxsamp.core.validation import check_int
from jaxsamp.vi.families import Family, family_from_spec


class VIState(NamedTuple):
    """Train state of a variational objective: a plain PyTree the driver checkpoints.

    Attributes
    ----------
    params : PyTree
        The family's parameters (``nnx.split`` state).
    opt_state : optax.OptState
    step : int32 array
        Updates done.
    """

    params: object
    opt_state: optax.OptState
    step: jax.Array


def flat_dim(target, user: str) -> int:
    """``d`` of a real-valued ``target`` with flat states ``(d,)``.

    Raises
    ------
    InputError
        Any other target; the message names ``user`` and what it needs.
    """
    shape = tuple(target.event_shape or ())
    if target.domain.kind != "real" or len(shape) != 1:
        raise InputError(
            f"{user} lives on R^d: the target must be real-valued with flat states of shape (d,), "
            f"got {target.name!r} ({target.domain.kind}, event shape {target.event_shape})"
        )
    return shape[0]


def batch_log_density(target, dim: int, user: str) -> Callable[[jax.Array], jax.Array]:
    """``x (n, dim) -> log p~(x) (n,)`` of a real-valued ``target`` on ``R^dim``.

    Raises
    ------
    InputError
        A target that is not real-valued with a flat state ``(dim,)``; the message names ``user``.
    """
    if flat_dim(target, user) != dim:
        raise InputError(
            f"{user} lives on R^{dim}: the target must be real-valued with states of shape "
            f"({dim},), got {target.name!r} (event shape {target.event_shape})"
        )
    return jax.vmap(target.log_prob)


class VariationalEvaluation:
    """``evaluate(state, key, n)`` of a variational method from its ``sample`` and ``log_q`` (a mixin).

    Needs ``target``, ``sample(state, key, n) -> WeightedSamples`` and ``log_q(state, z, key) -> (n,)``.
    """

    def evaluate(self, state, key, num_samples: int) -> dict:
        """Figures of the fitted ``q`` against the target, as floats.

        Returns
        -------
        dict
            ``elbo`` (mean ``log w`` over the finite draws, ``<= log Z`` in expectation),
            ``log_Z`` (importance estimate ``logsumexp(log w) - log n``), ``ess``
            (normalised, in (0, 1]), ``nonfinite_samples`` (draws with a non-finite
            state or weight, left out); with the target's exact ``log Z``:
            ``log_Z_exact``, ``log_Z_abs_err``, ``elbo_gap`` (``log Z - elbo`` =
            ``KL(q || p)`` estimated, nats); with exact target samples:
            ``mean_log_q_reference`` (mean ``log q`` of ``num_samples`` exact draws,
            the SoftCVI paper's metric) and, with ``log Z`` too, ``forward_kl``
            (``KL(p || q)`` estimated on those draws, nats).
        """
        k_draw, k_ref, k_logq = jax.random.split(key, 3)
        samples = jax.jit(self.sample, static_argnums=2)(state, k_draw, num_samples)
        x, log_w = np.asarray(samples.x), np.asarray(samples.log_w, np.float64)
        finite = np.isfinite(log_w) & np.all(np.isfinite(x), axis=-1)
        log_w = log_w[finite]
        out = {"nonfinite_samples": int(num_samples - log_w.size)}
        if log_w.size:
            top = np.max(log_w)
            out.update(elbo=float(np.mean(log_w)), log_Z=float(top + np.log(np.mean(np.exp(log_w - top)))),
                       ess=float(np.sum(np.exp(log_w - top)) ** 2 / (log_w.size * np.sum(np.exp(2 * (log_w - top))))))
        target = self.target
        if target.log_Z is not None:
            out["log_Z_exact"] = float(target.log_Z)
            if log_w.size:
                out["log_Z_abs_err"] = abs(out["log_Z"] - out["log_Z_exact"])
                out["elbo_gap"] = out["log_Z_exact"] - out["elbo"]
        if target.has_exact_samples:
            reference = jnp.asarray(target.sample(k_ref, num_samples), jnp.float32)
            log_q = np.asarray(jax.jit(self.log_q)(state, reference, k_logq), np.float64)
            out["mean_log_q_reference"] = float(np.mean(log_q))
            if target.log_Z is not None:
                log_p = np.asarray(jax.jit(jax.vmap(target.log_prob))(reference), np.float64) - float(target.log_Z)
                out["forward_kl"] = float(np.mean(log_p - log_q))
        return out


class VariationalObjective(VariationalEvaluation):
    """An objective fitting an explicit family ``q_phi`` to ``target``: a Trainer with ``sample``/``evaluate``.

    Parameters
    ----------
    target : Target
        Real-valued with flat states ``(d,)``; the family is built on ``R^d``.
    settings : dataclass
        The objective's settings, with ``family`` (a family spec, see
        :func:`~jaxsamp.vi.families.family_from_spec`) and ``learning_rate``.
    batch_size : int
        Draws of ``q`` per step (the objective's ``K`` or ``n``).
    optimizer : optax.GradientTransformation, optional
        Default ``optax.adam(settings.learning_rate)``.

    Attributes
    ----------
    family : Family
        The variational family (its ``log_prob``, ``distribution`` take ``state.params``).

    Subclasses set ``name``, ``min_batch`` and define ``loss(params, key) -> (loss, log_w)``.
    The step's metrics: ``loss`` (the objective's value, nats), ``elbo`` (mean ``log w`` of the
    step's draws), ``ess`` (their normalised ESS), ``log_Z_hat`` (their importance estimate of ``log Z``).
    """

    name = "objective"
    min_batch = 1

    def __init__(self, target, settings, batch_size: int, optimizer: optax.GradientTransformation | None = None):
        self.target, self.settings = target, settings
        self.batch_size = check_int("batch_size", batch_size, ge=self.min_batch)
        dim = flat_dim(target, self.name)
        self.family: Family = family_from_spec(dim, settings.family)
        self.log_density = batch_log_density(target, dim, self.name)
        self.optimizer = optimizer or optax.adam(settings.learning_rate)

    def loss(self, params, key: jax.Array) -> tuple[jax.Array, jax.Array]:  # pragma: no cover - abstract
        raise TypeError(f"{type(self).__name__} must define loss(params, key)")

    def init(self, key: jax.Array) -> VIState:
        """Fresh family parameters and their optimiser state."""
        params = self.family.init(key)
        return VIState(params, self.optimizer.init(params), jnp.int32(0))

    def step(self, key: jax.Array, state: VIState) -> tuple[VIState, dict]:
        """One optimiser step on ``grad loss(params, key)``; metrics ``loss``, ``elbo``, ``ess``, ``log_Z_hat``."""
        (value, log_w), grads = jax.value_and_grad(self.loss, has_aux=True)(state.params, key)
        updates, opt_state = self.optimizer.update(grads, state.opt_state, state.params)
        weights = WeightedSamples(None, log_w)
        metrics = {"loss": value, "elbo": jnp.mean(log_w), "ess": weights.ess, "log_Z_hat": weights.log_Z}
        return VIState(optax.apply_updates(state.params, updates), opt_state, state.step + 1), metrics

    def sample(self, state: VIState, key: jax.Array, num_samples: int) -> WeightedSamples:
        """``num_samples`` draws of ``q`` weighted against the target: ``log_w = log p~(x) - log q(x)``.

        ``.log_Z`` is then the importance-sampling estimate of the target's ``log Z``
        and ``.ess`` the normalised effective sample size.
        """
        num_samples = check_int("num_samples", num_samples, ge=1)
        x, log_q = self.family.sample_and_log_prob(jax.lax.stop_gradient(state.params), key, num_samples)
        return WeightedSamples(x, self.log_density(x) - log_q, 0.0)

    def log_q(self, state: VIState, z: jax.Array, key: jax.Array | None = None) -> jax.Array:
        """``log q(z)`` of points ``z`` ``(n, d)`` (exact; ``key`` unused, as the semi-implicit family needs one)."""
        return self.family.log_prob(state.params, z)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.target.name!r}, {self.family.name}, batch_size={self.batch_size})"

