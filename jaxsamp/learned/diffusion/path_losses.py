"""Losses between a sampler's path measure and the target path measure, from path log-weights.

Every loss here takes ``log_w``, one log-weight per path,
``log w = log (target path density / sampler path density)`` (for the diffusion
samplers :func:`jaxsamp.learned.diffusion.sde.path_log_weights`; for TPS-DPS the
relaxed-indicator path density over the biased one), so that ``E_sampler[w] = Z``.

* :func:`reverse_kl`: ``E[-log w]``, the negative ELBO; the paths are simulated
  with the current control and the gradient flows through them
  (reparameterisation; Zhang & Chen 2022, "Path Integral Sampler").
* :func:`variance_loss`: ``E[(c - log w)^2]`` on paths whose law does not depend
  on the parameters (a stop-gradient copy of the control, a replay buffer):
  nothing is differentiated through the simulation (Richter & Berner 2024,
  "Improved sampling via learned diffusions", ICLR, Sec. 3). The control
  variate ``c``:

  - ``"learned"``: a learned ``log Z`` (trajectory balance; Malkin et al. 2022;
    TPS-DPS's ``global``);
  - ``"batch_mean"``: the batch mean of ``log w``, without gradient: the
    log-variance divergence, also called VarGrad (TPS-DPS's ``local``);
  - ``"zero"``: ``c = 0`` (TPS-DPS's ``zero``).

  At the optimal control every path has ``log w = log Z``, so with ``c = log Z``
  (learned) or the batch mean the loss and its gradient vanish.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsamp.core.errors import InputError

CONTROL_VARIATES = ("learned", "batch_mean", "zero")


def reverse_kl(log_w: jax.Array) -> jax.Array:
    """``mean(-log w)``: the reverse KL to the target path measure up to ``log Z`` (the negative ELBO)."""
    return -jnp.mean(log_w)


def variance_loss(log_w: jax.Array, control_variate: str, log_z: jax.Array | None = None) -> jax.Array:
    """``mean((c - log w)^2)`` with the control variate ``c`` of the module docstring.

    Parameters
    ----------
    log_w : (B,) path log-weights (differentiable in the control only).
    control_variate : {"learned", "batch_mean", "zero"}
    log_z : scalar, the learned ``log Z`` (``"learned"`` only).
    """
    if control_variate == "learned":
        if log_z is None:
            raise InputError("the 'learned' control variate needs log_z")
        c = log_z
    elif control_variate == "batch_mean":
        c = jax.lax.stop_gradient(jnp.mean(log_w))
    elif control_variate == "zero":
        c = 0.0
    else:
        raise InputError(f"control_variate must be one of {', '.join(CONTROL_VARIATES)}, got {control_variate!r}")
    return jnp.mean((c - log_w) ** 2)
