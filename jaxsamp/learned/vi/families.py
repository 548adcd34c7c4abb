"""Variational families on distrax: diagonal and full-rank Gaussians, and masked-coupling (RealNVP) flows.

A family is an immutable object describing a parametric density ``q_phi`` on
``R^d``. Its parameters ``phi`` are a PyTree (the ``nnx.split`` state of a flax
nnx module), so a trained family is something the driver checkpoints, and every
function of them is pure:

* ``family.init(key) -> params``;
* ``family.distribution(params) -> distrax.Distribution`` (event shape ``(d,)``);
* ``family.sample_and_log_prob(key, params, n) -> (x, log_q)``, shapes ``(n, d)``, ``(n,)``:
  reparameterised draws (differentiable in ``params``) with their log densities;
* ``family.log_prob(params, x) -> log_q``, ``x`` of shape ``(n, d)``.

Every density, bijector and log-determinant is distrax's
(``MultivariateNormalDiag``, ``MultivariateNormalTri``, ``Transformed``,
``Chain``, ``MaskedCoupling``, ``ScalarAffine``, ``RationalQuadraticSpline``);
this module only maps unconstrained parameters onto them.

* :class:`DiagonalGaussian`: ``N(m, diag(s^2))``, ``s = softplus(raw)``;
* :class:`FullRankGaussian`: ``N(m, L L^T)`` with ``L`` lower triangular, its
  diagonal ``softplus(raw)`` (a Cholesky factor);
* :class:`CouplingFlow`: a RealNVP flow (Dinh, Sohl-Dickstein & Bengio 2017,
  ICLR, the affine coupling layer) of masked couplings with alternating parity masks whose inner
  bijector is affine or a rational-quadratic spline (Durkan et al. 2019,
  NeurIPS), conditioners :class:`~jaxsamp.nets.mlp.MLP`, then an elementwise
  affine map, pushed from ``N(0, I)``. Conditioners start at zero output, so a
  fresh flow is ``N(0, I)`` exactly. An affine coupling's log-scale can be
  soft-clamped (``max_log_scale``): unclamped, the scales of successive couplings
  compound (each ``exp`` of an MLP that grows linearly in its input), and a flow
  that is only moderately trained can send a 3-sigma base draw to ``inf``.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence

import distrax
import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxsamp.core.data_parallel import batch_constraint
from jaxsamp.core.errors import InputError
from jaxsamp.core.validation import check_float, check_int
from jaxsamp.nets.mlp import MLP

COUPLINGS = ("affine", "spline")


def inverse_softplus(y):
    """``x`` with ``softplus(x) = y``, elementwise for ``y > 0``."""
    return y + jnp.log(-jnp.expm1(-jnp.asarray(y)))


def _shapes_by_path(params) -> dict[str, tuple[int, ...]]:
    """``{"path/to/leaf": shape}`` of a parameter PyTree."""
    leaves = jax.tree_util.tree_flatten_with_path(params)[0]
    paths = [jax.tree_util.keystr(path, simple=True, separator="/").removesuffix("/value") for path, _ in leaves]
    return {path: tuple(jnp.shape(a)) for path, (_, a) in zip(paths, leaves)}


class DiagonalGaussianModule(nnx.Module):
    """Parameters of ``N(loc, diag(softplus(raw_scale)^2))``."""

    def __init__(self, dim: int, init_scale: float):
        self.loc = nnx.Param(jnp.zeros(dim))
        self.raw_scale = nnx.Param(jnp.full(dim, inverse_softplus(init_scale)))

    def __call__(self) -> distrax.Distribution:
        return distrax.MultivariateNormalDiag(self.loc[...], jax.nn.softplus(self.raw_scale[...]))


class FullRankGaussianModule(nnx.Module):
    """Parameters of ``N(loc, L L^T)``, ``L = tril(off_diagonal, -1) + diag(softplus(raw_diagonal))``."""

    def __init__(self, dim: int, init_scale: float):
        self.loc = nnx.Param(jnp.zeros(dim))
        self.raw_diagonal = nnx.Param(jnp.full(dim, inverse_softplus(init_scale)))
        self.off_diagonal = nnx.Param(jnp.zeros((dim, dim)))

    def scale_tril(self) -> jax.Array:
        return jnp.tril(self.off_diagonal[...], -1) + jnp.diag(jax.nn.softplus(self.raw_diagonal[...]))

    def __call__(self) -> distrax.Distribution:
        return distrax.MultivariateNormalTri(self.loc[...], self.scale_tril())


class CouplingFlowModule(nnx.Module):
    """Conditioners of the masked couplings and the final elementwise affine map of a RealNVP flow.

    With ``context_dim > 0`` every conditioner also reads a context vector ``c``
    (concatenated to its masked input), so ``module(c)`` is a conditional density.
    """

    def __init__(self, dim: int, num_layers: int, hidden: Sequence[int], coupling: str, num_bins: int,
                 spline_range: float, rngs: nnx.Rngs, context_dim: int = 0, max_log_scale: float | None = None):
        self.dim, self.coupling, self.num_bins, self.spline_range = dim, coupling, num_bins, spline_range
        self.context_dim, self.max_log_scale = context_dim, max_log_scale
        per_dim = 2 if coupling == "affine" else 3 * num_bins + 1
        self.conditioners = nnx.List(
            [MLP(dim + context_dim, hidden, dim * per_dim, rngs=rngs) for _ in range(num_layers)]
        )
        for conditioner in self.conditioners:  # zero output: every coupling starts as the identity
            last = conditioner.layers[-1]
            last.kernel[...] = jnp.zeros_like(last.kernel[...])
            last.bias[...] = jnp.zeros_like(last.bias[...])
        self.loc = nnx.Param(jnp.zeros(dim))
        self.log_scale = nnx.Param(jnp.zeros(dim))

    def inner_bijector(self, conditioner_output: jax.Array) -> distrax.Bijector:
        """The elementwise bijector of one coupling, from its conditioner's output ``(..., d * per_dim)``."""
        p = conditioner_output.reshape(*conditioner_output.shape[:-1], self.dim, -1)
        if self.coupling == "affine":
            log_scale = p[..., 1]
            if self.max_log_scale is not None:  # soft clamp to (-max, max), the identity near 0
                log_scale = self.max_log_scale * jnp.tanh(log_scale / self.max_log_scale)
            return distrax.ScalarAffine(shift=p[..., 0], log_scale=log_scale)
        return distrax.RationalQuadraticSpline(p, range_min=-self.spline_range, range_max=self.spline_range)

    def masks(self) -> list[np.ndarray]:
        """Alternating parity masks: layer ``i`` keeps the coordinates ``j`` with ``i + j`` even."""
        j = np.arange(self.dim)
        return [(i + j) % 2 == 0 for i in range(len(self.conditioners))]

    def __call__(self, context: jax.Array | None = None) -> distrax.Distribution:
        if (context is None) != (self.context_dim == 0):
            raise InputError(f"this flow takes a context of shape ({self.context_dim},) exactly when context_dim > 0")
        if context is not None and jnp.shape(context) != (self.context_dim,):
            raise InputError(f"the context must have shape ({self.context_dim},), got {jnp.shape(context)}")

        def conditioned(conditioner):
            if context is None:
                return conditioner
            return lambda x: conditioner(jnp.concatenate([x, jnp.broadcast_to(context, (*x.shape[:-1], self.context_dim))], -1))

        couplings = [
            distrax.MaskedCoupling(mask, conditioned(conditioner), self.inner_bijector)
            for mask, conditioner in zip(self.masks(), self.conditioners)
        ]
        affine = distrax.Block(distrax.ScalarAffine(shift=self.loc[...], log_scale=self.log_scale[...]), 1)
        base = distrax.MultivariateNormalDiag(jnp.zeros(self.dim), jnp.ones(self.dim))
        return distrax.Transformed(base, distrax.Chain([affine, *reversed(couplings)]))  # Chain applies the last first


