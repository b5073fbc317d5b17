"""Backoff delays double up to a cap, each drawn between half and all of its step."""

from __future__ import annotations

import random

import pytest

from muster.client.retry import ExponentialBackoff, jittered


class Fixed(random.Random):
    """Draws always the same fraction of the range."""

    def __init__(self, fraction: float) -> None:
        super().__init__()
        self.fraction = fraction

    def uniform(self, a: float, b: float) -> float:
        return a + (b - a) * self.fraction


@pytest.mark.parametrize(("fraction", "delays"), [(0.0, [0.5, 1, 2, 4, 4]), (1.0, [1, 2, 4, 8, 8])])
def test_delays_double_up_to_the_cap_with_equal_jitter(
    fraction: float, delays: list[float]
) -> None:
    backoff = ExponentialBackoff(initial=1, maximum=8, rng=Fixed(fraction))
    assert [backoff.next() for _ in delays] == delays
    assert backoff.failures == len(delays)


def test_a_reset_starts_again_from_the_first_step() -> None:
    backoff = ExponentialBackoff(initial=1, maximum=8, rng=Fixed(1.0))
    backoff.next()
    backoff.next()
    backoff.reset()
    assert backoff.next() == 1


def test_a_long_outage_never_overflows() -> None:
    backoff = ExponentialBackoff(initial=1, maximum=300, rng=Fixed(1.0))
    backoff.failures = 10_000
    assert backoff.next() == 300


@pytest.mark.parametrize(("initial", "maximum"), [(0, 1), (2, 1), (-1, 5)])
def test_a_backoff_that_makes_no_sense_is_refused(initial: float, maximum: float) -> None:
    with pytest.raises(ValueError, match="0 < initial <= maximum"):
        ExponentialBackoff(initial=initial, maximum=maximum)


def test_jitter_stretches_a_period_by_up_to_its_factor() -> None:
    assert jittered(10, 0.5, Fixed(0.0)) == 10
    assert jittered(10, 0.5, Fixed(1.0)) == 15
