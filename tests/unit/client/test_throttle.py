"""Up to `burst` requests at once, then `qps` per second, waiters served in order."""

from __future__ import annotations

import asyncio

import pytest

from muster.client.throttle import RateLimiter
from tests.unit.operator.virtual_time import on_virtual_time


def limiter(qps: float, burst: int) -> RateLimiter:
    return RateLimiter(qps=qps, burst=burst, clock=asyncio.get_running_loop().time)


async def times_of(rate: RateLimiter, requests: int) -> list[float]:
    loop = asyncio.get_running_loop()
    start = loop.time()
    taken = []
    for _ in range(requests):
        await rate.acquire()
        taken.append(loop.time() - start)
    return taken


@on_virtual_time
async def test_a_burst_goes_at_once_then_requests_come_at_the_rate() -> None:
    assert await times_of(limiter(qps=2, burst=3), 6) == [0, 0, 0, 0.5, 1.0, 1.5]


@on_virtual_time
async def test_tokens_refill_while_idle_up_to_the_burst() -> None:
    rate = limiter(qps=1, burst=2)
    await times_of(rate, 2)
    await asyncio.sleep(100)
    assert await times_of(rate, 3) == [0, 0, 1]


@on_virtual_time
async def test_waiters_are_served_in_the_order_they_came() -> None:
    rate = limiter(qps=10, burst=1)
    served: list[int] = []

    async def request(number: int) -> None:
        await rate.acquire()
        served.append(number)

    await asyncio.gather(*(request(number) for number in range(5)))
    assert served == [0, 1, 2, 3, 4]


@pytest.mark.parametrize(("qps", "burst"), [(0, 1), (-1, 1), (1, 0)])
def test_a_limit_that_makes_no_sense_is_refused(qps: float, burst: int) -> None:
    with pytest.raises(ValueError, match="qps > 0 and burst >= 1"):
        RateLimiter(qps=qps, burst=burst)
