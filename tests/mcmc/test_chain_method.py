"""``chain_method="auto"``: its rule on the measured batching gain, its record in a checkpoint folder, and what a
posterior says ran. No timing is asserted: the gain is replaced where a test needs a given one."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsamp
from jaxsamp.core.checkpoint import CompletedRunWarning
from jaxsamp.mcmc import chain_method
from jaxsamp.mcmc.chain_method import LOCKSTEP_GAIN, RECORD, batching_gain, choose_chain_method, clear_choices

POSITIONS = jnp.arange(8.0).reshape(4, 2) / 8


def log_prob(x):
    return -0.5 * jnp.sum(x**2)


@pytest.fixture
def gain(monkeypatch):
    """Set the gain ``auto`` measures, in a process that has chosen nothing yet; counts the measurements since."""
    clear_choices()
    calls = []

    def set_gain(value):
        calls.clear()
        monkeypatch.setattr(chain_method, "batching_gain", lambda *a, **k: calls.append(1) or value)
        return calls

    return set_gain


@pytest.mark.parametrize("measured, expected", [(LOCKSTEP_GAIN, "vectorized"), (3.7, "vectorized"),
                                                (LOCKSTEP_GAIN - 0.01, "sequential"), (0.5, "sequential")])
def test_lockstep_from_the_threshold_gain_sequential_below(gain, measured, expected):
    gain(measured)
    assert choose_chain_method(log_prob, POSITIONS) == (expected, measured)


def test_an_accelerator_or_a_single_chain_is_lockstep_without_timing(gain, monkeypatch):
    calls = gain(0.1)
    assert choose_chain_method(log_prob, POSITIONS[:1]) == ("vectorized", None)
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert choose_chain_method(log_prob, POSITIONS) == ("vectorized", None)
    assert calls == []


def test_a_model_is_measured_once_per_process_whatever_its_data_values(gain):
    gain(2.0)
    assert choose_chain_method(log_prob, POSITIONS) == ("vectorized", 2.0)
    calls = gain(0.5)
    assert choose_chain_method(log_prob, POSITIONS + 1.0) == ("vectorized", 2.0)  # same shapes: no new measurement
    assert calls == []
    assert choose_chain_method(log_prob, jnp.zeros((4, 3))) == ("sequential", 0.5)  # new shapes: measured
    assert calls == [1]
    clear_choices()
    assert choose_chain_method(log_prob, POSITIONS) == ("sequential", 0.5)


def test_a_folder_keeps_the_first_choice_for_a_resumed_call(gain, tmp_path):
    gain(2.0)
    assert choose_chain_method(log_prob, POSITIONS, folder=tmp_path / "run") == ("vectorized", 2.0)
    assert json.loads((tmp_path / "run" / RECORD).read_text()) == {"chain_method": "vectorized", "batching_gain": 2.0}
    clear_choices()
    calls = gain(0.5)  # another process, on a busier machine: a new measurement would choose the other method
    assert choose_chain_method(log_prob, POSITIONS, folder=tmp_path / "run") == ("vectorized", 2.0)
    assert calls == []


def test_the_gain_is_a_positive_ratio_of_values_and_gradients_or_values_alone():
    assert batching_gain(log_prob, POSITIONS) > 0
    lattice = jaxsamp.targets.get("ising", L=3, beta=0.3)
    assert batching_gain(lattice.log_density, jnp.ones((4, 3, 3), jnp.int32), gradient=False) > 0


@pytest.mark.filterwarnings("ignore::jaxsamp.core.errors.RunHealthWarning")  # 20 draws: R-hat is not the point
def test_sample_runs_what_auto_chose_says_so_and_resumes_with_it(gain, tmp_path):
    settings = dict(init=POSITIONS, num_chains=4, key=3, num_warmup=20, num_samples=20, progress=False)
    gain(2.0)
    chosen = jaxsamp.sample(log_prob, **settings, checkpoint=tmp_path / "run")
    assert (chosen.chain_method, chosen.batching_gain) == ("vectorized", 2.0)
    explicit = jaxsamp.sample(log_prob, **settings, chain_method="vectorized")
    assert (explicit.chain_method, explicit.batching_gain) == ("vectorized", None)
    np.testing.assert_array_equal(np.asarray(chosen.positions), np.asarray(explicit.positions))
    clear_choices()
    gain(0.5)
    with pytest.warns(CompletedRunWarning):
        again = jaxsamp.sample(log_prob, **settings, checkpoint=tmp_path / "run")  # not refused: the same method
    assert again.chain_method == "vectorized"
    np.testing.assert_array_equal(np.asarray(again.positions), np.asarray(chosen.positions))
    assert jaxsamp.sample(log_prob, **settings).chain_method == "sequential"
