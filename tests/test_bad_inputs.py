"""The bad-input battery: every bad input or fault gives a one-line error or a correct result, and no debris.

Each case asserts the exact error type and a fragment of its message. Command-line
cases also assert exit status 2, one line on stderr, no traceback, and that no
run folder or partial file is left (or, for a run that did its work, that the
folder is kept and marked failed). The first group is the issue's own list
(hardening issue); the rest cover the CLI, the API, the targets, the samplers
and the checkpoints.
"""

from __future__ import annotations

import json
import subprocess
import warnings
import sys
from pathlib import Path

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsamp
from jaxsamp import targets
from jaxsamp.cli import EXIT_ERROR, main
from jaxsamp.core import checkpoint as ckpt
from jaxsamp.core import ensemble, guard_finite, mixture, on_blocks, repeat, run
from jaxsamp.core.errors import CheckpointError, ConfigError, InputError
from jaxsamp.core.registry import SAMPLERS, TARGETS
from jaxsamp.core.target import Target
from jaxsamp.diagnostics import health
from jaxsamp.mcmc.sample import RunHealthWarning
from jaxsamp.experiments.config import load_config, safe_run_name
from jaxsamp.experiments.runner import ERROR_FILE, resume_experiment, run_experiment
from jaxsamp.smc import anneal
from jaxsamp.targets.annealing import geometric_path

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = str(ROOT / "configs" / "quickstart.yaml")
SMC = str(ROOT / "configs" / "smc_gaussian.yaml")
SMALL = ["run.num_chains=16", "run.num_steps=20", "run.burn_in=0", "run.chunk=10", "run.progress=false", "run.num_eval_samples=50"]


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


def cli(capsys, *args) -> tuple[int, list[str]]:
    """Run the CLI in this process; return its exit status and the non-empty lines of stderr."""
    code = main([str(a) for a in args])
    err = capsys.readouterr().err
    return code, [line for line in err.splitlines() if line.strip()]


def assert_one_line_error(code: int, lines: list[str], error: str, fragment: str) -> None:
    assert code == EXIT_ERROR, lines
    errors = [line for line in lines if line.startswith("jaxsamp: error:")]
    assert len(errors) == 1, lines
    assert errors[0].startswith(f"jaxsamp: error: {error}: "), errors[0]
    assert fragment in errors[0], errors[0]
    assert not any("Traceback" in line for line in lines)


