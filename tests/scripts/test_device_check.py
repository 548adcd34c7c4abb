"""Run scripts/device_check.py in --quick mode on CPU so the prepared device script never rots (issue 45).

The script is an orchestrator that starts pytest and worker processes and never imports JAX itself, so it is
run here as a child process, as on the device. No figure's value is asserted beyond its presence, finiteness
and sign: the quick sizes are toys.
"""

import json
import math
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "device_check.py"

TIMINGS = {  # family: its per-update figure (epochs for the two particle samplers)
    "pis_funnel": "s_per_update", "dds_funnel": "s_per_update", "leaps_L15_ising": "s_per_update",
    "adjoint_dw4": "s_per_epoch", "asbs_dw4": "s_per_epoch",
}


def _run(*args: str, out: Path) -> dict:
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--out", str(out), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (path,) = out.glob("device_*.json")
    assert len(list(out.glob("device_*.log"))) == 1
    return json.loads(path.read_text())


def test_device_check_quick_writes_every_figure(tmp_path):
    payload = _run(out=tmp_path)
    assert set(payload) >= {"command", "date", "machine", "results", "phases"}
    assert payload["command"].startswith("python scripts/device_check.py --quick")
    assert payload["machine"]["backend"] == "cpu" and payload["machine"]["jax"]
    out, phases = payload["results"], payload["phases"]
    for phase in ("tests", *TIMINGS, "nuts_logreg_d100", "train"):
        assert phases[phase].startswith("ok"), (phase, phases[phase])

    assert out["gpu_tests_passed"] == 1 and out["gpu_tests_failed"] == 0 and out["gpu_tests_seconds"] > 0
    positive = ["wall_seconds"]
    for family, unit in TIMINGS.items():
        positive += [f"{family}_{unit}", f"{family}_first_call_s", f"{family}_hours_to_paper_budget",
                     f"{family}_paper_budget_{unit.split('_per_')[1]}s", f"{family}_timed_{unit.split('_per_')[1]}s"]
        assert out[f"{family}_compile_s"] >= 0
    assert out["leaps_L15_ising_paper_budget_updates"] == 100_000
    assert out["adjoint_dw4_paper_budget_epochs"] == 5000 and out["asbs_dw4_paper_budget_epochs"] == 4400
    assert out["pis_funnel_paper_budget_updates"] == out["dds_funnel_paper_budget_updates"] == 25_000
    nuts = "nuts_logreg_d100"
    positive += [f"{nuts}_{k}" for k in ("grad_evals_per_s", "draws_per_s", "s_per_step", "first_call_s",
                                         "sampling_s", "warmup_s", "mean_integration_steps")]
    assert out[f"{nuts}_dim"] == 100
    train = "train_pis_funnel"
    positive += [f"{train}_updates", f"{train}_train_minutes", f"{train}_energy_evals"]
    for name in positive:
        assert math.isfinite(out[name]) and out[name] > 0, (name, out.get(name))
    for name in ("logz_abs_err", "elbo", "eubo", "ess", "elbo_abs_err"):  # --quick leaves out the Sinkhorn divergence
        assert math.isfinite(out[f"{train}_{name}"]), name
    assert out[f"{train}_reached_paper_budget"] == 0.0 and out[f"{train}_nonfinite_paths"] >= 0


def test_a_family_past_its_cap_is_killed_and_the_next_one_still_runs(tmp_path):
    """The worker is killed one second into LEAPS (its cap); PIS then runs in a fresh worker and lands."""
    # the orchestrator reads its caps from the module: a one-second cap for LEAPS, set before main() runs
    code = (
        "import sys; sys.path.insert(0, 'scripts'); import device_check as d; "
        "d.CAPS['leaps_L15_ising'] = (1, 1); sys.exit(d.main(sys.argv[2:]))"
    )
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-c", code, str(SCRIPT), "--quick", "--out", str(out), "--skip-tests", "--no-train",
         "--families", "leaps_L15_ising", "pis_funnel"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (path,) = out.glob("device_*.json")
    payload = json.loads(path.read_text())
    assert payload["phases"]["leaps_L15_ising"].startswith("timed out"), payload["phases"]
    assert "leaps_L15_ising_s_per_update" not in payload["results"]
    assert payload["phases"]["pis_funnel"].startswith("ok") and payload["results"]["pis_funnel_s_per_update"] > 0


def test_the_worker_is_not_a_public_option():
    """``--worker`` is internal: the help text does not offer it."""
    proc = subprocess.run([sys.executable, str(SCRIPT), "--help"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0 and "--quick" in proc.stdout and "--worker" not in proc.stdout
