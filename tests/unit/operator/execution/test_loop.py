"""The scheduling loop against an in-memory cluster: what it writes, releases and evicts."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from muster.api.keys import GroupKey, PodKey
from muster.api.times import rfc3339
from muster.operator.config import OperatorConfig
from muster.operator.execution.estimates import EstimateWriter
from muster.operator.execution.loop import LoopHooks, SchedulingLoop, Writers
from muster.operator.execution.pods import BatchOutcome, Failure
from muster.operator.execution.selector_judge import SelectorJudge
from muster.operator.intake.cache import LiveCache
from muster.operator.intake.trigger import Trigger
from muster.operator.metrics import Metrics
from muster.scheduler import EngineConfig
from muster.scheduler.decisions.plan import Release, StepKind
from tests.unit.operator.virtual_time import on_virtual_time
from tests.unit.scheduler.builders import job, node, pod, pod_group

GANG = GroupKey("team", "trainer")
VICTIM = PodKey("other", "batch-0")


class FakeWriter:
    """Applies each status to the cache, as the API server's answer would."""

    def __init__(self, cache: LiveCache) -> None:
        self.cache = cache
        self.refuse: set[GroupKey] = set()

    async def write(self, key: GroupKey, desired: Mapping[str, Any], *, version: str) -> bool:
        current = self.cache.pod_groups.get(key)
        if current is None or key in self.refuse:
            return False
        metadata = {**current["metadata"], "resourceVersion": str(int(version or 0) + 1)}
        self.cache.apply_pod_group({**current, "metadata": metadata, "status": dict(desired)})
        return True


def released_pods(release: Release) -> list[PodKey]:
    return [PodKey(release.group.namespace, name) for name, _ in release.placements]


class FakePods:
    """Releases ungate the pod in the cache; evictions, deletions and the version each
    release or ungating was conditional on are recorded."""

    def __init__(self, cache: LiveCache) -> None:
        self.cache = cache
        self.evicted: list[PodKey] = []
        self.versions: dict[PodKey, str] = {}

    async def release(self, release: Release, versions: Mapping[PodKey, str]) -> BatchOutcome:
        done = []
        for key in released_pods(release):
            self.versions[key] = versions[key]
            released = pod(key.name, group=GANG.name, namespace=key.namespace, gated=False)
            self.cache.pods.upsert(released)
            done.append(key)
        return BatchOutcome(tuple(done), {})

    async def ungate(self, pods: Iterable[PodKey], versions: Mapping[PodKey, str]) -> BatchOutcome:
        done = tuple(pods)
        for key in done:
            self.versions[key] = versions[key]
            group = self.cache.state.pods[key].record.group_name
            self.cache.pods.upsert(pod(key.name, group=group, namespace=key.namespace, gated=False))
        return BatchOutcome(done, {})

    async def evict(self, pods: Iterable[PodKey]) -> BatchOutcome:
        done = tuple(pods)
        self.evicted.extend(done)
        return BatchOutcome(done, {})

    async def delete(self, pods: Iterable[PodKey]) -> BatchOutcome:
        return BatchOutcome(tuple(pods), {})


class FakeTrigger:
    def wake_at(self, moment: float) -> None:
        pass

    def poke(self) -> None:
        pass


class FakeEvents:
    def __init__(self) -> None:
        self.recorded: list[tuple[str, str, str]] = []

    async def record(self, involved: Any, kind: str, reason: str, message: str) -> None:
        self.recorded.append((str(involved.get("name")), reason, message))


def idle_estimates(cache: LiveCache) -> EstimateWriter:
    """An estimate writer that is never run: the loop only tells it about cycles."""
    return EstimateWriter(
        cache=cache,
        writer=FakeWriter(cache),  # type: ignore[arg-type]
        events=FakeEvents(),  # type: ignore[arg-type]
        config=OperatorConfig(),
        engine_config=EngineConfig(),
    )


