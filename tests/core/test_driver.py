import re
import warnings
from pathlib import Path

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _resume_checks import assert_kill_resume_bit_identical

from jaxsamp.core import ensemble, run
from jaxsamp.core import checkpoint as ckpt
from jaxsamp.core.driver import _even_chunk, _scan_chunk

HERE = Path(__file__).parent


def _mala():
    kernel = ensemble(blackjax.mala(lambda x: -0.5 * jnp.sum(x**2), 0.5))
    return kernel, kernel.init(jnp.zeros((32, 3)))


@pytest.mark.gpu
def test_result_does_not_depend_on_chunk_size():
    kernel, state = _mala()
    key = jax.random.key(1)
    tr_fn = lambda s, i: s.position[:, 0]  # noqa: E731
    a, ta = run(kernel.step, state, key, 101, trace=tr_fn, chunk=101, progress=False)
    b, tb = run(kernel.step, state, key, 101, trace=tr_fn, chunk=8, progress=False)
    np.testing.assert_array_equal(np.asarray(a.position), np.asarray(b.position))
    np.testing.assert_array_equal(np.asarray(ta), np.asarray(tb))
    assert ta.shape == (101, 32)


@pytest.mark.parametrize(("chunk", "period", "want"), [(3, 4, 2), (7, 100, 5), (20, 1000, 20), (3, 7, 3), (8, 101, 8)])
def test_chunk_is_rounded_to_a_divisor_of_the_period_by_at_most_half(chunk, period, want):
    assert _even_chunk(chunk, period) == want


def test_chunks_between_checkpoints_share_one_compiled_scan(tmp_path):
    """chunk 3 between checkpoints every 4 steps used to scan 3, 1, 2, 2, 1, ...: three compilations."""
    kernel, state = _mala()
    _scan_chunk.clear_cache()
    run(kernel.step, state, jax.random.key(3), 24, chunk=3, progress=False, checkpoint=tmp_path, checkpoint_every=4)
    assert _scan_chunk._cache_size() == 1


@pytest.mark.gpu
def test_step_i_uses_fold_in_key_i():
    kernel, state = _mala()
    key = jax.random.key(5)
    manual = state
    for i in range(7):
        manual, _ = kernel.step(jax.random.fold_in(key, i), manual)
    driven, _ = run(kernel.step, state, key, 7, chunk=3, progress=False)
    # float32 round-off differs between eager ops and one compiled scan
    np.testing.assert_allclose(np.asarray(driven.position), np.asarray(manual.position), rtol=1e-5)


def test_after_chunk_sees_each_chunk_and_stops_the_run_where_asked(tmp_path):
    """Stopped after 20 of 60 steps: the state and trace are those of the 20 steps of the full run; the checkpoint
    holds them, so the same call without the stop resumes to the full run's end bit for bit."""
    kernel, state = _mala()
    key = jax.random.key(2)
    tr_fn = lambda s, i: s.position.mean()  # noqa: E731
    full, tfull = run(kernel.step, state, key, 60, trace=tr_fn, chunk=10, progress=False)
    seen = []

    def after_chunk(steps_done, chunk_state, chunk_trace):
        seen.append((steps_done, np.asarray(chunk_trace).shape))
        return steps_done >= 20

    part, tpart = run(kernel.step, state, key, 60, trace=tr_fn, chunk=10, progress=False, after_chunk=after_chunk,
                      checkpoint=tmp_path)
    assert seen == [(10, (10,)), (20, (10,))] and np.asarray(tpart).shape == (20,)
    np.testing.assert_array_equal(np.asarray(tpart), np.asarray(tfull)[:20])
    first20, _ = run(kernel.step, state, key, 20, trace=tr_fn, chunk=10, progress=False)
    np.testing.assert_array_equal(np.asarray(part.position), np.asarray(first20.position))
    resumed, tres = run(kernel.step, state, key, 60, trace=tr_fn, chunk=10, progress=False, checkpoint=tmp_path)
    np.testing.assert_array_equal(np.asarray(resumed.position), np.asarray(full.position))
    np.testing.assert_array_equal(np.asarray(tres), np.asarray(tfull))
    _, one = run(kernel.step, state, key, 60, trace=tr_fn, chunk=10, progress=False, after_chunk=lambda *a: True)
    assert np.asarray(one).shape == (10,)  # stopped after the first chunk: that chunk's trace alone


