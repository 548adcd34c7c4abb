"""Multi-chain warm-up: every chain reaches the typical set from far away, and hands over states and parameters.

The target is a Gaussian centred at 50 in 20 dimensions with standard deviations
from 1e-2 to 1e2: far from where the chains start (N(0, I)) and badly scaled.
The draws after warm-up pass moment z-tests with a 5-sigma budget, the standard
error coming from each coordinate's bulk ESS. The negative control reproduces
the old failure, one-chain tuning from N(0, I) applied to chains started
elsewhere, and checks that it is now reported.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _far_gaussian import CENTRE, DIM, SCALES, far_gaussian, users_points
from conftest import FAST_COMPILE

from jaxsamp.core import run
from jaxsamp.core.errors import InputError
from jaxsamp.core.target import from_function
from jaxsamp.diagnostics.mcmc import posterior_summary
from jaxsamp.mcmc.warmup import Warmup, sampling_kernel, starting_points, warmup
from jaxsamp.targets import get


def _bulk_ess(draws: np.ndarray) -> np.ndarray:
    summary = posterior_summary(draws).to_dict()
    return np.array([summary[f"x[{j}]"]["ess_bulk"] for j in range(DIM)])


def _z_scores(draws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and sd errors of ``(chains, draws, d)`` in units of their standard errors (ESS-based).

    The mean's standard error uses the ESS of the draws, the sd's the ESS of the squared standardised
    draws, whose mean the sample variance is: HMC's draws are antithetic in x (bulk ESS ~3x the number of
    draws here) but not in x^2 (ESS ~0.4x), so the ESS of x would understate the sd's error about threefold.
    """
    flat = draws.reshape(-1, DIM)
    z_mean = (flat.mean(0) - CENTRE) / (SCALES / np.sqrt(_bulk_ess(draws)))
    ess_square = _bulk_ess(((draws - CENTRE) / SCALES) ** 2)
    z_sd = (flat.std(0) / SCALES - 1.0) / np.sqrt(1.0 / (2.0 * ess_square))
    return z_mean, z_sd


def _draws(warm, num_draws, key, log_prob=far_gaussian):
    kernel = warm.sampling_kernel(log_prob)
    _, positions = run(kernel.step, kernel.init(warm), key, num_draws, trace=lambda s, i: s.position, progress=False)
    return np.swapaxes(np.asarray(positions), 0, 1)


@pytest.mark.parametrize("pool", [False, True])
def test_window_warmup_from_far_away_reaches_the_typical_set(pool):
    x0 = jax.random.normal(jax.random.key(0), (4, DIM))
    warm, trace = warmup(far_gaussian, x0, jax.random.key(1), 600, pool=pool, progress=False)
    assert isinstance(warm, Warmup) and warm.parameters["step_size"].shape == (4,)
    assert warm.parameters["inverse_mass_matrix"].shape == (4, DIM)
    assert trace.acceptance_rate.shape == (600, 4)
    if pool:  # one pooled mass matrix for all chains
        imm = np.asarray(warm.parameters["inverse_mass_matrix"])
        np.testing.assert_array_equal(imm, np.broadcast_to(imm[0], imm.shape))
    # every chain ends the warm-up in the typical set: within 5 sd in every coordinate
    z_final = (np.asarray(warm.states.position) - CENTRE) / SCALES
    assert np.all(np.abs(z_final) < 5), np.abs(z_final).max()
    # the adapted diagonal mass matrix matches the variances to within a factor 3
    ratio = np.asarray(warm.parameters["inverse_mass_matrix"]) / SCALES**2
    assert np.all((ratio > 1 / 3) & (ratio < 3)), ratio
    z_mean, z_sd = _z_scores(_draws(warm, 400, jax.random.key(2)))
    assert np.all(np.abs(z_mean) < 5), z_mean
    assert np.all(np.abs(z_sd) < 5), z_sd


def test_chees_warmup_on_an_ensemble():
    x0 = jax.random.normal(jax.random.key(0), (32, DIM))
    warm, _ = warmup(far_gaussian, x0, jax.random.key(1), 500, method="chees", progress=False)
    assert float(warm.parameters["step_size"]) > 0 and float(warm.parameters["num_leapfrog_steps"]) >= 1
    z_mean, z_sd = _z_scores(_draws(warm, 200, jax.random.key(2)))
    assert np.all(np.abs(z_mean) < 5), z_mean
    assert np.all(np.abs(z_sd) < 5), z_sd


