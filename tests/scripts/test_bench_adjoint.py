"""The Adjoint Sampling / ASBS benchmark runs end to end at CI size and writes every figure the issue asks for."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from _quick_bench import run_quick

ROOT = Path(__file__).resolve().parents[2]
FIGURES = [
    f"{method}_{system}_{figure}{suffix}" for method, system in (("as", "dw4"), ("asbs", "lj13"))  # the quick runs
    for figure in ("w2", "energy_w2", "ess", "nonfinite", "energy_evals", "train_minutes") for suffix in ("", "_sd")
] + ["epoch_seconds_dw4_paper_config", "rollout_seconds_dw4_paper_config", "dw4_w2_floor", "lj13_energy_w2_floor"]


def test_quick_benchmark_writes_its_figures(tmp_path):
    results = run_quick("adjoint", "--keep", str(tmp_path), "--curve-every", "3", results_dir=tmp_path)
    for name in FIGURES:
        assert name in results and results[name] == results[name], name  # present and not NaN
    assert results["as_dw4_energy_evals"] == 3 * 32  # 3 epochs x 32 rollout paths, one gradient each
    assert results["asbs_lj13_energy_evals"] == 2 * 32  # 2 adjoint epochs and 1 corrector epoch (no energy calls)
    assert results["as_dw4_w2"] > 0 and results["asbs_lj13_energy_w2"] > 0 and results["as_dw4_w2_seeds"] == 1
    for run in ("as_dw4_seed0", "asbs_lj13_seed0"):
        curve = results[run.replace("_seed", "_curve_seed")]  # --curve-every 3: one point, after the 3 quick epochs
        assert [p["epoch"] for p in curve["points"]] == [3] and len(curve["rollout_energy_mean"]) == 3, run
        assert {"w2", "ema_w2", "energy_w2", "ema_energy_median"} <= set(curve["points"][0]), run  # --keep: the trained state, samples and histograms of each run
        kept = tmp_path / run
        assert (kept / "samples.npz").is_file() and (kept / "energy_histogram.png").is_file(), run
        assert [p.name for p in (kept / "checkpoint").iterdir()] == ["step_0000000003"]  # after the 3 quick epochs


def test_the_reference_baseline_uses_the_pre_fix_rules_on_the_same_config(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "scripts"))
    import bench_adjoint

    fixed = bench_adjoint.build("adjoint_dw4_cpu.yaml", quick=False)
    reference = bench_adjoint.build("adjoint_dw4_cpu.yaml", quick=False, overrides=bench_adjoint.REFERENCE_RULES)
    assert (fixed.settings.exact_variance, fixed.settings.ema_decay) == (True, 0.999)
    assert (reference.settings.exact_variance, reference.settings.ema_decay) == (False, 0.0)
    assert reference.settings.buffer_epochs * reference.batch_size == 9984  # the reference's 10 000 samples
    restored = {k: getattr(fixed.settings, k) for k in bench_adjoint.REFERENCE_RULES}
    assert dataclasses.replace(reference.settings, **restored) == fixed.settings  # nothing else differs


def test_a_learning_curve_between_checks_is_a_clear_error(monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(ROOT / "scripts"))
    import bench_adjoint

    with pytest.raises(SystemExit):
        bench_adjoint.main(["--curve-every", "15", "--no-speed"])  # training stops to check every 10 epochs
    assert "--curve-every must be a multiple of the 10 epochs" in capsys.readouterr().err


def test_cap_minutes_must_be_positive_and_not_with_until_cap(monkeypatch, capsys):
    """``--cap-minutes`` replaces the protocol's cap (so that the config's epochs end each run on a shared machine);
    with ``--until-cap``, whose budget is the protocol's cap, it is refused, as is a cap of 0."""
    monkeypatch.syspath_prepend(str(ROOT / "scripts"))
    import bench_adjoint

    for bad in (["--cap-minutes", "60", "--until-cap"], ["--cap-minutes", "0"]):
        with pytest.raises(SystemExit):
            bench_adjoint.main([*bad, "--no-speed"])
        assert "--cap-minutes must be > 0, and not with --until-cap" in capsys.readouterr().err


def test_training_blocks_reuse_one_compiled_chunk(monkeypatch):
    """Every block of epochs of a run (fit's chunks) runs the same compiled chunk (a fresh trace function per block
    recompiled each one, which slowed a 1000-epoch LJ-13 run and exhausted its memory for compiled code after 700
    epochs)."""
    monkeypatch.syspath_prepend(str(ROOT / "scripts"))
    import bench_adjoint

    from jaxsamp.core.driver import _scan_chunk

    run = bench_adjoint.build("adjoint_dw4_cpu.yaml", quick=True)
    compiled = _scan_chunk._cache_size()
    fitted = bench_adjoint.fit_run(run, 10.0, block=1)
    assert len(fitted.history["loss"]) == run.epochs == 3 and _scan_chunk._cache_size() == compiled + 1


def test_until_cap_trains_past_the_config_epochs_until_the_clock_ends_it(monkeypatch):
    """``--until-cap``: no epoch limit, the cap alone ends training (a 1-second cap on blocks of one epoch; the cap
    counts training, compilation left out)."""
    monkeypatch.syspath_prepend(str(ROOT / "scripts"))
    import bench_adjoint

    run = bench_adjoint.build("adjoint_dw4_cpu.yaml", quick=True)
    fitted = bench_adjoint.fit_run(run, 1 / 60, until_cap=True, block=1)
    assert len(fitted.history["loss"]) > run.epochs and fitted.seconds - fitted.compile_seconds >= 1.0


def test_the_official_asbs_variant_differs_from_the_cpu_config_only_in_adam_and_the_corrector_buffer(monkeypatch):
    """``asbs_official`` (configs/asbs_dw4_cpu_official.yaml): lr 1e-4, Adam eps 1e-10, a per-stage corrector buffer of
    10 rollouts; every other setting and the budget are the CPU config's. Its quick build runs an epoch of each kind.
    Without a DW-4 config for LJ-13 the method is a clear error."""
    monkeypatch.syspath_prepend(str(ROOT / "scripts"))
    import bench_adjoint

    cpu = bench_adjoint.build("asbs_dw4_cpu.yaml", quick=False)
    official = bench_adjoint.build(bench_adjoint.CONFIG["asbs_official"].format("dw4"), quick=False)
    changed = {"learning_rate": 1e-4, "adam_eps": 1e-10, "corrector_buffer_epochs": 10, "corrector_buffer_per_stage": True}
    assert {k: getattr(official.settings, k) for k in changed} == changed
    assert dataclasses.replace(official.settings, **{k: getattr(cpu.settings, k) for k in changed}) == cpu.settings
    assert (official.epochs, official.num_eval_samples, official.batch_size) == (
        cpu.epochs, cpu.num_eval_samples, cpu.batch_size)
    run = bench_adjoint.build("asbs_dw4_cpu_official.yaml", quick=True)
    assert run.settings.corrector_buffer_per_stage and run.settings.adam_eps == 1e-10
    fitted = bench_adjoint.fit_run(run, 10.0, block=1)  # 2 adjoint epochs, then the corrector's
    assert np.all(np.isfinite(fitted.history["loss"]))
    assert fitted.history["corrector_epoch"].tolist() == [False, False, True]
    assert int(fitted.state.corrector_buffer.size) == run.batch_size
    with pytest.raises(SystemExit):
        bench_adjoint.main(["--methods", "asbs_official", "--systems", "lj13", "--no-speed"])
