"""The ``particles`` suite at its quick size through ``jaxsamp bench``, so that it never rots; its cells against
the configs they read; and the one-time conversion of the old ``bench_adjoint.json``, host by host."""

import dataclasses
import json

import pytest
from _glossary_names import assert_glossary_names

from jaxsamp.bench import legacy, store
from jaxsamp.bench.machine import machine_label
from jaxsamp.bench.suites import particles
from jaxsamp.cli import main
from jaxsamp.core.errors import InputError


def test_quick_run_records_the_particle_protocol_in_glossary_names_and_report_shows_it(tmp_path, capsys):
    cells = ["adjoint/dw4", "asbs/lj13"]  # each method and each system once
    assert main(["bench", "run", "particles", "--quick", "--cells", *cells, "--results-dir", str(tmp_path)]) == 0
    data = store.read(tmp_path / "particles_quick.json")
    adjoint, asbs = (data["records"][c]["0"]["figures"] for c in cells)
    assert adjoint["target_evals"] == 3 * 32  # 3 epochs x 32 rollout paths, one energy gradient each
    assert asbs["target_evals"] == 2 * 32  # 2 adjoint epochs and 1 corrector epoch (no energy calls)
    for figures in (adjoint, asbs):
        assert figures["train_steps"] == 3 and figures["nonfinite_samples"] == 0
        assert figures["w2"] > 0 and figures["energy_w2"] > 0 and figures["w2_floor"] > 0
        assert figures["energy_w2_floor"] > 0 and 0 < figures["ess"] <= 1
    assert data["records"]["adjoint/dw4"]["0"]["evaluation"] == {"num_samples": 64}
    figures = {f for cell in data["records"].values() for r in cell.values() for f in r["figures"]}
    assert_glossary_names(figures)
    capsys.readouterr()
    assert main(["bench", "report", "particles", "--quick", "--results-dir", str(tmp_path)]) == 0
    assert "| adjoint/dw4 | 1 |" in capsys.readouterr().out
    assert main(["bench", "list", "--results-dir", str(tmp_path)]) == 0
    listed = capsys.readouterr().out
    assert all(cell.name in listed for cell in particles.PROTOCOL.cells)


def test_cells_train_the_configs_and_the_variants_change_only_what_they_name():
    from jaxsamp.learned.diffusion.adjoint import AdjointSettings

    protocol = particles.PROTOCOL
    cell = protocol.cell("adjoint/dw4")
    assert cell.params["settings"] == particles.config_run("adjoint_dw4_cpu.yaml")[2]
    assert (cell.budget.updates, cell.budget.seconds, cell.params["batch_size"]) == (1000, None, 128)
    fixed, reference = (AdjointSettings(**protocol.cell(n).params["settings"])
                        for n in ("adjoint/dw4", "adjoint-reference_rules/dw4"))
    assert (fixed.exact_variance, fixed.ema_decay) == (True, 0.999)
    assert (reference.exact_variance, reference.ema_decay) == (False, 0.0)
    assert reference.buffer_epochs * 128 == 9984  # the reference's 10 000 samples
    rules = ("exact_variance", "buffer_epochs", "ema_decay")
    assert dataclasses.replace(reference, **{k: getattr(fixed, k) for k in rules}) == fixed  # nothing else differs
    cpu, official = (protocol.cell(n).params["settings"] for n in ("asbs/dw4", "asbs-official_adam/dw4"))
    changed = {"learning_rate": 1e-4, "adam_eps": 1e-10, "corrector_buffer_epochs": 10, "corrector_buffer_per_stage": True}
    assert {k: official[k] for k in changed} == changed
    assert {k: v for k, v in official.items() if k not in changed} == {k: v for k, v in cpu.items() if k not in changed}
    capped = protocol.cell("asbs-until_cap/lj13")
    assert capped.budget.seconds == 5400 and capped.params["chunk"] == 10  # the clock checked every 10 epochs
    assert len(protocol.seeds) >= 5  # issue 60: DW-4 on one machine at as many seeds as the goal needs, at least 5
    assert {g.cell for g in protocol.goals} >= {"adjoint/dw4", "asbs/dw4"}


