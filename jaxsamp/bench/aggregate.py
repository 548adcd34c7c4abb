"""Seeds into figures: mean ± sd with an interval, paired differences, ratios, and goal decisions.

Everything here works on the seeds of one machine (the caller groups them by
:func:`jaxsamp.bench.machine.machine_label`): seeds from different machines are never pooled.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from jaxsamp.bench.protocol import Goal

MET, MISSED, UNDECIDED = "met", "missed", "undecided"


def t_quantile(level: float, dof: int) -> float:
    """The two-sided ``level`` quantile of Student's t with ``dof`` degrees of freedom."""
    from scipy import stats

    return float(stats.t.ppf(0.5 + level / 2, dof))


def summarise(values: Mapping[int, float], level: float = 0.95) -> dict:
    """``{mean, sd, n, interval, values}`` of per-seed ``values`` (``{seed: value}``).

    ``sd`` is the sample standard deviation (ddof 1; 0 for one seed) and ``interval`` the two-sided ``level``
    t-interval of the mean (None for fewer than two seeds). Non-finite values are kept in ``values`` and make
    the mean NaN: a run that produced no finite figure is reported, not dropped.
    """
    seeds = sorted(values, key=int)
    x = np.asarray([values[s] for s in seeds], dtype=float)
    n = x.size
    with np.errstate(invalid="ignore"):
        mean = float(np.mean(x)) if n else math.nan
        sd = float(np.std(x, ddof=1)) if n > 1 else 0.0
    interval = None
    if n > 1 and np.all(np.isfinite(x)):
        half = t_quantile(level, n - 1) * sd / math.sqrt(n)
        interval = [mean - half, mean + half]
    return {"mean": mean, "sd": sd, "n": n, "interval": interval, "values": {str(s): values[s] for s in seeds}}


def seeds_to_decide(mean: float, sd: float, threshold: float, level: float) -> int | None:
    """Seeds whose ``level`` interval would exclude ``threshold`` at this mean and spread (None: cannot tell).

    The smallest n with ``t_{n-1} sd / sqrt(n) < |mean - threshold|``, searched up to 1000 seeds.
    """
    gap = abs(mean - threshold)
    if not (np.isfinite(mean) and np.isfinite(sd)) or sd == 0 or gap == 0:
        return None
    for n in range(2, 1001):
        if t_quantile(level, n - 1) * sd / math.sqrt(n) < gap:
            return n
    return None


def decide(goal: Goal, summary: dict) -> dict:
    """The goal's decision from a :func:`summarise` record: met, missed or undecided, and why.

    Returns ``{decision, mean, sd, interval, n, threshold, seeds_to_decide}``; ``seeds_to_decide`` is set when
    undecided with at least two seeds.
    """
    out = {"decision": UNDECIDED, "mean": summary["mean"], "sd": summary["sd"], "interval": summary["interval"],
           "n": summary["n"], "threshold": goal.threshold, "seeds_to_decide": None}
    interval = summary["interval"]
    if interval is None:
        return out
    low, high = interval
    below, above = high < goal.threshold, low > goal.threshold
    if below or above:
        out["decision"] = MET if below == (goal.better == "below") else MISSED
    else:
        out["seeds_to_decide"] = seeds_to_decide(summary["mean"], summary["sd"], goal.threshold, goal.level)
    return out


def per_seed_ratios(values: Mapping[str, float], baseline: Mapping[str, float]) -> dict[str, float]:
    """``{seed: value / baseline}`` over the seeds both have, in seed order (a seed whose baseline is 0 left out:
    its ratio says nothing). What a ratio goal is decided on and what :func:`compare` takes the median of."""
    shared = sorted(set(values) & set(baseline), key=int)
    return {s: float(values[s]) / float(baseline[s]) for s in shared if baseline[s] != 0}


def compare(values: Mapping[str, float], baseline: Mapping[str, float], level: float = 0.95) -> dict | None:
    """Seed-by-seed comparison of a cell with its baseline on the seeds both have (None without a shared seed).

    ``difference`` summarises the paired differences ``value - baseline``; ``ratio_median`` is the median of
    the per-seed ratios ``value / baseline`` and ``ratio_of_means`` the ratio of the means, given side by side
    because one bad seed can carry a ratio of means.
    """
    shared = sorted(set(values) & set(baseline), key=int)
    if not shared:
        return None
    a = np.asarray([values[s] for s in shared], dtype=float)
    b = np.asarray([baseline[s] for s in shared], dtype=float)
    ratios = list(per_seed_ratios(values, baseline).values())
    return {
        "seeds": [int(s) for s in shared],
        "difference": summarise(dict(zip(shared, (a - b).tolist())), level),
        "ratios": ratios,
        "ratio_median": float(np.median(ratios)) if ratios else math.nan,
        "ratio_of_means": float(np.mean(a) / np.mean(b)) if np.mean(b) != 0 else math.nan,
    }
