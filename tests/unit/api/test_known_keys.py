"""Muster's keys, listed once from where they are defined, and the nearest to a typo."""

from __future__ import annotations

import pytest

from muster.api import constants
from muster.api.known_keys import KNOWN_KEYS, PREFIX, is_unknown, nearest_key


def test_every_key_defined_under_the_prefix_is_known() -> None:
    """A key added to the constants and not to the list would be called a typo."""
    defined = {
        value
        for name, value in vars(constants).items()
        if name.endswith(("_LABEL", "_ANNOTATION")) and isinstance(value, str)
    }
    assert {key for key in defined if key.startswith(PREFIX)} <= KNOWN_KEYS


@pytest.mark.parametrize(
    ("key", "unknown"),
    [
        ("scheduling.muster.dev/topology-preferred", False),
        ("scheduling.muster.dev/topology-prefered", True),
        ("scheduling.muster.io/topology-preferred", True),  # a near miss of the prefix
        ("scheduling.musterr.dev/min-count", True),
        ("example.com/topology-prefered", False),  # not Muster's
        ("app.kubernetes.io/name", False),
        ("musterless", False),
    ],
)
def test_unknown_keys_are_those_under_the_prefix_or_a_near_miss(key: str, unknown: bool) -> None:
    assert is_unknown(key) is unknown


@pytest.mark.parametrize(
    ("key", "nearest"),
    [
        ("scheduling.muster.dev/topology-prefered", "scheduling.muster.dev/topology-preferred"),
        ("scheduling.muster.dev/mincount", "scheduling.muster.dev/min-count"),
        ("scheduling.muster.io/topology-key", "scheduling.muster.dev/topology-key"),
        ("scheduling.muster.dev/topology-slice-sise", "scheduling.muster.dev/topology-slice-size"),
        ("scheduling.muster.dev/xyz", None),
    ],
)
def test_the_nearest_known_key(key: str, nearest: str | None) -> None:
    assert nearest_key(key) == nearest


def test_a_long_hostile_key_costs_no_more_than_a_name() -> None:
    key = PREFIX + "topology-prefered" + "x" * 60_000
    assert is_unknown(key)
    assert nearest_key(key) is None  # compared on its first 64 characters only
