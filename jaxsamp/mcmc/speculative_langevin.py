"""Speculative ULA: frozen-gradient drafts verified by reflection maximal coupling.

De Bortoli, Galashov, Gretton & Doucet, "Accelerated diffusion models via
speculative sampling", ICML 2025 (arXiv 2501.05370); digest:
``research/methods.md`` Sec. 2 (from the abstract, a reading note and standard
coupling theory: the frozen-gradient draft follows the note's reading of the
paper's Eq. 7, unverified against the full text).

The target transition is ULA's, ``q(. | y) = N(m_q(y), s^2 I)`` with
``m_q(y) = y + h grad log pi(y)`` and ``s^2 = 2h``. A window of ``L`` steps is
drafted with the gradient frozen at the window start ``y_0`` (no extra target
call: that gradient is needed anyway)::

    y~_j = y~_{j-1} + h g_0 + s xi_j,        g_0 = grad log pi(y_0),

then ONE batched (parallel) target call evaluates ``grad log pi`` at all
drafts, and the steps are verified in order. With ``Delta_j = (m_p - m_q)/s =
sqrt(h/2) (g_0 - grad log pi(y~_{j-1}))``, draft ``j`` is accepted when
``log U_j <= -xi_j . Delta_j - |Delta_j|^2 / 2`` (``= log q/p`` at the draft);
at the first rejection the output is the reflection
``m_q + s (I - 2 e e^T) xi_j``, ``e = Delta_j / |Delta_j|``, and the window
ends. This is a maximal coupling of ``p`` and ``q``, so every output step is
distributed exactly as a ULA step: **the chain has exactly the ULA chain's
law** (not ``pi``'s), whatever the draft. ``P(accept) = 2 Phi(-|Delta|/2)``.

Cost model (sequential target calls, what latency is made of): one batched call
per window, plus one call for the gradient at a reflected point after a
rejection (after a fully accepted window the last draft's gradient is already
in the batch). Plain ULA needs one sequential call per step.

The kernel's ``step`` advances exactly ``num_steps`` ULA steps (through as many
windows as needed), so the state after ``n`` kernel steps is distributed as ULA
after ``n * num_steps`` steps. A step that stopped after a random number of ULA
steps would sample the chain at a stopping time and bias it.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp

from jaxsamp.core.compiled import cached_kernel
from jaxsamp.core.protocols import Kernel
from jaxsamp.core.registry import SAMPLERS
from jaxsamp.core.validation import PositiveFloat, PositiveInt, check_float, check_int
from jaxsamp.mcmc.ula import ULAState
from jaxsamp.mcmc.ula import init as ula_init


class SpeculativeInfo(NamedTuple):
    """What one kernel step (``num_steps`` ULA steps) cost and how the drafts fared.

    Attributes
    ----------
    acceptance_rate : float
        Accepted drafts / ULA steps in the step (every step is one verified draft).
    num_sequential_calls : int
        Target calls that had to run one after another (latency).
    num_target_evals : int
        All gradient evaluations, the batched ones counted individually.
    num_windows : int
        Windows (draft-and-verify rounds) used.
    """

    acceptance_rate: jax.Array
    num_sequential_calls: jax.Array
    num_target_evals: jax.Array
    num_windows: jax.Array


def reflection_coupling_verify(uniform, draft_noise, delta):
    """Verify a draft ``m_p + s Z`` against ``q = N(m_q, s^2 I)`` by reflection maximal coupling.

    Parameters
    ----------
    uniform : float
        ``U ~ U[0, 1)``, drawn by the caller.
    draft_noise : array
        ``Z``, the standard normal noise of the draft.
    delta : array
        ``Delta = (m_p - m_q) / s``, same shape.

    Returns
    -------
    accepted : bool
        ``log U <= -Z . Delta - |Delta|^2 / 2``.
    reflected_noise : array
        ``(I - 2 e e^T) Z`` with ``e = Delta / |Delta|``: the output on rejection
        is ``m_q + s * reflected_noise`` (Bou-Rabee, Eberle & Zimmer 2020, eq. 2.3).
    """
    z, dlt = draft_noise.ravel(), delta.ravel()
    log_ratio = -jnp.dot(z, dlt) - 0.5 * jnp.dot(dlt, dlt)
    accepted = jnp.log(uniform) <= log_ratio
    norm = jnp.linalg.norm(dlt)
    e = dlt / jnp.where(norm > 0, norm, 1.0)
    reflected = z - 2.0 * jnp.dot(e, z) * e
    return accepted, reflected.reshape(draft_noise.shape)


def speculative_langevin(
    logdensity_fn: Callable, step_size: float, window: int = 8, num_steps: int | None = None
) -> Kernel:
    """Speculative ULA with a frozen-gradient draft (exactly ULA's law, fewer sequential calls).

    Parameters
    ----------
    logdensity_fn : callable
        ``log pi`` of one position (an array).
    step_size : float
        ULA step size ``h``.
    window : int
        Draft length ``L`` (number of target gradients evaluated in parallel per window).
    num_steps : int, optional
        ULA steps per kernel step (default ``window``).

    Returns
    -------
    Kernel
        States are :class:`~jaxsamp.mcmc.ula.ULAState` (the gradient at the
        position is cached); infos are :class:`SpeculativeInfo`.
    """
    step_size = check_float("step_size", step_size, gt=0)
    window = check_int("window", window, ge=1)
    num_steps = window if num_steps is None else check_int("num_steps", num_steps, ge=1)
    h = step_size
    s = jnp.sqrt(2.0 * h)
    value_and_grad = jax.vmap(jax.value_and_grad(logdensity_fn))
    js = jnp.arange(1, window + 1)

    def run_window(key, y, g0, remaining):
        """Draft, verify; return the new position, its cached (value, grad) and counts."""
        key_noise, key_u = jax.random.split(key)
        xi = jax.random.normal(key_noise, (window, *y.shape), y.dtype)
        # y~_j = y + j h g0 + s sum_{i<=j} xi_i, j = 1..L
        drafts = y + jnp.cumsum(h * g0 + s * xi, axis=0)
        draft_logp, draft_grads = value_and_grad(drafts)  # ONE batched target call
        prev_grads = jnp.concatenate([g0[None], draft_grads[:-1]], axis=0)  # grad at y~_{j-1}
        deltas = jnp.sqrt(0.5 * h) * (g0[None] - prev_grads)
        prev = jnp.concatenate([y[None], drafts[:-1]], axis=0)
        uniforms = jax.random.uniform(key_u, (window,), y.dtype)
        accepted, reflected = jax.vmap(reflection_coupling_verify)(uniforms, xi, deltas)
        length = jnp.minimum(window, remaining)
        rejected_here = jnp.logical_and(~accepted, js <= length)
        any_rejected = jnp.any(rejected_here)
        first = jnp.argmax(rejected_here)  # 0-based index of the first rejection
        advanced = jnp.where(any_rejected, first + 1, length)
        num_accepted = jnp.where(any_rejected, first, length)

        # on rejection: the exact ULA step from y~_{first}, m_q + s * reflected noise. Its gradient
        # is computed unconditionally (under vmap a cond would run both branches anyway) but
        # counted as a target call only when a rejection happened.
        reflected_y = prev[first] + h * prev_grads[first] + s * reflected[first]
        reflected_logp, reflected_grad = jax.value_and_grad(logdensity_fn)(reflected_y)
        last = length - 1
        new_y = jnp.where(any_rejected, reflected_y, drafts[last])
        logp = jnp.where(any_rejected, reflected_logp, draft_logp[last])
        grad = jnp.where(any_rejected, reflected_grad, draft_grads[last])
        calls = 1 + any_rejected.astype(jnp.int32)
        evals = window + any_rejected.astype(jnp.int32)
        return new_y, logp, grad, advanced, num_accepted, calls, evals

    def init_fn(position, rng_key=None):
        return ula_init(position, logdensity_fn)

    def step_fn(rng_key, state: ULAState):
        def cond(carry):
            return carry[3] < num_steps

        def body(carry):
            y, logp, g, done, acc, calls, evals, w = carry
            new_y, new_logp, new_g, adv, n_acc, c, e = run_window(jax.random.fold_in(rng_key, w), y, g, num_steps - done)
            return (new_y, new_logp, new_g, done + adv, acc + n_acc, calls + c, evals + e, w + 1)

        zero = jnp.int32(0)
        carry = (state.position, state.logdensity, state.logdensity_grad, zero, zero, zero, zero, zero)
        y, logp, g, _, acc, calls, evals, windows = jax.lax.while_loop(cond, body, carry)
        info = SpeculativeInfo(acc / num_steps, calls, evals, windows)
        return ULAState(y, logp, g), info

    return Kernel(init_fn, step_fn)


@SAMPLERS.register("speculative_langevin")
def speculative_langevin_sampler(
    target, step_size: PositiveFloat = 0.05, window: PositiveInt = 8, num_steps: PositiveInt | None = None
) -> Kernel:
    """Speculative ULA (frozen-gradient drafts, reflection-coupling verification): ULA's exact law."""
    return cached_kernel(speculative_langevin, target.log_density, step_size=step_size, window=window, num_steps=num_steps)
