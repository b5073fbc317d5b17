"""A cycle starts soon after a change (a burst gathered), on resync without one, and
no later than any wake-up time asked for."""

from __future__ import annotations

import asyncio
import time

from muster.operator.intake.trigger import Trigger
from tests.unit.operator.virtual_time import on_virtual_time

DEBOUNCE = 0.5
RESYNC = 60.0


async def waited(trigger: Trigger) -> float:
    loop = asyncio.get_running_loop()
    start = loop.time()
    await trigger.wait()
    return loop.time() - start


@on_virtual_time
async def test_without_a_change_a_cycle_comes_on_resync() -> None:
    assert await waited(Trigger(debounce=DEBOUNCE, resync=RESYNC)) == RESYNC


@on_virtual_time
async def test_a_change_starts_a_cycle_after_the_debounce_gathers_the_burst() -> None:
    trigger = Trigger(debounce=DEBOUNCE, resync=RESYNC)
    trigger.poke()
    trigger.poke()
    assert await waited(trigger) == DEBOUNCE
    assert await waited(trigger) == RESYNC, "the burst was one cycle"


@on_virtual_time
async def test_a_change_during_the_wait_ends_it() -> None:
    trigger = Trigger(debounce=DEBOUNCE, resync=RESYNC)
    asyncio.get_running_loop().call_later(5.0, trigger.poke)
    assert await waited(trigger) == 5.0 + DEBOUNCE


@on_virtual_time
async def test_the_earliest_wake_up_asked_for_comes_before_resync() -> None:
    trigger = Trigger(debounce=DEBOUNCE, resync=RESYNC)
    trigger.wake_at(time.time() + 40)
    trigger.wake_at(time.time() + 50)
    elapsed = await waited(trigger)
    assert 39 < elapsed <= 40


@on_virtual_time
async def test_a_wake_up_already_due_starts_a_cycle_at_once_and_is_forgotten() -> None:
    trigger = Trigger(debounce=DEBOUNCE, resync=RESYNC)
    trigger.wake_at(time.time() - 1)
    assert await waited(trigger) == 0
    assert await waited(trigger) == RESYNC
