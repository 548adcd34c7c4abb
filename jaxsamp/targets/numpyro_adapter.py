"""Adapter: a numpyro model as a Target over its unconstrained parameter space.

The model's data are not constants of the compiled code: the target's log
density and constraining map are :class:`jax.tree_util.Partial` s of functions
built once per model function and argument structure (:class:`NumpyroModel`,
numpyro's ``initialize_model(..., dynamic_args=True)``), with the data's arrays
as leaves. New data of the same shapes and dtypes reuse every compilation;
other shapes, other fixed arguments (Python numbers, strings) or another model
function build a new structure and compile again.
"""

from __future__ import annotations

import inspect
from collections import OrderedDict
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from jax.tree_util import Partial

from jaxsamp.core import fingerprint
from jaxsamp.core.compiled import strong_types
from jaxsamp.core.errors import InputError
from jaxsamp.core.target import Target


def _in_dtype(leaf, dtype):
    """A floating-point data leaf as an array of ``dtype``; any other leaf unchanged."""
    if isinstance(leaf, (np.ndarray, jax.Array, float)) and jnp.issubdtype(jnp.result_type(leaf), jnp.floating):
        return jnp.asarray(leaf, dtype)
    return leaf


def missing_arguments(model: Callable, args: tuple, kwargs: dict) -> list[str]:
    """The parameters of ``model`` that need a value and that ``args`` / ``kwargs`` leave out (none where they bind,
    or where the signature cannot be read or the arguments are too many)."""
    try:
        signature = inspect.signature(model)
        bound = signature.bind_partial(*args, **(kwargs or {}))
    except (TypeError, ValueError):
        return []
    return [name for name, p in signature.parameters.items() if name not in bound.arguments
            and p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def records_sample_sites_without_data(model: Callable, args: tuple, kwargs: dict) -> bool:
    """Whether ``args`` / ``kwargs`` leave out parameters of ``model`` and ``model``, run with None for each of them,
    records a numpyro sample site before it needs them: a numpyro model called without its data does (its priors come
    first); a plain log density, whose state is missing, fails on the None before recording anything."""
    from numpyro import handlers

    missing = {name: None for name in missing_arguments(model, args, kwargs)}
    if not missing:
        return False
    tracer = handlers.trace(handlers.seed(model, 0))
    try:
        tracer.get_trace(*args, **(kwargs or {}), **missing)
    except Exception:  # any failure once it needs its data: the sites recorded before it are what count
        pass
    return any(site["type"] == "sample" for site in getattr(tracer, "trace", {}).values())


def check_model_arguments(model: Callable, args: tuple, kwargs: dict) -> None:
    """An InputError naming the parameters of numpyro model ``model`` that ``args`` / ``kwargs`` leave out (its data)."""
    missing = missing_arguments(model, args, kwargs)
    if missing:
        raise InputError(
            f"numpyro model {getattr(model, '__name__', 'model')!r} was called without its argument(s) "
            f"{', '.join(missing)} (its data)",
            "pass them: model_args=(...) / model_kwargs={...} to jaxsamp.sample and jaxsamp.fit, or "
            "from_numpyro(model, *args, **kwargs)",
        )


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


def _is_data(leaf) -> bool:
    """A leaf of the model's arguments that is traced: a numeric or boolean NumPy or JAX array (not a Python or NumPy scalar)."""
    return isinstance(leaf, (np.ndarray, jax.Array)) and (
        jnp.issubdtype(leaf.dtype, jnp.number) or jnp.issubdtype(leaf.dtype, jnp.bool_))


#: What a traced model cannot do with its data: use them as Python values (a shape, an ``if``, ``np.asarray``).
_NEEDS_CONCRETE_DATA = (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError,
                        jax.errors.TracerBoolConversionError, jax.errors.TracerIntegerConversionError)


class NumpyroModel:
    """What a numpyro model's target computes, for every data set of the same structure: its functions of the data.

    One object per model function and argument structure (the tree of
    ``(args, kwargs)``, the shapes and dtypes of its array leaves, the values of
    its other leaves), built once by numpyro's ``initialize_model`` with
    ``dynamic_args=True`` (whose potential and postprocessing take the model's
    arguments at every call) and kept by :func:`from_numpyro`. Its methods take
    the array leaves (the data) as their first argument, so that
    ``jax.tree_util.Partial(structure.log_density, data)`` is a log density whose
    data are traced leaves: every data set of this structure shares its
    compilations.

    The array leaves are traced unless the model needs their values (a shape, a
    Python ``if``, ``np.asarray``), which tracing them reveals once: then they are
    fixed here as constants like the other leaves (``traced`` is all False), and
    each data set has a structure, and compilations, of its own.
    """

    def __init__(self, model: Callable, args: tuple, kwargs: dict, init_key: jax.Array, traced: tuple):
        from numpyro.infer.util import initialize_model

        _refuse_discrete_latents(model, args, kwargs, init_key)
        info = initialize_model(init_key, model, model_args=args, model_kwargs=kwargs or None, dynamic_args=True)
        flat, self.unravel = ravel_pytree(info.param_info.z)
        self.name, self.event_shape = getattr(model, "__name__", "numpyro_model"), tuple(flat.shape)
        self._potential_fn, self._postprocess_fn = info.potential_fn, info.postprocess_fn
        leaves, self._treedef = jax.tree.flatten((args, kwargs))
        self.traced = traced
        self._fixed = [None if t else leaf for leaf, t in zip(leaves, traced)]
        self._model = model
        self._initializers: dict = {}

    def data(self, args: tuple, kwargs: dict) -> tuple:
        """The traced leaves of ``(args, kwargs)``, in order (strongly typed: :func:`~jaxsamp.core.compiled.strong_types`)."""
        return strong_types(tuple(leaf for leaf, t in zip(jax.tree.leaves((args, kwargs)), self.traced) if t))

    def arguments(self, data, dtype=None) -> tuple[tuple, dict]:
        """``(args, kwargs)`` of the model from its data (floating-point data in ``dtype``, when given)."""
        data = iter(data if dtype is None else [_in_dtype(a, dtype) for a in data])
        args, kwargs = jax.tree.unflatten(self._treedef, [next(data) if t else f for f, t in zip(self._fixed, self.traced)])
        return args, kwargs or {}

    def _parts(self, x) -> dict:
        """The latent sites of one flat state, in the state's own float dtype (``unravel`` would cast to the init's)."""
        return jax.tree.map(lambda a: a.astype(x.dtype), self.unravel(x))

    def log_density(self, data, x):
        """``-potential_energy(model, args, kwargs, unravel(x))`` with the data in the state's dtype.

        The cast keeps float32 data out of a float64 trace (``jax.enable_x64``)
        and the other way round.
        """
        args, kwargs = self.arguments(data, x.dtype)
        return -self._potential_fn(*args, **kwargs)(self._parts(x))

    def constrain(self, data, x) -> dict[str, Any]:
        """Constrained values of every latent and deterministic site at one flat state ``x`` (numpyro's postprocessing)."""
        args, kwargs = self.arguments(data, x.dtype)
        return self._postprocess_fn(*args, **kwargs)(self._parts(x))

    def initializer(self, strategy) -> Callable:
        """``initial(keys, data)``: one flat starting point per key by ``initialize_model`` with ``strategy``, jitted once."""
        if strategy not in self._initializers:
            from numpyro.infer.util import initialize_model

            def initial(keys, data):
                args, kwargs = self.arguments(data)
                info = initialize_model(keys, self._model, model_args=args, model_kwargs=kwargs or None,
                                        init_strategy=strategy, dynamic_args=False)
                return jax.vmap(lambda z: ravel_pytree(z)[0])(info.param_info.z)

            self._initializers[strategy] = jax.jit(initial)
        return self._initializers[strategy]


def _structure(model: Callable, args: tuple, kwargs: dict, init_key: jax.Array) -> NumpyroModel:
    """The :class:`NumpyroModel` of ``model`` for arguments of this structure: the cached one, or a new one.

    Keyed on the model function, the tree of the arguments, the shapes and dtypes
    of their traced leaves and the values of the others
    (:func:`jaxsamp.core.fingerprint.of_values`). Arguments whose fixed leaves
    cannot be hashed so (an object that is not an array, a number or a string)
    get a new structure each time.
    """
    leaves, treedef = jax.tree.flatten((args, kwargs))
    traced = tuple(_is_data(leaf) for leaf in leaves)
    for attempt in (traced, (False,) * len(leaves)):
        try:
            identity = (model, treedef, attempt, tuple(jax.typeof(a).strip_weak_type() for a, t in zip(leaves, attempt) if t),
                        fingerprint.of_values([a for a, t in zip(leaves, attempt) if not t]))
        except (TypeError, ValueError):
            identity = None
        if identity in _STRUCTURES:
            _STRUCTURES.move_to_end(identity)
            return _STRUCTURES[identity]
        structure = NumpyroModel(model, args, kwargs, init_key, attempt)
        try:
            x = jax.ShapeDtypeStruct(structure.event_shape, jnp.result_type(float))
            jax.eval_shape(structure.log_density, structure.data(args, kwargs), x)
        except _NEEDS_CONCRETE_DATA:
            if any(attempt):
                continue
            raise
        if identity is not None:
            _STRUCTURES[identity] = structure
            while len(_STRUCTURES) > CACHE_SIZE:
                _STRUCTURES.popitem(last=False)
        return structure


class NumpyroTarget(Target):
    """The posterior of a numpyro model on unconstrained space, flattened to one vector.

    ``log_prob(x) = -potential_fn(unravel(x))``: numpyro's potential is the negative
    joint log density of the latent sites after their bijection to R^n, including the
    log-Jacobian of that bijection (Phan, Pradhan, Jankowiak 2019, "Composable effects
    for flexible and accelerated probabilistic programming in NumPyro";
    ``numpyro.infer.util.potential_energy``). ``log_Z`` (the model evidence) is unknown.

    The model's data (its array arguments) are leaves of :attr:`log_density` and
    :attr:`constrain`, ``jax.tree_util.Partial`` s of functions shared by every
    data set of the same structure (:class:`NumpyroModel`): compiled code that
    takes them as arguments compiles once for all such data sets.

    Attributes
    ----------
    unravel : callable
        Flat vector -> dict of unconstrained latent values.
    log_density : jax.tree_util.Partial
        ``log_prob`` without its shape checks, the data as leaves.
    constrain : jax.tree_util.Partial
        Constrained values of every latent and deterministic site at one flat
        state, the data as leaves.
    """

    def __init__(self, model: Callable, args: tuple, kwargs: dict, init_key: jax.Array):
        structure = _structure(model, args, kwargs, init_key)
        self.name, self.event_shape, self.unravel = structure.name, structure.event_shape, structure.unravel
        self._structure, self._data, self._init_key = structure, structure.data(args, kwargs), init_key
        self.constrain = Partial(structure.constrain, self._data)

    @property
    def log_density(self) -> Partial:
        return Partial(self._structure.log_density, self._data)

    def _log_prob(self, x):
        return self._structure.log_density(self._data, x)

    @property
    def init_position(self) -> jax.Array:
        """A valid flat starting point: numpyro's ``init_to_uniform`` with the target's ``init_key``."""
        return self.init_positions(self._init_key, 1)[0]

    def _initial(self, key, n: int, strategy) -> jax.Array:
        """``n`` flat starting points by numpyro's ``initialize_model`` with ``strategy``, compiled once per strategy and ``n``."""
        return self._structure.initializer(strategy)(jax.random.split(key, n), self._data)

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
        Key for numpyro's initialisation (of a new structure, and of ``init_position``); default ``key(0)``.

    Raises
    ------
    ImportError
        When numpyro (an optional extra: ``pip install 'jaxsamp[numpyro]'``) is missing.
    InputError
        When ``args`` / ``kwargs`` leave out a parameter of the model that has no default (its
        data), or when the model has a discrete latent site (a ``Bernoulli`` or ``Categorical``
        that is not observed).

    Notes
    -----
    The data (the arguments' numeric NumPy and JAX arrays) are leaves of the
    target's :attr:`~NumpyroTarget.log_density` and
    :attr:`~NumpyroTarget.constrain`, whose functions are built once per model
    function and argument structure (:class:`NumpyroModel`; the last
    :data:`CACHE_SIZE` are kept): the other arguments (Python numbers, strings,
    NumPy scalars) are fixed in that structure, as are the arrays of a model that
    needs their values to run. So a second :func:`jaxsamp.sample` call on the
    same model with new data of the same shapes and dtypes reuses the compiled
    warm-up, sampler, health check and constraining; new shapes, new fixed
    arguments or another model function compile again.
    """
    try:
        from numpyro.infer.util import initialize_model  # noqa: F401
    except ImportError as err:
        raise ImportError(
            "from_numpyro needs numpyro, an optional extra: pip install 'jaxsamp[numpyro]'"
        ) from err
    check_model_arguments(model, args, kwargs)
    return NumpyroTarget(model, args, kwargs, jax.random.key(0) if init_key is None else init_key)


#: Model structures kept by :func:`from_numpyro` (least recently used dropped first).
CACHE_SIZE = 16
_STRUCTURES: OrderedDict = OrderedDict()