def loop_over(
    cache: LiveCache,
    *,
    writer: FakeWriter | None = None,
    pods: FakePods | None = None,
    trigger: FakeTrigger | None = None,
    record: Callable[[dict[str, Any]], None] | None = None,
    still_leading: Callable[[], bool] = lambda: True,
    engine_config: EngineConfig | None = None,
    clock: Callable[[], float] = time.time,
    selectors: SelectorJudge | None = None,
) -> SchedulingLoop:
    """The loop over this cache, with fakes for everything it talks to."""
    return SchedulingLoop(
        cache=cache,
        writers=Writers(
            writer or FakeWriter(cache),  # type: ignore[arg-type]
            pods or FakePods(cache),  # type: ignore[arg-type]
            FakeEvents(),  # type: ignore[arg-type]
            idle_estimates(cache),
        ),
        trigger=trigger or FakeTrigger(),  # type: ignore[arg-type]
        metrics=Metrics(),
        engine_config=engine_config or EngineConfig(),
        selectors=selectors,
        hooks=LoopHooks(still_leading=still_leading, record=record, clock=clock),
    )


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
        writers=Writers(
            FakeWriter(cache),  # type: ignore[arg-type]
            pods,  # type: ignore[arg-type]
            FakeEvents(),  # type: ignore[arg-type]
            idle_estimates(cache),
        ),
        trigger=FakeTrigger(),  # type: ignore[arg-type]
        metrics=Metrics(),
        engine_config=EngineConfig(),
    )
    return loop, pods


def unusable_pod(version: str, cpu: str = "lots") -> dict[str, Any]:
    broken = pod("broken", namespace="team", cpu=cpu, node_name="n1")
    broken["metadata"]["resourceVersion"] = version
    return broken


async def test_an_object_the_engine_ignores_gets_one_warning_per_version() -> None:
    loop, _ = loop_with_victim()
    events: FakeEvents = loop.events  # type: ignore[assignment]

    def ignored() -> list[tuple[str, str, str]]:
        return [told for told in events.recorded if told[1] == "IgnoredByScheduler"]

    loop.cache.pods.upsert(unusable_pod("1"))
    await loop.cycle()
    await loop.cycle()
    assert [name for name, _, _ in ignored()] == ["broken"]
    assert "cannot use this Pod" in ignored()[0][2]
    assert "lots" in ignored()[0][2]

    loop.cache.pods.upsert(unusable_pod("2"))
    await loop.cycle()
    assert len(ignored()) == 2

    loop.cache.pods.upsert(unusable_pod("3", cpu="1"))
    await loop.cycle()
    assert len(ignored()) == 2
    assert not loop.cache.rejections


CREATED = 1_000_000.0  # when the pods of a missing PodGroup were created


def loop_with_orphans(
    events: FakeEvents, *, grace: float, clock: Callable[[], float]
) -> SchedulingLoop:
    """Two member pods of a PodGroup nobody has created, made at `CREATED`."""
    cache = LiveCache()
    for name in ("waiting-0", "waiting-1"):
        orphan = pod(name, group="missing", namespace="team")
        orphan["metadata"]["creationTimestamp"] = rfc3339(CREATED)
        cache.pods.upsert(orphan)
    return SchedulingLoop(
        cache=cache,
        writers=Writers(
            FakeWriter(cache),  # type: ignore[arg-type]
            FakePods(cache),  # type: ignore[arg-type]
            events,  # type: ignore[arg-type]
            idle_estimates(cache),
        ),
        trigger=FakeTrigger(),  # type: ignore[arg-type]
        metrics=Metrics(),
        engine_config=EngineConfig(orphan_grace=grace),
        hooks=LoopHooks(clock=clock),
    )


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


async def test_a_pod_gets_one_warning_once_its_podgroup_is_missing_past_the_grace() -> None:
    events, clock = FakeEvents(), Clock(CREATED)
    loop = loop_with_orphans(events, grace=10.0, clock=clock)
    result = await loop.cycle()
    assert result.plan.wake_at == CREATED + 10.0  # the end of the grace
    clock.now = CREATED + 9.0
    await loop.cycle()
    assert events.recorded == []
    clock.now = CREATED + 10.0
    await loop.cycle()
    clock.now = CREATED + 100.0
    await loop.cycle()
    assert sorted(name for name, _, _ in events.recorded) == ["waiting-0", "waiting-1"]
    assert {reason for _, reason, _ in events.recorded} == {"PodGroupNotFound"}


