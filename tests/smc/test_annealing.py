"""AIS/SMC: unbiased normalising constants, resampling bookkeeping, adaptive tempering, exact cost counts.

Unbiasedness: Z-hat (not log Z-hat) is unbiased for a fixed schedule. Over R
independent runs at fixed seeds the mean of ``Z-hat / Z`` must lie within 5
standard errors of 1 (5-sigma budget), and the standard error must be below 0.03
so that a wrong weight (a missing or doubled increment shifts the ratio by far
more) cannot hide in the noise. Exact answers: the Gaussian's closed-form log Z
and Kaufman's log Z of the 4x4 Ising torus.
"""

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxsamp.core import ensemble, run
from jaxsamp.core.errors import RunHealthError
from jaxsamp.core.target import AnnealingPath
from jaxsamp.mcmc.discrete import checkerboard
from jaxsamp.smc import anneal, linear_schedule, smc, weighted_samples
from jaxsamp.smc.annealing import affine_in_t
from jaxsamp.targets import get
from jaxsamp.targets.annealing import geometric_path
from jaxsamp.targets.lattice import Ising, LatticePath

NUM_RUNS = 256
NUM_PARTICLES = 32


def _gaussian_path():
    return geometric_path(get("gaussian", dim=2, scale=0.5, mean=[1.0, -0.5]), base_scale=1.0)


def _mala_family(path, step_size=0.1):
    return lambda t: blackjax.mala(lambda x: path.log_prob(x, t), step_size)


def _lattice_family(path):
    return lambda t: checkerboard(lambda x: path.flip_log_ratios(x, t))


def _log_Z_hats(path, make_kernel, num_levels, seed=0, **options):
    """log Z-hat of NUM_RUNS independent SMC runs (an ensemble of SMC kernels through the driver)."""
    kernel = ensemble(smc(path, make_kernel, schedule=linear_schedule(num_levels), **options))
    key_init, key_run = jax.random.split(jax.random.key(seed))
    x0 = path.base.sample(key_init, NUM_RUNS * NUM_PARTICLES)
    x0 = x0.reshape(NUM_RUNS, NUM_PARTICLES, *x0.shape[1:])
    state, _ = run(kernel.step, kernel.init(x0), key_run, num_levels, chunk=num_levels, progress=False)
    assert np.all(np.asarray(state.t) == 1.0)
    return np.asarray(jax.vmap(lambda s: weighted_samples(s, path).log_Z)(state), np.float64)


def _assert_unbiased(log_Z_hats, log_Z):
    ratio = np.exp(log_Z_hats - log_Z)
    mean, se = ratio.mean(), ratio.std(ddof=1) / np.sqrt(len(ratio))
    assert se < 0.03, f"standard error {se:.3f} too large for the test to have power"
    assert abs(mean - 1.0) < 5 * se, f"mean Z-hat/Z = {mean:.4f} +- {se:.4f}"


@pytest.mark.parametrize("ess_threshold", [0.0, 1.0], ids=["ais", "smc_always_resample"])
def test_gaussian_Z_hat_unbiased(ess_threshold):
    path = _gaussian_path()
    log_Z_hats = _log_Z_hats(path, _mala_family(path), 8, num_mcmc_steps=2, ess_threshold=ess_threshold)
    _assert_unbiased(log_Z_hats, path.target.log_Z)


@pytest.mark.gpu
def test_ising_4x4_Z_hat_unbiased_against_kaufman():
    target = Ising(4, 0.4407)
    path = LatticePath(target)
    log_Z_hats = _log_Z_hats(path, _lattice_family(path), 10, seed=1, num_mcmc_steps=2, ess_threshold=0.5)
    _assert_unbiased(log_Z_hats, target.exact_log_Z())


@pytest.mark.gpu
def test_resampling_keeps_the_log_Z_estimate():
    """Right after a resampling step (no move) the estimate of log Z_t is unchanged, to rounding."""
    path = _gaussian_path()
    x0 = path.base.sample(jax.random.key(0), 256)
    out = {}
    for threshold in (0.0, 1.0):
        kernel = smc(path, _mala_family(path), schedule=linear_schedule(3), num_mcmc_steps=0, ess_threshold=threshold)
        state, info = kernel.step(jax.random.key(1), kernel.init(x0))
        assert bool(info.resampled) == (threshold == 1.0)
        out[threshold] = weighted_samples(state, path)
    assert np.all(np.asarray(out[1.0].log_w) == 0.0)
    np.testing.assert_allclose(out[1.0].log_Z, out[0.0].log_Z, rtol=0, atol=1e-5)


class _SquaredTime(AnnealingPath):
    """``pi_t = inner_{t^2}``: a path that is not affine in t (exercises the general weight update)."""

    def __init__(self, inner):
        self.inner, self.base, self.target, self.log_Z0 = inner, inner.base, inner.target, inner.log_Z0

    def log_prob(self, x, t):
        return self.inner.log_prob(x, t * t)


def test_affine_detection():
    x = jnp.zeros(2)
    assert affine_in_t(_gaussian_path(), x)
    assert affine_in_t(LatticePath(Ising(4, 0.4)), jnp.ones((4, 4)))
    assert not affine_in_t(_SquaredTime(_gaussian_path()), x)