def files_under(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def bad_run(capsys, tmp_path, config, *overrides, error="ConfigError", fragment=""):
    """A CLI run that must fail with a one-line error and leave nothing under its out_dir."""
    out = tmp_path / "runs"
    code, lines = cli(capsys, "run", config, *SMALL, f"run.out_dir={out}", *overrides)
    assert_one_line_error(code, lines, error, fragment)
    assert files_under(out) == [], files_under(out)
    assert not out.exists() or not any(out.iterdir()), list(out.iterdir())


def _mala(n: int = 8, d: int = 2):
    kernel = ensemble(blackjax.mala(lambda x: -0.5 * jnp.sum(x**2), 0.5))
    return kernel, kernel.init(jnp.zeros((n, d)))


class HalfPlaneNaN(Target):
    """A test target: standard normal for x0 > 0, NaN (outside the support) elsewhere."""

    name, event_shape = "half_plane_nan", (2,)

    def _log_prob(self, x):
        return jnp.where(x[0] > 0, -0.5 * jnp.sum(x**2), jnp.nan)


class NowhereFinite(Target):
    """A test target whose log density is NaN everywhere (a broken model)."""

    name, event_shape = "nowhere_finite", (2,)

    def _log_prob(self, x):
        return jnp.nan * jnp.sum(x)


class PlusInfWell(Target):
    """A test target whose density is +inf on |x| > 3 (an absorbing region for plain MALA)."""

    name, event_shape = "plus_inf_well", (2,)

    def _log_prob(self, x):
        return jnp.where(jnp.max(jnp.abs(x)) > 3.0, jnp.inf, -0.5 * jnp.sum(x**2))


def half_plane_nan() -> HalfPlaneNaN:
    """Test target: NaN on half the plane."""
    return HalfPlaneNaN()


def nowhere_finite() -> NowhereFinite:
    """Test target: NaN everywhere."""
    return NowhereFinite()


def plus_inf_well() -> PlusInfWell:
    """Test target: +inf outside a box."""
    return PlusInfWell()


@pytest.fixture(scope="module", autouse=True)
def _test_targets():
    for factory in (half_plane_nan, nowhere_finite, plus_inf_well):
        if factory.__name__ not in TARGETS.names():
            TARGETS.register(factory.__name__)(factory)


def mcmc_config(tmp_path, target: str, sampler: str, **run) -> Path:
    """A small mcmc config file with the given target and sampler blocks (YAML flow mappings)."""
    settings = {"num_chains": 16, "num_steps": 20, "chunk": 10, "progress": "false", "num_eval_samples": 50,
                "out_dir": str(tmp_path / "runs"), **run}
    path = tmp_path / "config.yaml"
    path.write_text(f"name: test\nkind: mcmc\ntarget: {target}\nsampler: {sampler}\n"
                    f"run: {{{', '.join(f'{k}: {v}' for k, v in settings.items())}}}\n")
    return path


# --------------------------------------------------------------------------
# the list
# --------------------------------------------------------------------------


def test_negative_chunk_is_a_config_error(capsys, tmp_path):
    bad_run(capsys, tmp_path, QUICKSTART, "run.chunk=-5", fragment="run.chunk must be >= 1, got -5")


HANG_CHILD = """
import os, sys, threading, time
import jax, jax.numpy as jnp
import jaxsamp
def watchdog():  # a regression would loop forever while memory grows: stop at 2 GB resident
    while True:
        with open("/proc/self/statm") as f:
            if int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") > 2 << 30:
                os._exit(3)
        time.sleep(0.05)
threading.Thread(target=watchdog, daemon=True).start()
step = lambda k, s: (s + 1.0, None)
try:
    jaxsamp.run(step, jnp.zeros(()), jax.random.key(0), 10, chunk=-5, progress=False)
except jaxsamp.core.errors.InputError as err:
    print("REFUSED", err)
    sys.exit(0)
sys.exit(4)
"""


def test_negative_chunk_cannot_hang_the_driver():
    """The driver's chunk schedule once looped forever on chunk=-5; this fails by timeout if it comes back."""
    proc = subprocess.run([sys.executable, "-c", HANG_CHILD], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert "REFUSED chunk must be >= 1, got -5" in proc.stdout


def test_hmc_with_zero_integration_steps_is_refused(capsys, tmp_path):
    bad_run(capsys, tmp_path, QUICKSTART, "sampler.params.num_integration_steps=0",
            fragment="num_integration_steps must be >= 1, got 0")


def test_mala_with_negative_step_is_refused(capsys, tmp_path):
    bad_run(capsys, tmp_path, QUICKSTART, "sampler.name=mala", "sampler.params={step_size: -0.3}",
            fragment="step_size must be > 0, got -0.3")


def test_zero_steps_is_a_config_error(capsys, tmp_path):
    bad_run(capsys, tmp_path, QUICKSTART, "run.num_steps=0", fragment="run.num_steps must be >= 1, got 0")


def test_zero_chains_is_a_config_error(capsys, tmp_path):
    bad_run(capsys, tmp_path, QUICKSTART, "run.num_chains=0", fragment="run.num_chains must be >= 1, got 0")


def test_burn_in_covering_the_run_is_a_config_error(capsys, tmp_path):
    bad_run(capsys, tmp_path, QUICKSTART, "run.burn_in=20", fragment="run.burn_in (20) must be < run.num_steps (20)")


def test_smc_with_one_particle_is_refused(capsys, tmp_path):
    bad_run(capsys, tmp_path, SMC, "run.num_chains=1", fragment="run.num_chains must be >= 2")
    path = geometric_path(targets.get("gaussian", dim=2))
    with pytest.raises(InputError, match="num_particles must be >= 2, got 1"):
        anneal(jax.random.key(0), path, lambda t: None, 1, schedule=[0.0, 1.0])


def test_fractional_step_count_is_refused():
    kernel, state = _mala()
    with pytest.raises(InputError, match="num_steps must be int, got 2.5"):
        run(kernel.step, state, jax.random.key(0), 2.5, progress=False)


def _two_checkpoints(tmp_path):
    kernel, state = _mala()
    key = jax.random.key(3)
    full, _ = run(kernel.step, state, key, 30, chunk=10, progress=False)
    run(kernel.step, state, key, 20, chunk=10, progress=False, checkpoint=tmp_path, checkpoint_every=10)
    return kernel, state, key, full


def test_edited_manifest_step_is_skipped_and_the_older_checkpoint_used(tmp_path):
    kernel, state, key, full = _two_checkpoints(tmp_path)
    newest = ckpt.list_steps(tmp_path)[0] / ckpt.MANIFEST
    manifest = json.loads(newest.read_text())
    manifest["step"] = 25
    newest.write_text(json.dumps(manifest))
    with pytest.warns(ckpt.CheckpointSkippedWarning, match="checksum"):
        resumed, _ = run(kernel.step, state, key, 30, chunk=10, progress=False, checkpoint=tmp_path)
    np.testing.assert_array_equal(np.asarray(resumed.position), np.asarray(full.position))


def test_empty_manifest_is_skipped_and_the_older_checkpoint_used(tmp_path):
    kernel, state, key, full = _two_checkpoints(tmp_path)
    (ckpt.list_steps(tmp_path)[0] / ckpt.MANIFEST).write_text("{}")
    with pytest.warns(ckpt.CheckpointSkippedWarning, match="checksum"):
        folder, manifest = ckpt.latest_valid(tmp_path)
    assert folder.name == "step_0000000010" and manifest["step"] == 10
    with pytest.warns(ckpt.CheckpointSkippedWarning, match="checksum"):
        resumed, _ = run(kernel.step, state, key, 30, chunk=10, progress=False, checkpoint=tmp_path)
    np.testing.assert_array_equal(np.asarray(resumed.position), np.asarray(full.position))


def test_chains_starting_in_a_nan_region_are_counted_and_reported(tmp_path):
    cfg = load_config(mcmc_config(tmp_path, "{name: half_plane_nan}", "{name: mala, params: {step_size: 0.3}}"))
    run_dir, metrics = run_experiment(cfg, verbose=False)
    assert 0 < metrics["nonfinite_starts"] < 16
    assert any("chains started where log_prob is NaN/inf" in w for w in metrics["warnings"])
    assert json.loads((run_dir / "metrics.json").read_text())["warnings"] == metrics["warnings"]


def test_every_chain_starting_in_a_nan_region_is_an_error_and_leaves_nothing(capsys, tmp_path):
    config = mcmc_config(tmp_path, "{name: nowhere_finite}", "{name: mala, params: {step_size: 0.3}}")
    bad_run(capsys, tmp_path, config, error="InputError", fragment="all 16 chains start where nowhere_finite.log_prob is NaN/inf")


def test_plus_inf_region_does_not_absorb_and_rejections_are_reported(tmp_path):
    cfg = load_config(mcmc_config(tmp_path, "{name: plus_inf_well}", "{name: mala, params: {step_size: 4.0}}"))
    _, metrics = run_experiment(cfg, verbose=False)
    samples = np.load(next(tmp_path.rglob("samples.npz")))["samples"]
    assert np.all(np.abs(samples) <= 3.0)  # guard_finite kept every chain out of the +inf region
    assert metrics["nonfinite_rejections"] > 0
    assert any("had a NaN/inf log density and was rejected" in w for w in metrics["warnings"])


def test_guard_finite_with_every_proposal_rejected_says_so():
    kernel = ensemble(guard_finite(blackjax.mala(lambda x: jnp.where(jnp.sum(x) > 1e9, 0.0, jnp.nan), 0.1)))
    state = kernel.init(jnp.zeros((4, 2)))
    _, tr = run(kernel.step, state, jax.random.key(0), 5, progress=False,
                trace=lambda s, i: (jnp.sum(i.rejected_nonfinite), jnp.sum(i.moved)))
    warnings_ = health.chain_warnings(num_chains=4, start=np.zeros((4, 2)), end=np.zeros((4, 2)),
                                      moved=np.asarray(tr[1]), nonfinite=np.asarray(tr[0]))
    assert any(w.startswith("every proposal (20 of 20) had a NaN/inf") for w in warnings_)
    assert any(w.startswith("no chain moved") for w in warnings_)


def test_gaussian_with_nan_mean_is_refused():
    with pytest.raises(ConfigError, match=r"mean must be finite; 1 NaN/inf entry, first at index \(1,\)"):
        targets.get("gaussian", dim=2, mean=[0.0, float("nan")])
    with pytest.raises(InputError, match="mean must be finite"):
        targets.Gaussian([np.nan, 0.0], np.eye(2))


@pytest.mark.parametrize("value", [0.5, 7.0])
def test_ising_refuses_spins_that_are_not_plus_minus_one(value):
    target = targets.get("ising", L=3, beta=0.4)
    state = jnp.ones((3, 3)).at[1, 2].set(value)
    with pytest.raises(InputError, match=rf"outside the domain, e.g. \[{value}\]; values must be \+-1"):
        target.log_prob(state)
    assert np.isnan(float(jax.jit(target.log_prob)(state)))  # traced: NaN, which guard_finite rejects
    assert not np.isnan(float(target.with_checks(False).log_prob(state)))


def test_bad_target_parameters_are_one_line_errors_that_leave_nothing(capsys, tmp_path):
    config = mcmc_config(tmp_path, "{name: ising, params: {L: 0, beta: 0.4}}", "{name: glauber}")
    bad_run(capsys, tmp_path, config, fragment="target 'ising': L must be an int >= 2")


def test_an_unwritable_output_folder_is_a_one_line_error(capsys, tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    code, lines = cli(capsys, "run", QUICKSTART, *SMALL, f"run.out_dir={blocker}/runs")
    assert_one_line_error(code, lines, "NotADirectoryError", "Not a directory")
    assert files_under(tmp_path) == [blocker]


def test_chains_not_divisible_by_the_devices_is_a_config_error(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(jax, "device_count", lambda: 8)
    bad_run(capsys, tmp_path, QUICKSTART, "run.shard=true", "run.num_chains=12",
            fragment="run.num_chains (12) must be divisible by the 8 devices")


def test_run_name_cannot_leave_the_output_folder(tmp_path):
    out = tmp_path / "deep" / "runs"
    cfg = load_config(QUICKSTART, [*SMALL, f"run.out_dir={out}", "name=../../escaped"])
    assert cfg.name == "_.._escaped"
    run_dir, _ = run_experiment(cfg, verbose=False)
    assert run_dir.resolve().is_relative_to(out.resolve())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["deep"]
    assert safe_run_name("/abs/path") == "_abs_path"
    with pytest.raises(ConfigError, match="no usable characters"):
        safe_run_name("...")


def test_environment_interpolation_is_refused(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("JAXSAMP_TEST_SECRET", "hunter2")
    bad_run(capsys, tmp_path, QUICKSTART, "name=${oc.env:JAXSAMP_TEST_SECRET}",
            fragment="name: environment interpolation '${oc.env:JAXSAMP_TEST_SECRET}' is not allowed")
    config = tmp_path / "secret.yaml"
    config.write_text(Path(QUICKSTART).read_text().replace("scales: 1.0", "scales: ${oc.env:JAXSAMP_TEST_SECRET}"))
    with pytest.raises(ConfigError, match="target.params.scales: environment interpolation"):
        load_config(config)


# --------------------------------------------------------------------------
# the command line
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides, fragment",
    [
        (["seed=-1"], "seed must be >= 0 and <= 9223372036854775807, got -1"),
        (["run.init_scale=0"], "run.init_scale must be > 0, got 0.0"),
        (["run.thin=0"], "run.thin must be >= 1, got 0"),
        (["run.num_eval_samples=1"], "run.num_eval_samples must be >= 2, got 1"),
        (["run.checkpoint_every=0"], "run.checkpoint_every must be >= 1, got 0"),
        (["run.init_scale=.inf"], "run.init_scale must be finite"),
        (["kind=nope"], "unknown experiment kind 'nope'"),
        (["sampler.name=nope"], "unknown sampler 'nope'"),
        (["target.params.weights=[0.5, 0.5, 0.5, -0.5]"], "weights must be 4 positive numbers"),
        (["target.params.scales=[1.0, 2.0]"], "scales must be one positive number or 4 of them"),
        (["sampler.params.target_acceptance=1.5", "sampler.params.tune_steps=10"], "target_acceptance must be > 0 and < 1"),
        (["sampler.params.step_size=true"], "step_size must be float, got True"),
        (["name=..."], "has no usable characters"),
        (["notanoverride"], "is not of the form key=value"),
    ],
)
def test_bad_run_settings_are_one_line_errors(capsys, tmp_path, overrides, fragment):
    bad_run(capsys, tmp_path, QUICKSTART, *overrides, fragment=fragment)


@pytest.mark.parametrize(
    "config_text, fragment",
    [
        ("name: x\nkind: smc\ntarget: {name: gaussian}\nsampler: {name: smc, params: {target_cess: 1.5}}\n",
         "target_cess must lie in (0, 1)"),
        ("name: x\nkind: smc\ntarget: {name: gaussian}\nsampler: {name: smc, params: {resampling: bogus}}\n",
         "resampling must be one of"),
        ("name: x\nkind: smc\ntarget: {name: gaussian}\nsampler: {name: smc, params: {inner: mala, inner_params: {step_size: 0}}}\n",
         "step_size must be > 0"),
        ("name: x\nkind: leaps\ntarget: {name: gaussian}\nsampler: {name: leaps}\n", "needs a lattice target"),
        ("name: x\nkind: adjoint\ntarget: {name: gaussian}\nsampler: {name: adjoint, params: {nfe: 0}}\n", "nfe"),
        ("name: x\nkind: adjoint\ntarget: {name: gaussian}\nsampler: {name: mala}\n", "takes sampler name adjoint or asbs"),
        ("name: [unclosed\n", "cannot parse YAML"),
        ("target: {name: gaussian}\nsampler: {name: mala}\n", "missing required value(s): name"),
    ],
)
def test_bad_config_files_are_one_line_errors(capsys, tmp_path, config_text, fragment):
    config = tmp_path / "bad.yaml"
    config.write_text(config_text)
    bad_run(capsys, tmp_path, config, fragment=fragment)


def test_a_lattice_kernel_on_a_continuous_target_is_refused(capsys, tmp_path):
    config = mcmc_config(tmp_path, "{name: gaussian}", "{name: glauber}")
    bad_run(capsys, tmp_path, config, fragment="discrete kernels need a spin or categorical target")


def test_missing_config_and_non_run_folder(capsys, tmp_path):
    code, lines = cli(capsys, "run", tmp_path / "nope.yaml")
    assert_one_line_error(code, lines, "ConfigError", "config file not found")
    code, lines = cli(capsys, "resume", tmp_path)
    assert_one_line_error(code, lines, "ConfigError", "not a run folder")


def test_debug_shows_the_traceback(tmp_path):
    with pytest.raises(ConfigError, match="run.chunk"):
        main(["--debug", "run", QUICKSTART, "run.chunk=0", f"run.out_dir={tmp_path}"])
    with pytest.raises(ConfigError, match="run.chunk"):
        main(["run", QUICKSTART, "run.chunk=0", f"run.out_dir={tmp_path}", "--debug"])


def test_real_entry_point_prints_one_line_without_traceback(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "jaxsamp.cli", "run", QUICKSTART, "target.params.means=[[.nan, 0.0]]",
         f"run.out_dir={tmp_path}"], capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == EXIT_ERROR
    assert proc.stderr.strip().splitlines() == [
        "jaxsamp: error: ConfigError: target 'gaussian_mixture': means must be finite; 1 NaN/inf entry, first at index (0, 0)"
    ]
    assert list(tmp_path.iterdir()) == []


def test_strict_fails_a_run_that_did_not_sample_and_keeps_its_folder_marked(capsys, tmp_path):
    out = tmp_path / "runs"
    args = ["run", "--strict", QUICKSTART, *SMALL, f"run.out_dir={out}", "sampler.params.step_size=1e-30"]
    code, lines = cli(capsys, *args)
    assert_one_line_error(code, lines, "RunHealthError", "warning(s): no chain moved")
    shown = [line for line in lines if line.startswith("jaxsamp: warning: ")]
    assert any("max R-hat inf" in line for line in shown)  # frozen chains at different points disagree
    (run_dir,) = (out / "quickstart").iterdir()
    record = json.loads((run_dir / ERROR_FILE).read_text())
    assert record["status"] == "failed" and record["error"] == "RunHealthError"
    assert len(json.loads((run_dir / "metrics.json").read_text())["warnings"]) == len(shown)
    # without --strict the same run succeeds, with its warnings
    code, lines = cli(capsys, *[a for a in args if a != "--strict"])
    assert code == 0 and any("no chain moved" in line for line in lines)


def test_resume_with_other_settings_is_refused_and_keeps_the_run(capsys, tmp_path):
    cfg = load_config(QUICKSTART, [*SMALL, f"run.out_dir={tmp_path}"])
    run_dir, _ = run_experiment(cfg, verbose=False)
    config = run_dir / "config.yaml"
    config.write_text(config.read_text().replace("step_size: 0.3", "step_size: 0.2"))
    before = files_under(run_dir)
    code, lines = cli(capsys, "resume", run_dir)
    assert_one_line_error(code, lines, "CheckpointError", "belongs to another run")
    assert set(before) <= set(files_under(run_dir))
    assert json.loads((run_dir / ERROR_FILE).read_text())["error"] == "CheckpointError"


def test_a_failure_after_checkpoints_keeps_them_and_resume_completes(tmp_path, monkeypatch):
    cfg = load_config(QUICKSTART, [*SMALL, f"run.out_dir={tmp_path}", "run.checkpoint_every=10"])
    import jaxsamp.experiments.mcmc_experiment as mcmc_experiment

    def broken_plot(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(mcmc_experiment.plots, "samples_against_target", broken_plot)
    with pytest.raises(OSError, match="No space left"):
        run_experiment(cfg, verbose=False)
    (run_dir,) = (tmp_path / "quickstart").iterdir()
    assert json.loads((run_dir / ERROR_FILE).read_text())["message"].endswith("No space left on device")
    monkeypatch.undo()
    _, metrics = resume_experiment(run_dir, verbose=False)
    assert metrics["num_steps"] == 20 and not (run_dir / ERROR_FILE).exists()


# --------------------------------------------------------------------------
# the API: driver and combinators
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"num_steps": -1}, "num_steps must be >= 0, got -1"),
        ({"num_steps": True}, "num_steps must be int, got True"),
        ({"chunk": 0}, "chunk must be >= 1, got 0"),
        ({"chunk": 2.0}, "chunk must be int | None, got 2.0"),
        ({"checkpoint_every": 0}, "checkpoint_every must be >= 1, got 0"),
        ({"keep": 0}, "keep must be >= 1, got 0"),
    ],
)
def test_driver_arguments_are_checked(kwargs, fragment):
    kernel, state = _mala()
    args = {"num_steps": 3, **kwargs}
    with pytest.raises(InputError, match=fragment.replace("|", r"\|")):
        run(kernel.step, state, jax.random.key(0), args.pop("num_steps"), progress=False, **args)


@pytest.mark.parametrize(
    "key, fragment",
    [(0, "key must be a PRNG key, got int"), (jnp.zeros(3), "key must be a PRNG key, got ArrayImpl of dtype float32"),
     (jax.random.split(jax.random.key(0), 2), "key must be ONE PRNG key")],
)
def test_driver_refuses_what_is_not_one_key(key, fragment):
    kernel, state = _mala()
    with pytest.raises(InputError, match=fragment):
        run(kernel.step, state, key, 3, progress=False)


def test_driver_refuses_a_step_that_is_not_a_function():
    _, state = _mala()
    with pytest.raises(InputError, match="step must be a function"):
        run("mala", state, jax.random.key(0), 3, progress=False)


def test_combinators_refuse_degenerate_arguments():
    kernel, _ = _mala()
    with pytest.raises(InputError, match="at least one chain"):
        kernel.init(jnp.zeros((0, 2)))
    with pytest.raises(InputError, match="repeat needs num_steps >= 1"):
        repeat(blackjax.mala(lambda x: -jnp.sum(x**2), 0.1), 0)
    with pytest.raises(InputError, match="mixture weights must be 2 non-negative numbers"):
        mixture([kernel, kernel], [1.0, -1.0])
    with pytest.raises(InputError, match="order must be 'random' or 'cyclic'"):
        on_blocks(lambda f: None, lambda x: 0.0, [[0]], order="sideways")


# --------------------------------------------------------------------------
# targets
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, params, fragment",
    [
        ("gaussian", {"dim": 3, "correlation": 0.99 + 0.02}, "correlation must lie in"),
        ("gaussian", {"dim": 2, "mean": [0.0, 1.0, 2.0]}, r"mean must have shape \(2\)"),
        ("gaussian", {"dim": 2, "scale": float("inf")}, "scale must be finite"),
        ("gaussian_mixture", {"means": [0.0, 1.0]}, "means must have 2 dimension"),
        ("gmm", {"num_modes": 0}, "num_modes must be >= 1, got 0"),
        ("funnel", {"dim": 1}, "dim must be >= 2, got 1"),
        ("many_well", {"dim": 5}, "many_well needs an even dim"),
        ("student_t_mixture", {"df": 0.0}, "df must be > 0"),
        ("ising", {"L": 4, "beta": -0.1}, "beta must be >= 0"),
        ("ising", {"L": 4, "beta": float("nan")}, "beta must be finite"),
        ("ising", {"L": [3], "beta": 0.4}, "L must be an int >= 2 or a pair"),
        ("ising", {"L": 4, "beta": 0.4, "h": float("inf")}, "h must be finite"),
        ("potts", {"L": 4, "beta": 0.4, "q": 1}, "q must be >= 2, got 1"),
        ("bayes_logreg", {"dataset": "iris"}, "unknown dataset 'iris'"),
        ("bayes_logreg", {"prior_scale": 0.0}, "prior_scale must be > 0"),
        ("double_well_2d", {"temperature": 0.0}, "temperature must be > 0"),
        ("gaussian", {"dims": 2}, "unknown parameter 'dims'"),
        ("ising", {"L": 4}, "missing required parameter 'beta'"),
    ],
)
def test_target_parameters_are_checked(name, params, fragment):
    with pytest.raises(ConfigError, match=fragment):
        targets.get(name, **params)


