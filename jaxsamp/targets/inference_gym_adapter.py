"""Adapter: an Inference Gym model as a Target over its unconstrained space, with its ground truth.

The Inference Gym (Sountsov, Radul & contributors, "Inference Gym", 2020,
https://github.com/tensorflow/probability/tree/main/spinoffs/inference_gym) ships
Bayesian models with long-run ground-truth posterior means and standard
deviations. :func:`from_inference_gym` maps a model's constrained parameters to
R^d through its ``default_event_space_bijector`` and flattens them to one
vector, so every jaxsamp kernel samples it; the ground truth of one of the
model's sample transformations (``identity`` by default) is exposed as
``reference_mean`` / ``reference_std`` next to ``reference_values(x)``, which
computes the same transformation of one state.

The Inference Gym is an optional extra (``pip install 'jaxsamp[gym]'``); its JAX
backend runs on TensorFlow Probability's JAX substrate, without TensorFlow.
"""

from __future__ import annotations

from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np

from jaxsamp.core.errors import InputError
from jaxsamp.core.target import Target


def _is_shape(x) -> bool:
    return hasattr(x, "as_list")


class InferenceGymTarget(Target):
    """The posterior of an Inference Gym model on unconstrained space, flattened to one vector.

    ``log_prob(x) = log p~(f(z)) + log |det J_f(z)|`` with ``z = unravel(x)`` and
    ``f`` the model's default event-space bijector applied part by part.

    Attributes
    ----------
    model : inference_gym Model
    reference_mean, reference_std : ndarray
        The Gym's ground truth of the chosen sample transformation, flattened
        (``None`` when the model ships none).
    reference_mean_standard_error : ndarray or None
        The standard error of ``reference_mean`` as the Gym reports it.
    """

    def __init__(self, model, transformation: str = "identity"):
        from tensorflow_probability.substrates import jax as tfp

        def is_bijector(x):
            return isinstance(x, tfp.bijectors.Bijector)

        self.model = model
        self.name = getattr(model, "name", type(model).__name__)
        shapes, self._event_def = jax.tree.flatten(model.event_shape, is_leaf=_is_shape)
        dtypes = jax.tree.leaves(model.dtype)
        self._bijectors = jax.tree.leaves(model.default_event_space_bijector, is_leaf=is_bijector)
        if len(self._bijectors) != len(shapes):
            raise InputError(
                f"{self.name}: a joint bijector over {len(shapes)} parts is not supported; "
                "the adapter needs one bijector per part of the event"
            )
        self._unconstrained_shapes = [
            tuple(b.inverse_event_shape(s).as_list()) for b, s in zip(self._bijectors, shapes)
        ]
        self._dtypes = [jnp.dtype(d) for d in dtypes]
        self._sizes = [int(np.prod(s)) for s in self._unconstrained_shapes]
        self.event_shape = (sum(self._sizes),)
        if transformation not in model.sample_transformations:
            raise InputError(
                f"{self.name} has no sample transformation {transformation!r}; "
                f"it has {', '.join(model.sample_transformations)}"
            )
        self._transformation = model.sample_transformations[transformation]
        self.reference_mean = self._flat_truth(self._transformation.ground_truth_mean)
        self.reference_std = self._flat_truth(self._transformation.ground_truth_standard_deviation)
        self.reference_mean_standard_error = self._flat_truth(
            self._transformation.ground_truth_mean_standard_error
        )

    @staticmethod
    def _flat_truth(tree) -> np.ndarray | None:
        if tree is None:
            return None
        return np.concatenate([np.ravel(np.asarray(a, np.float64)) for a in jax.tree.leaves(tree)])

    def _parts(self, x):
        """The unconstrained parts of one flat state, shaped and typed as the model's event."""
        out, start = [], 0
        for shape, size, dtype in zip(self._unconstrained_shapes, self._sizes, self._dtypes):
            out.append(jnp.reshape(x[start:start + size], shape).astype(dtype))
            start += size
        return out

    def _log_prob(self, x):
        parts = self._parts(x)
        constrained = [b.forward(z) for b, z in zip(self._bijectors, parts)]
        log_det = sum(
            jnp.sum(b.forward_log_det_jacobian(z, event_ndims=len(shape)))
            for b, z, shape in zip(self._bijectors, parts, self._unconstrained_shapes)
        )
        value = jax.tree.unflatten(self._event_def, constrained)
        return (self.model.unnormalized_log_prob(value) + log_det).astype(x.dtype)

    def constrain(self, x) -> Any:
        """The model's parameters (its own structure, constrained space) at one flat state ``x``."""
        return jax.tree.unflatten(
            self._event_def, [b.forward(z) for b, z in zip(self._bijectors, self._parts(x))]
        )

    def reference_values(self, x) -> jax.Array:
        """The chosen sample transformation of one flat state, flattened like ``reference_mean``."""
        out = self._transformation(self.constrain(x))
        return jnp.concatenate([jnp.ravel(a) for a in jax.tree.leaves(out)])

    def reference_mean_error(self, x, log_w=None) -> float | None:
        """How far the draws' mean of the sample transformation lies from the Gym's, in its standard deviations.

        ``max_j |E_w[f_j(x)] - m_j| / s_j`` over the transformation's coordinates ``j``, where ``m`` and ``s`` are
        the Gym's ground-truth mean and standard deviation and ``E_w`` the self-normalised mean under the
        importance weights ``exp(log_w)`` (the plain mean without them). Draws with a non-finite state or
        log-weight are left out.

        Parameters
        ----------
        x : array (n, d)
            Flat unconstrained states.
        log_w : array (n,), optional
            Their log-weights.

        Returns
        -------
        float, or None when the model ships no ground truth
        """
        if self.reference_mean is None or self.reference_std is None:
            return None
        x = np.asarray(x)
        chex.assert_shape(x, (None, *self.event_shape))
        log_w = np.zeros(len(x)) if log_w is None else np.asarray(log_w, np.float64)
        chex.assert_shape(log_w, (len(x),))
        values = np.asarray(jax.vmap(self.reference_values)(jnp.asarray(x)), np.float64)
        keep = np.isfinite(log_w) & np.all(np.isfinite(values), axis=-1)
        if not keep.any():
            raise InputError(f"{self.name}: no draw with a finite state and log-weight to take a mean over")
        w = np.exp(log_w[keep] - log_w[keep].max())
        mean = w @ values[keep] / w.sum()
        return float(np.max(np.abs(mean - self.reference_mean) / self.reference_std))


def from_inference_gym(model, transformation: str = "identity") -> InferenceGymTarget:
    """Turn an Inference Gym model (``inference_gym.using_jax``) into a Target with its ground truth.

    Parameters
    ----------
    model : inference_gym Model, or str
        A model instance, e.g. ``gym.targets.EightSchools()``, or the name of a
        model class in ``inference_gym.using_jax.targets`` (built with its defaults).
    transformation : str
        The sample transformation whose ground truth becomes the reference.

    Raises
    ------
    ImportError
        When the Inference Gym (the ``gym`` extra) is missing.
    InputError
        An unknown model name or transformation, or a model with a joint bijector.
    """
    if isinstance(model, str):
        try:
            from inference_gym import using_jax as gym
        except ImportError as err:
            raise ImportError(
                "from_inference_gym needs the Inference Gym, an optional extra: pip install 'jaxsamp[gym]'"
            ) from err
        if not hasattr(gym.targets, model):
            raise InputError(f"inference_gym has no model {model!r}")
        model = getattr(gym.targets, model)()
    return InferenceGymTarget(model, transformation)