@pytest.mark.parametrize("path_kind", ["affine", "not_affine"])
def test_adaptive_tempering_reaches_one_with_target_cess(path_kind):
    path = _gaussian_path() if path_kind == "affine" else _SquaredTime(_gaussian_path())
    res = anneal(
        jax.random.key(3), path, _mala_family(path), 512, target_cess=0.9, max_levels=60, num_mcmc_steps=2
    )
    ts = np.asarray(res.trace.t)[: res.num_levels]
    assert ts[-1] == 1.0 and np.all(np.diff(ts) > 0) and res.num_levels > 2
    assert not np.any(np.asarray(res.trace.active)[res.num_levels :])
    # With uniform weights before a level (the start, or just resampled) its ESS after reweighting
    # is the CESS the bisection aimed at; the last level is clipped at t = 1 and is excluded.
    ess = np.asarray(res.trace.ess)[: res.num_levels - 1]
    uniform_before = np.concatenate([[True], np.asarray(res.trace.resampled)[: res.num_levels - 2]])
    assert uniform_before.sum() >= 2
    np.testing.assert_allclose(ess[uniform_before], 0.9, atol=0.01)
    # 512 particles: log Z-hat within 0.2 of the truth (about 5 of its standard deviations here).
    assert abs(float(res.samples.log_Z) - path.target.log_Z) < 0.2


class _Counter:
    def __init__(self):
        self.calls = 0

    def add(self, *_):
        self.calls += 1


class _CountingGaussianTarget:
    """Wraps a target so that every runtime evaluation of ``log_prob`` (per particle) is counted."""

    def __init__(self, target, counter):
        self._inner, self._counter = target, counter
        self.name, self.event_shape, self.domain, self.log_Z = target.name, target.event_shape, target.domain, target.log_Z

    def log_prob(self, x):
        jax.debug.callback(self._counter.add, x)
        return self._inner.log_prob(x)


class _CountingIsing(Ising):
    counter: _Counter

    def _log_prob(self, x):
        jax.debug.callback(self.counter.add, x)
        return super()._log_prob(x)

    def flip_log_ratios(self, x):
        jax.debug.callback(self.counter.add, x)
        return super().flip_log_ratios(x)


def _counted_run(path, make_kernel, counter, **options):
    res = anneal(jax.random.key(4), path, make_kernel, 16, **options)
    jax.effects_barrier()
    return res.num_target_evals, counter.calls


@pytest.mark.parametrize("case", ["gaussian_fixed", "squared_adaptive", "ising_adaptive"])
def test_target_eval_counts_are_exact(case):
    """The reported count equals the runtime number of target evaluations (counted by callbacks).

    The cases cover the affine reweighting with a fixed schedule and with bisection (Ising),
    the general two-evaluation reweighting with bisection calls (squared), and inner kernels
    that do (MALA) and do not (checkerboard) evaluate the target in ``init``.
    """
    counter = _Counter()
    if case.startswith("ising"):
        target = _CountingIsing(4, 0.4407)
        target.counter = counter
        path = LatticePath(target)
        make_kernel = _lattice_family(path)
    else:
        inner = _gaussian_path()
        path = geometric_path(_CountingGaussianTarget(inner.target, counter), base_scale=1.0)
        path = _SquaredTime(path) if case.startswith("squared") else path
        make_kernel = _mala_family(path)
    schedule = dict(schedule=linear_schedule(5)) if case.endswith("fixed") else dict(target_cess=0.6, max_levels=30)
    reported, counted = _counted_run(path, make_kernel, counter, num_mcmc_steps=3, **schedule)
    assert reported == counted
    if case == "gaussian_fixed":  # 5 levels x 16 particles x (reweight 1 + MALA init 1 + 3 steps)
        assert reported == 5 * 16 * 5


def test_options_are_validated():
    path = _gaussian_path()
    family = _mala_family(path)
    with pytest.raises(ValueError, match="exactly one"):
        smc(path, family)
    with pytest.raises(ValueError, match="exactly one"):
        smc(path, family, schedule=linear_schedule(3), target_cess=0.5)
    with pytest.raises(ValueError, match="from 0.0 to 1.0"):
        smc(path, family, schedule=[0.0, 0.5])
    with pytest.raises(ValueError, match="resampling"):
        smc(path, family, target_cess=0.5, resampling_fn="bogus")
    with pytest.raises(RunHealthError, match="annealing stopped"):
        anneal(jax.random.key(0), path, family, 64, target_cess=0.99, max_levels=2)


@pytest.mark.multidevice
def test_sharded_particles_give_the_unsharded_run_on_8_devices():
    """anneal(mesh=True): resampling on the global index, bisection on the global CESS, log Z over all devices."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=8"
    env = {**os.environ, "XLA_FLAGS": flags, "JAX_PLATFORMS": "cpu"}
    child = Path(__file__).with_name("_sharded_smc_child.py")
    proc = subprocess.run([sys.executable, str(child)], env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "SHARDED-SMC-OK" in proc.stdout
