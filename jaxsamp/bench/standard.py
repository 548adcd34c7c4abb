"""The standard table: every method on the field's standard targets, each figure read from its suite's results.

One row per method (tempered SMC at each suite's matched budget is a row of its own), one column per target;
an entry is one cell of one suite, shown as ``mean ± sd (seeds)`` of the suite's current aggregation, and "—"
where no suite has the method on that target. The rows' budgets, as fractions of their papers' where a paper
published one, are protocol facts stated here with their sources; every figure comes from
``benchmarks/results/<suite>.json``. Figures of different suites were measured at their own budgets and on the
machines their results name: the table sets them side by side and forms no ratio across them (the suites'
own paired comparisons, at equal target evaluations, are in the benchmark report).

The table is written into the documentation between ``<!--bench-table standard-->`` and
``<!--/bench-table-->`` by ``jaxsamp bench docs`` (and checked by ``--check``, as the marked figures are).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from jaxsamp.bench import docs
from jaxsamp.bench.report import number


class Column(NamedTuple):
    """A standard target: its key in the rows, its heading, and the headline figure of its entries."""

    key: str
    heading: str
    figure: str


class Row(NamedTuple):
    """A method: its label, its budget (a protocol fact, with its source), and ``{column key: (suite, cell)}``."""

    label: str
    budget: str
    entries: dict


COLUMNS = (
    Column("funnel", "funnel (d = 10)", "log_Z_abs_err"),
    Column("many_well", "many-well (d = 32)", "log_Z_abs_err"),
    Column("gmm", "GMM40 (d = 2)", "log_Z_abs_err"),
    Column("student_t", "Student-t mixture (d = 50)", "log_Z_abs_err"),
    Column("ising8", "Ising 8 × 8 (β_c)", "log_Z_abs_err"),
    Column("ising15", "Ising 15 × 15 (β_c)", "log_Z_abs_err"),
    Column("dw4", "DW-4", "w2"),
    Column("lj13", "LJ-13", "w2"),
    Column("logreg", "logistic regression (UCI breast cancer)", "test_lppd"),
    Column("eight_schools", "eight schools", "hpd_coverage90"),
)

_PIS_DDS = "updates: 950 (funnel), 2100 (many-well), 800 (GMM40) of 256 paths; the paper's 25 000 (Sendera et al. 2024)"
ROWS = (
    Row("tempered SMC, MALA, at the PIS/DDS runs' training evaluations", "as many levels as the matched runs' "
        "training target evaluations allow", {c: ("paths", f"smc/{c}") for c in ("funnel", "many_well", "gmm")}),
    Row("tempered SMC, MALA, at SCLD's sampling evaluations", "as many levels as one SCLD sampling run's target "
        "evaluations allow", {c: ("scld", f"smc/{c}") for c in ("funnel", "many_well", "gmm", "student_t")}),
    Row("tempered SMC, heat bath, at LEAPS' sampling evaluations", "402 000 target evaluations (2000 walkers x 201)",
        {"ising8": ("leaps", "smc-heat_bath/ising-8")}),
    Row("tempered SMC, heat bath, at LEAPS-SMC's sampling evaluations", "as many levels as one LEAPS-SMC run's "
        "target evaluations allow", {"ising15": ("leaps", "smc-heat_bath-leaps_smc/ising-15")}),
    Row("PIS, KL", _PIS_DDS, {c: ("paths", f"pis-kl/{c}") for c in ("funnel", "many_well", "gmm")}),
    Row("PIS, log-variance", _PIS_DDS, {c: ("paths", f"pis-log_variance/{c}") for c in ("funnel", "many_well", "gmm")}),
    Row("DDS, KL", _PIS_DDS, {c: ("paths", f"dds-kl/{c}") for c in ("funnel", "many_well", "gmm")}),
    Row("DDS, log-variance", _PIS_DDS,
        {c: ("paths", f"dds-log_variance/{c}") for c in ("funnel", "many_well", "gmm")}),
    Row("SCLD", "1000 updates of 128 particles: 1-2 % of the paper's particle-paths (3000-8000 updates of 2000; "
        "Chen et al. 2025)", {c: ("scld", f"scld/{c}") for c in ("funnel", "many_well", "gmm", "student_t")}),
    Row("SMC with SCLD's learned part off (ULA-SMC)", "no training; SCLD's sampling run at its initial parameters",
        {c: ("scld", f"ula-smc/{c}") for c in ("funnel", "many_well", "gmm", "student_t")}),
    Row("Boltzmann curve, learned", "9067 updates of 256 (many-well); no published budget",
        {"many_well": ("curves", "curves-learned/many_well")}),
    Row("LEAPS, LE-attention", "ten minutes on the 2-core CPU; no published 8 × 8 budget",
        {"ising8": ("leaps", "leaps-attention/ising-8")}),
    Row("LEAPS, LE-conv", "ten minutes (8 × 8); 49 850 updates at 15 × 15, 12-50 % of the paper's 1e5-4e5 GPU "
        "updates (Holderrieth et al. 2025)",
        {"ising8": ("leaps", "leaps-conv/ising-8"), "ising15": ("leaps", "leaps-conv/ising-15")}),
    Row("LEAPS inside SMC, LE-conv", "49 850 updates, as LEAPS, LE-conv at 15 × 15; sampled as SMC along its own "
        "jumps, with resampling and heat-bath sweeps", {"ising15": ("leaps", "leaps_smc-conv/ising-15")}),
    Row("Adjoint Sampling", "1000 epochs of 128 paths: 5 % of the paper's energy gradients at DW-4 (Havens et al. "
        "2025)", {c: ("particles", f"adjoint/{c}") for c in ("dw4", "lj13")}),
    Row("ASBS", "1000 epochs of 128 paths: 5.7 % of the official code's DW-4 epochs of 512 (Liu et al. 2025)",
        {c: ("particles", f"asbs/{c}") for c in ("dw4", "lj13")}),
    Row("NUTS", "4 chains of 1000 draws after 1000 warm-up steps", {"logreg": ("vi", "nuts/bayes_logreg")}),
    Row("AISIVI", "3000 steps of 100 draws",
        {"logreg": ("vi", "aisivi/bayes_logreg")}),
    Row("BSIVI", "3000 steps of 100 draws", {"logreg": ("vi", "bsivi/bayes_logreg")}),
    Row("ELBO, full-rank Gaussian", "5000 Adam steps of 8 draws", {"eight_schools": ("vi", "elbo/eight_schools")}),
    Row("SNIS forward KL, full-rank Gaussian", "5000 Adam steps of 8 draws",
        {"eight_schools": ("vi", "snis_forward_kl/eight_schools")}),
    Row("SoftCVI, full-rank Gaussian", "5000 Adam steps of 8 draws",
        {"eight_schools": ("vi", "softcvi/eight_schools")}),
)

#: the tables the block holds: (caption, the figure read instead of the column's headline, or None)
TABLES = (
    ("each column's headline: log Z error |log Z-hat - log Z| (R^d targets, lattices; lower is better), "
     "geometric W2 to the test split (DW-4, LJ-13; lower), test log pointwise predictive density (logistic "
     "regression; higher), 90 % HPD coverage of a long NUTS reference's draws (eight schools; 0.9 is right)", None),
    ("effective sample size of the final weights (normalised)", "ess"),
    ("target evaluations spent training (sampling runs' evaluations for the SMC rows)", "target_evals"),
)
BLOCK = "standard"


def entry(suite: str, cell: str, figure: str, results_dir: Path | None, cache: dict) -> str:
    """``mean ± sd (n)`` of one cell's figure (``mean (1)`` for one seed), "—" when the cell lacks the figure."""
    try:
        values = docs.values(f"{suite} ; {cell} ; {figure} ; -", results_dir, cache)
    except docs.MissingFigure:
        return "—"
    if values["n"] == 1:
        return f"{number(values['mean'])} (1)"
    return f"{number(values['mean'])} ± {number(values['sd'], 2)} ({values['n']})"


def table(results_dir: Path | None = None, cache: dict | None = None) -> str:
    """The standard tables as markdown (the text of the documentation's ``standard`` block)."""
    cache = {} if cache is None else cache
    lines = []
    for caption, figure in TABLES:
        lines += [f"**{caption}**", "", "| method | " + " | ".join(c.heading for c in COLUMNS) + " | budget |",
                  "|---|" + "---|" * (len(COLUMNS) + 1)]
        for row in ROWS:
            cells = [entry(*row.entries[c.key], figure or c.figure, results_dir, cache) if c.key in row.entries
                     else "" for c in COLUMNS]
            lines.append(f"| {row.label} | " + " | ".join(cells) + f" | {row.budget} |")
        lines.append("")
    suites = sorted({suite for row in ROWS for suite, _ in row.entries.values()})
    lines.append("Entries: mean ± sd over seeds (seeds in brackets; nan where a seed's training diverged); empty "
                 "where no suite has the method on that target, — where the cell has no such figure. Suites: " + ", ".join(f"`{s}`" for s in suites) +
                 " (their protocols and machines in the benchmark report).")
    return "\n".join(lines)
