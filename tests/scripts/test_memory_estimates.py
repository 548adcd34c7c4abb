"""Run memory_estimates in --quick mode so the script never rots; the extrapolation is a line through its points."""

import pytest
from _quick_bench import quick_payload


def test_memory_estimates_quick(tmp_path):
    out = quick_payload("memory", "--configs", "pis_funnel", "adjoint_dw4", results_dir=tmp_path,
                        script_name="memory_estimates")["results"]
    for name in ("pis_funnel", "adjoint_dw4"):
        measured = sorted((int(k.rsplit("batch", 1)[1]), v) for k, v in out.items()
                          if k.startswith(f"{name}_measured_peak_gib_batch"))
        assert len(measured) == 2 and 0 < measured[0][1] <= measured[1][1]
        (b1, m1), (b2, m2) = measured
        paper = out[f"{name}_paper_batch"]
        assert out[f"{name}_peak_gib"] == pytest.approx(m1 + (m2 - m1) / (b2 - b1) * (paper - b1))
        assert out[f"{name}_state_gib"] > 0
