"""Binary data by Bernoulli-noise denoising: the noise model, its exact identities, and the learned denoiser.

Bach & Saremi (2025), "Sampling binary data by denoising through score
functions", ICML (PMLR 267:2221-2240, arXiv 2502.00557). The paper's own update
formulas were not available to us (research/methods.md section 8,
research/anchors2.md); what follows is our derivation from the identity the
paper states, ``E[x | y] = alpha^-1 grad log q_alpha(y)``, and every step of it
is checked by an exact test (tests/learned/binary/test_bernoulli_denoising.py and
test_bernoulli_samplers.py). The samplers built on it are in
:mod:`jaxsamp.learned.binary.bernoulli_samplers`. :func:`build` is the method's
constructor (``jaxsamp.fit("bernoulli_denoising", data, ...)``): a
:class:`~jaxsamp.core.LearnedSampler` over :class:`BernoulliDenoising`, the numerics.

Derivation
----------
**Noise model.** Clean data ``x in {-1, 1}^d`` (``x = 2 b - 1`` for bits ``b``)
are observed through independent bit flips, ``y = x * z`` with
``P(z_i = -1) = 1 / (1 + e^{2 alpha})`` (:func:`~jaxsamp.learned.binary.bernoulli_samplers.flip_probability`; small
``alpha`` is heavy noise, ``alpha -> 0`` makes ``y`` uniform). Since
``P(y_i = x_i) = e^alpha / (2 cosh alpha)``,

    p(y | x) = prod_i exp(alpha x_i y_i) / (2 cosh alpha).                                   (1)

**Smoothed density.** With ``A(h) = log sum_x p(x) exp(h . x)`` the log
partition function of the exponential tilts of ``p`` (``A(0) = 0``),

    q_alpha(y) = sum_x p(x) p(y | x) = (2 cosh alpha)^-d exp(A(alpha y)).                     (2)

The right-hand side is defined and smooth for every ``y in R^d``: this is the
extension of ``q_alpha`` off the hypercube (:func:`noisy_log_density`).

**The identity.** Differentiating (2), ``grad_y log q_alpha(y) = alpha grad A(alpha y)``
and ``grad A(h) = sum_x x p(x) e^{h.x} / sum_x p(x) e^{h.x}``. On the
hypercube ``p(x | y) ∝ p(x) e^{alpha x.y}`` by (1), so

    E[x | y] = grad A(alpha y) = alpha^-1 grad_y log q_alpha(y).                               (3)

**Several measurements.** For ``y_1..y_m`` drawn independently by (1) from the
same ``x``, ``p(x | y_1..m) ∝ p(x) exp(x . h)`` with the natural parameter
``h = alpha sum_j y_j``: the posterior depends on the measurements only
through ``h``, and its mean is ``g(h) = grad A(h)`` -- the same function for
every ``m``. The ``k``-th measurement given the earlier ones has the law

    q(y_k | y_<k) = (2 cosh alpha)^-d exp(A(h_<k + alpha y_k) - A(h_<k)),   h_<k = alpha sum_{j<k} y_j,  (4)

whose score is ``alpha g(h_<k + alpha y_k)``. One measurement is ``h_<1 = 0``.
A bit's log-likelihood ratio after ``m`` agreeing measurements is
``2 m alpha``: ``m`` measurements at ``alpha`` denoise like one at ``m alpha``.

**Exact oracles.** For a product prior with means ``mu`` (``b = atanh mu``),
``A(h) = sum_i log cosh(h_i + b_i) - log cosh b_i`` and (3) becomes

    E[x_i | y] = tanh(atanh mu_i + alpha y_i),                                                 (5)

and for a mixture of products ``A`` is a log-sum-exp of such sums
(:mod:`jaxsamp.targets.binary`); for any ``d <= 20`` it is a sum over the
``2^d`` states (:func:`jaxsamp.targets.binary.enumerated_log_partition`).
:func:`exact_posterior_mean` is ``g = grad A`` by autodiff.

**The learned denoiser.** A per-bit logistic model ``P(x_i = s | h) =
sigmoid(s l_i(h))`` trained by the per-bit logistic loss
``E softplus(-x_i l_i(h))`` (binary cross-entropy) on pairs ``(x, h)`` from the
data and the noise has its minimum at the posterior log-odds, so
``tanh(l_i / 2) = E[x_i | h] = g_i(h)``. Because ``p(x | h) ∝ p(x) e^{h.x}``,
the log-odds of bit ``i`` is ``2 h_i`` plus a function of the other
coordinates of ``h``; the network is therefore a correction to the
uniform-prior answer, ``l(h) = 2 h + f_theta(h)`` (:class:`BitDenoiser`, with
``f_theta = 0`` at initialisation). Training draws the number of measurements
``k`` uniformly in ``1..max_measurements`` per example (:func:`noisy_batch`), so one
network serves single- and multi-measurement sampling.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable
from typing import Annotated, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from jaxsamp.core.data_parallel import batch_constraint
from jaxsamp.core.errors import InputError
from jaxsamp.core.protocols import LearnedSampler, TrainingHealth, WeightedSamples
from jaxsamp.core.target import Target
from jaxsamp.core.validation import OneOf, PositiveFloat, PositiveInt, check_array, check_fields, check_widths
from jaxsamp.diagnostics.binary_discrepancies import expected_tv_of_exact_samples, hamming_mmd, total_variation
from jaxsamp.learned.binary import bernoulli_samplers
from jaxsamp.learned.binary.bernoulli_samplers import SamplerSettings, flip_probability
from jaxsamp.nets.mlp import MLP
from jaxsamp.targets.binary import MAX_ENUMERATION_DIM, enumerated_probabilities

NETWORKS = ("mlp", "conv")
PADDINGS = ("circular", "zeros")
#: Examples per Adam step by default: ``jaxsamp.fit``'s ``batch_size``
BATCH_SIZE = 256

# --------------------------------------------------------------------------
# the noise model and its exact identities
# --------------------------------------------------------------------------


def noisy_log_density(log_partition: Callable, alpha: float) -> Callable:
    """``log q_alpha(y) = A(alpha y) - d log(2 cosh alpha)`` of eq. (2), for ONE ``y`` in R^d (smooth off the cube).

    Parameters
    ----------
    log_partition : callable
        ``A(h)`` of ONE ``h`` of the event shape (a target's ``log_partition``).
    alpha : float
    """

    def log_q(y):
        return log_partition(alpha * y) - y.size * (alpha + jnp.log1p(jnp.exp(-2.0 * alpha)))

    return log_q


def exact_posterior_mean(log_partition: Callable) -> Callable:
    """``g(h) = grad A(h) = E[x | h]`` by autodiff (eq. 3): the exact denoiser of a tractable target.

    The returned function takes ONE natural parameter ``h`` (event shape);
    for a single measurement ``h = alpha y``.
    """
    return jax.grad(log_partition)


def natural_parameter(measurements: jax.Array, alpha) -> jax.Array:
    """``h = alpha sum_j y_j`` over the leading axis of ``measurements`` (m, ...): what the posterior depends on."""
    return alpha * jnp.sum(measurements, axis=0)


def noisy_batch(key, x: jax.Array, alpha: float, max_measurements: int) -> jax.Array:
    """``h = alpha sum_{j <= k} y_j`` for clean ``x`` (B, ...), ``k ~ U{1..max_measurements}`` per example.

    The denoiser's training input: ``k`` independent measurements of each example by eq. (1),
    summed into the natural parameter (eq. 4's ``h``).
    """
    k_count, k_noise = jax.random.split(key)
    count = jax.random.randint(k_count, (x.shape[0],), 1, max_measurements + 1)
    flips = jax.random.uniform(k_noise, (max_measurements, *x.shape)) < flip_probability(alpha)
    used = jnp.arange(max_measurements)[:, None] < count[None, :]
    used = used.reshape(*used.shape, *([1] * (x.ndim - 1)))
    z = jnp.where(flips, -1.0, 1.0) * used
    return alpha * x * jnp.sum(z, axis=0)


# --------------------------------------------------------------------------
# the network
# --------------------------------------------------------------------------


class PatchConv(nnx.Module):
    """A 2-D convolution written as patches times a matrix, on (B, H, W, C) inputs with odd ``kernel_size``.

    The ``k x k`` shifted copies of the padded input (circular: periodic wrap;
    zeros: zero padding) are concatenated on the channel axis and multiplied by
    a ``(k k C_in, C_out)`` kernel. Same result as ``lax.conv``, but XLA's CPU
    backend runs this ~25x faster than its convolution inside a ``lax.scan``
    (measured under load: 1.5 s vs 0.06 s per training step of the 8x8 denoiser), which is
    where the driver runs every training step.
    """

    def __init__(self, in_features: int, out_features: int, kernel_size: int, padding: str, *, rngs: nnx.Rngs):
        if kernel_size % 2 == 0:
            raise InputError(f"kernel_size must be odd, got {kernel_size}")
        self.kernel_size, self.padding = kernel_size, padding
        fan_in = kernel_size * kernel_size * in_features
        self.kernel = nnx.Param(nnx.initializers.lecun_normal()(rngs.params(), (fan_in, out_features)))
        self.bias = nnx.Param(jnp.zeros((out_features,)))

    def __call__(self, x: jax.Array) -> jax.Array:
        k, r = self.kernel_size, self.kernel_size // 2
        height, width = x.shape[1:3]
        mode = "wrap" if self.padding == "circular" else "constant"
        padded = jnp.pad(x, ((0, 0), (r, r), (r, r), (0, 0)), mode=mode)
        patches = jnp.concatenate(
            [padded[:, i : i + height, j : j + width, :] for i in range(k) for j in range(k)], axis=-1
        )
        return patches @ self.kernel[...] + self.bias[...]


class BitDenoiser(nnx.Module):
    """Posterior log-odds of every bit, ``l(h) = 2 h + f_theta(h)``, for ONE or a batch of ``h`` of ``event_shape``.

    ``tanh(l / 2)`` is the posterior mean ``E[x | h]``. ``f_theta`` is an MLP on
    the flattened input (``network="mlp"``) or a stack of ``conv_layers`` 2-D
    convolutions (:class:`PatchConv`) on an image of shape ``event_shape = (H, W)`` (``"conv"``; circular padding for
    periodic lattices, zeros for images), SiLU activations; its last layer is
    initialised at zero, so an untrained denoiser is the exact one of the uniform prior.

    Parameters
    ----------
    event_shape : tuple of int
    network : {"mlp", "conv"}
    hidden : sequence of int
        MLP hidden widths.
    channels, conv_layers, kernel_size : int
        Width, number of hidden convolutions and kernel side of the conv network.
    padding : {"circular", "zeros"}
    rngs : nnx.Rngs
    """

    def __init__(
        self,
        event_shape,
        network: str,
        hidden=(256, 256),
        channels: int = 32,
        conv_layers: int = 4,
        kernel_size: int = 3,
        padding: str = "zeros",
        *,
        rngs: nnx.Rngs,
    ):
        self.event_shape = tuple(int(n) for n in event_shape)
        self.network = network
        d = math.prod(self.event_shape)
        if network == "mlp":
            self.body = MLP(d, list(hidden), d, rngs=rngs)
            last = self.body.layers[-1]
        elif network == "conv":
            if len(self.event_shape) != 2:
                raise InputError(f"the conv denoiser needs 2-D states (H, W), got event shape {self.event_shape}")
            sizes = [1] + [channels] * conv_layers
            self.convs = nnx.List(
                [PatchConv(a, b, kernel_size, padding, rngs=rngs) for a, b in itertools.pairwise(sizes)]
            )
            self.head = PatchConv(channels, 1, kernel_size, padding, rngs=rngs)
            last = self.head
        else:
            raise InputError(f"network must be one of {NETWORKS}, got {network!r}")
        last.kernel[...] = jnp.zeros(last.kernel.shape, last.kernel.dtype)
        last.bias[...] = jnp.zeros(last.bias.shape, last.bias.dtype)

    def __call__(self, h: jax.Array) -> jax.Array:
        batch = h.shape[: h.ndim - len(self.event_shape)]
        if h.shape[len(batch) :] != self.event_shape:
            raise InputError(
                f"the denoiser takes h of shape (..., {', '.join(map(str, self.event_shape))}), got {h.shape}"
            )
        if self.network == "mlp":
            f = self.body(h.reshape(*batch, -1)).reshape(h.shape)
        else:
            z = h.reshape(-1, *self.event_shape, 1)
            for conv in self.convs:
                z = jax.nn.silu(conv(z))
            f = self.head(z).reshape(h.shape)
        return 2.0 * h + f


# --------------------------------------------------------------------------
# settings, state, trainer
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class BernoulliDenoisingSettings:
    """Hyper-parameters of Bernoulli denoising: the learned denoiser, its training and its sampler.

    Attributes
    ----------
    alpha : float
        Noise parameter of eq. (1) (flip probability ``1 / (1 + e^{2 alpha})``).
    max_measurements : int
        Training draws ``k ~ U{1..max_measurements}`` measurements per example
        (1 for single-measurement samplers; ``m`` for ``m``-measurement sampling).
    network : {"mlp", "conv"}
    hidden : tuple of int
        MLP hidden widths ((256, 256)).
    channels, conv_layers, kernel_size : int
        Conv network width (32), depth (4) and kernel side (3).
    padding : {"circular", "zeros"}
        Conv padding: circular for periodic lattices (Ising), zeros for images.
    learning_rate : float
        Adam learning rate (1e-3), cosine-decayed to 0 over ``decay_steps`` when that is set.
    decay_steps : int or None
        Length of the cosine decay (None: constant rate).
    max_grad_norm : float
        Global gradient-norm clip (1).
    num_train_samples : int
        Training set size drawn from a target with exact samples (20 000; unused for data).
    sampler : SamplerSettings
        How the trained sampler draws (:func:`draw`; a mapping of its fields is accepted):
        ``correction`` ``none`` or ``trapezoid`` (``exact`` needs the target's ``A(h)``,
        which a learned denoiser does not have) and ``num_measurements <= max_measurements``.
    """

    alpha: PositiveFloat = 1.0
    max_measurements: PositiveInt = 1
    network: Annotated[str, OneOf(NETWORKS)] = "mlp"
    hidden: tuple = (256, 256)
    channels: PositiveInt = 32
    conv_layers: PositiveInt = 4
    kernel_size: PositiveInt = 3
    padding: Annotated[str, OneOf(PADDINGS)] = "zeros"
    learning_rate: PositiveFloat = 1e-3
    decay_steps: PositiveInt | None = None
    max_grad_norm: PositiveFloat = 1.0
    num_train_samples: PositiveInt = 20_000
    sampler: SamplerSettings = SamplerSettings()

    def __post_init__(self):
        if isinstance(self.sampler, dict):
            object.__setattr__(self, "sampler", SamplerSettings(**self.sampler))
        check_fields(self)
        object.__setattr__(self, "hidden", check_widths(type(self).__name__, "hidden", self.hidden))
        if self.sampler.correction == "exact":
            raise InputError(
                "sampler correction exact needs the target's tractable q_alpha, which a learned denoiser does not "
                "give: use none or trapezoid"
            )
        if self.sampler.num_measurements > self.max_measurements:
            raise InputError(
                f"sampler num_measurements = {self.sampler.num_measurements} exceeds max_measurements = "
                f"{self.max_measurements}: the denoiser would never have been trained on that many measurements"
            )


class BernoulliDenoisingTrainState(NamedTuple):
    """A plain PyTree the driver checkpoints: network (``nnx.split`` state), Adam state, step count, training data."""

    params: nnx.State
    opt_state: optax.OptState
    step: jax.Array
    data: jax.Array


def check_spin_data(data, where: str = "data") -> np.ndarray:
    """``data`` as a float32 array of +-1 states ``(n >= 1, *event_shape)``; a clear error otherwise."""
    arr = check_array(where, data)
    if arr.ndim < 2 or arr.shape[0] < 1:
        raise InputError(f"{where} must be (n, *event_shape) with n >= 1, got shape {arr.shape}")
    if not np.all(np.abs(arr) == 1):
        raise InputError(f"{where} must hold +-1 spins (x = 2 b - 1 for bits b)")
    return arr.astype(np.float32)


def is_data_set(target) -> bool:
    """A target that is a data set (``train()`` / ``test()`` splits, no density), e.g. ``binary_digits``."""
    return hasattr(target, "train") and hasattr(target, "test")


def training_source(target) -> Target | np.ndarray:
    """What a denoiser learns from: a +-1 Target with exact samples or a data set (returned as is), or
    an array of +-1 samples (returned checked); an InputError that says what is needed otherwise."""
    if not isinstance(target, Target):
        return check_spin_data(target)
    if target.domain.kind != "spin":
        raise InputError(
            f"Bernoulli denoising learns +-1 states; target {target.name!r} has domain {target.domain.kind!r}"
        )
    if not (is_data_set(target) or target.has_exact_samples):
        raise InputError(
            f"Bernoulli denoising learns from samples; target {target.name!r} has neither exact samples nor data",
            "pass an array (n, *event_shape) of +-1 samples instead (e.g. long MCMC chains of the target)",
        )
    return target


def denoiser_network(settings: BernoulliDenoisingSettings, event_shape, key) -> BitDenoiser:
    """A fresh :class:`BitDenoiser` of ``settings`` for states of ``event_shape`` (``f_theta = 0``: the uniform prior's)."""
    s = settings
    return BitDenoiser(event_shape, s.network, s.hidden, s.channels, s.conv_layers, s.kernel_size, s.padding,
                       rngs=nnx.Rngs(key))


def posterior_mean(settings: BernoulliDenoisingSettings, params: nnx.State, event_shape) -> Callable:
    """``g_theta(h) = tanh(l_theta(h) / 2)``, the learned ``E[x | h]`` (eq. 3), a function of ONE ``h`` of ``event_shape``.

    ``params`` is a train state's network (``fitted.state.params``; :func:`jaxsamp.fit` also
    leaves the ``settings``), so that a trained denoiser is used as the exact ones are
    (:func:`exact_posterior_mean`).
    """
    graphdef = nnx.graphdef(nnx.eval_shape(lambda: denoiser_network(settings, event_shape, jax.random.key(0))))
    network = nnx.merge(graphdef, params)
    return lambda h: jnp.tanh(0.5 * network(h))


def draw(key, settings: BernoulliDenoisingSettings, state: BernoulliDenoisingTrainState, num_samples: int,
         **run_options):
    """``settings.sampler``'s chains with a train state's denoiser: ``(x, final NoisyState, trace)``.

    :func:`~jaxsamp.learned.binary.bernoulli_samplers.sample` with :func:`posterior_mean`:
    ``num_samples`` independent chains from uniform noise, run by the driver (``run_options``
    go to :func:`jaxsamp.run`: ``progress``, ``chunk``, ``desc``), then denoised.
    """
    event_shape = state.data.shape[1:]
    return bernoulli_samplers.sample(settings.sampler, posterior_mean(settings, state.params, event_shape),
                                     settings.alpha, key, num_samples, event_shape, **run_options)


class BernoulliDenoising:
    """The numerics of Bernoulli-noise denoising (Bach & Saremi 2025): training of the denoiser
    ``g_theta(h) = tanh(l_theta(h) / 2)`` on its data, and its samplers' draws (key first).

    :func:`build` makes one and returns its :class:`~jaxsamp.core.LearnedSampler`; the step
    metrics and how to set the settings are in its docstring.

    Parameters
    ----------
    target : Target or array ``(n, *event_shape)`` of +-1
        What the denoiser learns from (:func:`training_source`).
    settings : BernoulliDenoisingSettings
    batch_size : int
        Examples per optimiser step.
    optimizer : optax.GradientTransformation, optional
        Instead of Adam with the settings' learning rate (cosine-decayed over ``decay_steps``)
        after clipping the global gradient norm at ``max_grad_norm``.

    Attributes
    ----------
    target : Target or None
        The target (None for an array of data).
    settings : BernoulliDenoisingSettings
    event_shape : tuple
    """

    def __init__(self, target, settings: BernoulliDenoisingSettings, batch_size: int,
                 optimizer: optax.GradientTransformation | None = None):
        source = training_source(target)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InputError(f"batch_size must be a positive int, got {batch_size!r}")
        self.target = source if isinstance(source, Target) else None
        if self.target is None:
            self.data = jnp.asarray(source)
        elif is_data_set(source):
            self.data = jnp.asarray(check_spin_data(source.train(), f"{source.name} training data"))
        else:
            self.data = None  # drawn by init
        self.event_shape = tuple(self.data.shape[1:]) if self.data is not None else tuple(source.event_shape)
        self.settings, self.batch_size = settings, batch_size
        if settings.network == "conv" and len(self.event_shape) != 2:
            raise InputError(f"the conv denoiser needs 2-D states (H, W), got event shape {self.event_shape}")
        if optimizer is None:
            schedule = (
                optax.cosine_decay_schedule(settings.learning_rate, settings.decay_steps)
                if settings.decay_steps
                else settings.learning_rate
            )
            optimizer = optax.chain(optax.clip_by_global_norm(settings.max_grad_norm), optax.adam(schedule))
        self.optimizer = optimizer
        self.graphdef = nnx.graphdef(nnx.eval_shape(lambda: denoiser_network(settings, self.event_shape,
                                                                             jax.random.key(0))))

    def logits(self, params: nnx.State, h: jax.Array) -> jax.Array:
        """Posterior log-odds ``l_theta(h)`` for ``h`` of shape ``(..., *event_shape)``."""
        return nnx.merge(self.graphdef, params)(h)

    def init(self, key) -> BernoulliDenoisingTrainState:
        """A fresh network (``f_theta = 0``: the uniform-prior denoiser), optimiser state, and the training data
        (drawn from the target with ``fold_in(key, 1)`` when it has exact samples)."""
        params = nnx.state(denoiser_network(self.settings, self.event_shape, key))
        if self.data is None:
            data = jnp.asarray(self.target.sample(jax.random.fold_in(key, 1), self.settings.num_train_samples))
            data = data.astype(jnp.float32)
        else:
            data = self.data
        return BernoulliDenoisingTrainState(params, self.optimizer.init(params), jnp.zeros((), jnp.int32), data)

    def step(self, key, state: BernoulliDenoisingTrainState) -> tuple[BernoulliDenoisingTrainState, dict]:
        """One optimiser step on the per-bit logistic loss ``softplus(-x l_theta(h))`` of a fresh noisy batch."""
        s = self.settings
        k_batch, k_noise = jax.random.split(key)
        x = batch_constraint(state.data[jax.random.randint(k_batch, (self.batch_size,), 0, state.data.shape[0])])
        h = batch_constraint(noisy_batch(k_noise, x, s.alpha, s.max_measurements))

        def loss_and_logits(params):
            logits = self.logits(params, h)
            return jnp.mean(jax.nn.softplus(-x * logits)), logits

        (loss, logits), grads = jax.value_and_grad(loss_and_logits, has_aux=True)(state.params)
        updates, opt_state = self.optimizer.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        metrics = {"loss": loss, "bit_error": jnp.mean((x * logits) < 0)}
        return state._replace(params=params, opt_state=opt_state, step=state.step + 1), metrics

    def sample(self, key, state: BernoulliDenoisingTrainState, num_samples: int) -> WeightedSamples:
        """``num_samples`` denoised samples ``(num_samples, *event_shape)`` of +-1, each from its chain (:func:`draw`).

        Unweighted: ``log_w`` is 0 (``.ess`` is 1 by construction and says nothing about quality) and
        ``.log_Z`` is NaN: the method learns from samples and estimates no normalising constant.
        """
        x, _, _ = draw(key, self.settings, state, num_samples)
        return WeightedSamples(x, jnp.zeros(num_samples, jnp.float32), jnp.nan)

    def evaluate(self, key, state: BernoulliDenoisingTrainState, num_samples: int, **options) -> dict:
        """Figures of ``num_samples`` samples (floats); it takes no option.

        ``acceptance_rate`` of the chains (mean over steps), ``denoiser_evals_per_sample``;
        ``tv``, the total variation to the exact law by enumeration, and ``tv_floor``, that of
        ``num_samples`` exact samples (mean of 20 multinomial draws), for a target with a density
        on ``d <= 20`` bits; otherwise ``mmd``, the Hamming-kernel MMD
        (:func:`~jaxsamp.diagnostics.binary_discrepancies.hamming_mmd`, length ``d / 4`` bits) to the
        held-out split of a data set or to the training data. The draws are unweighted, so the
        importance-weight figures (:func:`~jaxsamp.diagnostics.weights.figures`) would say nothing
        (``ess`` 1 by construction, no ``log Z``) and are not reported.
        """
        if options:
            raise InputError(f"evaluate takes no option {', '.join(sorted(options))}", "its options: none")
        x, _, trace = draw(key, self.settings, state, num_samples)
        out = {
            "acceptance_rate": float(np.mean(np.asarray(trace["acceptance_rate"]))),
            "denoiser_evals_per_sample": float(self.settings.sampler.denoiser_evals_per_sample),
        }
        d = math.prod(self.event_shape)
        if self.target is not None and not is_data_set(self.target) and d <= MAX_ENUMERATION_DIM:
            law = enumerated_probabilities(self.target)
            out["tv"] = total_variation(x, law)
            out["tv_floor"] = expected_tv_of_exact_samples(law, num_samples)[0]
        else:
            held_out = self.target is not None and is_data_set(self.target)
            reference = jnp.asarray(self.target.test()) if held_out else state.data
            m = min(num_samples, reference.shape[0])
            out["mmd"] = float(hamming_mmd(x[:m], reference[:m], d / 4))
        return out


def build(target, settings: BernoulliDenoisingSettings | None = None, *, batch_size: int | None = None,
          optimizer: optax.GradientTransformation | None = None) -> LearnedSampler:
    """Bernoulli-noise denoising (Bach & Saremi 2025, ICML) as a :class:`~jaxsamp.core.LearnedSampler`.

    ``jaxsamp.fit("bernoulli_denoising", target_or_data, ...)`` calls it. Each step is one
    optimiser step of the denoiser on ``batch_size`` examples; ``sample`` runs
    ``settings.sampler``'s chains of the noisy variable from uniform noise and denoises them
    (:mod:`~jaxsamp.learned.binary.bernoulli_samplers`), through the driver (the sampler's
    ``jit_sample`` is False); ``evaluate`` scores the draws (:meth:`BernoulliDenoising.evaluate`;
    no options).

    Parameters
    ----------
    target : Target or array ``(n, *event_shape)`` of +-1
        What the denoiser learns from: a +-1 target with exact samples (``num_train_samples``
        of them are drawn by ``init``, from its key), a data set (``binary_digits``: its
        training split), or an array of clean samples.
    settings : BernoulliDenoisingSettings, optional
        Default: the class's defaults.
    batch_size : int, optional
        Examples per step (default :data:`BATCH_SIZE`, 256).
    optimizer : optax.GradientTransformation, optional
        Instead of Adam at ``settings.learning_rate`` (cosine-decayed over ``decay_steps``) after
        clipping the gradient norm at ``max_grad_norm``.

    Returns
    -------
    LearnedSampler
        Judged for progress: the cross-entropy on a fixed training set is a fixed objective.

    Notes
    -----
    **Step metrics**: ``loss``, the mean per-bit logistic loss of the batch (nats per bit;
    ``log 2 = 0.693`` for a coin, its floor is the posterior's conditional entropy), and
    ``bit_error``, the error rate of the Hamming-optimal readout ``sign(l_theta)`` on the batch
    (fraction of bits). Each step draws ``batch_size`` examples with replacement, each with
    ``k ~ U{1..max_measurements}`` fresh measurements (:func:`noisy_batch`).

    **Sampling** runs ``sampler`` chains of the noisy variable from uniform noise and denoises them
    (:func:`draw`); the draws are unweighted and approximate (the chain and the denoiser are both
    approximate).

    **Settings for a new target.** ``alpha`` sets the noise: the paper's experiments and ours
    use ``alpha = 1`` (12 % of bits flipped), where ``q_alpha`` is smooth enough for short
    chains and the posterior sharp enough to denoise; smaller ``alpha`` mixes faster and
    denoises worse. Multi-measurement sampling (``max_measurements = sampler.num_measurements = 4``,
    two-stage moves, ``sign`` readout) gave our best TV at equal network evaluations on the
    16-bit mixture (BENCHMARKS.md). The network: an MLP (2 x 256) for unstructured bits, a
    ``conv`` network on images (``padding="zeros"``) and periodic lattices (``"circular"``);
    train until ``bit_error`` stops falling (a few thousand steps of 256 on 16 bits,
    ``decay_steps`` = the number of steps).
    """
    settings = BernoulliDenoisingSettings() if settings is None else settings
    numerics = BernoulliDenoising(target, settings, BATCH_SIZE if batch_size is None else batch_size, optimizer)
    return LearnedSampler(numerics.init, numerics.step, numerics.sample, numerics.evaluate,
                          TrainingHealth(judge_progress=True), jit_sample=False)


def mean_squared_error(denoiser: Callable, exact: Callable, h: jax.Array) -> jax.Array:
    """``mean (g(h) - g_exact(h))^2`` over a batch ``h`` ``(n, *event_shape)``: how far a denoiser is from the exact one (jitted)."""
    return jax.jit(lambda h: jnp.mean((jax.vmap(denoiser)(h) - jax.vmap(exact)(h)) ** 2))(h)
