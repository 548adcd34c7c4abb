"""Adapter: a numpyro model as a Target over its unconstrained parameter space."""

from __future__ import annotations

from typing import Any, Callable

import jax
from jax.flatten_util import ravel_pytree

from jaxsamp.core.target import Target


class NumpyroTarget(Target):
    """The posterior of a numpyro model on unconstrained space, flattened to one vector.

    ``log_prob(x) = -potential_fn(unravel(x))``: numpyro's potential is the negative
    joint log density of the latent sites after their bijection to R^n, including the
    log-Jacobian of that bijection (Phan, Pradhan, Jankowiak 2019, "Composable effects
    for flexible and accelerated probabilistic programming in NumPyro";
    ``numpyro.infer.util.potential_energy``). ``log_Z`` (the model evidence) is unknown.

    Attributes
    ----------
    unravel : callable
        Flat vector -> dict of unconstrained latent values.
    init_position : array
        A valid starting point (numpyro's ``init_to_uniform`` by default), flattened.
    """

    def __init__(self, potential_fn: Callable, postprocess_fn: Callable, init_params: dict, name: str):
        flat, self.unravel = ravel_pytree(init_params)
        self.init_position = flat
        self.name, self.event_shape = name, tuple(flat.shape)
        self._potential_fn, self._postprocess_fn = potential_fn, postprocess_fn

    def _log_prob(self, x):
        return -self._potential_fn(self.unravel(x))

    def constrain(self, x) -> dict[str, Any]:
        """Constrained values of every latent and deterministic site at one flat state ``x``."""
        return self._postprocess_fn(self.unravel(x))


def from_numpyro(model: Callable, *args, init_key: jax.Array | None = None, **kwargs) -> NumpyroTarget:
    """Turn ``model(*args, **kwargs)`` into a :class:`NumpyroTarget` over unconstrained space.

    Parameters
    ----------
    model : callable
        A numpyro model; observed data are passed through ``args`` / ``kwargs``.
    init_key : PRNG key, optional
        Key for numpyro's initialisation (which also traces the model); default ``key(0)``.

    Raises
    ------
    ImportError
        When numpyro (an optional extra: ``pip install 'jaxsamp[numpyro]'``) is missing.
    """
    try:
        from numpyro.infer.util import initialize_model
    except ImportError as err:
        raise ImportError(
            "from_numpyro needs numpyro, an optional extra: pip install 'jaxsamp[numpyro]'"
        ) from err
    key = jax.random.key(0) if init_key is None else init_key
    info = initialize_model(key, model, model_args=args, model_kwargs=kwargs or None, dynamic_args=False)
    return NumpyroTarget(
        info.potential_fn, info.postprocess_fn, info.param_info.z, name=getattr(model, "__name__", "numpyro_model")
    )