def test_target_classes_check_their_arrays():
    with pytest.raises(InputError, match="symmetric positive definite"):
        targets.Gaussian(np.zeros(2), -np.eye(2))
    with pytest.raises(InputError, match="means must be numeric"):
        targets.GaussianMixture([["a", "b"]], 1.0)
    with pytest.raises(InputError, match="weights must be 2 positive numbers"):
        targets.GaussianMixture([[0.0], [1.0]], 1.0, [1.0, 0.0])


@pytest.mark.parametrize(
    "state, fragment",
    [(jnp.full((3, 3), 3), r"e.g. \[3\]; values must be integers in \[0, 3\)"),
     (jnp.full((3, 3), 1.5), r"e.g. \[1.5\]"),
     (jnp.full((3, 3), -1), r"e.g. \[-1\]")],
)
def test_potts_refuses_colours_outside_its_range(state, fragment):
    with pytest.raises(InputError, match=fragment):
        targets.get("potts", L=3, beta=0.5, q=3).log_prob(state)


def test_check_states_names_the_first_bad_state_of_a_batch():
    target = targets.get("ising", L=3, beta=0.4)
    batch = np.ones((5, 3, 3))
    batch[3, 0, 0] = 0.0
    with pytest.raises(InputError, match=r"1 state\(s\) hold values outside the domain \(state \(3,\)\)"):
        target.check_states(batch)
    with pytest.raises(InputError, match=r"states must have shape \(\.\.\., 3, 3\), got \(5, 4\)"):
        target.check_states(np.ones((5, 4)))


