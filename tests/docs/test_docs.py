"""The documentation: the metric glossary covers every experiment kind, and the site builds without warnings.

The full build (``make docs``: every API page from the docstrings) takes about a minute
(62 s on 2 CPU cores), so CI runs it as its own step (``.ci/run``); here the
hand-written pages, the generated glossary and benchmark tables, the changelog and the
notebooks are built with Sphinx's ``dummy`` builder (no output written), warnings as errors.
"""

import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from jaxsamp.core.registry import EXPERIMENTS
from jaxsamp.experiments import glossary
from jaxsamp.experiments import kinds as _kinds  # noqa: F401  (registers the kinds)

ROOT = Path(__file__).resolve().parents[2]


def test_glossary_describes_every_registered_kind_and_nothing_else():
    assert set(glossary.GLOSSARY) == set(EXPERIMENTS.names())
    for kind, entries in {**glossary.GLOSSARY, "every kind": glossary.COMMON, "vocabulary": glossary.VOCABULARY}.items():
        for key, entry in entries.items():
            assert entry.meaning.strip() and entry.good.strip(), (kind, key)


def test_glossary_matches_exact_keys_before_placeholders():
    leaps = glossary.GLOSSARY["leaps"]
    assert glossary.describe("leaps", "ess") is glossary.VOCABULARY["ess"]
    assert glossary.describe("leaps", "ess_trapezoid") is leaps["ess_<rule>"]
    assert glossary.describe("gflownet", "tlm_policy_l1") is glossary.GLOSSARY["gflownet"]["<policy>_policy_l1"]
    assert glossary.describe("mcmc", "wall_seconds") is glossary.COMMON["wall_seconds"]
    assert glossary.describe("mcmc", "ess_trapezoid") is None


def test_an_undocumented_key_warns_and_is_named():
    with pytest.warns(glossary.UndocumentedMetricWarning, match="no_such_key"):
        assert glossary.check_documented("smc", ["log_Z_hat", "no_such_key"]) == ["no_such_key"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert glossary.check_documented("smc", ["log_Z_hat", "warnings", "wall_seconds"]) == []


def test_one_vocabulary_each_name_listed_once_with_one_meaning():
    """A shared figure is described once, in the vocabulary: no kind lists it again (with a meaning of its own), no
    kind's placeholder captures it, and no glossary key is a retired or ambiguous name (``log_Z`` alone was the exact
    value in one kind and an estimate in others; ``log_Z_reverse`` and ``log_Z_hat`` were one concept)."""
    for kind, entries in glossary.GLOSSARY.items():
        assert not set(entries) & set(glossary.VOCABULARY), (kind, set(entries) & set(glossary.VOCABULARY))
        assert not set(entries) & set(glossary.COMMON), kind
        for key in glossary.VOCABULARY:
            assert glossary.describe(kind, key) is glossary.VOCABULARY[key], (kind, key)
        assert glossary.vocabulary_problems(entries) == [], kind
    assert glossary.vocabulary_problems(glossary.VOCABULARY) == []
    assert glossary.vocabulary_problems(["log_Z", "ess"]) == ["'log_Z' is retired: use log_Z_hat or log_Z_exact"]


def test_site_builds_without_warnings_api_pages_apart(tmp_path):
    command = [
        sys.executable, "-m", "sphinx", "-b", "dummy", "-W", "--keep-going", "-q",
        "-D", "exclude_patterns=_build,_templates,api.md,api",
        "-D", "suppress_warnings=toc.not_readable",
        "-d", str(tmp_path / "doctrees"), str(ROOT / "docs"), str(tmp_path / "out"),
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