def old_file():
    cmd = "python scripts/bench_adjoint.py"
    return {"command": f"{cmd} --methods asbs asbs_official --systems dw4 --no-speed --cap-minutes 240",
            "date": "2026-12-06", "machine": {"platform": "Linux-fc-v1300", "cpu_count": 2, "jax": "0.10.1"},
            "results": {"as_dw4_w2_seed1": 1.15, "as_dw4_w2": 1.15, "as_dw4_nonfinite_seed1": 0.0,
                        "asbs_dw4_w2_seed1": 0.9, "asbs_dw4_log_Z_reverse_seed1": 29.7, "asbs_dw4_epochs_seed1": 1000,
                        "as_reference_lj13_energy_evals_seed0": 128000.0, "dw4_w2_floor": 0.28,
                        "asbs_lj13_until_cap_w2_seed0": 1.9, "asbs_lj13_until_cap_curve_seed0": {"points": [{"epoch": 100}]},
                        "asbs_official_dw4_w2_seed1": 0.95},
            "figure_commands": {"as_dw4_w2_seed1": f"{cmd} --methods as --systems dw4 --seeds 1 2 --no-speed",
                                "as_dw4_nonfinite_seed1": f"{cmd} --methods as --systems dw4 --seeds 1 2 --no-speed",
                                "asbs_dw4_w2_seed1": f"{cmd} --methods asbs asbs_official --systems dw4 --no-speed --cap-minutes 240",
                                "as_reference_lj13_energy_evals_seed0": f"{cmd} --methods as_reference --systems lj13 --seeds 9"}}


def test_the_old_results_file_converts_once_each_seed_on_its_own_host(tmp_path):
    (tmp_path / "bench_adjoint.json").write_text(json.dumps(old_file()))
    new = tmp_path / "particles.json"
    data = legacy.convert(particles.PROTOCOL, tmp_path / "bench_adjoint.json", particles.legacy_key, new,
                          legacy_machine=particles.legacy_machine)
    records = data["records"]
    assert records["adjoint/dw4"]["1"]["figures"] == {"w2": 1.15, "nonfinite_samples": 0.0}
    assert records["asbs/dw4"]["1"]["figures"] == {"w2": 0.9, "log_Z_hat": 29.7, "train_steps": 1000}
    assert records["adjoint-reference_rules/lj13"]["0"]["figures"] == {"target_evals": 128000.0}
    assert records["asbs-official_adam/dw4"]["1"]["figures"] == {"w2": 0.95}
    capped = records["asbs-until_cap/lj13"]["0"]
    assert capped["figures"] == {"w2": 1.9} and capped["curves"] == {"curve": {"points": [{"epoch": 100}]}}
    # each seed carries the machine of the host that ran its command, as the old file's history records it
    hosts = {cell: machine_label(seeds[next(iter(seeds))]["machine"]) for cell, seeds in records.items()}
    assert "fc-v1045" in hosts["adjoint/dw4"] and "fc-v1300" in hosts["asbs/dw4"]
    assert "file's own record" in records["asbs/dw4"]["1"]["machine"]["legacy"]
    unknown = records["adjoint-reference_rules/lj13"]["0"]["machine"]  # a command the history does not place
    assert unknown["legacy"] == "the one machine record of bench_adjoint.json"
    # so the paired comparison of ASBS with Adjoint Sampling, which ran on two hosts, is not formed
    assert not [c for c in data["comparisons"] if c["cell"] == "asbs/dw4" and c["baseline"] == "adjoint/dw4"]
    with pytest.raises(InputError, match="runs once"):
        legacy.convert(particles.PROTOCOL, tmp_path / "bench_adjoint.json", particles.legacy_key, new)
    broken = old_file()
    broken["results"]["mystery_figure_seed0"] = 1.0
    (tmp_path / "bench_adjoint.json").write_text(json.dumps(broken))
    with pytest.raises(InputError, match="mystery_figure_seed0"):
        legacy.convert(particles.PROTOCOL, tmp_path / "bench_adjoint.json", particles.legacy_key, tmp_path / "b.json")


def test_the_recorded_dw4_decision_run_is_on_one_machine_beside_the_converted_cells():
    """Issue 60's re-run replaced both DW-4 cells' converted seeds (three hosts) by at least the protocol's 5 seeds on
    one machine, so their paired comparison is formed; every other cell keeps its converted, host-labelled seeds."""
    data = store.read(store.results_path("particles"))
    decision = ("adjoint/dw4", "asbs/dw4")
    machines = set()
    for cell in decision:
        records = data["records"][cell]
        assert len(records) >= 5 and not any("legacy" in r["machine"] for r in records.values())
        machines |= {json.dumps(r["machine"], sort_keys=True) for r in records.values()}
    assert len(machines) == 1
    assert [c for c in data["comparisons"] if c["cell"] == "asbs/dw4" and c["baseline"] == "adjoint/dw4"]
    assert all("legacy" in r["machine"] for cell, seeds in data["records"].items() if cell not in decision
               for r in seeds.values())
