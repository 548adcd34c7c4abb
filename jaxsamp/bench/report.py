"""Tables from a results file: what the docs show, generated, never copied by hand.

Per suite: a row per cell and machine, the headline figure first, then the protocol's figures, each as
``mean ± sd`` with its seed count; then the goals with their decisions, then the paired comparisons.
:func:`tables` gives them as data (the documentation renders them), :func:`suite_tables` as markdown
(``jaxsamp bench report``).
"""

from __future__ import annotations

import math

from jaxsamp.bench.protocol import Protocol


def number(value: float, digits: int = 3) -> str:
    """A figure with ``digits`` significant digits, in exponent form below 1e-3 and from 1e4 on, and as a whole
    number where it has as many digits before the point (``nan``, ``inf`` and ``None`` spelled out)."""
    if value is None or not math.isfinite(value):
        return str(value)
    if value != 0 and (abs(value) >= 1e4 or abs(value) < 1e-3):
        return f"{value:.{digits - 1}e}"
    if abs(value) >= 10 ** (digits - 1):
        return f"{value:.0f}"
    return f"{value:.{digits}g}"


def mean_sd(summary: dict) -> str:
    """``mean ± sd`` (just the value for one seed)."""
    if summary["n"] == 1:
        return number(summary["mean"])
    return f"{number(summary['mean'])} ± {number(summary['sd'])}"


def tables(data: dict) -> list[tuple[str, list[str], list[list[str]]]]:
    """``[(caption, header, rows)]``: the figures, the goals (if any) and the comparisons (if any) of one file."""
    protocol = Protocol.from_dict(data["protocol"])
    names = [protocol.headline, *[f for f in protocol.figures if f != protocol.headline]]
    order = {c.name: i for i, c in enumerate(protocol.cells)}
    groups = [(cell, group) for cell in sorted(data["summary"], key=lambda c: (order.get(c.split(" x")[0], len(order)), c))
              for group in data["summary"][cell]]
    shown = [f for f in names if any(f in g["figures"] for _, g in groups)]
    rows = [[cell, str(len(g["seeds"])), *[mean_sd(g["figures"][f]) if f in g["figures"] else "" for f in shown],
             g["machine"]] for cell, g in groups]
    out = [(f"{protocol.suite}: {protocol.summary}", ["cell", "seeds", *shown, "machine"], rows)]
    if data.get("goals"):
        goal_rows = []
        for g in data["goals"]:
            interval = "—" if g["interval"] is None else f"[{number(g['interval'][0])}, {number(g['interval'][1])}]"
            decision = g["decision"] + (f" ({g['seeds_to_decide']} seeds would decide)" if g["seeds_to_decide"] else "")
            goal_rows.append([g["goal"], str(g["n"]), number(g["mean"]), interval, decision, g["source"], g["machine"]])
        caption = ("goals: met when the 95 % interval over seeds lies on the goal's side, missed when on the other, "
                   "otherwise undecided")
        out.append((caption, ["goal", "seeds", "mean", "95 % interval", "decision", "source", "machine"], goal_rows))
    if data.get("comparisons"):
        out.append(("paired comparisons on shared seeds (difference = cell - baseline)",
                     ["cell", "baseline", "figure", "seeds", "difference", "median ratio", "ratio of means"],
                     [[c["cell"], c["baseline"], c["figure"], str(len(c["seeds"])), mean_sd(c["difference"]),
                       number(c["ratio_median"]), number(c["ratio_of_means"])] for c in data["comparisons"]]))
    return out


def suite_tables(data: dict) -> str:
    """The tables of one results file as markdown."""
    lines = []
    for caption, header, rows in tables(data):
        lines += [f"**{caption}**", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        lines.append("")
    return "\n".join(lines)
