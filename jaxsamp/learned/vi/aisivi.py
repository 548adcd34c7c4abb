"""AISIVI: unbiased implicit VI with an importance-sampled score (Pielok, Bischl & Ruegamer 2025, ICML).

The semi-implicit Gaussian family of :mod:`~jaxsamp.learned.vi.semi_implicit` (the module says how
the score is estimated and how ``phi`` and the reverse model ``tau_psi`` are updated), its score
estimated by self-normalised importance sampling from the reverse model. :func:`build` makes the
method (``jaxsamp.fit("aisivi", ...)``); the draws ``z`` per step are its ``batch_size``.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import optax

from jaxsamp.core.protocols import LearnedSampler, TrainingHealth
from jaxsamp.core.validation import NonNegativeInt, PositiveFloat, PositiveInt, settings_or_default
from jaxsamp.diagnostics import health
from jaxsamp.learned.vi.bsivi import BSIVISettings
from jaxsamp.learned.vi.semi_implicit import SemiImplicit

#: Draws ``z`` per step when ``build`` is given no ``batch_size`` (the paper's toys').
BATCH_SIZE = 128


@dataclasses.dataclass(frozen=True)
class AISIVISettings(BSIVISettings):
    """Hyper-parameters of AISIVI: the semi-implicit family's and ``phi``'s (:class:`~jaxsamp.learned.vi.bsivi.BSIVISettings`,
    every field of which AISIVI uses too) and its reverse model's.

    Attributes
    ----------
    tau_layers, tau_hidden_width, tau_hidden_layers : int
        Couplings of ``tau``, and the width and number of hidden layers of their conditioners.
        The reference code's toys use one hidden layer of width ``2 (latent_dim + d)``
        (8 on a 2-D target with a 2-d latent).
    tau_max_log_scale : float
        Bound on each coupling's log-scale in ``tau`` (soft clamp, see
        :class:`~jaxsamp.learned.vi.families.CouplingFlow`).
    pretrain_steps : int
        Initial steps in which only ``tau`` is trained.
    tau_learning_rate : float
        Adam's learning rate of ``psi`` (it drops with ``phi``'s, ``decay_step`` steps past pretraining).
    """

    tau_layers: PositiveInt = 6
    tau_hidden_width: PositiveInt = 64
    tau_hidden_layers: PositiveInt = 2
    tau_max_log_scale: PositiveFloat = 3.0
    pretrain_steps: NonNegativeInt = 100
    tau_learning_rate: PositiveFloat = 1e-2


def build(target, settings: AISIVISettings | None = None, *, batch_size: int | None = None,
          optimizer: optax.GradientTransformation | None = None) -> LearnedSampler:
    """AISIVI (Pielok, Bischl & Ruegamer 2025, ICML): semi-implicit VI with a reverse model's importance-sampled score.

    Parameters
    ----------
    target : Target
        Real-valued with a flat state ``(d,)``.
    settings : AISIVISettings, optional
        Default ``AISIVISettings()``.
    batch_size : int, optional
        Draws ``z`` per step, for both updates (default :data:`BATCH_SIZE`).
    optimizer : optax.GradientTransformation, optional
        ``phi``'s optimiser instead of Adam at ``settings.learning_rate`` (and its
        ``decay_step``); a non-finite gradient still skips its update. The reverse
        model keeps its own (``tau_learning_rate``).

    Returns
    -------
    LearnedSampler
        :meth:`~jaxsamp.learned.vi.semi_implicit.SemiImplicit.learned_sampler`'s; the step's
        metrics are listed at :meth:`~jaxsamp.learned.vi.semi_implicit.SemiImplicit.step`.
        ``sample`` weights draws by ``log p~ - log q_hat``, ``q_hat`` the unbiased ``K``-draw
        estimate, so ``log q_hat`` is biased low (Jensen) and the weights are approximate.

    Notes
    -----
    Its health (:class:`~jaxsamp.core.TrainingHealth`): the loss (the negated ELBO
    estimate of the step's draws) is judged on the steps after ``pretrain_steps`` only (no
    ``phi`` update is made before, and it is NaN there), not for progress (its ``log q`` is
    estimated, with a reverse model trained alongside); and a collapsed reverse model is a
    warning (:func:`~jaxsamp.diagnostics.health.inner_ess_warnings`).

    Settings per target: the paper's toys used a 2-d latent, a 2 x 128 mean network,
    batches of 128, ``K`` = 2 x 4096 inner draws, Adam at 1e-2 with a tenfold drop
    half-way through 4000 steps (``decay_step``) and ``s = 0.1 softplus(v)`` from ``v = 1``
    (``scale_factor`` 0.1, ``init_scale`` 0.1313262); its logistic regression a 10-d
    latent, 2 x 100, learning rate 1e-3. ``latent_dim`` sets how non-Gaussian ``q``
    can be (2-3 for 2-D toys, about ``d`` for a posterior); ``init_scale`` should
    match the target's per-coordinate scale (``q`` starts at ``N(mu(eps), s^2)``);
    ``num_inner`` trades the score estimate's bias for cost (each step costs
    ``batch_size x num_inner`` conditional densities), and ``pretrain_steps`` lets
    ``tau`` learn ``q(eps | z)`` before ``phi`` follows its score.
    """
    settings = settings_or_default(settings, AISIVISettings)
    numerics = SemiImplicit("aisivi", target, settings, BATCH_SIZE if batch_size is None else batch_size, optimizer,
                            reverse_model=True)

    def after_pretraining(history: dict) -> dict:
        return {None: np.arange(len(history["loss"])) >= settings.pretrain_steps}

    def collapsed_reverse_model(history: dict) -> list[str]:
        return health.inner_ess_warnings(history["inner_ess"], settings.num_inner)

    return numerics.learned_sampler(TrainingHealth(judge_progress=False, stages=after_pretraining,
                                                   checks=collapsed_reverse_model))
