"""Aggregation against hand-computed values: t-intervals, the decision rule, paired comparisons."""

import math

import numpy as np
import pytest

from jaxsamp.bench.aggregate import (
    compare,
    decide,
    seeds_to_decide,
    summarise,
    t_quantile,
)
from jaxsamp.bench.protocol import Goal


def test_summary_is_mean_sample_sd_and_the_t_interval():
    s = summarise({0: 1.0, 1: 2.0, 2: 3.0})
    half = 4.302652729911275 / math.sqrt(3)  # t_{0.975, 2} * sd / sqrt(n), sd = 1
    assert s["mean"] == 2.0 and s["sd"] == 1.0 and s["n"] == 3
    assert s["interval"] == pytest.approx([2.0 - half, 2.0 + half], rel=1e-9)
    assert summarise({7: 0.5}) == {"mean": 0.5, "sd": 0.0, "n": 1, "interval": None, "values": {"7": 0.5}}


def test_a_non_finite_seed_is_kept_and_leaves_no_interval():
    s = summarise({0: 1.0, 1: float("nan")})
    assert math.isnan(s["mean"]) and s["interval"] is None and s["n"] == 2


@pytest.mark.parametrize("values, better, decision", [
    ({0: 0.20, 1: 0.21, 2: 0.19}, "below", "met"),
    ({0: 0.40, 1: 0.41, 2: 0.39}, "below", "missed"),
    ({0: 0.10, 1: 0.40, 2: 0.25}, "below", "undecided"),
    ({0: 0.40, 1: 0.41, 2: 0.39}, "above", "met"),
    ({0: 0.20, 1: 0.21, 2: 0.19}, "above", "missed"),
])
def test_the_decision_rule(values, better, decision):
    out = decide(Goal("c", "f", 0.3, better), summarise(values))
    assert out["decision"] == decision
    assert (out["seeds_to_decide"] is not None) == (decision == "undecided")


def test_one_seed_decides_nothing():
    assert decide(Goal("c", "f", 0.3), summarise({0: 0.01}))["decision"] == "undecided"


def test_seeds_to_decide_is_the_smallest_n_whose_interval_excludes_the_threshold():
    n = seeds_to_decide(0.324, 0.0521, 0.26, 0.95)
    assert t_quantile(0.95, n - 1) * 0.0521 / math.sqrt(n) < 0.064 <= t_quantile(0.95, n - 2) * 0.0521 / math.sqrt(n - 1)
    assert seeds_to_decide(0.3, 0.0, 0.26, 0.95) is None


def test_comparison_is_paired_on_shared_seeds_with_both_ratios():
    out = compare({"0": 2.0, "1": 4.0, "2": 9.0}, {"0": 1.0, "1": 1.0, "3": 5.0})
    assert out["seeds"] == [0, 1] and out["ratios"] == [2.0, 4.0]
    assert out["ratio_median"] == 3.0 and out["ratio_of_means"] == 3.0
    assert out["difference"]["mean"] == 2.0
    assert compare({"0": 1.0}, {"1": 1.0}) is None


def test_a_goal_against_a_baseline_is_decided_on_the_per_seed_ratios_of_one_machine():
    from jaxsamp.bench.protocol import Cell, Protocol
    from jaxsamp.bench.store import aggregate

    def seeds(values, host="a"):
        return {str(s): {"figures": {"call_seconds": v}, "machine": {"platform": host}} for s, v in enumerate(values)}

    goal = Goal("fast/m", "call_seconds", 1.1, "below", baseline="slow/m")
    protocol = Protocol("s", "", (Cell("fast/m", "nuts", {}), Cell("slow/m", "nuts", {})), goals=(goal,))
    # one slow baseline call carries the ratio of means (0.2 / 0.3 = 0.67); the per-seed ratios are 0.4, 1.2, 1.2
    records = {"fast/m": seeds([0.2, 0.24, 0.24]), "slow/m": seeds([0.5, 0.2, 0.2])}
    (decision,) = aggregate(records, protocol)["goals"]
    assert decision["figure"] == "call_seconds" and decision["baseline"] == "slow/m"
    assert goal.name == "fast/m: call_seconds / slow/m's < 1.1"
    assert decision["mean"] == pytest.approx((0.4 + 1.2 + 1.2) / 3) and decision["decision"] == "undecided"
    assert decision["sd"] == pytest.approx(np.std([0.4, 1.2, 1.2], ddof=1))
    records["slow/m"] = seeds([0.5, 0.2, 0.2], host="b")  # the baseline on another machine: no ratio is formed
    assert aggregate(records, protocol)["goals"] == []


def test_a_seed_whose_baseline_is_zero_has_no_ratio_but_keeps_its_difference():
    out = compare({"0": 1.0, "1": 2.0}, {"0": 0.0, "1": 1.0})
    assert out["ratios"] == [2.0] and out["ratio_median"] == 2.0 and out["difference"]["n"] == 2
