"""The one-time conversion of an old script's results file: what it keeps, what it refuses and what it leaves out."""

import json

import pytest

from jaxsamp.bench import legacy
from jaxsamp.bench.protocol import Cell, Comparison, Protocol
from jaxsamp.core.errors import InputError

PROTOCOL = Protocol(suite="toy", summary="two cells", cells=(Cell("a/t", "fit", {"name": "t"}),
                                                            Cell("b/t", "fit", {"name": "t"})),
                    headline="tv", comparisons=(Comparison("a/t", "b/t", "tv"),))


def legacy_key(name: str):
    cell, _, figure = name.partition("_")
    return (f"{cell}/t", figure, 1) if cell in ("a", "b") else None


def test_a_derived_key_named_by_the_suite_is_left_out_and_its_comparison_recomputes_it(tmp_path):
    old = {"results": {"a_tv_seed0": 0.2, "b_tv_seed0": 0.1, "ratio_a_to_b_seed0": 2.0, "ratio_a_to_b": 2.0}}
    (tmp_path / "old.json").write_text(json.dumps(old))
    with pytest.raises(InputError, match="ratio_a_to_b_seed0"):
        legacy.convert(PROTOCOL, tmp_path / "old.json", legacy_key, tmp_path / "new.json")
    data = legacy.convert(PROTOCOL, tmp_path / "old.json", legacy_key, tmp_path / "new.json",
                          left_out={"ratio_a_to_b"})
    assert {c: s["0"]["figures"] for c, s in data["records"].items()} == {"a/t": {"tv": 0.2}, "b/t": {"tv": 0.1}}
    assert data["comparisons"][0]["ratios"] == [2.0]
