"""Times read on intake: strict for what the API server writes, lenient for what
Muster wrote itself."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from muster.scheduler.objects.fields import IntakeError
from muster.scheduler.objects.times import parse_time, parse_timestamp

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


@pytest.mark.parametrize(
    ("raw", "moment"),
    [
        (None, None),
        ("2026-01-01T00:00:00Z", T0),
        (datetime(2026, 1, 1, tzinfo=UTC), T0),
    ],
)
def test_a_timestamp_is_read(raw: object, moment: float | None) -> None:
    assert parse_timestamp(raw) == moment
    assert parse_time(raw) == moment


@pytest.mark.parametrize("raw", [12, "yesterday", ""])
def test_a_malformed_timestamp_is_refused_on_intake_and_ignored_in_a_status(raw: object) -> None:
    with pytest.raises(IntakeError, match="creationTimestamp"):
        parse_timestamp(raw)
    assert parse_time(raw) is None
