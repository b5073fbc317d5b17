"""The leader's events are posted in the background (real posting is tested e2e: every
test that reads a gang's events); these pin that recording never waits on the API."""

from __future__ import annotations

import asyncio
from typing import Any

from muster.operator.execution.events import NORMAL, QueuedEventRecorder
from tests.unit.operator.virtual_time import on_virtual_time


class SlowKube:
    """Answers a post only when told to."""

    def __init__(self) -> None:
        self.posted: list[str] = []
        self.answer = asyncio.Event()

    async def request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        await self.answer.wait()
        self.posted.append(kwargs["body"]["reason"])
        return {}


@on_virtual_time
async def test_recording_returns_before_the_event_is_posted_and_run_posts_it() -> None:
    kube = SlowKube()
    events = QueuedEventRecorder(kube, instance="test")  # type: ignore[arg-type]
    target = {"kind": "PodGroup", "namespace": "ns", "name": "train"}
    await asyncio.wait_for(events.record(target, NORMAL, "Scheduled", "admitted"), timeout=1)
    posting = asyncio.create_task(events.run())
    kube.answer.set()
    while not kube.posted:
        await asyncio.sleep(0)
    posting.cancel()
    assert kube.posted == ["Scheduled"]


@on_virtual_time
async def test_a_full_queue_drops_the_event_instead_of_waiting() -> None:
    events = QueuedEventRecorder(SlowKube(), instance="test", capacity=1)  # type: ignore[arg-type]
    target = {"kind": "PodGroup", "namespace": "ns", "name": "train"}
    await events.record(target, NORMAL, "Created", "first")
    await asyncio.wait_for(events.record(target, NORMAL, "Scheduled", "second"), timeout=1)
    assert events.queue.qsize() == 1