# --------------------------------------------------------------------------
# samplers from the registry
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, params, fragment",
    [
        ("nuts", {"max_num_doublings": 0}, "max_num_doublings must be >= 1"),
        ("hmc", {"step_size": float("nan")}, "step_size must be finite"),
        ("mclmc", {"L": 1.0}, "give both L and step_size, or neither"),
        ("randomized_midpoint", {"dynamics": "sideways"}, "dynamics must be one of 'underdamped', 'overdamped'"),
        ("randomized_midpoint", {"num_cells": 2}, "implemented for dynamics='overdamped'"),
        ("block_langevin", {"num_blocks": 3}, r"num_blocks must lie in \[1, 2\]"),
        ("block_langevin", {"order": "sideways"}, "order must be one of 'random', 'cyclic'"),
        ("speculative_langevin", {"window": 0}, "window must be >= 1, got 0"),
        ("annealed_langevin", {"lambda_power": 0.0}, "lambda_power must be > 0"),
        ("ula", {"step_size": -1.0}, "step_size must be > 0"),
        ("mala", {"stepsize": 0.1}, "unknown parameter 'stepsize'"),
    ],
)
def test_sampler_parameters_are_checked(name, params, fragment):
    with pytest.raises(ConfigError, match=fragment):
        SAMPLERS.get(name, targets.get("gaussian", dim=2), **params)


@pytest.mark.parametrize(
    "name, params, fragment",
    [("glauber", {"num_updates": 0}, "num_updates must be >= 1, got 0"),
     ("checkerboard", {"rule": "gibbs"}, "rule must be one of 'metropolis', 'heat_bath'")],
)
def test_discrete_sampler_parameters_are_checked(name, params, fragment):
    with pytest.raises(ConfigError, match=fragment):
        SAMPLERS.get(name, targets.get("ising", L=4, beta=0.4), **params)


def test_kernel_builders_check_concrete_step_sizes_but_not_traced_ones():
    from jaxsamp.mcmc.ula import ula

    with pytest.raises(InputError, match="step_size must be > 0, got -0.1"):
        ula(lambda x: -jnp.sum(x**2), -0.1)
    # inside jit the step size is a tracer: built without complaint, as adaptive() needs
    step = jax.jit(lambda h, x: ula(lambda y: -jnp.sum(y**2), h).step(jax.random.key(0), ula(lambda y: -jnp.sum(y**2), h).init(x))[0].position)
    assert step(0.1, jnp.ones(2)).shape == (2,)


# --------------------------------------------------------------------------
# checkpoints
# --------------------------------------------------------------------------


def _one_checkpoint(tmp_path, fingerprint=None):
    kernel, state = _mala()
    key = jax.random.key(4)
    run(kernel.step, state, key, 10, chunk=10, progress=False, checkpoint=tmp_path, fingerprint=fingerprint)
    return kernel, state, key, ckpt.list_steps(tmp_path)[0]


@pytest.mark.parametrize(
    "tamper, fragment",
    [
        (lambda m: {**m, "fingerprint": "someone else"}, "does not match its own checksum"),
        (lambda m: {k: v for k, v in m.items() if k != "manifest_sha256"}, "does not match its own checksum"),
        (lambda m: "not json {", "its manifest is unreadable"),
        (lambda m: [1, 2], "not a JSON object"),
    ],
)
def test_tampered_manifests_are_skipped(tmp_path, tamper, fragment):
    _, _, _, folder = _one_checkpoint(tmp_path)
    mf = folder / ckpt.MANIFEST
    new = tamper(json.loads(mf.read_text()))
    mf.write_text(new if isinstance(new, str) else json.dumps(new))
    with pytest.warns(ckpt.CheckpointSkippedWarning, match=fragment):
        assert ckpt.latest_valid(tmp_path) is None


def test_a_manifest_moved_to_another_step_folder_is_skipped(tmp_path):
    _, _, _, folder = _one_checkpoint(tmp_path)
    folder.rename(folder.with_name("step_0000000099"))
    with pytest.warns(ckpt.CheckpointSkippedWarning, match="names step 10, not the folder's"):
        assert ckpt.latest_valid(tmp_path) is None


def test_a_manifest_missing_a_field_is_skipped_even_with_a_fresh_checksum(tmp_path):
    _, _, _, folder = _one_checkpoint(tmp_path)
    mf = folder / ckpt.MANIFEST
    manifest = json.loads(mf.read_text())
    del manifest["files"]
    manifest["manifest_sha256"] = ckpt._manifest_digest(manifest)
    mf.write_text(json.dumps(manifest))
    with pytest.warns(ckpt.CheckpointSkippedWarning, match="no valid 'files'"):
        assert ckpt.latest_valid(tmp_path) is None


def test_checkpoints_of_another_run_are_refused(tmp_path):
    kernel, state, key, _ = _one_checkpoint(tmp_path, fingerprint="run-a")
    with pytest.raises(CheckpointError, match="belongs to another run"):
        run(kernel.step, state, key, 20, progress=False, checkpoint=tmp_path, fingerprint="run-b")
    with pytest.raises(CheckpointError, match="with PRNG key data"):
        run(kernel.step, state, jax.random.key(5), 20, progress=False, checkpoint=tmp_path, fingerprint="run-a")
    with pytest.raises(CheckpointError, match="is at step 10 > num_steps=5"):
        run(kernel.step, state, key, 5, progress=False, checkpoint=tmp_path, fingerprint="run-a")
    with pytest.raises(CheckpointError, match="different structure"):
        run(kernel.step, (state, state), key, 20, progress=False, checkpoint=tmp_path, fingerprint="run-a")


def test_a_checkpoint_with_other_array_shapes_is_refused_naming_both(tmp_path):
    # with an explicit fingerprint shared by both runs, the layout check on restore is the guard
    kernel, state = _mala(n=8)
    run(kernel.step, state, jax.random.key(0), 10, progress=False, checkpoint=tmp_path, desc="eight chains",
        fingerprint="same")
    _, more = _mala(n=16)
    with pytest.raises(CheckpointError, match=r"written by run 'eight chains' \(.*\): float32\[8, 2\] where this run has float32\[16, 2\]"):
        run(kernel.step, more, jax.random.key(0), 20, progress=False, checkpoint=tmp_path, fingerprint="same")


# The fingerprint a checkpoint folder is resumed under is derived from what determines the numbers
# (issue 40): a folder reused by another model, another setting, other data or another init is refused.


def _gaussian_run(tmp_path, log_prob, step_size=0.3, x0=None, num_steps=20):
    kernel = ensemble(blackjax.hmc(log_prob, step_size, jnp.ones(3), 5))
    state = kernel.init(jnp.full((4, 3), 0.5) if x0 is None else x0)
    return run(kernel.step, state, jax.random.key(0), num_steps, progress=False, checkpoint=tmp_path)[0]


def test_run_refuses_a_folder_written_for_another_log_density(tmp_path):
    _gaussian_run(tmp_path, lambda x: -0.5 * jnp.sum(x**2))
    with pytest.raises(CheckpointError, match="step computes something else") as err:
        _gaussian_run(tmp_path, lambda x: -jnp.sum((x - 5) ** 2))
    message = err.value.one_line()
    manifest = json.loads((ckpt.list_steps(tmp_path)[0] / ckpt.MANIFEST).read_text())
    assert str(tmp_path) in message and manifest["fingerprint"] in message  # the folder; its fingerprint in full
    assert "test_bad_inputs" not in manifest["run"]["step"] and "ensemble" in manifest["run"]["step"]
    assert "script" in message and "written" in message and "delete" in message