async def test_a_podgroup_created_within_the_grace_causes_no_warning() -> None:
    events, clock = FakeEvents(), Clock(CREATED)
    loop = loop_with_orphans(events, grace=10.0, clock=clock)
    await loop.cycle()
    loop.cache.pod_group_sink.upsert(pod_group("missing", namespace="team"))
    clock.now = CREATED + 20.0
    result = await loop.cycle()
    assert "PodGroupNotFound" not in {reason for _, reason, _ in events.recorded}
    assert not result.carried.told


@on_virtual_time
async def test_the_loop_wakes_at_the_end_of_the_grace_and_warns_once() -> None:
    events = FakeEvents()
    running = asyncio.get_running_loop()

    def clock() -> float:
        return CREATED + running.time()

    loop = loop_with_orphans(events, grace=30.0, clock=clock)
    loop.trigger = Trigger(debounce=0.0, resync=3600.0, clock=clock)
    loop.trigger.poke()  # the first cycle, at once
    cycling = asyncio.create_task(loop.run())
    await asyncio.sleep(29.0)
    assert events.recorded == []
    await asyncio.sleep(2.0)
    assert sorted(name for name, _, _ in events.recorded) == ["waiting-0", "waiting-1"]
    await asyncio.sleep(7200.0)  # two more cycles, on resync
    assert len(events.recorded) == 2
    cycling.cancel()


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
    loop = loop_with_orphans(events, grace=0.0, clock=Clock(CREATED))
    events.cache = loop.cache
    await loop.cycle()
    assert sorted(name for name, _, _ in events.recorded) == ["waiting-0", "waiting-1"]
    await loop.cycle()
    assert {"late-1", "late-2"} <= {name for name, _, _ in events.recorded}


class HeldWriter(FakeWriter):
    """Holds every status write until `opened`, logging when each one is applied."""

    def __init__(self, cache: LiveCache, log: list[str]) -> None:
        super().__init__(cache)
        self.log = log
        self.in_flight = 0
        self.most_in_flight = 0
        self.opened = asyncio.Event()

    async def write(self, key: GroupKey, desired: Mapping[str, Any], *, version: str) -> bool:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        await self.opened.wait()
        self.in_flight -= 1
        self.log.append(f"write {key.name}")
        return await super().write(key, desired, version=version)


class LoggedPods(FakePods):
    def __init__(self, cache: LiveCache, log: list[str]) -> None:
        super().__init__(cache)
        self.log = log

    async def release(self, release: Release, versions: Mapping[PodKey, str]) -> BatchOutcome:
        done = tuple(released_pods(release))
        self.log.extend(f"release {key.name}" for key in done)
        self.versions.update((key, versions[key]) for key in done)
        return BatchOutcome(done, {})


async def test_gangs_are_admitted_together_each_with_its_plan_written_before_its_release() -> None:
    cache = LiveCache()
    log: list[str] = []
    for name in ("first", "second"):
        cache.nodes.upsert(node(f"node-{name}", cpu="4"))
        cache.pod_group_sink.upsert(pod_group(name, namespace="team"))
        cache.pods.upsert(pod(f"{name}-0", group=name, namespace="team"))
    writer = HeldWriter(cache, log)
    loop = loop_over(cache, writer=writer, pods=LoggedPods(cache, log))
    admitting = asyncio.create_task(loop.cycle())
    for _ in range(20):
        await asyncio.sleep(0)
    assert writer.most_in_flight == 2
    assert log == []
    writer.opened.set()
    result = await admitting
    assert {admission.group.name for admission in result.admissions} == {"first", "second"}
    for name in ("first", "second"):
        assert log.index(f"write {name}") < log.index(f"release {name}-0")


def versioned(obj: dict[str, Any], version: str) -> dict[str, Any]:
    return {**obj, "metadata": {**obj["metadata"], "resourceVersion": version}}