class Family:
    """A variational family: pure functions of a parameter PyTree (base class of the families below).

    Subclasses set ``name`` and implement :meth:`_module`, which builds the flax
    nnx module whose ``__call__()`` returns the distrax distribution.
    """

    name: str = "family"

    def __init__(self, dim: int):
        self.dim = check_int("dim", dim, ge=1)
        self.graphdef, template = nnx.split(nnx.eval_shape(lambda: self._module(nnx.Rngs(0))))
        self._param_shapes = _shapes_by_path(template)

    def _module(self, rngs: nnx.Rngs) -> nnx.Module:  # pragma: no cover - abstract
        raise TypeError(f"{type(self).__name__} must implement _module")

    def init(self, key: jax.Array) -> nnx.State:
        """Fresh parameters (conditioner networks initialised from ``key``)."""
        return nnx.split(self._module(nnx.Rngs(key)))[1]

    def module(self, params: nnx.State) -> nnx.Module:
        """The nnx module holding ``params``, checked against this family's parameter shapes.

        Raises
        ------
        InputError
            ``params`` of another structure or shape (another family, another ``dim``).
        """
        got = _shapes_by_path(params)
        if got != self._param_shapes:
            raise InputError(
                f"{self.name}: params do not fit this family (dim={self.dim}); "
                f"expected shapes {self._param_shapes}, got {got}",
                "make them with this family's init(key)",
            )
        return nnx.merge(self.graphdef, params)

    def distribution(self, params: nnx.State) -> distrax.Distribution:
        """The distrax distribution ``q_params``, event shape ``(dim,)``."""
        return self.module(params)()

    def sample_and_log_prob(self, key: jax.Array, params: nnx.State, n: int) -> tuple[jax.Array, jax.Array]:
        """``n`` reparameterised draws ``x ~ q_params`` and ``log q_params(x)``.

        Returns
        -------
        x : array, shape (n, dim)
            Differentiable in ``params`` (the reparameterisation trick).
        log_q : array, shape (n,)
        """
        n = check_int("n", n, ge=1)
        # the draws are the batch a data-parallel step splits over devices
        return batch_constraint(self.distribution(params).sample_and_log_prob(seed=key, sample_shape=(n,)))

    def log_prob(self, params: nnx.State, x: jax.Array) -> jax.Array:
        """``log q_params(x)`` of points ``x`` of shape ``(n, dim)``; returns shape ``(n,)``.

        Raises
        ------
        InputError
            ``x`` not of shape ``(n, dim)`` (checked on the static shape, so also inside ``jit``).
        """
        if jnp.ndim(x) != 2 or jnp.shape(x)[1] != self.dim:
            raise InputError(f"{self.name}.log_prob takes points of shape (n, {self.dim}), got {jnp.shape(x)}")
        return self.distribution(params).log_prob(x)


