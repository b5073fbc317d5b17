"""The status writer's requests, pinned on a scripted API; tests/e2e/test_status_writer.py
makes the same writes against the real API server."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from muster.api.keys import GroupKey
from muster.client.kube import KubeError
from muster.operator.execution.writer import StatusWriter
from muster.operator.intake.cache import LiveCache

KEY = GroupKey("ns", "g")


def pod_group(version: str, status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.muster.dev/v1beta1",
        "kind": "PodGroup",
        "metadata": {"namespace": "ns", "name": "g", "generation": 1, "resourceVersion": version},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
        "status": status or {},
    }


class ScriptedApi:
    """Stores one PodGroup; answers a status PUT as the API server does (409 when the
    resourceVersion sent is not the stored one)."""

    def __init__(self, stored: dict[str, Any]) -> None:
        self.stored = stored
        self.sent: list[str] = []
        self.answer = asyncio.Event()  # a PUT is answered once it is set
        self.answer.set()

    async def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> Any:
        self.sent.append(method)
        await self.answer.wait()
        if method == "GET":
            return copy.deepcopy(self.stored)
        if body["metadata"]["resourceVersion"] != self.stored["metadata"]["resourceVersion"]:
            raise KubeError(409, "Conflict", "the object has been modified")
        version = str(int(self.stored["metadata"]["resourceVersion"]) + 1)
        self.stored = {**body, "metadata": {**body["metadata"], "resourceVersion": version}}
        return copy.deepcopy(self.stored)


def writer_on(cached: dict[str, Any], stored: dict[str, Any]) -> tuple[StatusWriter, ScriptedApi]:
    cache = LiveCache()
    cache.apply_pod_group(cached)
    api = ScriptedApi(stored)
    return StatusWriter(api, cache), api  # type: ignore[arg-type]


DESIRED = {"minCount": 2, "pods": {"total": 0}}


async def test_a_status_computed_from_the_cached_copy_is_written_and_cached() -> None:
    writer, api = writer_on(pod_group("5"), pod_group("5"))
    assert await writer.write(KEY, DESIRED, version="5")
    assert api.sent == ["PUT"]
    cached = writer.cache.pod_groups.get(KEY)
    assert cached is not None and cached["status"] == DESIRED
    assert cached["metadata"]["resourceVersion"] == "6"


async def test_a_status_computed_from_an_older_copy_than_the_cache_holds_is_not_sent() -> None:
    writer, api = writer_on(pod_group("7"), pod_group("7"))
    assert not await writer.write(KEY, DESIRED, version="5")
    assert api.sent == []


async def test_a_status_that_is_already_stored_costs_no_request() -> None:
    writer, api = writer_on(pod_group("7", DESIRED), pod_group("7", DESIRED))
    assert await writer.write(KEY, DESIRED, version="5")
    assert api.sent == []


async def test_a_conflict_the_cache_had_not_seen_reads_the_group_again() -> None:
    writer, api = writer_on(pod_group("5"), pod_group("8", {"minCount": 3}))
    assert not await writer.write(KEY, DESIRED, version="5")
    assert api.sent == ["PUT", "GET"]
    cached = writer.cache.pod_groups.get(KEY)
    assert cached is not None and cached["metadata"]["resourceVersion"] == "8"


async def test_two_writes_of_one_group_take_turns_and_the_later_one_is_not_sent() -> None:
    writer, api = writer_on(pod_group("5"), pod_group("5"))
    api.answer.clear()
    first = asyncio.create_task(writer.write(KEY, DESIRED, version="5"))
    second = asyncio.create_task(writer.write(KEY, {**DESIRED, "minCount": 3}, version="5"))
    while not api.sent:
        await asyncio.sleep(0)
    api.answer.set()
    assert await first
    assert not await second  # computed from version 5; the cache holds 6 by its turn
    assert api.sent == ["PUT"]
    assert len(writer.turns) == 0  # no lock is kept for a group nobody writes
