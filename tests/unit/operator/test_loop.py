"""The scheduling loop against an in-memory cluster: what it writes, releases and evicts."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from muster.operator.cache import LiveCache
from muster.operator.config import OperatorConfig
from muster.operator.loop import SchedulingLoop
from muster.operator.metrics import Metrics
from muster.operator.pods import BatchOutcome
from muster.operator.status import StatusChange, desired_status
from muster.operator.writer import timestamp
from muster.scheduler import EngineConfig
from muster.scheduler.results import Admission, GroupKey, PodKey, Victim
from tests.unit.scheduler.builders import node, pod, pod_group

GANG = GroupKey("team", "trainer")
VICTIM = PodKey("other", "batch-0")


class FakeWriter:
    """Applies each status change to the cache, as the API server's answer would."""

    def __init__(self, cache: LiveCache) -> None:
        self.cache = cache

    async def write(self, key: GroupKey, change: StatusChange, *, now: float) -> bool:
        current = self.cache.pod_groups.get(key)
        if current is None:
            return False
        members = self.cache.members.get(key, {}).values()
        status = desired_status(current, members, change, now=timestamp(now))
        self.cache.apply_pod_group({**current, "status": status})
        return True


class FakePods:
    """Releases ungate the pod in the cache; evictions and deletions are recorded."""

    def __init__(self, cache: LiveCache) -> None:
        self.cache = cache
        self.evicted: list[PodKey] = []

    async def release(self, placements: Iterable[tuple[PodKey, str]]) -> BatchOutcome:
        done = []
        for key, _ in placements:
            released = pod(key.name, group=GANG.name, namespace=key.namespace, gated=False)
            self.cache.pods.upsert(released)
            done.append(key)
        return BatchOutcome(tuple(done), {})

    async def evict(self, pods: Iterable[PodKey]) -> BatchOutcome:
        done = tuple(pods)
        self.evicted.extend(done)
        return BatchOutcome(done, {})

    async def delete(self, pods: Iterable[PodKey]) -> BatchOutcome:
        return BatchOutcome(tuple(pods), {})


class FakeTrigger:
    def wake_at(self, moment: float) -> None:
        pass


class FakeEvents:
    def __init__(self) -> None:
        self.recorded: list[tuple[str, str, str]] = []

    async def record(self, involved: Any, kind: str, reason: str, message: str) -> None:
        self.recorded.append((str(involved.get("name")), reason, message))


def loop_with_victim() -> tuple[SchedulingLoop, FakePods]:
    """A gang needing a whole node whose only node is taken by a lower-priority pod."""
    cache = LiveCache()
    cache.nodes.upsert(node("n1", cpu="4"))
    cache.pods.upsert(pod(VICTIM.name, namespace=VICTIM.namespace, cpu="4", node_name="n1"))
    cache.pod_group_sink.upsert(pod_group(GANG.name, namespace=GANG.namespace, priority=1000))
    cache.pods.upsert(pod("trainer-0", group=GANG.name, namespace=GANG.namespace, cpu="4"))
    pods = FakePods(cache)
    loop = SchedulingLoop(
        cache=cache,
        writer=FakeWriter(cache),  # type: ignore[arg-type]
        pods=pods,  # type: ignore[arg-type]
        events=FakeEvents(),  # type: ignore[arg-type]
        trigger=FakeTrigger(),  # type: ignore[arg-type]
        metrics=Metrics(),
        config=OperatorConfig(release_timeout=60.0),
        engine_config=EngineConfig(),
    )
    return loop, pods


async def admit_with_victim(loop: SchedulingLoop) -> None:
    admission = Admission(GANG, {"trainer-0": "n1"}, victims=(Victim(VICTIM, None, 0),))
    assert await loop._admit(admission, now=0.0)


def rolled_back(pods: FakePods) -> bool:
    return PodKey(GANG.namespace, "trainer-0") in pods.evicted