class _Gaussian(Family):
    """A Gaussian family whose module (``module_class``) starts at ``N(0, init_scale^2 I)``."""

    module_class: type

    def __init__(self, dim: int, init_scale: float = 1.0):
        self.init_scale = check_float("init_scale", init_scale, gt=0)
        super().__init__(dim)

    def _module(self, rngs: nnx.Rngs) -> nnx.Module:
        return self.module_class(self.dim, self.init_scale)


class DiagonalGaussian(_Gaussian):
    """``N(m, diag(s^2))`` with ``s = softplus(raw_scale)``; starts at ``N(0, init_scale^2 I)``.

    Parameters
    ----------
    dim : int
    init_scale : float
        Initial standard deviation of every coordinate.
    """

    name = "diagonal_gaussian"
    module_class = DiagonalGaussianModule


class FullRankGaussian(_Gaussian):
    """``N(m, L L^T)`` with a Cholesky factor ``L`` (positive diagonal by softplus); starts at ``N(0, init_scale^2 I)``.

    Parameters
    ----------
    dim : int
    init_scale : float
        Initial standard deviation of every coordinate.
    """

    name = "full_rank_gaussian"
    module_class = FullRankGaussianModule

    def params_at(self, loc, scale_tril) -> nnx.State:
        """The parameters of ``N(loc, scale_tril scale_tril^T)`` (``scale_tril`` lower triangular, positive diagonal).

        Raises
        ------
        InputError
            Wrong shapes, or a diagonal that is not positive.
        """
        loc, scale_tril = jnp.asarray(loc), jnp.asarray(scale_tril)
        if loc.shape != (self.dim,) or scale_tril.shape != (self.dim, self.dim):
            raise InputError(f"{self.name}: loc must have shape ({self.dim},) and scale_tril ({self.dim}, {self.dim}), "
                             f"got {loc.shape} and {scale_tril.shape}")
        diagonal = jnp.diag(scale_tril)
        if not bool(jnp.all(diagonal > 0)):
            raise InputError(f"{self.name}: scale_tril must have a positive diagonal")
        module = self._module(nnx.Rngs(0))
        module.loc[...] = loc
        module.raw_diagonal[...] = inverse_softplus(diagonal)
        module.off_diagonal[...] = jnp.tril(scale_tril, -1)
        return nnx.split(module)[1]


