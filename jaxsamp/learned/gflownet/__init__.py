"""GFlowNets on DAG environments, with a choice of backward policy, trajectory likelihood maximisation among them.

Papers: Gritsaev, Morozov, Samsonov & Tiapkin (2025), "Optimizing backward policies in
GFlowNets via trajectory likelihood maximization", ICLR (TLM); the losses of Malkin et al.
(2022, TB), Bengio et al. (2023, DB), Madan et al. (2023, SubTB) and Tiapkin et al.
(2024, soft DQN; Munchausen bonus of Vieillard et al. 2020).

Files
-----
training
    The :class:`GFlowNet` trainer (one step: rollouts, backward-policy step, forward-loss step) and its learning curve.
sampling
    What a trained GFlowNet gives: weighted draws ``sample(state, key, n)`` (trajectory importance weights,
    a consistent ``log Z``), ``evaluate(state, key, n)`` and the forward policy's exact terminal distribution.
losses
    TB, DB, SubTB(lambda) and the soft / Munchausen DQN TD loss, as pure functions of per-transition log-probabilities.
policy
    The shared-trunk P_F / P_B / log F network, vectorised rollouts and per-transition log-probabilities.

``jaxsamp.fit("gflownet", env, num_steps=...)`` builds and trains one (:mod:`jaxsamp.learned.methods`).
The main names are re-exported here: ``from jaxsamp.learned.gflownet import GFlowNet, GFlowNetSettings, learning_curve``.
"""

from jaxsamp.learned.gflownet.training import (
    BACKWARD_POLICIES,
    LOSSES,
    GFlowNet,
    GFlowNetSettings,
    learning_curve,
)

__all__ = ["BACKWARD_POLICIES", "LOSSES", "GFlowNet", "GFlowNetSettings", "learning_curve"]
