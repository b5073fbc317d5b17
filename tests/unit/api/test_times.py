"""RFC 3339 times, written and read."""

from __future__ import annotations

import pytest

from muster.api.times import parse_rfc3339, rfc3339

MOMENT = 1_796_013_963.25


def test_timestamps_and_micro_times_read_back_as_written() -> None:
    assert rfc3339(MOMENT) == "2026-11-30T04:46:03Z"
    assert rfc3339(MOMENT, micro=True) == "2026-11-30T04:46:03.250000Z"
    assert parse_rfc3339(rfc3339(MOMENT, micro=True)) == MOMENT
    assert parse_rfc3339("2026-11-30T05:46:03+01:00") == MOMENT - 0.25


@pytest.mark.parametrize("text", ["2026-11-30T04:46:03", "30 Nov 2026", ""])
def test_a_time_without_an_offset_or_in_another_form_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_rfc3339(text)