async def test_the_release_timeout_of_a_preemptor_starts_when_its_victims_are_gone() -> None:
    loop, pods = loop_with_victim()
    await admit_with_victim(loop)
    assert pods.evicted == [VICTIM]
    terminating = pod(VICTIM.name, namespace=VICTIM.namespace, cpu="4", node_name="n1")
    terminating["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    loop.cache.pods.upsert(terminating)

    await loop._follow_admitted(200.0, skip=set())  # victim still terminating
    assert not rolled_back(pods)
    assert loop.cache.state.groups[GANG].plan == {"trainer-0": "n1"}  # still reserved

    loop.cache.pods.remove(terminating)
    await loop._follow_admitted(300.0, skip=set())  # victim gone: the clock starts
    await loop._follow_admitted(359.0, skip=set())
    assert not rolled_back(pods)

    await loop._follow_admitted(360.0, skip=set())
    assert rolled_back(pods)


async def test_a_restarted_operator_still_waits_for_the_pods_leaving_the_planned_nodes() -> None:
    before, _ = loop_with_victim()
    await admit_with_victim(before)
    terminating = pod(VICTIM.name, namespace=VICTIM.namespace, cpu="4", node_name="n1")
    terminating["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    before.cache.pods.upsert(terminating)
    restarted = SchedulingLoop(
        cache=before.cache,
        writer=before.writer,
        pods=before.pods,
        events=before.events,
        trigger=before.trigger,
        metrics=Metrics(),
        config=before.config,
        engine_config=before.engine_config,
    )
    pods: FakePods = restarted.pods  # type: ignore[assignment]

    await restarted._follow_admitted(200.0, skip=set())  # long after the admission
    assert not rolled_back(pods)

    restarted.cache.pods.remove(terminating)
    await restarted._follow_admitted(300.0, skip=set())
    await restarted._follow_admitted(359.0, skip=set())
    assert not rolled_back(pods)
    await restarted._follow_admitted(360.0, skip=set())
    assert rolled_back(pods)


async def test_a_gang_admitted_without_victims_keeps_the_timeout_from_its_release() -> None:
    loop, pods = loop_with_victim()
    loop.cache.pods.remove(pod(VICTIM.name, namespace=VICTIM.namespace))
    assert await loop._admit(Admission(GANG, {"trainer-0": "n1"}), now=0.0)
    await loop._follow_admitted(59.0, skip=set())
    assert not rolled_back(pods)
    await loop._follow_admitted(60.0, skip=set())
    assert rolled_back(pods)


def unusable_pod(version: str, cpu: str = "lots") -> dict[str, Any]:
    broken = pod("broken", namespace="team", cpu=cpu, node_name="n1")
    broken["metadata"]["resourceVersion"] = version
    return broken


async def test_an_object_the_engine_ignores_gets_one_warning_per_version() -> None:
    loop, _ = loop_with_victim()
    events: FakeEvents = loop.events  # type: ignore[assignment]
    loop.cache.pods.upsert(unusable_pod("1"))
    await loop.cycle()
    await loop.cycle()
    assert [(name, reason) for name, reason, _ in events.recorded] == [
        ("broken", "IgnoredByScheduler")
    ]
    assert "cannot use this Pod" in events.recorded[0][2]
    assert "lots" in events.recorded[0][2]

    loop.cache.pods.upsert(unusable_pod("2"))
    await loop.cycle()
    assert len(events.recorded) == 2

    loop.cache.pods.upsert(unusable_pod("3", cpu="1"))
    await loop.cycle()
    assert len(events.recorded) == 2
    assert not loop.cache.rejections


def loop_with_orphans(events: FakeEvents, *, grace: float) -> SchedulingLoop:
    """Two member pods of a PodGroup nobody has created."""
    cache = LiveCache()
    for name in ("waiting-0", "waiting-1"):
        cache.pods.upsert(pod(name, group="missing", namespace="team"))
    return SchedulingLoop(
        cache=cache,
        writer=FakeWriter(cache),  # type: ignore[arg-type]
        pods=FakePods(cache),  # type: ignore[arg-type]
        events=events,  # type: ignore[arg-type]
        trigger=FakeTrigger(),  # type: ignore[arg-type]
        metrics=Metrics(),
        config=OperatorConfig(orphan_grace=grace),
        engine_config=EngineConfig(),
    )


async def test_a_pod_gets_one_warning_once_its_podgroup_is_missing_past_the_grace() -> None:
    events = FakeEvents()
    loop = loop_with_orphans(events, grace=10.0)
    await loop._warn_orphans(100.0)
    await loop._warn_orphans(109.0)
    assert events.recorded == []
    await loop._warn_orphans(110.0)
    await loop._warn_orphans(200.0)
    assert sorted(name for name, _, _ in events.recorded) == ["waiting-0", "waiting-1"]
    assert {reason for _, reason, _ in events.recorded} == {"PodGroupNotFound"}


async def test_a_podgroup_created_within_the_grace_causes_no_warning() -> None:
    events = FakeEvents()
    loop = loop_with_orphans(events, grace=10.0)
    await loop._warn_orphans(100.0)
    loop.cache.pod_group_sink.upsert(pod_group("missing", namespace="team"))
    await loop._warn_orphans(120.0)
    assert events.recorded == []
    assert not loop.orphaned_since


class CacheChangingEvents(FakeEvents):
    """Adds pods to the cache while an event is written, as the informers do."""

    def __init__(self) -> None:
        super().__init__()
        self.cache = LiveCache()

    async def record(self, involved: Any, kind: str, reason: str, message: str) -> None:
        await super().record(involved, kind, reason, message)
        count = len(self.recorded)
        self.cache.pods.upsert(pod(f"late-{count}", group="missing", namespace="team"))
        self.cache.pods.upsert(pod(f"late-{count}", group=f"other-{count}", namespace="x"))


async def test_warning_about_orphans_survives_the_cache_changing_meanwhile() -> None:
    events = CacheChangingEvents()
    loop = loop_with_orphans(events, grace=0.0)
    events.cache = loop.cache
    await loop._warn_orphans(0.0)
    assert sorted(name for name, _, _ in events.recorded) == ["waiting-0", "waiting-1"]
    await loop._warn_orphans(1.0)
    assert {"late-1", "late-2"} <= {name for name, _, _ in events.recorded}


class HeldWriter(FakeWriter):
    """Holds every status write until `opened`, logging when each one is applied."""

    def __init__(self, cache: LiveCache, log: list[str]) -> None:
        super().__init__(cache)
        self.log = log
        self.in_flight = 0
        self.most_in_flight = 0
        self.opened = asyncio.Event()

    async def write(self, key: GroupKey, change: StatusChange, *, now: float) -> bool:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        await self.opened.wait()
        self.in_flight -= 1
        self.log.append(f"write {key.name}")
        return await super().write(key, change, now=now)


class LoggedPods(FakePods):
    def __init__(self, cache: LiveCache, log: list[str]) -> None:
        super().__init__(cache)
        self.log = log

    async def release(self, placements: Iterable[tuple[PodKey, str]]) -> BatchOutcome:
        done = tuple(key for key, _ in placements)
        self.log.extend(f"release {key.name}" for key in done)
        return BatchOutcome(done, {})


async def test_gangs_are_admitted_together_each_with_its_plan_written_before_its_release() -> None:
    cache = LiveCache()
    log: list[str] = []
    for name in ("first", "second"):
        cache.nodes.upsert(node(f"node-{name}", cpu="4"))
        cache.pod_group_sink.upsert(pod_group(name, namespace="team"))
        cache.pods.upsert(pod(f"{name}-0", group=name, namespace="team"))
    writer = HeldWriter(cache, log)
    loop = SchedulingLoop(
        cache=cache,
        writer=writer,  # type: ignore[arg-type]
        pods=LoggedPods(cache, log),  # type: ignore[arg-type]
        events=FakeEvents(),  # type: ignore[arg-type]
        trigger=FakeTrigger(),  # type: ignore[arg-type]
        metrics=Metrics(),
        config=OperatorConfig(),
        engine_config=EngineConfig(),
    )
    admissions = [
        Admission(GroupKey("team", name), {f"{name}-0": f"node-{name}"})
        for name in ("first", "second")
    ]
    admitting = asyncio.create_task(loop._admit_all(admissions, now=0.0))
    for _ in range(20):
        await asyncio.sleep(0)
    assert writer.most_in_flight == 2
    assert log == []
    writer.opened.set()
    assert await admitting == {GroupKey("team", "first"), GroupKey("team", "second")}
    for name in ("first", "second"):
        assert log.index(f"write {name}") < log.index(f"release {name}-0")


REFUSAL = "0/3 nodes are available: 1 node(s) didn't match PersistentVolume's node affinity"


def refusing_loop(max_rollbacks: int) -> SchedulingLoop:
    """Three nodes, a two-pod gang, and a loop that never releases anything itself."""
    cache = LiveCache()
    for name in ("n1", "n2", "n3"):
        cache.nodes.upsert(node(name, cpu="4"))
    cache.pod_group_sink.upsert(pod_group(GANG.name, namespace=GANG.namespace, min_count=2))
    return SchedulingLoop(
        cache=cache,
        writer=FakeWriter(cache),  # type: ignore[arg-type]
        pods=FakePods(cache),  # type: ignore[arg-type]
        events=FakeEvents(),  # type: ignore[arg-type]
        trigger=FakeTrigger(),  # type: ignore[arg-type]
        metrics=Metrics(),
        config=OperatorConfig(release_timeout=600.0),
        engine_config=EngineConfig(max_rollbacks=max_rollbacks),
    )


def new_members(loop: SchedulingLoop, generation: int) -> list[str]:
    """The Job's (re)created pods, gated; the previous ones gone."""
    for name in list(loop.cache.members.get(GANG, {})):
        loop.cache.pods.remove(pod(name, namespace=GANG.namespace))
    names = [f"trainer-{generation}-{index}" for index in range(2)]
    for name in names:
        loop.cache.pods.upsert(pod(name, group=GANG.name, namespace=GANG.namespace, cpu="2"))
    return names


def refuse(loop: SchedulingLoop, name: str, message: str) -> None:
    released = pod(name, group=GANG.name, namespace=GANG.namespace, cpu="2", gated=False)
    released["status"] = {
        "phase": "Pending",
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": message,
            }
        ],
    }
    loop.cache.pods.upsert(released)