@pytest.mark.gpu
def test_split_run_with_checkpoint_resumes_exactly(tmp_path):
    kernel, state = _mala()
    key = jax.random.key(2)
    tr_fn = lambda s, i: s.position.mean()  # noqa: E731
    full, tfull = run(kernel.step, state, key, 60, trace=tr_fn, chunk=10, progress=False)
    run(kernel.step, state, key, 30, trace=tr_fn, chunk=10, progress=False, checkpoint=tmp_path, checkpoint_every=10)
    resumed, tres = run(kernel.step, state, key, 60, trace=tr_fn, chunk=10, progress=False, checkpoint=tmp_path, checkpoint_every=10)
    np.testing.assert_array_equal(np.asarray(full.position), np.asarray(resumed.position))
    np.testing.assert_array_equal(np.asarray(tfull), np.asarray(tres))


def test_typed_key_in_state_round_trips(tmp_path):
    def step(key, s):
        k, sub = jax.random.split(s["key"])
        return {"key": k, "x": s["x"] + jax.random.normal(sub)}, None

    state = {"key": jax.random.key(9), "x": jnp.float32(0.0)}
    a, _ = run(step, state, jax.random.key(0), 20, progress=False)
    run(step, state, jax.random.key(0), 10, progress=False, checkpoint=tmp_path)
    b, _ = run(step, state, jax.random.key(0), 20, progress=False, checkpoint=tmp_path)
    assert float(a["x"]) == float(b["x"])
    np.testing.assert_array_equal(jax.random.key_data(a["key"]), jax.random.key_data(b["key"]))


def test_corrupt_and_partial_checkpoints_are_skipped_with_a_warning(tmp_path):
    kernel, state = _mala()
    key = jax.random.key(3)
    run(kernel.step, state, key, 30, chunk=10, progress=False, checkpoint=tmp_path, checkpoint_every=10, keep=3)
    steps = ckpt.list_steps(tmp_path)
    assert [p.name for p in steps] == ["step_0000000030", "step_0000000020", "step_0000000010"]
    # newest: corrupt one array file; second: remove its manifest (killed while writing)
    victim = next(p for p in sorted((steps[0] / "state").rglob("*")) if p.is_file() and p.stat().st_size > 0)
    victim.write_bytes(b"garbage" + victim.read_bytes()[7:])
    (steps[1] / ckpt.MANIFEST).unlink()
    with pytest.warns(ckpt.CheckpointSkippedWarning) as record:
        folder, manifest = ckpt.latest_valid(tmp_path)
    messages = " ".join(str(w.message) for w in record)
    assert "step_0000000030" in messages and "checksum" in messages
    assert "step_0000000020" in messages and "manifest" in messages
    assert manifest["step"] == 10
    # and the driver resumes from step 10 and still reproduces the uninterrupted run
    full, _ = run(kernel.step, state, key, 40, chunk=10, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ckpt.CheckpointSkippedWarning)
        resumed, _ = run(kernel.step, state, key, 40, chunk=10, progress=False, checkpoint=tmp_path, checkpoint_every=10)
    np.testing.assert_array_equal(np.asarray(full.position), np.asarray(resumed.position))


def test_resume_with_another_key_is_refused(tmp_path):
    kernel, state = _mala()
    run(kernel.step, state, jax.random.key(0), 10, progress=False, checkpoint=tmp_path)
    with pytest.raises(ValueError, match="with PRNG key data"):
        run(kernel.step, state, jax.random.key(1), 20, progress=False, checkpoint=tmp_path)


def test_killed_run_resumes_bit_identically(tmp_path):
    """SIGKILL a checkpointing run in a subprocess after its first checkpoint, resume, compare."""
    assert_kill_resume_bit_identical(HERE / "_resume_child.py", tmp_path, min_arrays=4)


