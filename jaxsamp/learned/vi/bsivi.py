"""BSIVI, AISIVI's baseline (Pielok, Bischl & Ruegamer 2025, ICML): semi-implicit VI with SIVI's score estimate.

The semi-implicit Gaussian family of :mod:`~jaxsamp.learned.vi.semi_implicit`, its score
estimated from the latent that generated each ``z`` and ``K - 1`` prior draws (SIVI's mixture
estimate, Yin & Zhou 2018, ICML), as the reference code's ``bsivi``; no reverse model.
:func:`build` makes the method (``jaxsamp.fit("bsivi", ...)``); the draws ``z`` per step are its
``batch_size``.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated

import optax

from jaxsamp.core.protocols import LearnedSampler, TrainingHealth
from jaxsamp.core.validation import Interval, NonNegativeInt, OneOf, PositiveFloat, PositiveInt, check_fields, settings_or_default
from jaxsamp.learned.vi.semi_implicit import LATENT_PRIORS, SemiImplicit

#: Draws ``z`` per step when ``build`` is given no ``batch_size`` (the reference code's toys').
BATCH_SIZE = 128


@dataclasses.dataclass(frozen=True)
class BSIVISettings:
    """Hyper-parameters of BSIVI, and of the semi-implicit family AISIVI shares (the draws ``z`` per step are the
    method's ``batch_size``).

    Attributes
    ----------
    latent_dim : int
        Dimension of ``eps`` (at least 2: AISIVI's reverse model is a coupling flow on it).
    latent_prior : {"normal", "uniform"}
        ``p(eps)``: ``N(0, I)``, or the reference code's ``U[0, 1]^d``, with which AISIVI's reverse model ends
        in a sigmoid (the reference's final Logit layer) so that it proposes only inside the prior's support.
    hidden_width, hidden_layers : int
        The mean network ``mu_phi``; ``hidden_layers = 0`` makes it affine.
    init_scale : float
        Initial ``s`` (the raw parameter starts at ``softplus^-1(init_scale / scale_factor)``).
    scale_factor : float
        ``alpha`` in ``s = alpha softplus(v)``: 1, or the reference code's 0.1 (with ``init_scale``
        ``0.1 softplus(1) = 0.1313262``, its start ``v = 1``).
    num_inner : int
        ``K``, inner draws of ``eps`` per ``z`` (for BSIVI, counting the ``eps`` that generated ``z``).
    learning_rate : float
        Adam's learning rate of ``phi``.
    decay_step : int or None
        After this many ``phi`` updates (AISIVI: steps past pretraining) the learning rates are
        multiplied by ``decay_factor`` (the reference code's ``StepLR``: a factor 0.1 at step 2000 of
        4000 on the toys); None keeps them constant.
    decay_factor : float
        The factor of that single drop, in (0, 1].
    marginal_draws : int
        Prior draws of the Monte Carlo marginal ``log q(z)`` used to score a fit
        (:meth:`~jaxsamp.learned.vi.semi_implicit.SemiImplicitFamily.marginal_log_density`), not in training.
    """

    latent_dim: Annotated[int, Interval(ge=2)] = 3
    latent_prior: Annotated[str, OneOf(LATENT_PRIORS)] = "normal"
    hidden_width: PositiveInt = 64
    hidden_layers: NonNegativeInt = 2
    init_scale: PositiveFloat = 1.0
    scale_factor: PositiveFloat = 1.0
    num_inner: PositiveInt = 256
    learning_rate: PositiveFloat = 1e-2
    decay_step: PositiveInt | None = None
    decay_factor: Annotated[float, Interval(gt=0, le=1)] = 0.1
    marginal_draws: PositiveInt = 10_000

    def __post_init__(self):
        check_fields(self)


def build(target, settings: BSIVISettings | None = None, *, batch_size: int | None = None,
          optimizer: optax.GradientTransformation | None = None) -> LearnedSampler:
    """BSIVI, AISIVI's baseline: semi-implicit VI with SIVI's prior-draw score estimate, no reverse model.

    Parameters
    ----------
    target : Target
        Real-valued with a flat state ``(d,)``.
    settings : BSIVISettings, optional
        Default ``BSIVISettings()``.
    batch_size : int, optional
        Draws ``z`` per step (default :data:`BATCH_SIZE`).
    optimizer : optax.GradientTransformation, optional
        ``phi``'s optimiser instead of Adam at ``settings.learning_rate`` (and its
        ``decay_step``); a non-finite gradient still skips its update.

    Returns
    -------
    LearnedSampler
        :meth:`~jaxsamp.learned.vi.semi_implicit.SemiImplicit.learned_sampler`'s; the step's
        metrics are listed at :meth:`~jaxsamp.learned.vi.semi_implicit.SemiImplicit.step`
        (``tau_nll`` NaN, ``skipped_tau_updates`` 0: no reverse model). Its ``q_hat`` holds the
        own ``eps`` and is biased high (SIVI's bound, Yin & Zhou 2018), so the weights of
        ``sample`` are biased low.

    Notes
    -----
    Its loss (the negated ELBO estimate of the step's draws) is not judged for progress: its
    ``log q`` is a mixture estimate whose bias changes with ``q``. It cannot lose its inner
    weights as AISIVI can (the own ``eps`` dominates them by design), so it has no check of them.
    """
    settings = settings_or_default(settings, BSIVISettings)
    numerics = SemiImplicit("bsivi", target, settings, BATCH_SIZE if batch_size is None else batch_size, optimizer,
                            reverse_model=False)
    return numerics.learned_sampler(TrainingHealth(judge_progress=False))
