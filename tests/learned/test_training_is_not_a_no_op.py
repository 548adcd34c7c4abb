"""Training must matter: every registered learned method, trained at a fixed seed and tiny size, beats the same run
with its parameters frozen (``optimizer=optax.set_to_zero()``) on a figure of quality, by a stated margin.

A method whose training is a no-op (a lost gradient, an update never applied, a schedule at zero) scores as its
frozen run does and fails here. Each case reuses the small target and settings of ``recorded_numbers.py``, with
the changes listed (more updates, a larger learning rate, a faster parameter average) that let training show
within a few seconds.

Margins, from the seed-to-seed spread measured while writing this test (training keys 0, 1, 2, both arms at the
key; figures of 256 draws at evaluation keys 100, 101, 102; 2-core CPU, 2026-12-06). The margin lies above the
spread of the frozen figure over seeds (what a training that moves the parameters at random could show) and below
the smallest gain measured:

=================  =======================  ======================  =====================  ======
method             figure                   frozen (keys 0, 1, 2)   trained (keys 0, 1, 2)  margin
=================  =======================  ======================  =====================  ======
pis                ``elbo_abs_err``          1.37, 1.26, 1.18        0.35, 0.33, 0.30        0.5
dds                ``elbo_abs_err``          8123, 7799, 8088        1.17, 0.25, 0.30        1000
scld               ``elbo_abs_err``          2.45, 2.47, 2.47        0.11, 0.14, 0.11        1.5
cmcd               ``elbo_abs_err``          3.05, 3.04, 3.04        0.06, 0.03, 0.04        1.5
adjoint            ``w2`` (exact draws)      3.51, 3.44, 3.50        0.77, 1.04, 0.89        1.0
asbs               ``w2`` (exact draws)      3.50, 4.10, 3.52        2.17, 2.47, 2.19        0.8
softcvi, elbo,     ``elbo_abs_err``          2.70, 2.74, 2.83        <= 0.11                 1.5
snis_forward_kl
aisivi, bsivi      ``elbo_abs_err``          2.50, 3.56, 2.86        <= 0.47                 1.5
gflownet           ``policy_kl`` (exact)     1.93, 1.45, 1.51        0.95, 0.03, 0.02        0.6
bernoulli_denoi.   ``tv`` (exact)            0.71, 0.73, 0.71        0.44, 0.44, 0.45        0.15
curves             ``ess``                   0.23, 0.24, 0.26        0.35, 0.35, 0.40        0.06
leaps              ``log_Z_learned_abs_err`` 2.81, 2.71, 2.97        0.62, 0.44, 0.15        1.0
tps_dps            ``rmsd`` (keys 0, 1)      1.86, 1.87              0.06, 0.08              1.0
=================  =======================  ======================  =====================  ======

(``elbo_abs_err`` is log Z - ELBO, the KL of the sampler's draws to the target; ``w2`` the 2-Wasserstein distance
to exact draws; ``policy_kl`` KL(pi || pi_theta) of the exact terminal distribution; ``tv`` the total variation to
the exact distribution; ``rmsd`` the paths' closest approach to x_B, whose hit rate goes from 0-2 % to 100 %.)
With the trained arm's optimizer replaced by ``set_to_zero`` every case fails (both arms
then score the same).
"""

import warnings
from typing import NamedTuple

import optax
import pytest

import jaxsamp
import jaxsamp.learned.methods  # noqa: F401
from jaxsamp.core.registry import LEARNED, validate_dataclass
from recorded_numbers import CASES as RECORDED
from recorded_numbers import target
from test_recorded_numbers import RENAMED


class Case(NamedTuple):
    """How one method is trained and judged: ``changes`` to its recorded settings, ``figure`` of ``evaluate``,
    ``lower`` (whether lower is better) and the ``margin`` by which the trained run must beat the frozen one."""

    changes: dict
    steps: int
    figure: str
    lower: bool
    margin: float
    batch_size: int | None = None


