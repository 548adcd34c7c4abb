"""Run bench_classical in --quick mode so the script never rots (sizes are CI-small: no figure is asserted)."""

from _quick_bench import quick_payload

CONTINUOUS_FIGURES = {
    "rmm_var_h05",
    "ula_var_h05",
    "rmm_underdamped_var_h05",
    "speculative_calls_ratio",
    *(f"{m}_w2_sep{s}" for m in ("almc", "lmc") for s in (2, 4, 8)),
}


def test_bench_classical_quick(tmp_path):
    out = quick_payload("classical", "--plots", str(tmp_path), results_dir=tmp_path)
    assert out["command"].startswith("python scripts/bench_classical.py")
    assert CONTINUOUS_FIGURES <= set(out["results"])
    assert all(v == v for v in out["results"].values())  # no NaN
    assert {"rmm_variance.png", "speculative_calls.png", "almc_vs_lmc_w2.png"} <= {p.name for p in tmp_path.iterdir()}