def test_run_refuses_a_folder_written_with_another_step_size(tmp_path):
    log_prob = lambda x: -0.5 * jnp.sum(x**2)
    first = _gaussian_run(tmp_path, log_prob, step_size=0.3)
    with pytest.raises(CheckpointError, match="step computes something else"):
        _gaussian_run(tmp_path, log_prob, step_size=0.05)
    again = _gaussian_run(tmp_path, log_prob, step_size=0.3)  # the same run resumes (here: is already done)
    np.testing.assert_array_equal(first.position, again.position)


def test_run_refuses_a_folder_written_from_another_initial_state(tmp_path):
    log_prob = lambda x: -0.5 * jnp.sum(x**2)
    _gaussian_run(tmp_path, log_prob)
    with pytest.raises(CheckpointError, match="initial state differs"):
        _gaussian_run(tmp_path, log_prob, x0=jnp.full((4, 3), -0.5))


def test_run_refuses_a_folder_written_with_other_closed_over_data(tmp_path):
    # the data enter as an array constant of the jaxpr, not as a literal: their values are hashed
    data = np.linspace(-1.0, 1.0, 50)
    log_prob = lambda d: (lambda x: -0.5 * jnp.sum((x[:, None] - d) ** 2))
    _gaussian_run(tmp_path, log_prob(jnp.asarray(data)))
    with pytest.raises(CheckpointError, match="step computes something else"):
        _gaussian_run(tmp_path, log_prob(jnp.asarray(data + 1e-3)))


def test_sample_refuses_a_folder_written_for_another_model(tmp_path):
    common = dict(init=jnp.zeros(3), num_chains=2, num_warmup=50, num_samples=20, progress=False, checkpoint=tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RunHealthWarning)
        jaxsamp.sample(lambda x: -0.5 * jnp.sum(x**2), **common)
        with pytest.raises(CheckpointError, match="belongs to another run"):
            jaxsamp.sample(lambda x: -((x - 5) ** 2).sum(), **common)


def test_sample_refuses_a_folder_written_for_other_target_parameters(tmp_path):
    common = dict(num_chains=2, num_warmup=50, num_samples=20, progress=False, checkpoint=tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RunHealthWarning)
        jaxsamp.sample(targets.get("gaussian", dim=3), **common)
        with pytest.raises(CheckpointError, match="step computes something else"):
            jaxsamp.sample(targets.get("gaussian", dim=3, mean=[5.0, 5.0, 5.0]), **common)


def test_sample_refuses_a_folder_written_from_another_init(tmp_path):
    common = dict(num_chains=2, num_warmup=50, num_samples=20, progress=False, checkpoint=tmp_path)
    log_prob = lambda x: -0.5 * jnp.sum(x**2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RunHealthWarning)
        jaxsamp.sample(log_prob, init=jnp.zeros(3), **common)
        with pytest.raises(CheckpointError, match="initial state differs"):
            jaxsamp.sample(log_prob, init=jnp.ones(3), **common)


def test_sample_refuses_a_folder_written_for_other_numpyro_data(tmp_path):
    numpyro = pytest.importorskip("numpyro")
    import numpyro.distributions as dist

    def model(y):
        mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
        numpyro.sample("y", dist.Normal(mu, 1.0), obs=y)

    common = dict(num_chains=2, num_warmup=50, num_samples=20, progress=False, checkpoint=tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RunHealthWarning)
        jaxsamp.sample(model, model_args=(jnp.zeros(10),), **common)
        with pytest.raises(CheckpointError, match="step computes something else"):
            jaxsamp.sample(model, model_args=(jnp.full(10, 5.0),), **common)


def test_a_failed_checkpoint_write_leaves_no_partial_folder(tmp_path, monkeypatch):
    kernel, state = _mala()

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ckpt.np, "savez", full_disk)
    with pytest.raises(OSError, match="No space left"):
        run(kernel.step, state, jax.random.key(0), 10, progress=False, checkpoint=tmp_path)
    assert ckpt.list_steps(tmp_path) == []


# --------------------------------------------------------------------------
# health checks and validation helpers
# --------------------------------------------------------------------------


def test_health_rules():
    start = np.zeros((4, 2))
    moved_end = start + 1.0
    assert health.chain_warnings(num_chains=4, start=start, end=moved_end, moved=np.ones(5), acceptance=np.full(5, 0.5),
                                 nonfinite=np.zeros(5), metropolis=True) == []
    (w,) = health.chain_warnings(num_chains=4, start=start, end=moved_end, acceptance=np.zeros(5), metropolis=True)
    assert w.startswith("acceptance is exactly 0 in all 5 steps")
    (w,) = health.chain_warnings(num_chains=4, start=start, end=moved_end, acceptance=np.ones(5), metropolis=True)
    assert w.startswith("acceptance is exactly 1 in all 5 steps")
    assert health.chain_warnings(num_chains=4, start=start, end=moved_end, acceptance=np.ones(5), metropolis=False) == []
    (w,) = health.chain_warnings(num_chains=4, start=start, end=np.array([[1, 1], [0, 0], [1, 1], [0, 0]]))
    assert w == "2 of 4 chains never left their starting point"
    assert health.chain_warnings(num_chains=4, start=start, end=start, continuous=False) == []
    (w,) = health.chain_warnings(num_chains=4, start=start, end=moved_end, nonfinite=np.array([1, 0, 0, 0, 0]))
    assert w.startswith("5% of proposals (1 of 20)")
    assert health.initial_warnings(0, 4) == []
    assert health.sample_warnings(1, 1000) == [] and "3 of 100 samples are NaN/inf" in health.sample_warnings(3, 100)[0]
    (w,) = health.chain_warnings(num_chains=128, acceptance=np.zeros(3), metropolis=True)  # SMC: no positions
    assert w.startswith("acceptance is exactly 0")


@pytest.mark.parametrize(
    "call, fragment",
    [
        (lambda: jaxsamp.core.validation.check_int("n", 3.0), "n must be int, got 3.0"),
        (lambda: jaxsamp.core.validation.check_int("n", np.int64(-2), ge=0), "n must be >= 0, got -2"),
        (lambda: jaxsamp.core.validation.check_float("h", float("nan"), gt=0), "h must be finite"),
        (lambda: jaxsamp.core.validation.check_float("h", jnp.float32(-1.0), gt=0), "h must be > 0"),
        (lambda: jaxsamp.core.validation.check_array("x", [[1, 2], [3]]), "x must be an array"),
        (lambda: jaxsamp.core.validation.check_array("x", np.zeros(3), dtype="int"), "x must be an integer array"),
    ],
)
def test_validation_helpers(call, fragment):
    with pytest.raises(InputError, match=fragment):
        call()


def test_registry_samplers_take_plain_functions():
    """A plain log density worked with the combinators but not with the registry samplers."""

    def log_prob(x):
        return -0.5 * jnp.sum(x**2)

    kernel = ensemble(SAMPLERS.get("mala", log_prob, step_size=0.5))
    state, _ = run(kernel.step, kernel.init(jnp.zeros((4, 3))), jax.random.key(0), 5, progress=False)
    assert state.position.shape == (4, 3)
    with pytest.raises(ConfigError, match="needs the shape of a state") as err:
        SAMPLERS.get("hmc", log_prob)
    assert "from_function" in err.value.hint
    hmc = SAMPLERS.get("hmc", targets.from_function(log_prob, jnp.zeros(3)))
    assert hmc.init(jnp.zeros(3)).position.shape == (3,)
    with pytest.raises(InputError, match="must return one scalar"):
        targets.from_function(lambda x: x, jnp.zeros(3))


# --------------------------------------------------------------------------
# checkpoint-folder faults (issue 40): a full disk, planted or unloadable
# files, a trace of another structure, paths that cannot be checkpoint folders,
# and resumes that find nothing to resume from
# --------------------------------------------------------------------------

ENOSPC_FROM_TENSORSTORE = (  # what orbax raises, from its writing thread, when the disk is full
    'RESOURCE_EXHAUSTED: Error writing "leaf_00000/0" in OCDBT database at local file "{0}/": Failed writing: '
    '"{0}/d/7b0d8ad4": Failed to write 324852 bytes to file 4: No space left on device [os_error_code=\'28\']'
)


@pytest.fixture
def small_disk(tmp_path):
    """A 64 KiB tmpfs (where this process may mount one), else None."""
    import shutil

    mount = tmp_path / "small_disk"
    mount.mkdir()
    if shutil.which("mount") is None or subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True
    ).returncode:
        yield None
        return
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True)


def _patch_full_disk(monkeypatch, fail_on_call: int = 1):
    """Make orbax's writer fail like a full disk does (a ValueError from tensorstore) from its ``fail_on_call``-th save."""
    import orbax.checkpoint as ocp

    calls, save = [], ocp.Checkpointer.save

    def full_disk(self, directory, *args, **kwargs):
        calls.append(directory)
        if len(calls) >= fail_on_call:
            raise ValueError(ENOSPC_FROM_TENSORSTORE.format(directory))
        return save(self, directory, *args, **kwargs)

    monkeypatch.setattr(ocp.Checkpointer, "save", full_disk)


