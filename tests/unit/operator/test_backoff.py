"""Rolled-back gangs wait exponentially longer, up to a cap, until one succeeds."""

from __future__ import annotations

from muster.operator.backoff import Backoff
from muster.scheduler.results import GroupKey

KEY = GroupKey("ns", "g")


def test_delays_double_up_to_the_cap_and_reset_on_success() -> None:
    backoff = Backoff(initial=10, maximum=35)
    assert backoff.failed(KEY, now=0) == 10
    assert backoff.failed(KEY, now=100) == 120
    assert backoff.failed(KEY, now=200) == 235
    assert backoff.blocked_until(KEY, now=230) == 235
    assert backoff.blocked_until(KEY, now=235) is None
    backoff.succeeded(KEY)
    assert backoff.blocked_until(KEY, now=0) is None
    assert backoff.failed(KEY, now=0) == 10


def test_gangs_back_off_independently() -> None:
    backoff = Backoff(initial=5, maximum=60)
    backoff.failed(KEY, now=0)
    assert backoff.blocked_until(GroupKey("ns", "other"), now=1) is None
