"""The registry of learned methods: names a user meets in every family mean one thing."""

import dataclasses

import jaxsamp.learned.methods  # noqa: F401  (registers the methods)
from jaxsamp.core.registry import LEARNED


def test_no_settings_field_is_named_like_fits_training_updates():
    """``fit(num_steps=)`` counts training updates; a discretisation's steps are ``num_time_steps`` (PIS/DDS, TPS-DPS).

    A retired field name (``RENAMED``) is no field any more, and names a field that exists.
    """
    for name in LEARNED.names():
        cls = LEARNED.entry(name).meta["settings"]
        fields = {f.name for f in dataclasses.fields(cls)}
        assert "num_steps" not in fields, (name, cls.__name__)
        for old, new in getattr(cls, "RENAMED", {}).items():
            assert old not in fields and new in fields, (name, old, new)
