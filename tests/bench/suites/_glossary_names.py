"""The check every suite's quick test makes of its recorded figures: glossary names, none retired."""

from jaxsamp.experiments.glossary import GLOSSARY, describe, vocabulary_problems


def assert_glossary_names(figures) -> None:
    """Every figure name is described by the metric glossary (the one vocabulary or a kind's) and none is retired."""
    figures = set(figures)
    assert not vocabulary_problems(figures)
    assert [f for f in figures if not any(describe(kind, f) for kind in GLOSSARY)] == []