def scheduled_condition(loop: SchedulingLoop) -> dict[str, Any]:
    status = loop.cache.pod_groups[GANG]["status"]
    found: dict[str, Any] = next(
        c for c in status["conditions"] if c["type"] == "PodGroupScheduled"
    )
    return found


async def test_a_refused_pod_rolls_back_at_once_and_the_next_plan_avoids_its_node() -> None:
    loop = refusing_loop(max_rollbacks=2)
    first = new_members(loop, 1)
    await loop.cycle()
    plan = loop.cache.pod_groups[GANG]["status"]["plan"]
    assert set(plan.values()) == {"n1"}

    refuse(loop, first[0], REFUSAL)
    await loop._follow_admitted(1.0, skip=set())  # long before the 600 s release timeout
    condition = scheduled_condition(loop)
    assert condition["reason"] == "RolledBack"
    assert f'kube-scheduler refused pod {first[0]} on node n1: "{REFUSAL}"' in condition["message"]
    assert "retrying in 10s" in condition["message"]
    refusals = loop.cache.pod_groups[GANG]["status"]["refusals"]
    assert refusals["rollbacks"] == 1
    assert [(r["node"], r["pod"], r["count"]) for r in refusals["nodes"]] == [("n1", first[0], 1)]

    second = new_members(loop, 2)
    result = await loop.cycle()
    (admission,) = result.admissions
    assert set(admission.placements.values()) == {"n2"}

    refuse(loop, second[1], REFUSAL)
    await loop._follow_admitted(2.0, skip=set())
    condition = scheduled_condition(loop)
    assert "2 such rollbacks in a row: not planned again" in condition["message"]

    new_members(loop, 3)
    loop.backoff.succeeded(GANG)  # the backoff is over
    result = await loop.cycle()
    assert not result.admissions
    verdict = result.verdicts[GANG]
    assert verdict.reason == "Unschedulable"
    assert f'pod {second[1]} on node n2: "0/3 nodes' in verdict.message
    assert scheduled_condition(loop)["message"] == verdict.message