@pytest.mark.parametrize("disk", ["tmpfs", "patched writer"])
def test_a_full_disk_during_an_orbax_write_is_an_oserror_naming_the_folder(disk, small_disk, tmp_path, monkeypatch, capfd):
    if disk == "tmpfs":
        if small_disk is None:
            pytest.skip("cannot mount a tmpfs here (the patched-writer case covers the error path)")
        folder = small_disk / "ckpt"
        monkeypatch.setattr(ckpt, "_free_bytes", lambda folder: 1 << 40)  # past the check before writing: orbax fails
    else:
        folder = tmp_path / "ckpt"
        _patch_full_disk(monkeypatch)
    state = {"x": jax.random.normal(jax.random.key(0), (100_000,))}  # 400 kB of noise: does not fit in 64 KiB
    capfd.readouterr()
    with pytest.raises(OSError, match=r"\[Errno 28\] No space left on device while writing checkpoint .*step_0000000010") as err:
        ckpt.save(folder, 10, state, None, [0, 1])
    assert err.value.errno == 28 and type(err.value) is OSError
    assert ckpt.list_steps(folder) == []  # the partial folder is removed
    printed = capfd.readouterr().err
    assert "Traceback" not in printed and "ERROR:absl" not in printed, printed[:2000]


def test_a_full_disk_after_checkpoints_is_one_line_and_keeps_the_run(capsys, tmp_path, monkeypatch):
    _patch_full_disk(monkeypatch, fail_on_call=2)  # the checkpoint at step 10 is written, the one at step 20 fails
    out = tmp_path / "runs"
    code, lines = cli(capsys, "run", QUICKSTART, *SMALL, f"run.out_dir={out}", "run.checkpoint_every=10")
    assert_one_line_error(code, lines, "OSError", "[Errno 28] No space left on device while writing checkpoint")
    assert not any("internal error" in line for line in lines)
    (run_dir,) = (out / "quickstart").iterdir()
    record = json.loads((run_dir / ERROR_FILE).read_text())
    assert record["error"] == "OSError" and "No space left on device" in record["message"]
    assert [p.name for p in ckpt.list_steps(run_dir / "checkpoints")] == ["step_0000000010"]
    monkeypatch.undo()
    code, _ = cli(capsys, "resume", run_dir)
    assert code == 0 and not (run_dir / ERROR_FILE).exists()


@pytest.mark.parametrize("where", ["notes.txt", "state/extra.bin"])
def test_a_checkpoint_holding_an_unlisted_file_is_skipped_and_the_older_one_used(tmp_path, where):
    kernel, state, key, full = _two_checkpoints(tmp_path)
    planted = ckpt.list_steps(tmp_path)[0] / where
    planted.write_bytes(b"not written by jaxsamp")
    with pytest.warns(ckpt.CheckpointSkippedWarning, match=rf"does not list: \['{where}'\]"):
        resumed, _ = run(kernel.step, state, key, 30, chunk=10, progress=False, checkpoint=tmp_path)
    np.testing.assert_array_equal(np.asarray(resumed.position), np.asarray(full.position))


def _damage_and_resign(folder: Path, name: str, content: bytes) -> None:
    """Replace ``folder/name`` and re-sign the manifest: the checkpoint passes its integrity check."""
    (folder / name).write_bytes(content)
    manifest = json.loads((folder / ckpt.MANIFEST).read_text())
    manifest["files"][name] = ckpt._sha256(folder / name)
    manifest["manifest_sha256"] = ckpt._manifest_digest(manifest)
    (folder / ckpt.MANIFEST).write_text(json.dumps(manifest))


def _array_file(folder: Path) -> str:
    manifest = json.loads((folder / ckpt.MANIFEST).read_text())
    return next(name for name in sorted(manifest["files"]) if name.startswith("state/d/"))


def test_a_checkpoint_whose_arrays_fail_to_load_is_skipped_and_the_older_one_used(tmp_path):
    kernel, state, key, full = _two_checkpoints(tmp_path)
    newest = ckpt.list_steps(tmp_path)[0]
    _damage_and_resign(newest, _array_file(newest), b"garbage")
    with pytest.warns(ckpt.CheckpointSkippedWarning, match=r"step_0000000020: its arrays could not be loaded \(ValueError"):
        resumed, _ = run(kernel.step, state, key, 30, chunk=10, progress=False, checkpoint=tmp_path)
    np.testing.assert_array_equal(np.asarray(resumed.position), np.asarray(full.position))


def test_loading_a_checkpoint_never_unpickles(tmp_path):
    """A re-signed trace.npz holding a pickle that would write a file is refused, not executed."""
    kernel, state = _mala()
    key = jax.random.key(3)
    trace = lambda s, info: s.position  # noqa: E731
    full, _ = run(kernel.step, state, key, 30, trace=trace, chunk=10, progress=False)
    run(kernel.step, state, key, 20, trace=trace, chunk=10, progress=False, checkpoint=tmp_path, checkpoint_every=10)
    witness = tmp_path / "executed"

    class Payload:
        def __reduce__(self):
            return (Path.touch, (witness,))

    newest = ckpt.list_steps(tmp_path)[0]
    np.savez(tmp_path / "evil.npz", leaf_00000=np.array([Payload()], dtype=object))
    _damage_and_resign(newest, "trace.npz", (tmp_path / "evil.npz").read_bytes())
    with pytest.warns(ckpt.CheckpointSkippedWarning, match="its trace could not be loaded"):
        resumed, _ = run(kernel.step, state, key, 30, trace=trace, chunk=10, progress=False, checkpoint=tmp_path)
    assert not witness.exists()
    np.testing.assert_array_equal(np.asarray(resumed.position), np.asarray(full.position))


def test_a_folder_whose_checkpoints_all_fail_says_the_run_starts_from_step_0(tmp_path):
    kernel, state, key, full = _two_checkpoints(tmp_path)
    for folder in ckpt.list_steps(tmp_path):
        _damage_and_resign(folder, _array_file(folder), b"garbage")
    with pytest.warns(ckpt.CheckpointSkippedWarning) as caught:
        resumed, _ = run(kernel.step, state, key, 30, chunk=10, progress=False, checkpoint=tmp_path)
    messages = [str(w.message) for w in caught]
    assert sum("could not be loaded" in m for m in messages) == 2
    assert messages[-1] == f"no valid checkpoint in {tmp_path.resolve()}; starting from step 0"
    np.testing.assert_array_equal(np.asarray(resumed.position), np.asarray(full.position))


def test_a_new_or_empty_checkpoint_folder_starts_without_a_warning(tmp_path):
    import warnings

    kernel, state = _mala()
    (tmp_path / "empty").mkdir()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ckpt.CheckpointSkippedWarning)
        for folder in (tmp_path / "empty", tmp_path / "new"):
            run(kernel.step, state, jax.random.key(0), 5, progress=False, checkpoint=folder)


def test_checkpoint_every_without_a_checkpoint_folder_is_refused():
    kernel, state = _mala()
    with pytest.raises(InputError, match="checkpoint_every=10 needs a checkpoint folder, got checkpoint=None"):
        run(kernel.step, state, jax.random.key(0), 20, progress=False, checkpoint_every=10)


@pytest.mark.parametrize("below", ["", "sub"])
def test_a_checkpoint_path_that_is_a_file_is_refused_before_any_work(tmp_path, below):
    kernel, state = _mala()
    calls = []

    def step(key, s):
        calls.append(1)
        return kernel.step(key, s)

    a_file = tmp_path / "ckpt"
    a_file.write_text("a file")
    path = a_file / below if below else a_file
    with pytest.raises(InputError, match=f"checkpoint must be a folder, but {a_file} is a file"):
        run(step, state, jax.random.key(0), 20, progress=False, checkpoint=path)
    assert calls == [] and a_file.read_text() == "a file"


def test_a_resume_with_a_trace_of_another_structure_is_refused_naming_both(tmp_path):
    kernel, state = _mala()
    key = jax.random.key(0)
    run(kernel.step, state, key, 10, trace=lambda s, info: s.position, progress=False, checkpoint=tmp_path,
        fingerprint="same settings")
    with pytest.raises(CheckpointError, match=r"holds a trace of another structure .*: PyTreeDef\(\*\) where this run's "
                       r"trace gives PyTreeDef\(\(\*, \*\)\)") as err:
        run(kernel.step, state, key, 20, trace=lambda s, info: (s.position, info.acceptance_rate), progress=False,
            checkpoint=tmp_path, fingerprint="same settings")
    assert "trace function" in err.value.hint
    with pytest.raises(CheckpointError, match=r"float32\[10, 8, 2\] where this run's trace gives float32\[10, 8\]"):
        run(kernel.step, state, key, 20, trace=lambda s, info: s.position[:, 0], progress=False,
            checkpoint=tmp_path, fingerprint="same settings")


