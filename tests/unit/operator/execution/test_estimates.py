"""The estimate writer: a forecast beside the loop, on a budget, writing only estimates."""

from __future__ import annotations

import time
from typing import Any

from muster.api.keys import GroupKey
from muster.operator.config import OperatorConfig
from muster.operator.execution.estimates import EstimateWriter
from muster.operator.intake.cache import LiveCache
from muster.scheduler import EngineConfig
from tests.unit.operator.execution.test_loop import FakeEvents
from tests.unit.scheduler.builders import node, pod, pod_group

GANG = GroupKey("team", "b")


class RecordingWriter:
    def __init__(self, cache: LiveCache) -> None:
        self.cache = cache
        self.written: list[tuple[GroupKey, dict[str, Any], str]] = []

    async def write(self, key: GroupKey, desired: dict[str, Any], *, version: str) -> bool:
        self.written.append((key, dict(desired), version))
        stored = self.cache.pod_groups.get(key)
        assert stored is not None
        self.cache.pod_group_sink.upsert({**stored, "status": dict(desired)})
        return True


def _writer(interval: float = 10.0) -> tuple[EstimateWriter, RecordingWriter]:
    cache = LiveCache()
    cache.nodes.upsert(node("n1", cpu="4"))
    cache.pods.upsert(pod("web", namespace="team", cpu="4", node_name="n1"))
    waiting = pod_group(GANG.name, namespace=GANG.namespace)
    waiting["metadata"]["resourceVersion"] = "7"
    waiting["status"] = {"plan": {"kept": "as is"}}
    cache.pod_group_sink.upsert(waiting)
    cache.pods.upsert(pod("b-0", group=GANG.name, namespace=GANG.namespace, cpu="4"))
    recording = RecordingWriter(cache)
    estimates = EstimateWriter(
        cache=cache,
        writer=recording,  # type: ignore[arg-type]
        events=FakeEvents(),  # type: ignore[arg-type]
        config=OperatorConfig(estimate_interval=interval),
        engine_config=EngineConfig(),
    )
    return estimates, recording


async def test_a_round_writes_the_estimate_into_the_stored_status_at_its_version() -> None:
    estimates, recording = _writer()
    await estimates.round(time.time())
    [(key, desired, version)] = recording.written
    assert (key, version) == (GANG, "7")
    assert desired["plan"] == {"kept": "as is"}
    assert desired["estimate"]["start"] == "unknown"  # web has no known runtime
    assert "estimatedStartTime" not in desired


async def test_a_forecast_waits_for_a_change_and_for_the_interval() -> None:
    estimates, _ = _writer(interval=30.0)
    now = time.time()
    await estimates.round(now)
    estimates.cache.pods.upsert(pod("db", namespace="team", cpu="1"))
    await estimates.round(now + 10)  # changed, but too soon after the last
    assert estimates.forecasts == 1
    await estimates.round(now + 31)
    await estimates.round(now + 90)  # nothing changed since
    assert estimates.forecasts == 2


async def test_no_estimate_is_written_for_a_gang_admitted_since_the_forecast() -> None:
    estimates, recording = _writer()
    stored = estimates.cache.pod_groups.get(GANG)
    assert stored is not None
    admitted = {"conditions": [{"type": "PodGroupScheduled", "status": "True"}]}
    await estimates.round(time.time())
    recording.written.clear()
    estimates.book.told.clear()  # as if the estimate had not been told yet
    newer = {
        **stored["metadata"],
        "resourceVersion": str(int(stored["metadata"]["resourceVersion"]) + 1),
    }
    estimates.cache.pod_group_sink.upsert({**stored, "metadata": newer, "status": admitted})
    assert estimates.cache.state.groups[GANG].admitted
    await estimates.round(time.time())
    assert recording.written == []
