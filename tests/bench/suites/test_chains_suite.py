"""The ``chains`` suite at its quick size through ``jaxsamp bench`` (what ``auto`` chose and measured recorded beside
a fixed method), and its protocol: every model three ways, ``auto`` against both fixed methods."""

from _glossary_names import assert_glossary_names

from jaxsamp.bench import store
from jaxsamp.bench.suites import chains
from jaxsamp.cli import main
from jaxsamp.mcmc.chain_method import LOCKSTEP_GAIN


def test_quick_run_records_what_auto_chose_and_measured_beside_a_fixed_method(tmp_path):
    cells = ["auto/eight_schools", "sequential/eight_schools"]
    assert main(["bench", "run", "chains", "--quick", "--cells", *cells, "--results-dir", str(tmp_path)]) == 0
    data = store.read(tmp_path / "chains_quick.json")
    auto, fixed = (data["records"][cell]["0"]["figures"] for cell in cells)
    assert auto["lockstep"] == float(auto["batching_gain"] >= LOCKSTEP_GAIN) and auto["batching_gain"] > 0
    assert fixed["lockstep"] == 0.0 and "batching_gain" not in fixed
    assert auto["call_seconds"] > 0 and fixed["mean_integration_steps"] >= 1
    assert_glossary_names({f for cell in data["records"].values() for r in cell.values() for f in r["figures"]})
    goal = next(g for g in data["goals"] if g["baseline"] == "sequential/eight_schools")
    assert goal["decision"] == "undecided"  # one seed


def test_every_model_runs_three_ways_with_auto_held_to_both_fixed_methods():
    protocol = chains.PROTOCOL
    assert {c.name for c in protocol.cells} == {f"{m}/{model}" for model in chains.MODELS for m in chains.METHODS}
    assert protocol.cell("auto/funnel_d500").params["options"] == {}
    assert protocol.cell("vectorized/funnel_d500").params["options"] == {"chain_method": "vectorized"}
    assert {(g.cell, g.baseline, g.threshold) for g in protocol.goals} == {
        (f"auto/{model}", f"{fixed}/{model}", 1.1) for model in chains.MODELS for fixed in ("sequential", "vectorized")}
    assert "idle machine" in protocol.notes and "1.5" in protocol.notes
