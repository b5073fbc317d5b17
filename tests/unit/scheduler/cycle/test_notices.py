"""The warnings the engine plans: a pod whose PodGroup is missing, an object it cannot use."""

from __future__ import annotations

from muster.api.times import rfc3339
from muster.scheduler import ClusterState, EngineConfig, schedule
from muster.scheduler.cycle.notices import IGNORED, NOT_FOUND, notices
from muster.scheduler.decisions.plan import Notice
from muster.scheduler.decisions.results import NOTHING_CARRIED, Carried
from tests.unit.scheduler.builders import Obj, job, pod, pod_group

CREATED = 1_000_000.0
CONFIG = EngineConfig(orphan_grace=10.0)


def orphan(name: str, *, group: str = "missing", created: float | None = CREATED) -> Obj:
    made = pod(name, group=group, namespace="team")
    if created is not None:
        made["metadata"]["creationTimestamp"] = rfc3339(created)
    return made


def broken(version: str) -> Obj:
    made = pod("broken", namespace="team", cpu="lots")
    made["metadata"]["resourceVersion"] = version
    return made


def given(state: ClusterState, now: float, carried: Carried) -> tuple[list[str], Carried]:
    """The objects told about in a cycle at `now`, and what it hands on."""
    result = schedule(state, now=now, config=CONFIG, carried=carried)
    told = [f"{n.kind} {n.name} {n.reason}" for n in result.plan.notices]
    return told, result.carried


def test_a_pod_is_told_once_its_grace_from_creation_ends_and_then_never_again() -> None:
    state = ClusterState()
    state.apply("Pod", orphan("a"))
    told, carried = given(state, CREATED + 9.0, NOTHING_CARRIED)
    assert told == []
    told, carried = given(state, CREATED + 10.0, carried)
    assert told == [f"Pod a {NOT_FOUND}"]
    told, carried = given(state, CREATED + 1000.0, carried)
    assert told == []
    (notice,) = carried.told
    assert notice.message == (
        "PodGroup missing does not exist in namespace team; the pod stays gated until it is created"
    )


def test_the_next_end_of_a_grace_is_when_the_engine_wants_its_next_cycle() -> None:
    state = ClusterState()
    state.apply("Pod", orphan("a", created=CREATED + 5.0))
    state.apply("Pod", orphan("b", created=CREATED + 3.0))
    result = schedule(state, now=CREATED, config=CONFIG)
    assert result.plan.wake_at == CREATED + 13.0


def test_a_pod_whose_podgroup_appeared_and_went_again_is_told_again() -> None:
    state = ClusterState()
    state.apply("Pod", orphan("a"))
    told, carried = given(state, CREATED + 10.0, NOTHING_CARRIED)
    state.apply("PodGroup", pod_group("missing", namespace="team"))
    _, carried = given(state, CREATED + 11.0, carried)
    assert not carried.told
    state.delete("PodGroup", "team", "missing")
    told, _ = given(state, CREATED + 12.0, carried)
    assert told == [f"Pod a {NOT_FOUND}"]


def test_pods_the_engine_does_not_wait_for_are_not_told() -> None:
    state = ClusterState()
    native = orphan("native")
    native["spec"]["schedulingGroup"] = {"podGroupName": "missing"}
    state.apply("Pod", native)
    state.apply("Job", job("dropped", namespace="team"))
    state.apply("Pod", orphan("let-go-0", group="dropped"))
    unusable = pod_group("unusable", namespace="team")
    unusable["spec"]["schedulingPolicy"] = {"gang": {"minCount": "many"}}
    state.apply("PodGroup", unusable)
    state.apply("Pod", orphan("member", group="unusable"))
    standing = notices(state, now=CREATED + 100.0, config=CONFIG, told=frozenset())[1]
    assert [(n.kind, n.name) for n in standing] == [("PodGroup", "unusable")]


def test_a_pod_without_a_creation_time_is_told_at_once() -> None:
    state = ClusterState()
    state.apply("Pod", orphan("a", created=None))
    told, _ = given(state, 0.0, NOTHING_CARRIED)
    assert told == [f"Pod a {NOT_FOUND}"]


def test_an_object_the_engine_cannot_use_is_told_once_per_version() -> None:
    state = ClusterState()
    state.apply("Pod", broken("1"))
    told, carried = given(state, CREATED, NOTHING_CARRIED)
    assert told == [f"Pod broken {IGNORED}"]
    (notice,) = carried.told
    assert notice == Notice(
        "Pod", "team", "broken", "1", IGNORED, notice.message
    ) and notice.message.startswith("Muster cannot use this Pod and ignores it: ")
    assert "lots" in notice.message
    state.apply("Pod", broken("1"))  # the same version again (a relist)
    told, carried = given(state, CREATED, carried)
    assert told == []
    state.apply("Pod", broken("2"))
    told, carried = given(state, CREATED, carried)
    assert told == [f"Pod broken {IGNORED}"]
    state.apply("Pod", pod("broken", namespace="team"))  # fixed
    told, carried = given(state, CREATED, carried)
    assert told == [] and not carried.told


def test_a_cycle_handed_nothing_tells_again_what_still_stands() -> None:
    state = ClusterState()
    state.apply("Pod", broken("1"))
    state.apply("Pod", orphan("a"))
    first, _ = given(state, CREATED + 10.0, NOTHING_CARRIED)
    again, _ = given(state, CREATED + 10.0, NOTHING_CARRIED)
    assert first == again == [f"Pod a {NOT_FOUND}", f"Pod broken {IGNORED}"]