def test_meads_warmup_on_a_well_started_ensemble():
    """MEADS (blackjax) needs a reasonable start: its step-size heuristic collapses from 50 sd away."""
    target = lambda x: -0.5 * jnp.sum((x / jnp.linspace(0.5, 2.0, 8)) ** 2)
    x0 = jax.random.normal(jax.random.key(0), (32, 8))
    warm, _ = warmup(target, x0, jax.random.key(1), 400, method="meads", progress=False)
    draws = _draws(warm, 400, jax.random.key(2), target)
    sd = np.linspace(0.5, 2.0, 8)
    summary, squares = posterior_summary(draws).to_dict(), posterior_summary((draws / sd) ** 2).to_dict()
    for j in range(8):
        row, ess_square = summary[f"x[{j}]"], squares[f"x[{j}]"]["ess_bulk"]
        assert abs(row["mean"]) < 5 * sd[j] / np.sqrt(row["ess_bulk"]), row
        assert abs(row["std"] / sd[j] - 1) < 5 / np.sqrt(2 * ess_square), (row, ess_square)  # see _z_scores


@pytest.mark.parametrize("num_chains", [4, 6])
def test_meads_refuses_a_chain_count_its_folds_cannot_use(num_chains):
    """Four chains leave one per fold, whose spread is 0 (blackjax then returns NaN parameters and frozen chains);
    six do not divide into the 4 folds (blackjax raised a bare ValueError)."""
    x0 = jax.random.normal(jax.random.key(0), (num_chains, 2))
    with pytest.raises(InputError, match=f"MEADS splits the chains into 4 folds.*got {num_chains} chains") as err:
        warmup(lambda x: -0.5 * jnp.sum(x**2), x0, jax.random.key(1), 30, method="meads", progress=False)
    assert err.value.hint == "num_chains=8"


def _gaussian(x, mean, scale):
    return -0.5 * jnp.sum(((x - mean) / scale) ** 2)


@pytest.mark.parametrize("method", ["chees", "meads"])
def test_chees_and_meads_compile_once_for_every_data_set(method, compilations):
    """The one-step blackjax warm-ups take the log density's data and the starting points as traced arguments.

    New data of the same shapes compile nothing and move the warmed-up states;
    the first data again give the first warm-up bit for bit.
    """
    positions = jax.random.normal(jax.random.key(0), (8, 3))  # MEADS: two chains in each of its 4 folds

    def warm(data):
        log_density = from_function(_gaussian, jnp.zeros(3), data=data).log_density
        return warmup(log_density, positions, jax.random.key(1), 30, method=method, progress=False)[0]

    data, new_data = (jnp.zeros(3), jnp.ones(3)), (jnp.full(3, 2.0, jnp.float32), 1.5 * jnp.ones(3))
    first = warm(data)
    del compilations[:]
    moved = warm(new_data)
    back = warm(data)
    assert compilations == [], f"{len(compilations)} compilations"
    assert not np.array_equal(np.asarray(moved.states.position), np.asarray(first.states.position))
    jax.tree.map(np.testing.assert_array_equal, (back.states, back.parameters), (first.states, first.parameters))


