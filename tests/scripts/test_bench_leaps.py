"""Run bench_leaps in --quick mode so the script never rots (no figure or timing is asserted): the L = 8 protocol,
and the L = 15 runs on Potts (the problem whose log Z reference is the SMC estimate; Ising differs only in using
the exact log Z and in timing 1000 walkers), which must also go on after a kill."""

import json
import math
import shutil

import pytest

from _quick_bench import quick_payload

FIGURES = {
    f"{figure}_L8_{network}{suffix}" for network in ("conv", "mlp", "attention") for suffix in ("", "_sd", "_seed0")
    for figure in ("ess", "logz_abs_err", "logz_fe_abs_err", "train_steps_per_s", "train_target_evals")
} | {  # the paper's quadrature on the exact weights' walkers, beside every exact-weight figure
    f"{figure}_L8_{network}_quadrature_paper" for network in ("conv", "mlp", "attention")
    for figure in ("ess", "logz_hat", "logz_abs_err")
} | {"smc_logz_abs_err_L8_equal_evals", "smc_logz_abs_err_L8_total_evals", "buffer_bytes_per_state"}


def test_bench_leaps_quick(tmp_path):
    out = quick_payload("leaps", results_dir=tmp_path)
    results = out["results"]
    assert FIGURES <= set(results)
    assert out["command"].startswith("python scripts/bench_leaps.py")
    assert all(0 < results[f"ess_L8_{n}"] <= 1 for n in ("conv", "mlp", "attention"))
    assert results["buffer_bytes_per_state"] == 8 * 8 + 4  # int8 spins and a float32 time
    assert results["smc_target_evals_L8_equal_evals"] <= results["leaps_sampling_target_evals_L8"]
    assert results["train_target_evals_L8_conv"] > 0 and results["ess_L8_conv_seeds"] == 1
    assert math.isfinite(results["logz_abs_err_L8_conv"]) and math.isfinite(results["smc_logz_abs_err_L8_equal_evals"])


def test_bench_leaps_quick_lattice_15_goes_on_after_a_kill(tmp_path):
    """The L = 15 run on Potts; then, as if killed in the final training after its checkpoint at 8 of 12 updates,
    the same command goes on: recorded stages are read back from the results file (a pilot's figure, marked, comes
    back as recorded), the training resumes from the checkpoint and ends where the whole run did, bit for bit.
    Other settings are refused, and ``--fresh`` runs every stage again; a setting only the final stage uses (the curve
    cadence) may change until the final is recorded."""
    args = ("--lattice", "15", "--problems", "potts")
    first = quick_payload("leaps", *args, results_dir=tmp_path)["results"]
    names = ("logz_reference_L15_potts", "logz_reference_L15_potts_sd", "pilot_ess_L15_potts_conv", "ess_L15_potts",
             "logz_abs_err_L15_potts", "logz_fe_abs_err_L15_potts", "train_minutes_L15_potts", "ess_curve_L15_potts",
             "ess_L15_potts_quadrature_paper", "logz_abs_err_L15_potts_quadrature_paper",
             "pilot_ess_L15_potts_conv_quadrature_paper", "ess_quadrature_paper_curve_L15_potts")
    assert set(names) <= set(first)
    assert first["network_L15_potts"] == "conv" and 0 < first["ess_L15_potts"] <= 1
    assert first["logz_reference_L15_potts_sd"] > 0 and math.isfinite(first["logz_abs_err_L15_potts"])
    assert set(first["stages_L15_potts"]) == {"settings", "reference", "pilot_conv", "final"}
    # the final model's proposal cells (Ising only in a full run, at 100 and 200 steps with both floors; --quick runs
    # one cell on Potts to cover the code): unsplit with both estimators, and on 3 colour classes
    name = "proposal_ess_L15_potts_10steps_per_step"
    assert 0 < first[name] <= 1 and 0 < first[f"{name}_quadrature_paper"] <= 1 and 0 < first[f"{name}_checkerboard"] <= 1
    assert first["proposal_potts_network_passes_10steps_checkerboard"] == 3 * 10  # 5 x 5 torus: 3 colours

    file = tmp_path / "bench_leaps_quick.json"
    payload = json.loads(file.read_text())
    del payload["results"]["stages_L15_potts"]["final"]
    payload["results"]["pilot_ess_L15_potts_conv"] = 0.5
    file.write_text(json.dumps(payload))
    checkpoints = sorted((tmp_path / "checkpoints" / "bench_leaps_L15_potts" / "final_conv").glob("step_*"))
    assert [c.name for c in checkpoints] == ["step_0000000008", "step_0000000012"]
    shutil.rmtree(checkpoints[-1])

    second = quick_payload("leaps", *args, results_dir=tmp_path)["results"]
    assert second["pilot_ess_L15_potts_conv"] == 0.5
    differ = {"pilot_ess_L15_potts_conv", "train_minutes_L15_potts"}  # the marked figure, and a timing
    assert {k: v for k, v in second.items() if k not in differ} == {k: v for k, v in first.items() if k not in differ}
    with pytest.raises(SystemExit, match=r"other settings \(pilot_minutes\)"):
        quick_payload("leaps", *args, "--pilot-minutes", "5", results_dir=tmp_path)
    third = quick_payload("leaps", *args, "--fresh", "--pilots-only", results_dir=tmp_path)["results"]
    assert third["pilot_ess_L15_potts_conv"] == first["pilot_ess_L15_potts_conv"]
    assert set(third["stages_L15_potts"]) == {"settings", "reference", "pilot_conv"}
    fourth = quick_payload("leaps", *args, "--curve-every", "6", results_dir=tmp_path)["results"]  # only the final uses it
    assert fourth["stages_L15_potts"]["settings"]["curve_every"] == 6 and "final" in fourth["stages_L15_potts"]
    # each curve point (fit's learning curve, every 6 updates): both estimators on the same walkers
    assert [u for u, _ in fourth["ess_curve_L15_potts"]] == [u for u, _ in fourth["ess_quadrature_paper_curve_L15_potts"]] == [6, 12]
    with pytest.raises(SystemExit, match=r"other settings \(curve_every\)"):
        quick_payload("leaps", *args, results_dir=tmp_path)
    fifth = quick_payload("leaps", *args, "--redo-final", results_dir=tmp_path)["results"]  # the final alone, again
    assert fifth["stages_L15_potts"]["settings"]["curve_every"] == 500 and "final" in fifth["stages_L15_potts"]
    assert fifth["pilot_ess_L15_potts_conv"] == third["pilot_ess_L15_potts_conv"] and fifth["ess_curve_L15_potts"] == []
    payload = json.loads(file.read_text())  # a redo killed after its checkpoint at 8 updates goes on from it
    del payload["results"]["stages_L15_potts"]["final"]
    file.write_text(json.dumps(payload))
    kept = tmp_path / "checkpoints" / "bench_leaps_L15_potts" / "final_conv" / "step_0000000008"
    shutil.rmtree(kept.parent / "step_0000000012")
    written = kept.stat().st_mtime_ns
    sixth = quick_payload("leaps", *args, "--redo-final", results_dir=tmp_path)["results"]
    assert kept.stat().st_mtime_ns == written  # resumed from it, not wiped and trained again
    differ = {"train_minutes_L15_potts"}
    assert {k: v for k, v in sixth.items() if k not in differ} == {k: v for k, v in fifth.items() if k not in differ}
    direct = quick_payload("leaps", *args, "--final-network", "conv", results_dir=tmp_path / "direct")["results"]
    assert set(direct["stages_L15_potts"]) == {"settings", "reference", "final"}  # a recorded pick: no pilots
    assert direct["network_L15_potts"] == "conv" and not any(k.startswith("pilot_") for k in direct)