def test_a_resume_with_a_trace_of_another_structure_is_refused_for_older_manifests(tmp_path):
    kernel, state = _mala()
    key = jax.random.key(0)
    run(kernel.step, state, key, 10, trace=lambda s, info: s.position, progress=False, checkpoint=tmp_path,
        fingerprint="same settings")
    mf = ckpt.list_steps(tmp_path)[0] / ckpt.MANIFEST
    manifest = {k: v for k, v in json.loads(mf.read_text()).items() if not k.startswith("trace_")}
    manifest["manifest_sha256"] = ckpt._manifest_digest(manifest)
    mf.write_text(json.dumps(manifest))
    with pytest.raises(CheckpointError, match="holds a trace of another structure than this run's"):
        run(kernel.step, state, key, 20, trace=lambda s, info: (s.position, info.acceptance_rate), progress=False,
            checkpoint=tmp_path, fingerprint="same settings")


def test_resume_of_a_run_without_checkpoints_says_it_starts_again(capsys, tmp_path):
    import shutil

    cfg = load_config(QUICKSTART, [*SMALL, f"run.out_dir={tmp_path}"])
    run_dir, _ = run_experiment(cfg, verbose=False)
    shutil.rmtree(run_dir / "checkpoints")
    code, lines = cli(capsys, "resume", run_dir)
    assert code == 0, lines
    assert f"jaxsamp: warning: no valid checkpoint in {run_dir}; the run starts again from step 0" in lines
    assert ckpt.latest_valid(run_dir / "checkpoints") is not None


def test_resume_with_a_checkpoint_folder_that_is_a_file_is_one_line_before_any_work(capsys, tmp_path):
    import shutil

    cfg = load_config(QUICKSTART, [*SMALL, f"run.out_dir={tmp_path}"])
    run_dir, _ = run_experiment(cfg, verbose=False)
    shutil.rmtree(run_dir / "checkpoints")
    (run_dir / "checkpoints").write_text("not a folder")
    code, lines = cli(capsys, "resume", run_dir)
    assert_one_line_error(code, lines, "CheckpointError", f"{run_dir / 'checkpoints'} should be a checkpoint folder but is a file")
    assert (run_dir / "checkpoints").read_text() == "not a folder"


# bad inputs of issue 40: seeds and keys, models, states, driver steps, CLI files
# --------------------------------------------------------------------------


def _log_density(x):
    return -0.5 * jnp.sum(x**2)


TINY = {"num_chains": 2, "num_warmup": 20, "num_samples": 5, "progress": False}


@pytest.mark.parametrize("seed", [np.int64(3), np.int32(3), np.array(3), jnp.array(3, dtype=jnp.int32)])
def test_sample_takes_every_integer_type_as_a_seed(seed):
    a = jaxsamp.sample(_log_density, init=jnp.zeros(2), key=seed, **TINY)
    b = jaxsamp.sample(_log_density, init=jnp.zeros(2), key=3, **TINY)
    np.testing.assert_array_equal(np.asarray(a.positions), np.asarray(b.positions))


@pytest.mark.parametrize(
    "key, fragment",
    [
        (1.5, "key must be a PRNG key or an integer seed, got float 1.5"),
        (True, "key must be a PRNG key or an integer seed, got bool True"),
        ("0", "key must be a PRNG key or an integer seed, got str '0'"),
        (np.zeros(2), "key must be a PRNG key or an integer seed, got ndarray of dtype float64"),
        (jax.random.split(jax.random.key(0), 2), r"key must be ONE PRNG key, got a batch of shape \(2,\)"),
        (2**70, "an integer seed must fit in a signed 64-bit integer"),
    ],
)
def test_sample_refuses_what_is_neither_a_key_nor_a_seed(key, fragment):
    with pytest.raises(InputError, match=fragment) as err:
        jaxsamp.sample(_log_density, init=jnp.zeros(2), key=key, **TINY)
    assert "jax.random.key(seed)" in err.value.hint


def test_a_seed_beyond_64_bits_is_a_config_error_before_the_run(capsys, tmp_path):
    bad_run(capsys, tmp_path, QUICKSTART, "seed=99999999999999999999",
            fragment="seed must be >= 0 and <= 9223372036854775807, got 99999999999999999999")


def _discrete_mixture(y=None):
    import numpyro
    import numpyro.distributions as dist

    mu = numpyro.sample("mu", dist.Normal(0.0, 1.0))
    z = numpyro.sample("z", dist.Bernoulli(0.3))
    numpyro.sample("y", dist.Normal(mu + z, 1.0), obs=y)


def test_a_numpyro_model_with_a_discrete_latent_says_what_jaxsamp_samples():
    """Was numpyro's ImportError asking to install funsor."""
    pytest.importorskip("numpyro")
    with pytest.raises(InputError, match=r"discrete latent site\(s\) 'z' \(BernoulliProbs\); jaxsamp samples the "
                                         "continuous latents of a numpyro model with HMC/NUTS") as err:
        jaxsamp.sample(_discrete_mixture, model_args=(1.0,), **TINY)
    assert "marginalise the discrete latent" in err.value.hint and "jaxsamp list" in err.value.hint
    with pytest.raises(InputError, match="discrete latent"):
        targets.from_numpyro(_discrete_mixture, 1.0)


def test_an_observed_discrete_site_is_fine():
    pytest.importorskip("numpyro")
    import numpyro
    import numpyro.distributions as dist

    def poisson(y):
        rate = numpyro.sample("log_rate", dist.Normal(0.0, 1.0))
        numpyro.sample("y", dist.Poisson(jnp.exp(rate)), obs=y)

    assert targets.from_numpyro(poisson, jnp.array([1, 2, 3])).event_shape == (1,)


def test_log_prob_takes_a_python_list_as_a_plain_call_and_inside_jit_and_vmap():
    """Was a three-input chex shape message that did not say 'pass an array'."""
    target = targets.get("gaussian", dim=3)
    expected = float(target.log_prob(jnp.zeros(3)))
    assert float(target.log_prob([0.0, 0.0, 0.0])) == expected
    assert float(target.log_prob([0, 0, 0])) == expected  # integers in a list are coordinates
    assert float(jax.jit(lambda a: target.log_prob([a, a, a]))(0.0)) == expected
    assert jax.vmap(lambda a: target.log_prob([a, 0.0, 0.0]))(jnp.zeros(4)).shape == (4,)
    assert float(targets.get("ising", L=2, beta=0.1).log_prob([[1, 1], [1, 1]])) == pytest.approx(
        float(targets.get("ising", L=2, beta=0.1).log_prob(jnp.ones((2, 2)))))


def test_log_prob_of_an_integer_array_on_a_real_domain_says_pass_a_float_state():
    with pytest.raises(AssertionError, match=r"gaussian.log_prob takes a float state; pass x.astype\(float\)"):
        targets.get("gaussian", dim=3).log_prob(jnp.zeros(3, dtype=jnp.int32))
    with pytest.raises(AssertionError, match="takes one state of shape"):
        targets.get("gaussian", dim=3).log_prob([0.0, 0.0])


def test_ctrl_c_names_the_run_folder_to_resume(capsys, tmp_path, monkeypatch):
    """The message once printed the placeholder RUN_DIR."""
    import jaxsamp.experiments.mcmc_experiment as mcmc_experiment
    from jaxsamp.cli import EXIT_INTERRUPTED

    def ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(mcmc_experiment.plots, "samples_against_target", ctrl_c)  # after the checkpoints
    code, lines = cli(capsys, "run", QUICKSTART, *SMALL, f"run.out_dir={tmp_path}", "run.checkpoint_every=10")
    (run_dir,) = (tmp_path / "quickstart").iterdir()
    assert code == EXIT_INTERRUPTED
    assert lines[-1] == f"jaxsamp: interrupted; `jaxsamp resume {run_dir}` continues from the last checkpoint"
    assert json.loads((run_dir / ERROR_FILE).read_text())["status"] == "interrupted"
    code, lines = cli(capsys, "resume", run_dir)  # interrupted again while resuming: the same folder
    assert code == EXIT_INTERRUPTED and lines[-1].startswith(f"jaxsamp: interrupted; `jaxsamp resume {run_dir}`")
    monkeypatch.setattr(mcmc_experiment, "run", ctrl_c)  # before any checkpoint: nothing to resume
    code, lines = cli(capsys, "run", QUICKSTART, *SMALL, f"run.out_dir={tmp_path / 'fresh'}")
    assert code == EXIT_INTERRUPTED and lines[-1] == "jaxsamp: interrupted; nothing was kept (the run had not written a checkpoint yet)"
    assert not (tmp_path / "fresh").exists()


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"foo": 1}, "nuts warm-up: unknown parameter 'foo'; accepted: target_acceptance, initial_step_size, max_num_doublings"),
        ({"sampler": "hmc", "max_num_doublings": 5}, "hmc warm-up: unknown parameter 'max_num_doublings'"),
        ({"warmup_method": "chees", "max_num_doublings": 5}, "chees warm-up: unknown parameter 'max_num_doublings'"),
    ],
)
def test_sample_refuses_parameters_its_warm_up_would_drop(kwargs, fragment):
    """A typo in a NUTS parameter was a raw TypeError from deep inside; under ChEES it was silently ignored."""
    with pytest.raises(InputError, match=fragment):
        jaxsamp.sample(_log_density, init=jnp.zeros(2), **TINY, **kwargs)


