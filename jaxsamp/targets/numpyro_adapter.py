"""Adapter: a numpyro model as a Target over its unconstrained parameter space."""

from __future__ import annotations

from collections import OrderedDict
from functools import partial
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from jaxsamp.core import fingerprint
from jaxsamp.core.errors import InputError
from jaxsamp.core.target import Target


def _in_dtype(leaf, dtype):
    """A floating-point data leaf as an array of ``dtype``; any other leaf unchanged."""
    if isinstance(leaf, (np.ndarray, jax.Array, float)) and jnp.issubdtype(jnp.result_type(leaf), jnp.floating):
        return jnp.asarray(leaf, dtype)
    return leaf


def _refuse_discrete_latents(model: Callable, args: tuple, kwargs: dict, key: jax.Array) -> None:
    """Raise when ``model`` has a latent (not observed) sample site whose distribution has discrete support.

    jaxsamp samples a numpyro model's unconstrained continuous latents with
    gradient-based kernels; numpyro itself would ask for ``funsor`` here.

    Raises
    ------
    InputError
        Naming the discrete latent sites and their distributions, with what to do instead.
    """
    from numpyro import handlers

    trace = handlers.trace(handlers.seed(model, key)).get_trace(*args, **(kwargs or {}))
    discrete = [
        f"{name!r} ({type(site['fn']).__name__})" for name, site in trace.items()
        if site["type"] == "sample" and not site["is_observed"] and site["fn"].support.is_discrete
    ]
    if discrete:
        raise InputError(
            f"{getattr(model, '__name__', 'the numpyro model')}: discrete latent site(s) {', '.join(discrete)}; "
            "jaxsamp samples the continuous latents of a numpyro model with HMC/NUTS",
            "marginalise the discrete latent out of the model by hand (or with numpyro's own enumeration, "
            "numpyro.contrib.funsor, and numpyro's MCMC), or write a Target of your own over the discrete "
            "states and use a discrete sampler from `jaxsamp list`",
        )


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

    def __init__(self, model: Callable, args: tuple, kwargs: dict, init_key: jax.Array):
        from numpyro.infer.util import initialize_model, potential_energy

        _refuse_discrete_latents(model, args, kwargs, init_key)
        self._potential_energy = potential_energy
        info = initialize_model(init_key, model, model_args=args, model_kwargs=kwargs or None, dynamic_args=False)
        flat, self.unravel = ravel_pytree(info.param_info.z)
        self.init_position = flat
        self.name, self.event_shape = getattr(model, "__name__", "numpyro_model"), tuple(flat.shape)
        self._postprocess_fn = info.postprocess_fn
        self._model, self._args, self._kwargs = model, args, kwargs
        self._initializers: dict = {}

    def _parts(self, x) -> dict:
        """The latent sites of one flat state, in the state's own float dtype (``unravel`` would cast to the init's)."""
        return jax.tree.map(lambda a: a.astype(x.dtype), self.unravel(x))

    def _log_prob(self, x):
        # numpyro's potential closes over the model's data; rebuilding it with the data in the
        # state's dtype keeps float32 arrays out of a float64 trace (mixed-dtype constants from an
        # earlier float32 compilation otherwise fail XLA's verifier under ``jax.enable_x64``).
        args, kwargs = jax.tree.map(lambda a: _in_dtype(a, x.dtype), (self._args, self._kwargs or {}))
        return -partial(self._potential_energy, self._model, args, kwargs)(self._parts(x))

    def constrain(self, x) -> dict[str, Any]:
        """Constrained values of every latent and deterministic site at one flat state ``x``."""
        return self._postprocess_fn(self._parts(x))

    def _initial(self, key, n: int, strategy) -> jax.Array:
        """``n`` flat starting points by numpyro's ``initialize_model`` with ``strategy``, compiled once per strategy and ``n``."""
        if strategy not in self._initializers:
            from numpyro.infer.util import initialize_model

            def initial(keys):
                info = initialize_model(keys, self._model, model_args=self._args, model_kwargs=self._kwargs or None,
                                        init_strategy=strategy, dynamic_args=False)
                return jax.vmap(lambda z: ravel_pytree(z)[0])(info.param_info.z)

            self._initializers[strategy] = jax.jit(initial)
        return self._initializers[strategy](jax.random.split(key, n))

    def init_positions(self, key, n: int) -> jax.Array:
        """``n`` flat starting points by numpyro's default rule (``init_to_uniform``: uniform in (-2, 2) unconstrained)."""
        from numpyro.infer.initialization import init_to_uniform

        return self._initial(key, n, init_to_uniform)

    def sample_prior(self, key, n: int) -> jax.Array:
        """``n`` flat draws of the latent sites from the model's prior (``init_to_sample``), unconstrained."""
        from numpyro.infer.initialization import init_to_sample

        return self._initial(key, n, init_to_sample)


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
    InputError
        When the model has a discrete latent site (a ``Bernoulli`` or ``Categorical`` that is not observed).

    Notes
    -----
    The same model function with arguments of the same values (and the same
    ``init_key``) gives the same target object, so a second :func:`jaxsamp.sample`
    call on it reuses the compiled warm-up and sampler (both are cached per log
    density). The arguments are identified by a hash of their values
    (:func:`jaxsamp.core.fingerprint.of_values`); the last :data:`CACHE_SIZE`
    targets are kept. New data make a new target, which compiles again.
    """
    try:
        from numpyro.infer.util import initialize_model  # noqa: F401
    except ImportError as err:
        raise ImportError(
            "from_numpyro needs numpyro, an optional extra: pip install 'jaxsamp[numpyro]'"
        ) from err
    init_key = jax.random.key(0) if init_key is None else init_key
    try:
        identity = (model, fingerprint.of_values((args, kwargs, init_key)))
    except (TypeError, ValueError):  # an argument that is not an array, a number or a string: build it anew
        return NumpyroTarget(model, args, kwargs, init_key)
    if identity not in _TARGETS:
        _TARGETS[identity] = NumpyroTarget(model, args, kwargs, init_key)
        while len(_TARGETS) > CACHE_SIZE:
            _TARGETS.popitem(last=False)
    _TARGETS.move_to_end(identity)
    return _TARGETS[identity]


#: Targets kept by :func:`from_numpyro` (least recently used dropped first).
CACHE_SIZE = 16
_TARGETS: OrderedDict = OrderedDict()
