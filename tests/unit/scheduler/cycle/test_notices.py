"""The warnings the engine plans: a pod whose PodGroup is missing, an object it cannot use."""

from __future__ import annotations

from muster.api.constants import BYPASSED_ANNOTATION
from muster.api.times import rfc3339
from muster.scheduler import ClusterState, EngineConfig, schedule
from muster.scheduler.cycle.notices import BYPASSED, IGNORED, NOT_FOUND, notices
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


def bound_at_creation(name: str, *, marked: bool = True, node: str | None = "node-a") -> Obj:
    made = pod(name, group="train", namespace="team", node_name=node)
    if marked:
        made["metadata"]["annotations"] = {BYPASSED_ANNOTATION: "node-a"}
    return made


def test_a_member_created_bound_to_its_node_is_told_once_that_it_bypassed_gang_admission() -> None:
    """The pod webhook marks it and writes nothing; the engine tells the pod itself."""
    state = ClusterState()
    state.apply("PodGroup", pod_group("train", namespace="team"))
    state.apply("Pod", bound_at_creation("restored-0"))
    state.apply("Pod", bound_at_creation("bound-by-the-scheduler", marked=False))
    told, carried = given(state, CREATED, NOTHING_CARRIED)
    assert told == [f"Pod restored-0 {BYPASSED}"]
    (notice,) = carried.told
    assert notice.message == (
        "created bound to node node-a (spec.nodeName): the pod bypassed gang admission and"
        " counts as a bound member of PodGroup train"
    )
    told, carried = given(state, CREATED + 60.0, carried)
    assert told == []
    state.delete("Pod", "team", "restored-0")
    assert given(state, CREATED + 120.0, carried)[1].told == frozenset()


def test_a_mark_on_a_pod_not_bound_is_no_bypass() -> None:
    """The mark alone, as anyone may write it on their pod, tells nothing."""
    state = ClusterState()
    state.apply("PodGroup", pod_group("train", namespace="team"))
    state.apply("Pod", bound_at_creation("pending-0", node=None))
    assert given(state, CREATED, NOTHING_CARRIED)[0] == []