GAUSSIAN_Q = Case({}, 50, "elbo_abs_err", True, 1.5)
#: a parameter average of a few updates, so that the evaluated network is the trained one after 20 epochs
ADJOINT = {"ema_decay": 0.5, "steps_per_epoch": 10}
CASES = {
    "pis": Case({"learning_rate": 1e-2}, 100, "elbo_abs_err", True, 0.5),
    "dds": Case({"learning_rate": 1e-2}, 100, "elbo_abs_err", True, 1000.0),
    # SCLD's 2 segments did not resample here (ESS above 0.3 at both ends), so its ELBO is the whole paths'; the
    # frozen arm still learns the schedule (its own optimiser), so the gain is the network's and the prior's
    "scld": Case({"learning_rate": 1e-2}, 100, "elbo_abs_err", True, 1.5),
    "cmcd": Case({"learning_rate": 1e-2}, 100, "elbo_abs_err", True, 1.5),
    "adjoint": Case(ADJOINT, 20, "w2", True, 1.0),
    "asbs": Case(ADJOINT, 20, "w2", True, 0.8),
    "softcvi": GAUSSIAN_Q,
    "elbo": GAUSSIAN_Q,
    "snis_forward_kl": GAUSSIAN_Q,
    "aisivi": GAUSSIAN_Q,
    "bsivi": GAUSSIAN_Q,
    "gflownet": Case({"learning_rate": 3e-3, "hidden": (32,)}, 200, "policy_kl", True, 0.6, batch_size=16),
    "bernoulli_denoising": Case({"learning_rate": 1e-2, "decay_steps": 300, "num_train_samples": 256}, 300, "tv",
                                True, 0.15),
    "curves": Case({}, 100, "ess", False, 0.06),
    "leaps": Case({"network_params": {"hidden": [16]}, "free_energy_hidden": [8], "loss_batch": 32,
                   "rollout_steps": 10, "curriculum_steps": 20, "eval_steps": 10, "buffer_rollouts": 4,
                   "mcmc_updates": 2}, 100, "log_Z_learned_abs_err", True, 1.0, batch_size=16),
    # a sharp relaxed indicator (sigma 0.5, not 3): the paths' weights differ before any path reaches x_B
    "tps_dps": Case({"time_step": 0.1, "num_time_steps": 20, "batch_size": 16, "buffer_size": 64,
                     "updates_per_rollout": 20, "annealing_rollouts": 1, "learning_rate": 1e-2, "indicator_std": 0.5},
                    8, "rmsd", True, 1.0, batch_size=16),
}
EVALUATION_DRAWS = 256


def figure(method: str, optimizer: optax.GradientTransformation | None) -> float:
    """``CASES[method].figure`` after training ``method`` at key 0 with ``optimizer`` (None: the method's own)."""
    recorded = {now: old for old, now in RENAMED.items()}.get(method, method)
    target_name, values, batch_size, _, options = RECORDED[recorded]
    case = CASES[method]
    settings = validate_dataclass(method, {**values, **case.changes}, LEARNED.entry(method).meta["settings"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a frozen run's health warnings
        fitted = jaxsamp.fit(method, target(target_name), num_steps=case.steps, key=0, settings=settings,
                             batch_size=case.batch_size or batch_size, optimizer=optimizer, progress=False)
        return fitted.evaluate(1, EVALUATION_DRAWS, **options)[case.figure]


def assert_training_beats_frozen(method: str, trained: float, frozen: float) -> None:
    case = CASES[method]
    gain = frozen - trained if case.lower else trained - frozen
    assert gain >= case.margin, f"{method}: {case.figure} {frozen:.4g} frozen -> {trained:.4g} trained, " \
                                f"a gain of {gain:.4g} < {case.margin}"


def test_every_registered_method_has_a_case():
    assert sorted(CASES) == LEARNED.names()


@pytest.mark.parametrize("method", sorted(CASES))
def test_training_beats_a_frozen_run(method):
    assert_training_beats_frozen(method, figure(method, None), figure(method, optax.set_to_zero()))
