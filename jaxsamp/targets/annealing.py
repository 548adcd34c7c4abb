"""Annealing paths for continuous targets: geometric interpolation from a Gaussian base."""

from __future__ import annotations

from jaxsamp.core.errors import InputError
from jaxsamp.core.target import GeometricPath, Target
from jaxsamp.targets.gaussian import gaussian


def geometric_path(target: Target, base_scale: float = 1.0) -> GeometricPath:
    """``log pi_t = (1 - t) log N(x; 0, base_scale^2 I) + t log p(x)`` from ``N(0, s^2 I)`` to ``target``.

    The base is the registered ``gaussian(dim=d, scale=base_scale)`` (unnormalised, with its
    exact ``log Z``), so ``log_Z0 = (d/2) log(2 pi s^2)`` and an AIS/SMC estimate along the
    path estimates ``target``'s ``log Z`` (Neal 2001, "Annealed importance sampling", eq. 1).

    Raises
    ------
    ValueError
        When ``target`` is not a density on R^d with a flat event shape ``(d,)``.
    """
    if target.domain.kind != "real" or len(target.event_shape) != 1:
        raise InputError(
            f"geometric_path needs a target on R^d with event shape (d,); {target.name!r} has domain "
            f"{target.domain.kind!r} and event shape {target.event_shape}"
        )
    return GeometricPath(gaussian(dim=target.event_shape[0], scale=base_scale), target)
