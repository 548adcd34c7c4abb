"""Reference values of a lattice target's observables: exact where it can be, else long Glauber (heat-bath) chains.

What the LEAPS observables (:func:`jaxsamp.diagnostics.observables.lattice_observables`: the
order parameter's histogram, ``<|m|>`` or ``<|M|>``, and ``G(r)``; Holderrieth, Albergo &
Jaakkola 2025, Sec. 6) are scored against. The reference is exact by enumeration on tiny
lattices (``k^N <= 2^20`` states); beyond that it comes from Glauber dynamics (Glauber 1963), the
heat-bath chain of single-site moves, run long from uniform states, with the Ising
magnetisation's law taken exactly from the transfer matrix where it is available.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core.combinators import ensemble
from jaxsamp.core.driver import run
from jaxsamp.diagnostics import observables as obs
from jaxsamp.mcmc import discrete
from jaxsamp.targets.lattice import LatticePath
from jaxsamp.targets.lattice_exact import ExactReferenceUnavailable


def glauber_observables(target, key, num_chains: int, num_sweeps: int, *, bins: int = obs.NUM_BINS,
                        **run_options) -> dict:
    """The observables of a heat-bath (Glauber) run: ``num_chains`` chains, the second half of ``num_sweeps`` sweeps.

    Parameters
    ----------
    target : Ising or Potts
        Chains start from uniform states. Checkerboard sweeps when both sides are even
        (:func:`~jaxsamp.mcmc.discrete.checkerboard`), else random-scan sweeps of ``N``
        single-site updates (:func:`~jaxsamp.mcmc.discrete.heat_bath`).
    key : PRNG key
    num_chains, num_sweeps : int
        The second half of the sweeps is kept, one sweep in ``max(1, num_sweeps // 200)``.
    bins : int
        Of the order parameter's histogram.
    **run_options
        Passed to :func:`jaxsamp.run` (``checkpoint`` folder, ``progress``, ``identity``); the
        chunking, checkpoint spacing (a quarter of the run, with a checkpoint folder) and the
        progress label are set here.

    Returns
    -------
    dict
        As :func:`~jaxsamp.diagnostics.observables.lattice_observables` returns them: ``hist``,
        ``abs_order`` and, for Ising, ``two_point``, each averaged over the kept sweeps and chains.
    """
    q = discrete.lattice_categories(target)
    if all(n % 2 == 0 for n in target.event_shape):
        kernel = discrete.checkerboard(target.flip_log_ratios, "heat_bath", q)
    else:
        kernel = discrete.heat_bath(target.flip_log_ratios, q, int(np.prod(target.event_shape)))
    chains = ensemble(kernel)
    key_init, key_run = jax.random.split(key)
    state = chains.init(LatticePath(target).sample_base(key_init, num_chains))
    every = max(1, num_sweeps // 200)
    spin = target.domain.kind == "spin"

    def trace(s, info):
        x = s.position
        return {"values": obs.order_parameter(target, x),
                "two_point": obs.connected_two_point(x) if spin else jnp.zeros(())}

    spacing = max(1, num_sweeps // 4) if run_options.get("checkpoint") is not None else None
    options = {"progress": False, **run_options, "chunk": every * 10, "checkpoint_every": spacing,
               "desc": "glauber reference"}
    _, tr = run(chains.step, state, key_run, num_sweeps, trace=trace, **options)
    keep = slice(num_sweeps // 2, None, every)
    values = np.asarray(tr["values"][keep]).ravel()
    density, _ = np.histogram(values, bins=bins, range=obs.order_parameter_axis(target)[0], density=True)
    out = {"hist": density, "abs_order": float(np.abs(values).mean())}
    if spin:
        out["two_point"] = np.asarray(tr["two_point"][keep]).mean(0)
    return out


def reference_observables(target, key, *, num_chains: int, num_sweeps: int, bins: int = obs.NUM_BINS,
                          **run_options) -> tuple[dict, str]:
    """The reference observables of ``target`` and where they come from.

    Exact by enumeration when the lattice is tiny (``target.enumerate_states()``; then nothing
    is run). Otherwise :func:`glauber_observables` with ``num_chains``, ``num_sweeps`` and
    ``run_options``; for Ising, the histogram and ``<|m|>`` are then replaced by the exact ones
    of the transfer matrix's ``P(m)`` where it exists
    (:func:`~jaxsamp.diagnostics.observables.exact_magnetization_observables`).

    Returns
    -------
    reference : dict
        ``hist``, ``abs_order`` and, for Ising, ``two_point``
        (:func:`~jaxsamp.diagnostics.observables.lattice_observables`' form).
    source : str
        ``"exact"``, ``"glauber"`` or ``"exact P(m), glauber G(r)"``.
    """
    try:
        states, probs = target.enumerate_states()
    except ExactReferenceUnavailable:
        pass
    else:
        log_p = jnp.log(jnp.asarray(probs, jnp.float32))
        return obs.lattice_observables(target, jnp.asarray(states), log_p, bins), "exact"
    reference = glauber_observables(target, key, num_chains, num_sweeps, bins=bins, **run_options)
    exact = obs.exact_magnetization_observables(target, bins)
    if exact is None:
        return reference, "glauber"
    return {**reference, **exact}, "exact P(m), glauber G(r)"


__all__ = ["glauber_observables", "reference_observables"]
