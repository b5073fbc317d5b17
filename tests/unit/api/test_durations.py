"""Durations read as Go writes them, and a malformed one read as none."""

from __future__ import annotations

import pytest

from muster.api.durations import parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90m", 5400), ("60s", 60), ("1h30m", 5400), ("1.5h", 5400), (" 2h ", 7200)],
)
def test_durations_are_read_as_go_writes_them(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "90", "ten minutes", "5d", "0s", "-1m", "1m 2s"])
def test_malformed_durations_declare_nothing(text: str) -> None:
    assert parse_duration(text) is None
