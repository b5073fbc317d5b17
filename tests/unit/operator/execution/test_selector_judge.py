"""Selectors judged in a process of their own: the wall-clock budget stops an
evaluation that would run for minutes, the event loop runs meanwhile, and each case
is judged once."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from muster.operator.execution.selector_judge import SelectorJudge
from muster.scheduler.devices.selector_cost import API_SERVER_COST_LIMIT
from muster.scheduler.devices.selectors import (
    TIME_BUDGET,
    Case,
    DeviceKind,
    Judgement,
    case_of,
)
from tests.unit.scheduler.device_builders import nested_all

H100 = DeviceKind("gpu.example.com", (("gpu.example.com/index", 3), ("product", "H100")), ())
BODY = 'device.attributes["gpu.example.com"].index + a + b + c >= 0'
# Some 340,000 units: the API server admits it, and cel-python would take tens of
# seconds of CPU over it under kube-scheduler's limit, minutes on a busy machine.
COSTLY = case_of(nested_all(BODY), H100)
CHEAP = case_of('device.attributes["gpu.example.com"].product == "H100"', H100)


class Delivered:
    """The judgements delivered, and a wait for the next."""

    def __init__(self) -> None:
        self.found: list[dict[Case, Judgement]] = []
        self.arrived = asyncio.Event()

    def __call__(self, found: dict[Case, Judgement]) -> None:
        self.found.append(found)
        self.arrived.set()

    async def next(self) -> dict[Case, Judgement]:
        await asyncio.wait_for(self.arrived.wait(), timeout=120)
        self.arrived.clear()
        return self.found[-1]


@contextlib.asynccontextmanager
async def running(judge: SelectorJudge) -> AsyncIterator[None]:
    task = asyncio.create_task(judge.run())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_the_time_budget_stops_an_evaluation_that_would_run_for_minutes() -> None:
    """Under the API server's own cost limit the count would let it run on; the
    wall-clock budget kills the process, and the loop turned all the while. The
    budget is the operator's own: a shorter one would judge even the cheap case (the
    child's first parse) over time on a busy machine."""
    delivered = Delivered()
    judge = SelectorJudge(delivered, budget=TIME_BUDGET, limit=API_SERVER_COST_LIMIT)
    turns = 0

    async def turning() -> None:
        nonlocal turns
        while True:
            await asyncio.sleep(0.01)
            turns += 1

    async with running(judge):
        ticker = asyncio.create_task(turning())
        judge.want([CHEAP])  # the process is started and ready before the costly case
        assert await delivered.next() == {CHEAP: Judgement.SELECTS}
        before = turns
        judge.want([COSTLY])
        assert await delivered.next() == {COSTLY: Judgement.OVER_TIME}
        assert turns > before  # the loop ran other tasks while the case was judged
        ticker.cancel()
        driver = case_of('device.driver == "gpu.example.com"', H100)
        judge.want([driver])
        found = await delivered.next()  # a fresh process judges after the killed one
        assert found == {driver: Judgement.SELECTS}


async def test_the_cost_limit_answers_first_where_it_is_the_engines() -> None:
    """The count stops the evaluation before any wall-clock budget would (a long
    one here: on a busy machine the operator's 5 s could end first)."""
    delivered = Delivered()
    judge = SelectorJudge(delivered, budget=60.0)
    async with running(judge):
        judge.want([COSTLY])
        assert await delivered.next() == {COSTLY: Judgement.OVER_COST}


async def test_a_case_wanted_again_while_it_is_judged_is_judged_once() -> None:
    delivered = Delivered()
    judge = SelectorJudge(delivered)
    async with running(judge):
        judge.want([CHEAP])
        await asyncio.sleep(0.1)  # the judge took it (its process is starting)
        judge.want([CHEAP])
        await delivered.next()
        judge.want([])
        await asyncio.sleep(0.2)
    assert delivered.found == [{CHEAP: Judgement.SELECTS}]


def test_cases_are_taken_in_turn_per_expression() -> None:
    """A costly expression wanted on many kinds delays another one by one case."""
    judge = SelectorJudge(lambda found: None)
    other = DeviceKind("gpu.example.com", (("gpu.example.com/index", 4),), ())
    many = [COSTLY, case_of(COSTLY[0], other)]
    judge.want([*many, CHEAP])
    assert [judge.next_case() for _ in range(3)] == [many[0], CHEAP, many[1]]