async def test_a_release_is_conditional_on_the_version_the_cycle_decided_on() -> None:
    """A newer version of the pod that arrives while the plan is being written (a
    thawed leader's informers catching up, say) is not what the release is
    conditional on: the API server then refuses it rather than let it land."""
    cache = LiveCache()
    log: list[str] = []
    cache.nodes.upsert(node("n1", cpu="4"))
    cache.pod_group_sink.upsert(pod_group(GANG.name, namespace=GANG.namespace))
    member = pod("trainer-0", group=GANG.name, namespace=GANG.namespace)
    cache.pods.upsert(versioned(member, "10"))
    writer, pods = HeldWriter(cache, log), LoggedPods(cache, log)
    admitting = asyncio.create_task(loop_over(cache, writer=writer, pods=pods).cycle())
    for _ in range(20):
        await asyncio.sleep(0)
    cache.pods.upsert(versioned(member, "11"))  # seen while the plan is being written
    writer.opened.set()
    await admitting
    assert pods.versions == {PodKey(GANG.namespace, "trainer-0"): "10"}
    assert cache.version(PodKey(GANG.namespace, "trainer-0")) == "11"


async def test_a_status_that_cannot_be_written_stops_its_step_before_any_release() -> None:
    cache = LiveCache()
    cache.nodes.upsert(node("n1", cpu="4"))
    cache.pod_group_sink.upsert(pod_group(GANG.name, namespace=GANG.namespace))
    cache.pods.upsert(pod("trainer-0", group=GANG.name, namespace=GANG.namespace))
    log: list[str] = []
    writer = FakeWriter(cache)
    writer.refuse.add(GANG)
    loop = loop_over(cache, writer=writer, pods=LoggedPods(cache, log))
    result = await loop.cycle()
    assert [admission.group for admission in result.admissions] == [GANG]
    assert log == []  # not released: its plan is not written


class PokedTrigger(FakeTrigger):
    def __init__(self) -> None:
        self.pokes = 0

    def poke(self) -> None:
        self.pokes += 1


class RefusingPods(FakePods):
    """The API server refuses to release one pod, as an admission policy would."""

    def __init__(self, cache: LiveCache, refused: PodKey, message: str) -> None:
        super().__init__(cache)
        self.refused = refused
        self.message = message

    async def release(self, release: Release, versions: Mapping[PodKey, str]) -> BatchOutcome:
        others = tuple(p for p in release.placements if p[0] != self.refused.name)
        outcome = await super().release(replace(release, placements=others), versions)
        refused = self.refused in released_pods(release)
        failed = {self.refused: Failure(403, self.message)} if refused else {}
        return BatchOutcome(outcome.done, failed)


def two_pod_loop(
    *,
    still_leading: Callable[[], bool] = lambda: True,
    record: Callable[[dict[str, Any]], None] | None = None,
) -> tuple[SchedulingLoop, FakePods, PokedTrigger]:
    """A two-pod gang on a node it fits, whose second pod the API server will not release."""
    cache = LiveCache(record=record)
    cache.nodes.upsert(node("n1", cpu="4"))
    cache.pod_group_sink.upsert(pod_group(GANG.name, namespace=GANG.namespace))
    for index in range(2):
        cache.pods.upsert(pod(f"trainer-{index}", group=GANG.name, namespace=GANG.namespace))
    actions = RefusingPods(cache, PodKey(GANG.namespace, "trainer-1"), "denied: no")
    trigger = PokedTrigger()
    loop = loop_over(
        cache, pods=actions, trigger=trigger, record=record, still_leading=still_leading
    )
    return loop, actions, trigger


async def test_a_refused_release_is_handed_to_the_engine_which_rolls_the_gang_back() -> None:
    loop, pods, trigger = two_pod_loop()
    await loop.cycle()
    refused = PodKey(GANG.namespace, "trainer-1")
    failure = loop.cache.state.release_failures[refused]
    assert (failure.status, failure.message) == (403, "denied: no")
    assert trigger.pokes == 1
    result = await loop.cycle()
    [step] = [s for s in result.plan.steps if s.group == GANG]
    assert step.kind is StepKind.ROLL_BACK
    assert pods.evicted == [PodKey(GANG.namespace, "trainer-0")]
    stored = loop.cache.pod_groups.get(GANG)
    assert stored is not None
    message = stored["status"]["conditions"][0]["message"]
    assert 'the API server refused to release pod trainer-1: "denied: no"' in message


