"""The density ``log q`` of a fitted variational family at points of your own, and its unweighted draws.

A fitted family's ``sample`` gives its draws with ``log p~ - log q``; :func:`log_q` gives
``log q`` anywhere (a grid, draws of the target), from the method's name, its settings and
its train state (a :class:`~jaxsamp.learned.fit.Fitted`'s ``method``, ``settings`` and ``state``):
exact for the explicit families of ``softcvi``, ``elbo`` and ``snis_forward_kl``
(:mod:`~jaxsamp.learned.vi.families`), a Monte Carlo marginal with ``settings.marginal_draws``
prior draws for the semi-implicit family of ``aisivi`` and ``bsivi``
(:meth:`~jaxsamp.learned.vi.semi_implicit.SemiImplicitFamily.marginal_log_density`).
"""

from __future__ import annotations

import jax

from jaxsamp.core.errors import InputError
from jaxsamp.learned.vi.families import family_from_spec
from jaxsamp.learned.vi.semi_implicit import SemiImplicitFamily

#: The methods on an explicit family (exact ``log q``) and on the semi-implicit one (estimated ``log q``).
EXPLICIT, SEMI_IMPLICIT = ("softcvi", "elbo", "snis_forward_kl"), ("aisivi", "bsivi")


def log_q(method: str, settings, state, z: jax.Array, key: jax.Array | None = None) -> jax.Array:
    """``log q(z)`` of the family that variational ``method`` fitted, at points ``z`` ``(n, d)``; shape ``(n,)``.

    Parameters
    ----------
    method : str
        The registered name: ``"softcvi"``, ``"elbo"``, ``"snis_forward_kl"``, ``"aisivi"`` or ``"bsivi"``.
    settings : dataclass
        The method's settings (the family they name).
    state : PyTree
        Its train state.
    z : array (n, d)
    key : PRNG key, optional
        The prior draws of the semi-implicit marginal (needed for ``aisivi``, ``bsivi``).

    Raises
    ------
    InputError
        Another method, or no ``key`` for a semi-implicit one.
    """
    if method in EXPLICIT:
        return family_from_spec(z.shape[-1], settings.family).log_prob(state.params, z)
    if method in SEMI_IMPLICIT:
        if key is None:
            raise InputError(f"{method}'s log q is a Monte Carlo marginal: give a key")
        family = SemiImplicitFamily(z.shape[-1], settings)
        return family.marginal_log_density(key, state.phi, z, settings.marginal_draws)
    raise InputError(f"log_q knows the variational methods {', '.join(EXPLICIT + SEMI_IMPLICIT)}, got {method!r}")


def draws(method: str, settings, state, key: jax.Array, n: int, dim: int) -> jax.Array:
    """``n`` unweighted draws of the family that variational ``method`` fitted on ``R^dim``, shape ``(n, dim)``.

    What ``fitted.sample`` draws, without the importance weights (which cost the semi-implicit family ``num_inner``
    reverse-model draws per point): the explicit family's ``sample_and_log_prob(key, params, n)``, the semi-implicit
    family's :meth:`~jaxsamp.learned.vi.semi_implicit.SemiImplicitFamily.draw` ``(key, phi, n)`` (``eps ~ p``,
    ``z ~ q_phi(. | eps)``). ``method``, ``settings`` and ``state`` as :func:`log_q` takes them.

    Raises
    ------
    InputError
        Another method.
    """
    if method in EXPLICIT:
        return family_from_spec(dim, settings.family).sample_and_log_prob(key, state.params, n)[0]
    if method in SEMI_IMPLICIT:
        return SemiImplicitFamily(dim, settings).draw(key, state.phi, n)[1]
    raise InputError(f"draws knows the variational methods {', '.join(EXPLICIT + SEMI_IMPLICIT)}, got {method!r}")