# --------------------------------------------------------------------------
# run health: a bare blackjax kernel through ensemble and jaxsamp.run (issue 40)
# --------------------------------------------------------------------------

from jaxsamp.core.errors import RunHealthWarning  # noqa: E402


def _gauss(x):
    return -0.5 * jnp.sum(x**2)


def _absorbing(x):
    """+inf on x[0] > 3: a random walk lands there and every later proposal is 'worse', so it stays."""
    return jnp.where(x[0] > 3.0, jnp.inf, _gauss(x))


UNHEALTHY = {
    "all chains start at NaN": (
        lambda: ensemble(blackjax.mala(lambda x: jnp.nan * jnp.sum(x), 0.5)), jnp.zeros((8, 2)),
        ["all 8 chains started where the log density is NaN", "all 8 chains ended where the log density is NaN"],
    ),
    "absorbed by +inf": (
        lambda: ensemble(blackjax.rmh(_absorbing, blackjax.mcmc.random_walk.normal(jnp.full(2, 2.0)))),
        jnp.zeros((8, 2)),
        ["8 chains ended where the log density is \\+inf \\(8 of them were absorbed there"],
    ),
    "step size 1e-30": (lambda: ensemble(blackjax.mala(_gauss, 1e-30)), jnp.ones((8, 2)), ["no chain moved"]),
    "HMC with 0 integration steps": (
        lambda: ensemble(blackjax.hmc(_gauss, 0.1, jnp.ones(2), 0)), jnp.ones((8, 2)), ["no chain moved"],
    ),
}


def _run_recording(kernel, positions, **kwargs) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run(kernel.step, kernel.init(positions), jax.random.key(0), 300, progress=False, **kwargs)
    return [str(w.message) for w in caught if issubclass(w.category, RunHealthWarning)]


@pytest.mark.parametrize("case", list(UNHEALTHY))
def test_run_warns_about_chains_that_did_not_sample(case):
    """Was silence: the raw driver returned these runs normally."""
    make, positions, fragments = UNHEALTHY[case]
    messages = _run_recording(make(), positions)
    for fragment in fragments:
        assert any(re.search(fragment, m) for m in messages), (fragment, messages)


@pytest.mark.parametrize("case", list(UNHEALTHY))
def test_run_health_false_is_silent(case):
    make, positions, _ = UNHEALTHY[case]
    assert _run_recording(make(), positions, health=False) == []


def test_a_healthy_run_and_a_single_chain_run_are_silent():
    assert _run_recording(ensemble(blackjax.mala(_gauss, 0.5)), jnp.zeros((8, 2))) == []
    assert _run_recording(blackjax.mala(_gauss, 0.5), jnp.zeros(2)) == []


def test_a_single_stuck_chain_warns_too():
    assert any("no chain moved" in m for m in _run_recording(blackjax.mala(_gauss, 1e-30), jnp.ones(2)))


def test_a_trainer_state_is_never_checked():
    """A learned sampler's train state has no chain positions: nothing to compare, even when nothing changes."""
    from jaxsamp.learned.diffusion.pis_dds import DdsSettings, build_dds
    import jaxsamp.targets

    settings = DdsSettings(loss="trajectory_balance", num_time_steps=4, hidden=8, num_layers=1, learning_rate=1e-3)
    sampler = build_dds(jaxsamp.targets.get("gaussian", dim=2), settings, batch_size=8)
    state = sampler.init(jax.random.key(0))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RunHealthWarning)
        run(sampler.step, state, jax.random.key(1), 3, progress=False)
    frozen = lambda key, s: (s, None)  # noqa: E731  (a trainer that never changes its state)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RunHealthWarning)
        run(frozen, state, jax.random.key(1), 3, progress=False)


def test_run_health_warning_keeps_its_old_import_path():
    from jaxsamp.mcmc.sample import RunHealthWarning as old

    assert old is RunHealthWarning