async def test_a_replica_that_cannot_prove_it_leads_carries_out_nothing() -> None:
    loop, pods, _ = two_pod_loop(still_leading=lambda: False)
    before = loop.cache.pod_groups.get(GANG)
    result = await loop.cycle()
    assert result.admissions  # decided, but neither written nor released
    assert before is not None and loop.cache.pod_groups.get(GANG) == before
    assert all(entry.record.gated for entry in loop.cache.state.pods.values())
    assert not loop.cache.state.release_failures and not pods.evicted


def loop_with_a_job_gang(writer_refuses: bool, *, owned_by_job: bool = True) -> SchedulingLoop:
    """A gang whose PodGroup a Job owns (unless told otherwise), on a node it fits."""
    cache = LiveCache()
    cache.nodes.upsert(node("n1", cpu="4"))
    owned = pod_group(GANG.name, namespace=GANG.namespace)
    if owned_by_job:
        owned["metadata"]["ownerReferences"] = [
            {"apiVersion": "batch/v1", "kind": "Job", "name": "trainer-job", "uid": "job-uid"}
        ]
    cache.pod_group_sink.upsert(owned)
    cache.pods.upsert(pod("trainer-0", group=GANG.name, namespace=GANG.namespace))
    writer = FakeWriter(cache)
    if writer_refuses:
        writer.refuse.add(GANG)
    return loop_over(cache, writer=writer)


async def test_the_plan_s_events_are_told_once_on_the_pod_group_once_written() -> None:
    loop = loop_with_a_job_gang(writer_refuses=False)
    events: FakeEvents = loop.events  # type: ignore[assignment]
    await loop.cycle()
    assert [(name, reason) for name, reason, _ in events.recorded] == [("trainer", "Scheduled")]
    await loop.cycle()  # nothing changed: nothing more to tell
    assert len(events.recorded) == 1


async def test_a_pod_group_no_job_owns_is_told_its_events_the_same_way() -> None:
    loop = loop_with_a_job_gang(writer_refuses=False, owned_by_job=False)
    await loop.cycle()
    recorded = loop.events.recorded  # type: ignore[attr-defined]
    assert [(name, reason) for name, reason, _ in recorded] == [("trainer", "Scheduled")]


async def test_a_transition_whose_status_was_not_written_is_not_told() -> None:
    loop = loop_with_a_job_gang(writer_refuses=True)
    await loop.cycle()
    assert loop.events.recorded == []  # type: ignore[attr-defined]


def loop_with_a_dropped_field() -> SchedulingLoop:
    """A Job gated for its native field, stored without it, and two of its pods."""
    cache = LiveCache()
    cache.nodes.upsert(node("n1"))
    cache.jobs.upsert(job("train", namespace="team"))
    for name in ("train-0", "train-1"):
        cache.pods.upsert(pod(name, group="train", namespace="team"))
    return loop_over(cache)


async def test_the_pods_of_a_job_whose_field_was_dropped_are_ungated_and_it_is_told_once() -> None:
    loop = loop_with_a_dropped_field()
    events: FakeEvents = loop.events  # type: ignore[assignment]
    await loop.cycle()
    members = loop.cache.state.members[GroupKey("team", "train")]
    assert not any(loop.cache.state.pods[PodKey("team", n)].record.gated for n in members)
    assert [(name, reason) for name, reason, _ in events.recorded] == [
        ("train", "SchedulingFieldDropped")
    ]
    loop.cache.pods.upsert(pod("train-2", group="train", namespace="team"))
    result = await loop.cycle()
    assert not result.plan.notices  # their PodGroup is not missing: it will never be
    assert not loop.cache.state.pods[PodKey("team", "train-2")].record.gated
    assert len(events.recorded) == 1


def test_only_jobs_gated_for_the_field_reach_the_engine_and_start_a_cycle() -> None:
    cache = LiveCache()
    assert not cache.jobs.upsert(job("plain", gated_for_field=False))
    assert cache.jobs.upsert(job("train"))
    assert not cache.jobs.upsert(job("train"))  # a status change: nothing new
    assert cache.jobs.upsert(job("train", labels={"scheduling.muster.dev/policy": "gang"}))
    assert cache.jobs.upsert(job("train"))
    assert cache.jobs.remove(job("train"))
    assert not cache.jobs.remove(job("plain", gated_for_field=False))
    assert cache.state.dropped_fields == {}
