"""The numbers do not move: every learned method, a few updates at fixed keys, against the figures recorded on the
code before the learned-sampler contract refactor (``recorded_numbers.py`` says what is recorded and how).

Budget: float32 round-off. A relative difference of 1e-4 on every figure (1e-6 absolute near zero), which a
change of key, of loss, of update rule or of sample count exceeds by orders of magnitude after three updates;
the recording host reproduces the file bit for bit (``recorded_numbers.py --compare`` prints 0). Another CPU's
vector extension may reorder float reductions, hence the tolerance.
"""

import json

import numpy as np
import pytest

from jaxsamp.experiments import glossary
from recorded_numbers import CASES, RECORD, compute

#: method names changed by the refactor: recorded name -> registered name
RENAMED: dict[str, str] = {"bernoulli": "bernoulli_denoising", "snis_fkl": "snis_forward_kl"}
#: metric names changed to the one vocabulary (``jaxsamp.diagnostics.weights.figures``, the glossary), for every method
VOCABULARY = {
    "history": {"log_z": "log_Z_learned", "log_z_learned": "log_Z_learned", "logz_abs_err": "log_Z_learned_abs_err",
                "energy_evals": "target_evals", "nonfinite": "nonfinite_samples", "l1": "empirical_l1",
                "kl": "empirical_kl"},
    "evaluate": {"log_Z_reverse": "log_Z_hat", "log_Z_reverse_abs_err": "log_Z_abs_err", "log_Z": "log_Z_hat",
                 "nonfinite_paths": "nonfinite_samples", "log_z_learned": "log_Z_learned",
                 "logz_abs_err": "log_Z_learned_abs_err", "energy_evals": "target_evals"},
}
#: renames of one method's own figures: method -> section -> recorded key -> key now
RENAMED_KEYS: dict[str, dict[str, dict[str, str]]] = {
    # the variational family: log Z - ELBO is the ELBO's error, the forward KL on exact draws the EUBO's
    **{method: {"evaluate": {"elbo_gap": "elbo_abs_err", "forward_kl": "eubo_abs_err"}}
       for method in ("softcvi", "elbo", "snis_fkl", "aisivi", "bsivi")},
    # the headline rule (exact here) is named once, canonically; the free-energy network's log Z is a learned log Z
    "leaps": {"evaluate": {"ess_exact": "ess", "log_Z_hat_exact": "log_Z_hat", "log_Z_abs_err_exact": "log_Z_abs_err",
                           "log_Z_free_energy": "log_Z_learned", "log_Z_free_energy_abs_err": "log_Z_learned_abs_err"}},
    # a second set of weights is named as LEAPS names its weight rules: <figure>_<weights>
    "curves": {"evaluate": {"log_Z_jarzynski": "log_Z_hat_jarzynski", "log_Z_jarzynski_abs_err": "log_Z_abs_err_jarzynski"}},
    # the importance-sampling log Z of the sampler's own draws (of the path measure: its samples are paths)
    "tps_dps": {"evaluate": {"log_Z_path": "log_Z_hat"}},
}

RELATIVE, ABSOLUTE = 1e-4, 1e-6


def renamed(record: dict, method: str) -> dict:
    """``record`` with its history and evaluate keys under their current names."""
    out = dict(record)
    for section in ("history", "evaluate"):
        names = {**VOCABULARY[section], **RENAMED_KEYS.get(method, {}).get(section, {})}
        out[section] = {names.get(k, k): v for k, v in record[section].items()}
    return out


def assert_one_vocabulary(record: dict) -> None:
    """No retired or ambiguous name, and the canonical figures mean what the vocabulary says they mean."""
    assert glossary.vocabulary_problems(set(record["history"]) | set(record["evaluate"])) == []
    figures = record["evaluate"]
    for estimate, error in (("log_Z_hat", "log_Z_abs_err"), ("elbo", "elbo_abs_err"), ("eubo", "eubo_abs_err"),
                            ("log_Z_learned", "log_Z_learned_abs_err")):
        if error in figures:
            assert figures[error] == pytest.approx(abs(figures[estimate] - figures["log_Z_exact"]), rel=1e-6, abs=1e-9)
    if np.isfinite(figures.get("ess", np.nan)):
        assert 0.0 < figures["ess"] <= 1.0 + 1e-6  # normalised, everywhere
    if "elbo" in figures and np.isfinite(figures.get("log_Z_hat", np.nan)):
        assert figures["elbo"] <= figures["log_Z_hat"] + 1e-6  # Jensen on the same draws


def test_every_registered_method_is_recorded():
    import jaxsamp.learned.methods  # noqa: F401
    from jaxsamp.core.registry import LEARNED

    assert sorted(RENAMED.get(m, m) for m in CASES) == LEARNED.names()


@pytest.mark.parametrize("method", sorted(CASES))
def test_numbers_are_unchanged(method):
    recorded = renamed(json.loads(RECORD.read_text())["methods"][method], method)
    now = compute(method, RENAMED.get(method, method))
    for section in ("history", "evaluate"):  # figures may be added, none may be lost
        assert set(recorded[section]) <= set(now[section]), (section, set(recorded[section]) - set(now[section]))
    assert_one_vocabulary(now)
    assert [s for s, _, _ in now["state"]] == [s for s, _, _ in recorded["state"]]
    for name, old in recorded["history"].items():
        np.testing.assert_allclose(now["history"][name], old, rtol=RELATIVE, atol=ABSOLUTE, err_msg=name)
    sums = lambda record: np.asarray([[total, size] for _, total, size in record["state"]], float)  # noqa: E731
    np.testing.assert_allclose(sums(now), sums(recorded), rtol=RELATIVE, atol=ABSOLUTE, err_msg="state")
    for key in ("log_w", "x_sum"):
        np.testing.assert_allclose(now[key], recorded[key], rtol=RELATIVE, atol=ABSOLUTE, err_msg=key)
    for name, old in recorded["evaluate"].items():
        np.testing.assert_allclose(now["evaluate"][name], old, rtol=RELATIVE, atol=ABSOLUTE, err_msg=name)