class CouplingFlow(Family):
    """RealNVP flow of masked couplings (affine or rational-quadratic spline) on distrax, from ``N(0, I)``.

    ``x = A(c_L(... c_1(z)))``, ``z ~ N(0, I)``: coupling ``i`` keeps the coordinates
    ``j`` with ``i + j`` even and maps the others elementwise by a bijector whose
    parameters an MLP computes from the kept ones (Dinh et al. 2017);
    ``A`` is an elementwise affine map ``loc + exp(log_scale) * y``. The density is
    distrax's change of variables, ``log q(x) = log N(z; 0, I) - sum_i log|det dc_i| - sum log_scale``.

    Parameters
    ----------
    dim : int
        At least 2 (a coupling needs coordinates on both sides of its mask).
    num_layers : int
        Number of couplings.
    hidden : sequence of int
        Hidden widths of each conditioner MLP.
    coupling : {"affine", "spline"}
        Inner bijector: ``ScalarAffine(shift, log_scale)`` or a rational-quadratic spline.
    num_bins : int
        Spline bins (``coupling="spline"``).
    spline_range : float
        The spline acts on ``[-spline_range, spline_range]`` and is the identity outside.
    context_dim : int
        ``> 0``: a conditional flow ``q(x | c)``, ``c`` of shape ``(context_dim,)`` read by every
        conditioner; build it with ``family.module(params)(c)`` (the unconditional
        ``distribution``, ``sample_and_log_prob`` and ``log_prob`` then refuse it).
    max_log_scale : float, optional
        Affine couplings only: each coupling's log-scale ``a`` becomes ``m tanh(a / m)``,
        so every scale lies in ``(e^-m, e^m)`` and a draw grows at most geometrically
        through the layers rather than overflow (a tanh-bounded log-scale, as RealNVP implementations use).
        Default: unbounded.
    """

    name = "coupling_flow"

    def __init__(self, dim: int, num_layers: int = 4, hidden: Sequence[int] = (64, 64), coupling: str = "affine",
                 num_bins: int = 8, spline_range: float = 5.0, context_dim: int = 0,
                 max_log_scale: float | None = None):
        if check_int("dim", dim, ge=1) < 2:
            raise InputError(f"a coupling flow needs dim >= 2, got {dim}", "on R^1 use family=\"full_rank_gaussian\"")
        if coupling not in COUPLINGS:
            raise InputError(f"coupling must be one of {', '.join(COUPLINGS)}, got {coupling!r}")
        self.num_layers = check_int("num_layers", num_layers, ge=1)
        self.hidden = tuple(check_int("hidden width", h, ge=1) for h in hidden)
        self.coupling = coupling
        self.num_bins = check_int("num_bins", num_bins, ge=1)
        self.spline_range = check_float("spline_range", spline_range, gt=0)
        self.context_dim = check_int("context_dim", context_dim, ge=0)
        self.max_log_scale = None if max_log_scale is None else check_float("max_log_scale", max_log_scale, gt=0)
        if self.max_log_scale is not None and coupling != "affine":
            raise InputError("max_log_scale bounds affine couplings; a spline coupling is bounded by spline_range")
        super().__init__(dim)

    def _module(self, rngs: nnx.Rngs) -> nnx.Module:
        return CouplingFlowModule(self.dim, self.num_layers, self.hidden, self.coupling, self.num_bins,
                                  self.spline_range, rngs, self.context_dim, self.max_log_scale)


FAMILIES = {cls.name: cls for cls in (DiagonalGaussian, FullRankGaussian, CouplingFlow)}

#: How settings name a family: ``"coupling_flow"`` or ``{"name": "coupling_flow", "num_layers": 4, ...}``.
FamilySpec = str | dict


def family_from_spec(dim: int, spec: FamilySpec) -> Family:
    """The family on ``R^dim`` that ``spec`` names: ``"full_rank_gaussian"`` or ``{"name": "coupling_flow", "num_layers": 4, ...}``.

    Every other key of a dict is a constructor argument of that family (``init_scale``
    for the Gaussians; ``num_layers``, ``hidden``, ``coupling``, ``num_bins``,
    ``spline_range``, ``max_log_scale`` for the flow).

    Raises
    ------
    InputError
        An unknown family or argument, or a bad value (the message names it).
    """
    spec = {"name": spec} if isinstance(spec, str) else dict(spec)
    name = spec.pop("name", None)
    if name not in FAMILIES:
        raise InputError(f"unknown family {name!r}; accepted: {', '.join(FAMILIES)}")
    cls = FAMILIES[name]
    accepted = [p for p in inspect.signature(cls.__init__).parameters if p not in ("self", "dim", "context_dim")]
    for key in spec:
        if key not in accepted:
            raise InputError(f"family {name!r}: unknown argument {key!r}; accepted: {', '.join(accepted)}")
    if "hidden" in spec:
        spec["hidden"] = tuple(spec["hidden"])
    return cls(dim, **spec)