def test_one_chain_tuning_is_the_old_failure_and_is_now_reported():
    """Negative control: tuned on one chain (which reaches the typical set), then run from the users' points.

    The users' chains start near the origin, 50 away from the mode, with the step size and mass matrix of
    the typical set. With blackjax 1.7 they do not diverge (the issue saw acceptance 0): every proposal is
    accepted, exactly, while the chains crawl and are still thousands of standard deviations from the
    mode after 100 steps. Either way the run is now reported; the multi-chain warm-up from the same
    points is healthy. The one-chain run is a child process compiled with XLA's default flags: the failure
    hangs on the last bits of the adaptation (under other compile flags the same tuning can happen
    to work).
    """
    env = {**os.environ, "XLA_FLAGS": os.environ.get("XLA_FLAGS", "").replace(FAST_COMPILE, "").strip()}
    child = Path(__file__).with_name("_one_chain_tuning_child.py")
    proc = subprocess.run([sys.executable, str(child)], env=env, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["max_z"] > 100  # the failure: far from the mode
    assert any(w.startswith(("acceptance is exactly", "no chain moved")) for w in result["warnings"])
    # the multi-chain warm-up from the same points is healthy
    warm, _ = warmup(far_gaussian, users_points(), jax.random.key(5), 600, progress=False)
    z = (np.asarray(warm.states.position) - CENTRE) / SCALES
    assert np.all(np.abs(z) < 5)


def test_warmup_resumes_bit_identically_through_the_driver(tmp_path):
    x0 = jax.random.normal(jax.random.key(0), (2, 3))
    target = lambda x: -0.5 * jnp.sum(x**2)
    full, _ = warmup(target, x0, jax.random.key(1), 120, progress=False)
    from jaxsamp.mcmc.warmup import window_parameters, window_warmup_kernel

    kernel = window_warmup_kernel(target, 120)
    run(kernel.step, kernel.init(x0), jax.random.key(1), 60, progress=False, checkpoint=tmp_path, trace=lambda s, i: i)
    state, _ = run(kernel.step, kernel.init(x0), jax.random.key(1), 120, progress=False, checkpoint=tmp_path, trace=lambda s, i: i)
    resumed = window_parameters(state)
    for name in ("step_size", "inverse_mass_matrix"):
        np.testing.assert_array_equal(np.asarray(full.parameters[name]), np.asarray(resumed[name]))
    np.testing.assert_array_equal(np.asarray(full.states.position), np.asarray(state.chains.position))


def test_warmup_result_is_a_pytree_to_save_and_pass_on(tmp_path):
    x0 = jax.random.normal(jax.random.key(0), (2, 3))
    warm, _ = warmup(lambda x: -0.5 * jnp.sum(x**2), x0, jax.random.key(1), 100, algorithm="hmc", progress=False)
    leaves = jax.tree.leaves(warm)
    np.savez(tmp_path / "warm.npz", *[np.asarray(a) for a in leaves])
    loaded = np.load(tmp_path / "warm.npz")
    again = jax.tree.unflatten(jax.tree.structure(warm), [jnp.asarray(loaded[f"arr_{i}"]) for i in range(len(leaves))])
    assert again.static == (("num_integration_steps", 10),) and again.algorithm == "hmc"
    def log_prob(x):
        return -0.5 * jnp.sum(x**2)

    kernel = again.sampling_kernel(log_prob)
    state, _ = kernel.step(jax.random.key(2), kernel.init(again))
    assert state.position.shape == (2, 3)
    # built once per settings: the same step function and tree, so a second run with the same function
    # (or the same function's data of the same shapes) reuses the driver's compiled chunk
    for other in (again.sampling_kernel(log_prob), sampling_kernel("window", log_prob, "hmc", 1, True, again.static)):
        assert jax.tree.structure(other.step) == jax.tree.structure(kernel.step) and other.init is kernel.init


def test_starting_points_rules():
    target = get("gaussian", dim=3)
    key = jax.random.key(0)
    assert starting_points(target, key, 5).shape == (5, 3)
    jittered = starting_points(target, key, 5, jnp.ones(3), jitter=0.01)
    assert np.all(np.abs(np.asarray(jittered) - 1.0) < 0.1) and np.unique(np.asarray(jittered)[:, 0]).size == 5
    given = jnp.arange(15.0).reshape(5, 3)
    np.testing.assert_array_equal(np.asarray(starting_points(target, key, 5, given)), np.asarray(given))
    fitted = starting_points(target, key, 4, lambda k, n: 7.0 + jax.random.normal(k, (n, 3)))
    assert fitted.shape == (4, 3) and float(jnp.mean(fitted)) > 5
    spins = starting_points(get("ising", L=3, beta=0.3), key, 2)
    assert set(np.unique(np.asarray(spins))) <= {-1.0, 1.0}
    with pytest.raises(InputError, match=r"starting points must have shape \(5, 3\)"):
        starting_points(target, key, 5, jnp.zeros((4, 3)))
    with pytest.raises(InputError, match="starting points must be finite"):
        starting_points(target, key, 2, jnp.array([jnp.nan, 0.0, 0.0]))
    with pytest.raises(InputError, match="init='prior' needs a model with a prior"):
        starting_points(target, key, 2, "prior")


def test_warmup_arguments_are_checked():
    x0 = jnp.zeros((2, 3))
    with pytest.raises(InputError, match="method must be one of"):
        warmup(lambda x: -jnp.sum(x**2), x0, jax.random.key(0), 100, method="stan")
    with pytest.raises(InputError, match="num_steps must be >= 20"):
        warmup(lambda x: -jnp.sum(x**2), x0, jax.random.key(0), 10)
    with pytest.raises(InputError, match="algorithm must be one of nuts, hmc"):
        warmup(lambda x: -jnp.sum(x**2), x0, jax.random.key(0), 100, algorithm="mala")
