"""GFlowNets on DAG environments, with a choice of backward policy, trajectory likelihood maximisation among them.

Papers: Gritsaev, Morozov, Samsonov & Tiapkin (2025), "Optimizing backward policies in
GFlowNets via trajectory likelihood maximization", ICLR (TLM); the losses of Malkin et al.
(2022, TB), Bengio et al. (2023, DB), Madan et al. (2023, SubTB) and Tiapkin et al.
(2024, soft DQN; Munchausen bonus of Vieillard et al. 2020).

Files
-----
training
    :func:`build` (the method's constructor: a :class:`~jaxsamp.core.LearnedSampler`), its settings,
    the :class:`GFlowNet` numerics (one step: rollouts, backward-policy step, forward-loss step) and
    the learning curve, the trained policy's exact terminal distribution.
sampling
    What a policy gives: weighted draws (trajectory importance weights, a consistent ``log Z``)
    and the forward policy's exact terminal distribution.
losses
    TB, DB, SubTB(lambda) and the soft / Munchausen DQN TD loss, as pure functions of per-transition log-probabilities.
policy
    The shared-trunk P_F / P_B / log F network, vectorised rollouts and per-transition log-probabilities.

``jaxsamp.fit("gflownet", env, num_steps=...)`` builds and trains one (:mod:`jaxsamp.learned.methods`).
The main names are re-exported here: ``from jaxsamp.learned.gflownet import build, GFlowNetSettings, learning_curve``.
"""

from jaxsamp.core.lazy import submodule_getattr
from jaxsamp.learned.gflownet.training import (
    BACKWARD_POLICIES,
    LOSSES,
    GFlowNet,
    GFlowNetSettings,
    build,
    learning_curve,
    policy_distribution,
)

__all__ = ["BACKWARD_POLICIES", "LOSSES", "GFlowNet", "GFlowNetSettings", "build", "learning_curve",
           "policy_distribution"]

__getattr__ = submodule_getattr(__name__)  # submodules on first use