async def test_a_gang_that_binds_completely_starts_its_rollback_count_again() -> None:
    loop = refusing_loop(max_rollbacks=2)
    first = new_members(loop, 1)
    await loop.cycle()
    refuse(loop, first[0], "no")
    await loop._follow_admitted(1.0, skip=set())
    second = new_members(loop, 2)
    loop.backoff.succeeded(GANG)
    await loop.cycle()
    for name in second:
        bound = pod(name, group=GANG.name, namespace=GANG.namespace, cpu="2", node_name="n2")
        loop.cache.pods.upsert(bound)
    await loop._follow_admitted(3.0, skip=set())
    refusals = loop.cache.pod_groups[GANG]["status"]["refusals"]
    assert refusals["rollbacks"] == 0
    assert [r["node"] for r in refusals["nodes"]] == ["n1"]


async def test_a_preemptor_refused_for_room_its_victims_still_take_is_not_rolled_back() -> None:
    loop, pods = loop_with_victim()
    await admit_with_victim(loop)
    terminating = pod(VICTIM.name, namespace=VICTIM.namespace, cpu="4", node_name="n1")
    terminating["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    loop.cache.pods.upsert(terminating)
    released = pod("trainer-0", group=GANG.name, namespace=GANG.namespace, cpu="4", gated=False)
    released["status"] = {
        "phase": "Pending",
        "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "cpu"}
        ],
    }
    loop.cache.pods.upsert(released)

    await loop._follow_admitted(200.0, skip=set())  # the victim still terminates
    assert not rolled_back(pods)
    loop.cache.pods.remove(terminating)
    await loop._follow_admitted(300.0, skip=set())  # gone: kube-scheduler tries again soon
    await loop._follow_admitted(314.0, skip=set())
    assert not rolled_back(pods)

    await loop._follow_admitted(315.0, skip=set())  # still refused after that: a refusal
    assert rolled_back(pods)
    assert loop.cache.pod_groups[GANG]["status"]["refusals"]["nodes"][0]["node"] == "n1"