def test_bench_leaps_quick_profile(tmp_path):
    results = quick_payload("leaps", "--lattice", "15", "--profile", "--problems", "potts", results_dir=tmp_path)["results"]
    pieces = ("rate_forward_16", "correction_16", "correction_16_whole_lattice", "rollout_10", "loss_grad_32")
    assert {f"profile_L15_potts_conv_{piece}" for piece in pieces} == set(results)
    assert all(v > 0 for v in results.values())


def test_bench_leaps_quick_proposal_study(tmp_path):
    """The proposal study scores each model unsplit (both estimators on the same walkers) and with checkerboard
    sub-steps (exact weights only, twice the network passes), with both floors, on the same keys. It runs the
    floor study's code with checkerboard draws added, so it stands for the floor study too: at the quick run's 8
    steps the two floors differ (at the full run's 100 steps they coincide). The steps study is the same code with
    one floor and no checkerboard."""
    results = quick_payload("leaps", "--proposal-study", results_dir=tmp_path)["results"]
    for n in (4, 8):
        for floor in ("per_step", "per_unit_time"):
            name = f"proposal_study_ess_L8_attention_{n}steps_{floor}"
            assert 0 < results[name] <= 1 and 0 < results[f"{name}_quadrature_paper"] <= 1
            assert 0 < results[f"{name}_checkerboard"] <= 1 and f"{name}_checkerboard_quadrature_paper" not in results
        assert results[f"proposal_study_network_passes_{n}steps_checkerboard"] == 2 * n
        assert math.isfinite(results[f"proposal_study_logz_abs_err_L8_attention_{n}steps_per_step"])
        assert results[f"proposal_study_target_evals_L8_{n}steps"] == 256 * (2 * n + 1)
        assert results[f"proposal_study_target_evals_L8_{n}steps_checkerboard"] == 256 * (4 * n + 1)
    assert results["proposal_study_ess_L8_attention_8steps_per_step"] != results[
        "proposal_study_ess_L8_attention_8steps_per_step_checkerboard"]
    assert results["proposal_study_logz_hat_L8_attention_8steps_per_step"] != results[
        "proposal_study_logz_hat_L8_attention_8steps_per_unit_time"]
    assert not any(k.startswith(("ess_L8", "floor_study", "steps_study")) for k in results)
