"""LEAPS' Euler steps as an SMC transition: resampled, moved, unbiased estimates from a trained LEAPS.

Holderrieth, Albergo & Jaakkola (2025), "LEAPS", ICML, Algorithm 1, simulate the
CTMC with Euler steps, accumulate importance weights, and optionally resample and
apply an MCMC kernel on the way. Every Euler step of the exact rule is an AIS /
SMC move from ``pi_t`` to ``pi_{t'}`` with the incremental weight of Del Moral,
Doucet & Jasra (2006, JRSS B 68, Sec. 3)::

    log w = log pi_{t'}(x') + log B(x | x') - log pi_t(x) - log F(x' | x)

(:func:`~jaxsamp.learned.leaps.simulation.exact_step`), so
:func:`leaps_transition` is a transition of :func:`jaxsamp.smc.smc`: the
particles then take LEAPS' learned jumps between the levels of its own grid, with
any resampler of blackjax and any kernel invariant for ``pi_t`` (heat bath,
checkerboard) at the levels. ``Z``-hat stays unbiased for every set of rates; the
learned rates lower its variance. :meth:`jaxsamp.learned.leaps.Leaps.smc_proposal`
builds it from a train state, and :meth:`jaxsamp.Fitted.smc` runs it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxsamp.core.combinators import num_chains
from jaxsamp.core.errors import InputError
from jaxsamp.learned.leaps import simulation
from jaxsamp.mcmc import discrete


def leaps_transition(rate_fn: simulation.RateFn, path, *, jump_floor: float = simulation.JUMP_FLOOR,
                     jump_floor_rate: float | None = None, checkerboard: bool = False):
    """LEAPS' exact-rule Euler step from level ``t`` to ``t_next``, as an SMC transition.

    Each walker makes the Euler jump of the rates ``ReLU(G(x, t))`` over ``h = t_next - t``
    (the site laws floored as :func:`~jaxsamp.learned.leaps.simulation.simulate`'s exact rule
    floors them) and gets the exact incremental log weight of
    :func:`~jaxsamp.learned.leaps.simulation.exact_step`; over a grid with no resampling
    the increments sum to ``simulate``'s exact log-weight on the same jumps (a test checks it).

    Parameters
    ----------
    rate_fn : callable
        ``rate_fn(x, t) -> G`` for ONE state (a locally equivariant network with its parameters).
    path : LatticePath
        ``log_prob``, ``flip_log_ratios`` (the backward kernel's rates).
    jump_floor, jump_floor_rate : float
        The floor on each site's move probabilities per step, or per unit time (``jump_floor_rate * h``);
        as in :func:`~jaxsamp.learned.leaps.simulation.simulate`, in ``(0, 1/q)``.
    checkerboard : bool
        Split the step into one sub-step per colour class
        (:func:`~jaxsamp.mcmc.discrete.checkerboard_colours`), sub-step ``c`` moving colour ``c``
        from ``t + c h / C`` to ``t + (c + 1) h / C`` with the whole step's jump time ``h``, each
        with its own exact weight (``simulate(..., checkerboard=True)``'s sub-steps).

    Returns
    -------
    callable
        ``transition(key, positions, t, t_next) -> (positions, log_increment, evals)``
        (:mod:`jaxsamp.smc.transitions`). ``evals`` counts, per walker and (sub-)step, ``log pi_t(x)``,
        ``log pi_{t'}(x')`` and the single-site ratios at ``x'``: ``3 n C`` (``C = 1`` without
        ``checkerboard``); the two network passes per (sub-)step are not target evaluations.

    Raises
    ------
    InputError
        A floor outside ``(0, 1/q)``.
    """
    q = discrete.lattice_categories(path.target) or 2
    for name, value in (("jump_floor", jump_floor), ("jump_floor_rate", jump_floor_rate)):
        if value is not None and not 0.0 < value < 1.0 / q:
            raise InputError(f"{name} must lie in (0, 1/{q}) for the exact weights, got {value}")
    masks = None
    if checkerboard:
        colours = discrete.checkerboard_colours(tuple(path.target.event_shape))
        masks = [jnp.asarray(colours == c) for c in range(int(colours.max()) + 1)]

    def transition(key, positions, t, t_next):
        n = num_chains(positions)
        h = t_next - t
        floor = jump_floor if jump_floor_rate is None else jump_floor_rate * h

        def sub_step(step_key, x, t_from, t_to, mask):
            def one(walker_key, walker):
                return simulation.exact_step(walker_key, rate_fn, path, walker, t_from, t_to, h, floor, mask)

            return jax.vmap(one)(jax.random.split(step_key, n), x)

        if masks is None:
            x, log_increment = sub_step(key, positions, t, t_next, None)
            return x, log_increment, jnp.int32(3 * n)
        x, log_increment, num_colours = positions, jnp.zeros((n,), jnp.float32), len(masks)
        for c, mask in enumerate(masks):
            t_from = t if c == 0 else t + h * (c / num_colours)
            t_to = t_next if c == num_colours - 1 else t + h * ((c + 1) / num_colours)
            x, increment = sub_step(jax.random.fold_in(key, c), x, t_from, t_to, mask)
            log_increment = log_increment + increment
        return x, log_increment, jnp.int32(3 * n * num_colours)

    return transition
