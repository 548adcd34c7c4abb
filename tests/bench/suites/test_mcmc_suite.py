"""The ``mcmc`` suite at its quick size through ``jaxsamp bench`` (each framework once on eight schools), and the
one-time conversion of the old ``bench_mcmc.json``, which kept only its first seed's first calls per seed."""

import json

import pytest
from _glossary_names import assert_glossary_names

from jaxsamp.bench import legacy, store
from jaxsamp.bench.suites import mcmc
from jaxsamp.cli import main
from jaxsamp.core.errors import ConfigError

FIGURES = {"min_ess_per_s", "min_ess_per_s_incl_warmup", "call_seconds", "min_ess_per_call_second", "max_rhat",
           "min_ess_bulk", "first_call_seconds", "warmup_seconds", "sampling_seconds"}
#: what the ``nuts`` runner reads off jaxsamp's own posterior besides
NUTS_FIGURES = {"draws_per_s", "grad_evals_per_s", "mean_integration_steps", "divergences", "lockstep",
                "batching_gain"}


def test_quick_run_records_every_framework_per_seed_with_its_rhat_and_the_ratios_as_comparisons(tmp_path, capsys):
    cells = ["jaxsamp/eight_schools", "numpyro/eight_schools", "blackjax/eight_schools", "diagnostics/*"]
    assert main(["bench", "run", "mcmc", "--quick", "--cells", *cells, "--results-dir", str(tmp_path)]) == 0
    data = store.read(tmp_path / "mcmc_quick.json")
    for framework in ("jaxsamp", "numpyro", "blackjax"):
        figures = data["records"][f"{framework}/eight_schools"]["0"]["figures"]
        assert set(figures) == FIGURES | (NUTS_FIGURES if framework == "jaxsamp" else set())
        assert figures["min_ess_per_s"] > 0 and figures["min_ess_per_call_second"] > 0 and figures["max_rhat"] > 0.9
        assert figures["first_call_seconds"] == figures["call_seconds"] > 0  # one call at the quick size
    assert data["records"]["diagnostics/posterior_summary"]["0"]["figures"]["first_call_seconds"] > 0
    recorded = {f for cell in data["records"].values() for r in cell.values() for f in r["figures"]}
    assert_glossary_names(recorded)
    ratio = next(c for c in data["comparisons"] if c["baseline"] == "blackjax/eight_schools"
                 and c["figure"] == "call_seconds")
    jaxsamp, blackjax = (data["records"][f"{f}/eight_schools"]["0"]["figures"]["call_seconds"]
                         for f in ("jaxsamp", "blackjax"))
    assert ratio["ratios"] == [pytest.approx(jaxsamp / blackjax)] and ratio["ratio_median"] == ratio["ratio_of_means"]
    goal = next(g for g in data["goals"] if g["figure"] == "call_seconds" and g["baseline"] == "blackjax/eight_schools")
    assert goal["mean"] == pytest.approx(jaxsamp / blackjax) and goal["decision"] == "undecided"  # one seed
    capsys.readouterr()
    assert main(["bench", "report", "mcmc", "--quick", "--results-dir", str(tmp_path)]) == 0
    assert "| blackjax/eight_schools | 1 |" in capsys.readouterr().out


def test_each_framework_is_a_cell_on_each_model_with_the_goals_against_blackjax():
    protocol = mcmc.PROTOCOL
    for model in mcmc.MODELS:
        for framework in mcmc.FRAMEWORKS:
            cell = protocol.cell(f"{framework}/{model}")
            assert (cell.params["num_warmup"], cell.params["num_samples"], cell.params["calls"]) == (1000, 1000, 2)
        goals = [g for g in protocol.goals if g.cell == f"jaxsamp/{model}"]
        assert {(g.figure, g.threshold, g.baseline) for g in goals} == {
            ("call_seconds", 1.1, f"blackjax/{model}"), ("min_ess_per_call_second", 0.95, f"blackjax/{model}")}
    assert protocol.cell("jaxsamp-vectorized/eight_schools").params["options"] == {"chain_method": "vectorized"}
    assert "idle machine" in protocol.notes and "need" in protocol.notes  # timings; the legacy re-run
    with pytest.raises(ConfigError, match="unknown baseline"):
        type(protocol)(suite="x", summary="", cells=protocol.cells[:1],
                       goals=(type(protocol.goals[0])("jaxsamp/eight_schools", "call_seconds", 1.0, baseline="nope"),))


def test_the_old_results_file_converts_once_its_first_seed_s_first_calls_only(tmp_path):
    old = {"command": "python scripts/bench_mcmc.py", "date": "2026-12-05",
           "machine": {"platform": "Linux-fc-v1252", "cpu_count": 2, "jax": "0.10.1"},
           "results": {"diagnostics_first_call_seconds": 0.35, "jaxsamp_eight_schools_first_call_seconds": 6.2,
                       "jaxsamp_vectorized_brownian_motion_first_call_seconds": 11.7,
                       "blackjax_eight_schools_call_seconds": 0.30, "blackjax_eight_schools_call_seconds_sd": 0.17,
                       "jaxsamp_over_blackjax_eight_schools_call_seconds": 0.75}}
    (tmp_path / "bench_mcmc.json").write_text(json.dumps(old))
    data = legacy.convert(mcmc.PROTOCOL, tmp_path / "bench_mcmc.json", mcmc.legacy_key, tmp_path / "mcmc.json",
                          legacy_single=mcmc.legacy_single)
    assert data["records"]["jaxsamp/eight_schools"]["0"]["figures"] == {"first_call_seconds": 6.2}
    assert data["records"]["jaxsamp-vectorized/brownian_motion"]["0"]["figures"] == {"first_call_seconds": 11.7}
    assert data["records"]["diagnostics/posterior_summary"]["0"]["figures"] == {"first_call_seconds": 0.35}
    assert "blackjax/eight_schools" not in data["records"]  # means, sds and ratios are not one seed's values


def test_the_recorded_results_file_holds_every_cell_s_three_seeds_from_one_machine_run():
    """The 2026-12-06 re-run replaced the converted seed-0 first calls: every cell has seeds 0-2, each with its
    per-seed figures (the call ratio of eight schools is now a median of per-seed ratios), on one machine."""
    data = store.read(store.results_path("mcmc"))
    assert data["suite"] == "mcmc" and len(data["records"]) == 13
    assert all(sorted(seeds) == ["0", "1", "2"] for seeds in data["records"].values())
    records = [r for seeds in data["records"].values() for r in seeds.values()]
    assert not any("legacy" in r["machine"] for r in records)
    assert len({store.machine_label(r["machine"]) for r in records}) == 1
    ratio = next(c for c in data["comparisons"] if c["cell"] == "jaxsamp/eight_schools"
                 and c["baseline"] == "blackjax/eight_schools" and c["figure"] == "call_seconds")
    assert len(ratio["ratios"]) == 3
