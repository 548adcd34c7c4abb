"""The ``leaps`` suite at its quick size through ``jaxsamp bench`` (figures in range, the learning curve kept and
drawn, the SMC baselines at LEAPS' evaluation counts, a checkpointed 15 x 15 cell), and the one-time conversion of
the old ``bench_leaps.json``."""

import json
import math

from _glossary_names import assert_glossary_names

from jaxsamp.bench import legacy, store
from jaxsamp.bench.suites import leaps
from jaxsamp.cli import main


def test_quick_run_records_leaps_and_its_equal_evaluation_baselines(tmp_path, capsys):
    cells = ["leaps-conv/ising-8", "smc-heat_bath*/ising-8", "leaps-conv/potts-15"]
    assert main(["bench", "run", "leaps", "--quick", "--cells", *cells, "--results-dir", str(tmp_path)]) == 0
    data = store.read(tmp_path / "leaps_quick.json")
    conv = data["records"]["leaps-conv/ising-8"]["0"]
    fig = conv["figures"]
    assert 0 < fig["ess"] <= 1 and 0 < fig["ess_quadrature_paper"] <= 1 and 0 < fig["ess_pre"] <= 1
    assert math.isfinite(fig["log_Z_abs_err"]) and math.isfinite(fig["log_Z_learned_abs_err"])
    assert fig["train_steps"] == 12 and fig["target_evals"] > 0
    # the learning curve every 4 updates, both estimators on the same 32 walkers
    assert conv["curves"]["step"] == [4.0, 8.0, 12.0] and len(conv["curves"]["ess_quadrature_paper"]) == 3
    assert (tmp_path / "leaps_ess_curves_quick.png").stat().st_size > 0
    # the baselines: LEAPS' sampling evaluations (2000 x 201: 2000 particles, 3 a level on 4 x 4),
    # and those plus the learned cell's training evaluations
    equal = data["records"]["smc-heat_bath/ising-8"]["0"]["figures"]
    assert equal["target_evals"] <= leaps.SAMPLING_EVALS < equal["target_evals"] + 3 * 2000
    total = data["records"]["smc-heat_bath-total/ising-8"]["0"]["figures"]
    assert total["target_evals"] <= leaps.SAMPLING_EVALS + fig["target_evals"] < total["target_evals"] + 3 * 2000
    assert equal["log_Z_abs_err"] < 0.5 and total["log_Z_abs_err"] < 0.5
    # the long 15 x 15 cell checkpoints into the results dir (a 5 x 5 Potts lattice at the quick size)
    potts = data["records"]["leaps-conv/potts-15"]["0"]
    assert 0 < potts["figures"]["ess"] <= 1 and potts["cell"]["target"] == {"name": "potts", "L": 5, "beta": 1.001, "q": 3}
    assert sorted(p.name for p in (tmp_path / "checkpoints" / "leaps_quick" / "leaps-conv_potts-15" / "seed0").iterdir())
    figures = {f for cell in data["records"].values() for r in cell.values() for f in r["figures"]}
    assert_glossary_names(figures)
    capsys.readouterr()
    assert main(["bench", "report", "leaps", "--quick", "--results-dir", str(tmp_path)]) == 0
    assert "| leaps-conv/ising-8 | 1 |" in capsys.readouterr().out


def test_the_protocols_cells_keep_the_scripts_settings():
    conv = leaps.PROTOCOL.cell("leaps-conv/ising-8")
    assert conv.budget.seconds == 600 and conv.params["settings"]["curriculum_steps"] == 19_500 // 3
    assert leaps.PROTOCOL.cell("smc-heat_bath/ising-8").budget.target_evals == 2000 * 201
    final = leaps.PROTOCOL.cell("leaps-conv/ising-15")
    assert final.budget.updates == 49_850 and final.params["settings"]["mcmc_updates"] == 200
    assert final.params["checkpoint_every"] == 5000
    study = leaps.PROTOCOL.cell("leaps-attention-200steps-per_unit_time-checkerboard/ising-8").params["settings"]
    assert (study["eval_steps"], study["jump_floor_rate"], study["checkerboard"]) == (200, 0.01, True)


def test_the_old_results_file_converts_once_with_its_single_15x15_runs(tmp_path):
    old = {"command": "python scripts/bench_leaps.py", "date": "2026-12-06", "machine": {"cpu_count": 2},
           "results": {"ess_L8_conv_seed1": 0.3, "ess_L8_conv": 0.25, "logz_abs_err_L8_conv_trapezoid_seed1": 0.006,
                       "ess_L8_conv_quadrature_paper_seed1": 0.52, "train_target_evals_L8_conv_seed1": 1.4e7,
                       "ess_curve_conv_seed1": [[500, 0.02], [1000, 0.04]],
                       "smc_levels_L8_total_evals_seed2": 2719.0, "leaps_sampling_target_evals_L8_seed2": 402000.0,
                       "floor_study_ess_L8_attention_400steps_per_unit_time_seed0": 0.61,
                       "steps_study_ess_L8_attention_400steps_seed0": 0.26,
                       "proposal_study_ess_L8_attention_200steps_per_step_checkerboard_seed2": 0.52,
                       "ess_L15_ising": 0.0136, "train_minutes_L15_potts": 120.0, "pilot_ess_L15_potts_mlp": 0.002,
                       "logz_reference_L15_potts": 465.4, "proposal_ess_L15_ising_100steps_per_step": 0.003,
                       "network_L15_ising": "conv", "walkers": 2000.0}}
    (tmp_path / "bench_leaps.json").write_text(json.dumps(old))
    data = legacy.convert(leaps.PROTOCOL, tmp_path / "bench_leaps.json", leaps.legacy_key, tmp_path / "leaps.json",
                          legacy_single=leaps.legacy_single)
    records = data["records"]
    conv = records["leaps-conv/ising-8"]["1"]
    assert conv["figures"] == {"ess": 0.3, "log_Z_abs_err_trapezoid": 0.006, "ess_quadrature_paper": 0.52,
                               "target_evals": 1.4e7}
    assert conv["curves"] == {"ess_curve": [[500, 0.02], [1000, 0.04]]}
    assert records["smc-heat_bath-total/ising-8"]["2"]["figures"] == {"num_levels": 2719.0}
    assert records["smc-heat_bath/ising-8"]["2"]["figures"] == {"target_evals": 402000.0}
    assert records["leaps-attention-400steps-per_unit_time-10min/ising-8"]["0"]["figures"] == {"ess": 0.61}
    assert records["leaps-attention-400steps-10min/ising-8"]["0"]["figures"] == {"ess": 0.26}
    assert records["leaps-attention-200steps-per_step-checkerboard/ising-8"]["2"]["figures"] == {"ess": 0.52}
    # the single 15 x 15 runs are seed 0; constants, the reference aggregate and the proposal cells are dropped
    assert records["leaps-conv/ising-15"]["0"]["figures"] == {"ess": 0.0136}
    assert records["leaps-conv/potts-15"]["0"]["figures"] == {"train_seconds_incl_compile": 7200.0}
    assert records["leaps-mlp-10min/potts-15"]["0"]["figures"] == {"ess": 0.002}
    assert len(records) == 9
    leaps.plot_curves(records, tmp_path / "curves.png")  # converted curves draw as the suite's own
    assert (tmp_path / "curves.png").stat().st_size > 0


def test_the_recorded_results_file_is_the_converted_one():
    data = store.read(store.results_path("leaps"))
    assert data["suite"] == "leaps" and len(data["records"]["leaps-attention/ising-8"]) == 3
    assert list(data["records"]["leaps-conv/ising-15"]) == ["0"]