def test_sample_refuses_a_complex_init():
    """A complex init silently lost its imaginary part."""
    with pytest.raises(InputError, match="init must be real positions, got a complex array"):
        jaxsamp.sample(_log_density, init=jnp.zeros(2, dtype=jnp.complex64), **TINY)


@pytest.mark.parametrize(
    "kwargs, fragment",
    [({"model_args": 3.0}, "model_args must be a tuple of the model's positional arguments, got float"),
     ({"model_kwargs": [1.0]}, "model_kwargs must be a dict of the model's keyword arguments, got list")],
)
def test_sample_refuses_model_data_that_is_not_a_tuple_or_dict(kwargs, fragment):
    """A numpyro model given model_args=y (not (y,)) was taken for a plain log density and asked for init=."""
    with pytest.raises(InputError, match=fragment):
        jaxsamp.sample(_discrete_mixture, **TINY, **kwargs)


def test_a_log_density_of_two_arguments_is_an_input_error_with_a_hint():
    """Was a raw TypeError from jax.eval_shape."""
    with pytest.raises(InputError, match=r"cannot be called on one state of shape \(2,\): .*missing 1 required") as err:
        jaxsamp.sample(lambda x, data: -jnp.sum((x - data) ** 2), init=jnp.zeros(2), **TINY)
    assert "model_args" in err.value.hint  # the data come as model_args, traced
    with pytest.raises(InputError, match="log_prob_fn must be a function of one state, got int"):
        targets.from_function(3, jnp.zeros(2))  # was jax's 'Expected a callable value'


def test_an_exception_raised_by_the_users_log_density_reaches_the_user_unchanged():
    def broken(x):
        raise ZeroDivisionError("the user's own bug")

    with pytest.raises(ZeroDivisionError, match="the user's own bug"):
        jaxsamp.sample(broken, init=jnp.zeros(2), **TINY)


@pytest.mark.parametrize(
    "step, state, trace, fragment",
    [
        (lambda k, s: s, jnp.zeros(2), None, "step must return a pair (state, info), got an array"),
        (lambda k, s: (jnp.concatenate([s, s]), None), jnp.zeros(2), None,
         "step must keep the state's shapes and dtypes: the state is float32[2] in and float32[4] out"),
        (lambda k, s: ({"x": s["x"].astype(jnp.int32)}, None), {"x": jnp.zeros(2)}, None,
         "step must keep the state's shapes and dtypes: ['x'] is float32[2] in and int32[2] out"),
        (lambda k, s: ((s, s), None), jnp.zeros(2), None, "step must return a state of the input's structure"),
        (lambda k, s: (s, None), {"x": jnp.zeros(2), "name": "chain"}, None, "state must be a PyTree of arrays; state['name'] is a str"),
        (lambda k, s: (s, None), jnp.zeros(2), lambda s, i: {"label": "hello"},
         "trace must return a PyTree of arrays; its output['label'] is a str"),
    ],
)
def test_driver_names_a_step_state_or_trace_of_the_wrong_shape(step, state, trace, fragment):
    """Each was a raw error from inside the scan: an unpacking ValueError, five lines on carry types,
    jit's 'error interpreting argument', or an internal AttributeError ('tuple' has no 'removeprefix')."""
    with pytest.raises(InputError, match=fragment.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(").replace(")", r"\)")):
        run(step, state, jax.random.key(0), 3, trace=trace, progress=False)


def test_driver_refuses_a_checkpoint_that_is_not_a_path():
    kernel, state = _mala()
    with pytest.raises(InputError, match="checkpoint must be a folder path"):
        run(kernel.step, state, jax.random.key(0), 3, progress=False, checkpoint=5)


def test_a_config_path_that_is_a_folder_says_so(capsys, tmp_path):
    """Was 'config file not found' for a folder that exists."""
    code, lines = cli(capsys, "run", tmp_path)
    assert_one_line_error(code, lines, "ConfigError", f"config path is a folder, not a file: {tmp_path}")


def test_a_config_that_is_a_yaml_list_is_a_config_error(capsys, tmp_path):
    """Was 'internal error: TypeError: Cannot merge incompatible container types', exit 1."""
    config = tmp_path / "list.yaml"
    config.write_text("- name: x\n- kind: mcmc\n")
    bad_run(capsys, tmp_path, config, fragment="a config must be a mapping of keys (name, kind, target, ...), got a YAML list")


def test_an_override_without_a_key_is_refused(capsys, tmp_path):
    """Was "Key '' not in 'ExperimentConfig'"."""
    bad_run(capsys, tmp_path, QUICKSTART, "=5", fragment="override '=5' is not of the form key=value")


@pytest.mark.parametrize(
    "override, fragment",
    [("run.num_steps=[1, 2]", "could not be converted to Integer (key: run.num_steps)"),
     ("target=5", "(key: target)"),
     ("run.nosuch=1", "Key 'nosuch' not in 'RunSettings'")],
)
def test_a_list_or_scalar_where_the_schema_wants_another_shape_is_one_line(capsys, tmp_path, override, fragment):
    bad_run(capsys, tmp_path, QUICKSTART, override, fragment=fragment)


def test_resume_of_a_folder_whose_config_is_unreadable_is_one_line(capsys, tmp_path):
    (tmp_path / "config.yaml").write_text("name: [unclosed\n")
    code, lines = cli(capsys, "resume", tmp_path)
    assert_one_line_error(code, lines, "ConfigError", "config.yaml: cannot parse YAML")
    code, lines = cli(capsys, "resume", tmp_path / "config.yaml")  # a file, not a folder
    assert_one_line_error(code, lines, "ConfigError", "not a run folder (no config.yaml)")


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"num_chains": True}, "num_chains must be int, got True"),
        ({"num_chains": 2.5}, "num_chains must be int, got 2.5"),
        ({"thin": 0}, "thin must be >= 1, got 0"),
        ({"sampler": "nope"}, "unknown sampler 'nope'"),
        ({"init": jnp.array([0.0, jnp.nan])}, "starting points must be finite"),
        ({"init": jnp.zeros((5, 2))}, r"starting points must have shape \(2, 2\) \(or one state \(2,\)\), got \(5, 2\)"),
        ({"model": lambda x: x}, r"log_prob_fn must return one scalar for one state of shape \(2,\), got \(2,\)"),
        ({"model": lambda x: None}, "log_prob_fn must return one scalar for one state of shape"),
        ({"model": 3}, "model must be a Target, a numpyro model, an Inference Gym model or a function, got int"),
    ],
)
def test_sample_arguments_are_checked_before_any_work(kwargs, fragment):
    args = {"model": _log_density, "init": jnp.zeros(2), **TINY, **kwargs}
    with pytest.raises(InputError, match=fragment):
        jaxsamp.sample(args.pop("model"), **args)


# --------------------------------------------------------------------------
# the driver's chain health (issue 40): bare kernels through jaxsamp.run, and sample's end-of-run check
# --------------------------------------------------------------------------


def _health_messages(fn) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in caught if issubclass(w.category, RunHealthWarning)]


def test_sample_says_when_nuts_chains_end_in_a_plus_inf_region():
    """Was: 'no chain moved' and R-hat, never why; blackjax's NUTS accepts a move to +inf and stays there."""
    def log_prob(x):
        return jnp.where(x[0] > 1.5, jnp.inf, -0.5 * jnp.sum(x**2))

    messages = _health_messages(
        lambda: jaxsamp.sample(log_prob, init=jnp.zeros(2), num_warmup=100, num_samples=50, progress=False)
    )
    assert any("ended where the log density is +inf" in m for m in messages), messages


def test_run_health_after_a_resume_compares_with_the_initial_state(tmp_path):
    """A stuck run killed and resumed still says that no chain moved (start = the state given to the first call)."""
    kernel = ensemble(blackjax.mala(lambda x: -0.5 * jnp.sum(x**2), 1e-30))
    state = kernel.init(jnp.ones((4, 2)))
    run(kernel.step, state, jax.random.key(0), 8, progress=False, checkpoint=tmp_path, health=False)
    messages = _health_messages(
        lambda: run(kernel.step, state, jax.random.key(0), 16, progress=False, checkpoint=tmp_path)
    )
    assert any("no chain moved" in m and "16 steps" in m for m in messages), messages


def test_run_health_looks_through_wrapped_states():
    """guard_finite and repeat keep blackjax's state: the check reads through the combinators."""
    nan_density = lambda x: jnp.nan * jnp.sum(x)  # noqa: E731
    kernel = ensemble(guard_finite(repeat(blackjax.mala(nan_density, 0.1), 2)))
    messages = _health_messages(
        lambda: run(kernel.step, kernel.init(jnp.zeros((4, 2))), jax.random.key(0), 5, progress=False)
    )
    assert any("all 4 chains started where the log density is NaN" in m for m in messages), messages
    assert any("no chain moved" in m for m in messages), messages
