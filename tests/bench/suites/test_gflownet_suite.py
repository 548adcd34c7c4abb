"""The ``gflownet`` suite at its quick size through ``jaxsamp bench`` (figures in range, the learning curve kept and
drawn), its protocol's budgets, and the one-time conversion of the old ``bench_gflownet.json``."""

import json

from _glossary_names import assert_glossary_names

from jaxsamp.bench import legacy, store
from jaxsamp.bench.suites import gflownet
from jaxsamp.cli import main


def test_quick_run_records_figures_in_range_and_draws_the_learning_curves(tmp_path, capsys):
    cells = ["tb-tlm/hypergrid-standard", "db-tlm_bdecay1-1000k/hypergrid-hard", "rollout/*"]
    assert main(["bench", "run", "gflownet", "--quick", "--cells", *cells, "--results-dir", str(tmp_path)]) == 0
    data = store.read(tmp_path / "gflownet_quick.json")
    tb = data["records"]["tb-tlm/hypergrid-standard"]["0"]
    fig = tb["figures"]
    assert tb["cell"]["target"] == {"name": "hypergrid", "dim": 2, "side": 8, "reward": "standard"}
    for name in ("empirical_l1", "policy_l1"):  # an 8 x 8 grid: a mean |difference| of probabilities
        assert 0 <= fig[name] <= 2 / 64
    assert fig["empirical_kl"] > 0 and fig["policy_kl"] > 0 and fig["log_Z_learned_abs_err"] >= 0
    assert 0 <= fig["modes_found"] <= 4 and fig["train_trajectories_per_s"] > 0 and fig["train_steps"] == 60
    # the learning curve every 20 of the 60 iterations, its last point the final figure
    curve = tb["curves"]
    assert curve["trajectories"] == [320.0, 640.0, 960.0] and curve["empirical_l1"][-1] == fig["empirical_l1"]
    decay = data["records"]["db-tlm_bdecay1-1000k/hypergrid-hard"]["0"]
    assert decay["cell"]["params"]["settings"]["backward_lr_decay"] == 1.0 and 0 <= decay["figures"]["policy_l1"]
    assert data["records"]["rollout/hypergrid-standard"]["0"]["figures"]["rollout_trajectories_per_s"] > 0
    for png in ("gflownet_curves_standard_quick.png", "gflownet_curves_hard_1000k_quick.png"):
        assert (tmp_path / png).stat().st_size > 0
    figures = {f for cell in data["records"].values() for r in cell.values() for f in r["figures"]}
    assert_glossary_names(figures)
    capsys.readouterr()
    assert main(["bench", "report", "gflownet", "--quick", "--results-dir", str(tmp_path)]) == 0
    assert "| tb-tlm/hypergrid-standard | 1 |" in capsys.readouterr().out


def test_each_budget_keeps_a_fifth_of_its_trajectories_as_the_empirical_window():
    paper = gflownet.PROTOCOL.cell("db-tlm-1000k/hypergrid-standard")
    assert paper.budget.updates == 62_500 and paper.params["settings"]["history_size"] == 200_000
    cpu = gflownet.PROTOCOL.cell("db-tlm/hypergrid-standard")
    assert cpu.budget.updates == 5000 and cpu.params["settings"]["history_size"] == 16_000
    assert cpu.target == {"name": "hypergrid", "dim": 4, "side": 20, "reward": "standard"}


def test_the_old_results_file_converts_once_with_its_learning_curves(tmp_path):
    old = {"command": "python scripts/bench_gflownet.py", "date": "2026-12-03", "machine": {"cpu_count": 2},
           "results": {"db_tlm_standard_l1_seed0": 4e-6, "db_tlm_standard_l1": 4e-6, "db_tlm_standard_logz_abs_err_seed0": 0.1,
                       "munchausen_dqn_naive_hard_1000k_policy_l1_seed2": 2e-7,
                       "subtb_tlm_bdecay1_hard_1000k_modes_found_seed1": 16,
                       "db_tlm_standard_curve_seed0": {"trajectories": [1600.0, 3200.0], "l1": [5e-6, 4e-6],
                                                       "kl": [3.0, 2.5]},
                       "rollout_trajectories_per_s": 11762.0}}
    (tmp_path / "bench_gflownet.json").write_text(json.dumps(old))
    data = legacy.convert(gflownet.PROTOCOL, tmp_path / "bench_gflownet.json", gflownet.legacy_key,
                          tmp_path / "gflownet.json")
    rec = data["records"]["db-tlm/hypergrid-standard"]["0"]
    assert rec["figures"] == {"empirical_l1": 4e-6, "log_Z_learned_abs_err": 0.1}
    assert rec["curves"] == {"trajectories": [1600.0, 3200.0], "empirical_l1": [5e-6, 4e-6], "empirical_kl": [3.0, 2.5]}
    assert data["records"]["munchausen_dqn-naive-1000k/hypergrid-hard"]["2"]["figures"] == {"policy_l1": 2e-7}
    assert data["records"]["subtb-tlm_bdecay1-1000k/hypergrid-hard"]["1"]["figures"] == {"modes_found": 16}
    assert set(data["summary"]["db-tlm/hypergrid-standard"][0]["figures"]) == {"empirical_l1", "log_Z_learned_abs_err"}
    # the plot reads converted curves as the suite's own
    gflownet.plot_curves(data["records"], "standard", "", tmp_path / "curves.png")
    assert (tmp_path / "curves.png").stat().st_size > 0


def test_the_recorded_results_file_is_the_converted_one():
    data = store.read(store.results_path("gflownet"))
    assert data["suite"] == "gflownet" and len(data["records"]["db-naive-1000k/hypergrid-standard"]) == 3
    assert len(data["records"]["db-tlm/hypergrid-standard"]["0"]["curves"]["empirical_l1"]) == 50
