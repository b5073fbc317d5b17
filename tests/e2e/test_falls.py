"""The rule for victims (tests/e2e/faults/victims.py) on made-up histories: a gang
that falls below minCount must reach 0 bound within the grace."""

from __future__ import annotations

import pytest

from tests.e2e.faults.victims import Fall, Falls

pytestmark = pytest.mark.e2e

GRACE = 2.0


def whole(falls: Falls, at: float = 0.0) -> None:
    for index in range(4):
        falls.pod(f"v-{index}", "v", bound=True, at=at)


def test_a_gang_taken_down_whole_within_the_grace_is_not_partial() -> None:
    falls = Falls({"v": 4})
    whole(falls)
    for index in range(4):
        falls.gone(f"v-{index}", at=10.0 + index * 0.1)
    assert falls.partial(now=20.0, grace=GRACE) == []
    [fall] = falls.falls(now=20.0)
    assert (fall.gang, fall.lowest, fall.ended) == ("v", 1, True)
    assert fall.seconds == pytest.approx(0.3)


def test_a_gang_left_running_short_is_partial_once_the_grace_is_over() -> None:
    falls = Falls({"v": 4})
    whole(falls)
    falls.gone("v-0", at=10.0)
    assert falls.partial(now=11.0, grace=GRACE) == []
    assert falls.partial(now=13.0, grace=GRACE) == [Fall("v", 3, 3.0, ended=False)]


def test_rising_gangs_and_gangs_not_named_are_not_judged() -> None:
    falls = Falls({"v": 4})
    falls.pod("v-0", "v", bound=True, at=0.0)  # a rise: the observer's business
    falls.pod("x-0", "x", bound=True, at=0.0)
    assert falls.falls(now=100.0) == []
