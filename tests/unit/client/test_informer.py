"""The informer protocol against a scripted API server: list, watch, resume, relist."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest

from muster.api.wire import JsonObject
from muster.client.informer import ROUTINE_FAILURES, Informer
from muster.client.kube import KubeError, UnreachableError
from muster.client.retry import ExponentialBackoff
from tests.unit.operator.virtual_time import on_virtual_time


def obj(name: str, version: str) -> JsonObject:
    return {"metadata": {"namespace": "ns", "name": name, "resourceVersion": version}}


class ScriptedKube:
    """Answers lists and watches from queues; records the versions watches start from."""

    def __init__(self, lists: list[tuple[list[JsonObject], str]], watches: list[Any]) -> None:
        self.lists = lists
        self.watches = watches
        self.watched_from: list[str] = []
        self.listed = 0

    async def list_pages(
        self, path: str, *, query: Mapping[str, str] | None = None
    ) -> AsyncIterator[tuple[list[JsonObject], str]]:
        self.listed += 1
        items, version = self.lists.pop(0)
        for start in range(0, max(len(items), 1), 2):  # pages of two
            yield items[start : start + 2], version

    async def watch(
        self,
        path: str,
        *,
        resource_version: str,
        timeout_seconds: int,
        read_timeout: float,
        query: Mapping[str, str],
    ) -> AsyncIterator[JsonObject]:
        self.watched_from.append(resource_version)
        if not self.watches:
            await asyncio.Event().wait()  # a quiet watch, until cancelled
        script = self.watches.pop(0)
        if isinstance(script, Exception):
            raise script
        for event in script:
            if isinstance(event, Exception):
                raise event  # the stream breaks after what it delivered so far
            yield event


class RecordingSink:
    def __init__(self) -> None:
        self.objects: dict[str, str] = {}
        self.removed: list[str] = []

    def upsert(self, item: JsonObject) -> bool:
        self.objects[item["metadata"]["name"]] = item["metadata"].get("resourceVersion", "")
        return bool(item["metadata"]["name"] != "quiet")

    def remove(self, item: JsonObject) -> bool:
        self.objects.pop(item["metadata"]["name"], None)
        self.removed.append(item["metadata"]["name"])
        return True


async def run_until_watches_are_used(kube: ScriptedKube, sink: RecordingSink) -> int:
    changes = 0

    def changed() -> None:
        nonlocal changes
        changes += 1

    informer = Informer(kube, "/api/v1/pods", sink, on_change=changed)  # type: ignore[arg-type]
    informer.backoff = ExponentialBackoff(initial=0.001, maximum=0.001)
    task = asyncio.create_task(informer.run())
    for _ in range(100):
        await asyncio.sleep(0.002)
        if not kube.watches and len(kube.watched_from) > 0 and informer.synced.is_set():
            break
    await asyncio.sleep(0.01)
    task.cancel()
    return changes


async def test_watch_resumes_from_the_last_version_including_bookmarks() -> None:
    kube = ScriptedKube(
        lists=[([obj("a", "1")], "10")],
        watches=[
            [
                {"type": "ADDED", "object": obj("b", "11")},
                {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "15"}}},
            ],
            [{"type": "DELETED", "object": obj("a", "16")}],
        ],
    )
    sink = RecordingSink()
    await run_until_watches_are_used(kube, sink)
    assert kube.watched_from[:3] == ["10", "15", "16"]
    assert sink.objects == {"b": "11"}


async def test_an_expired_version_relists_and_forgets_what_vanished_meanwhile() -> None:
    kube = ScriptedKube(
        lists=[([obj("a", "1"), obj("b", "2")], "10"), ([obj("b", "20")], "30")],
        watches=[[{"type": "ERROR", "object": {"kind": "Status", "code": 410}}]],
    )
    sink = RecordingSink()
    await run_until_watches_are_used(kube, sink)
    assert kube.watched_from[:2] == ["10", "30"]
    assert sink.objects == {"b": "20"}
    assert sink.removed == ["a"]


async def test_a_gone_answer_to_the_watch_request_relists_too() -> None:
    kube = ScriptedKube(
        lists=[([], "10"), ([obj("c", "40")], "41")],
        watches=[KubeError(410, "Expired", "too old")],
    )
    sink = RecordingSink()
    await run_until_watches_are_used(kube, sink)
    assert sink.objects == {"c": "40"}


async def test_only_relevant_changes_poke_the_scheduler() -> None:
    kube = ScriptedKube(
        lists=[([], "1")],
        watches=[
            [
                {"type": "MODIFIED", "object": obj("quiet", "2")},
                {"type": "MODIFIED", "object": obj("loud", "3")},
            ]
        ],
    )
    changes = await run_until_watches_are_used(kube, RecordingSink())
    assert changes == 2  # the list, and "loud"


async def test_a_broken_stream_resumes_from_the_last_version_without_relisting() -> None:
    broken = UnreachableError("watch of /api/v1/pods: ServerDisconnectedError()", unsent=False)
    kube = ScriptedKube(
        lists=[([obj("a", "1")], "10")],
        watches=[
            [{"type": "ADDED", "object": obj("b", "12")}, broken],
            UnreachableError("connection refused", unsent=True),
            KubeError(503, "ServiceUnavailable", "the server is restarting"),
            [{"type": "MODIFIED", "object": obj("b", "13")}],
        ],
    )
    sink = RecordingSink()
    await run_until_watches_are_used(kube, sink)
    assert kube.watched_from[:5] == ["10", "12", "12", "12", "13"]
    assert kube.listed == 1
    assert sink.objects == {"a": "1", "b": "13"}


async def test_an_error_event_other_than_gone_resumes_too() -> None:
    kube = ScriptedKube(
        lists=[([], "10")],
        watches=[[{"type": "ERROR", "object": {"kind": "Status", "code": 500}}]],
    )
    await run_until_watches_are_used(kube, RecordingSink())
    assert kube.watched_from[:2] == ["10", "10"]
    assert kube.listed == 1


@on_virtual_time
async def test_a_throttled_watch_waits_as_long_as_retry_after_says() -> None:
    kube = ScriptedKube(
        lists=[([], "10")],
        watches=[KubeError(429, "TooManyRequests", "slow down", retry_after=0.2)],
    )
    informer = Informer(kube, "/api/v1/pods", RecordingSink(), on_change=lambda: None)  # type: ignore[arg-type]
    informer.backoff = ExponentialBackoff(initial=0.001, maximum=0.001)
    task = asyncio.create_task(informer.run())
    await asyncio.sleep(0.1)
    assert kube.watched_from == ["10"]
    await asyncio.sleep(0.2)
    assert kube.watched_from == ["10", "10"]
    task.cancel()


async def test_a_watch_timing_out_is_routine_and_only_failures_in_a_row_warn(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A silent connection timed out, then resumed: INFO. Failing again and again:
    after `ROUTINE_FAILURES` in a row, a WARNING."""
    timed_out = UnreachableError("watch of /api/v1/pods: SocketTimeoutError()", unsent=False)
    kube = ScriptedKube(
        lists=[([], "10")],
        watches=[
            [{"type": "ADDED", "object": obj("b", "12")}, timed_out],
            [{"type": "ADDED", "object": obj("c", "13")}, timed_out],
            *[timed_out] * ROUTINE_FAILURES,  # with the one before: one more than routine
        ],
    )
    with caplog.at_level(logging.INFO, logger="muster.client.informer"):
        await run_until_watches_are_used(kube, RecordingSink())
    levels = [record.levelno for record in caplog.records if "watch of" in record.message]
    assert levels == [logging.INFO] * (ROUTINE_FAILURES + 1) + [logging.WARNING]
