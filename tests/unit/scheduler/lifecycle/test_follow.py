"""What an admitted gang needs, read from its plan and its pods: release, wait, await
victims, roll back or nothing at all."""

from __future__ import annotations

from typing import Any

import pytest

from muster.api.keys import GroupKey, PodKey
from muster.api.times import rfc3339
from muster.scheduler import ClusterState, EngineConfig
from muster.scheduler.lifecycle.follow import Following, follow
from tests.unit.scheduler.builders import Obj, cluster, node, pod, pod_group, taint
from tests.unit.scheduler.device_builders import claim

ADMITTED = 1_798_761_600.0
CONFIG = EngineConfig(release_timeout=60.0, victims_timeout=300.0)
KEY = GroupKey("default", "g")
PLAN = {"g-0": "n1", "g-1": "n2"}
NODES = (node("n1"), node("n2"))
OTHER_GATE = {"name": "example.com/quota"}


def admitted_group(*, victims: tuple[str, ...] = (), started: float | None = None) -> Obj:
    group = pod_group("g", min_count=2, admitted=True, plan=dict(PLAN))
    group["status"]["admittedAt"] = rfc3339(ADMITTED)
    lifecycle: dict[str, Any] = {"rollbacks": 0}
    if victims:
        lifecycle["victims"] = [f"default/{name}" for name in victims]
    if started is not None:
        lifecycle["releaseStarted"] = rfc3339(started)
    group["status"]["lifecycle"] = lifecycle
    return group


def member(name: str, *, bound: bool = False, released: bool = False, **extra: Any) -> Obj:
    """A member of `g`: gated, released (ungated, pinned) or bound to its planned node."""
    spec: Obj = {"nodeSelector": {"kubernetes.io/hostname": PLAN[name]}} if released else {}
    spec.update(extra.pop("spec", {}))
    return pod(
        name,
        group="g",
        node_name=PLAN[name] if bound else None,
        gated=not (bound or released),
        spec=spec,
        **extra,
    )


def refused(obj: Obj, message: str) -> Obj:
    obj["status"] = {
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
    return obj


def bound_at(obj: Obj, moment: float) -> Obj:
    obj["status"] = {
        "phase": "Running",
        "conditions": [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": rfc3339(moment)}
        ],
    }
    return obj


def following(state: ClusterState, *, now: float, release_deferred: bool = False) -> Following:
    return follow(
        state, state.groups[KEY], now=now, config=CONFIG, release_deferred=release_deferred
    )


def test_a_gang_with_no_pod_left_is_vacated() -> None:
    state = cluster(*NODES, admitted_group())
    assert following(state, now=ADMITTED) == Following(vacated=True)


def test_a_gang_bound_whole_is_complete_and_settled() -> None:
    state = cluster(*NODES, admitted_group(), member("g-0", bound=True), member("g-1", bound=True))
    result = following(state, now=ADMITTED + 1_000)
    assert result == Following(complete=True)
    assert result.settled


def test_gated_members_are_released_to_their_planned_nodes_against_a_deadline() -> None:
    state = cluster(*NODES, admitted_group(), member("g-0"), member("g-1", bound=True))
    result = following(state, now=ADMITTED + 5)
    assert result.to_release == (("g-0", "n1"),)
    assert result.deadline == ADMITTED + CONFIG.release_timeout
    assert not result.complete and not result.settled


def test_members_kept_back_by_a_raised_min_count_are_not_released_nor_late() -> None:
    state = cluster(*NODES, admitted_group(), member("g-0"), member("g-1", bound=True))
    result = following(state, now=ADMITTED + 10 * CONFIG.release_timeout, release_deferred=True)
    assert result.rollback is None
    assert result.to_release == ()
    assert not result.complete


def test_the_release_clock_counts_from_the_recorded_start_of_the_release() -> None:
    later = ADMITTED + 500
    state = cluster(*NODES, admitted_group(started=later), member("g-0"), member("g-1"))
    assert following(state, now=later + 1).deadline == later + CONFIG.release_timeout


@pytest.mark.parametrize(
    ("nodes", "reason"),
    [
        pytest.param((node("n2"),), "can no longer bind", id="node gone"),
        pytest.param((node("n1", unschedulable=True), node("n2")), "cordoned", id="cordoned"),
        pytest.param(
            (node("n1", taints=[taint("node.kubernetes.io/unreachable")]), node("n2")),
            "tainted against them",
            id="tainted since the plan",
        ),
    ],
)
def test_a_member_whose_planned_node_cannot_take_it_rolls_the_gang_back(
    nodes: tuple[Obj, ...], reason: str
) -> None:
    state = cluster(*nodes, admitted_group(), member("g-0"), member("g-1", bound=True))
    rollback = following(state, now=ADMITTED + 1).rollback
    assert rollback is not None
    assert reason in rollback.reason and "g-0 (node n1)" in rollback.reason
    assert rollback.refused == ()


def test_a_taint_the_member_tolerates_does_not_roll_the_gang_back() -> None:
    tolerant = member(
        "g-0", released=True, spec={"tolerations": [{"key": "maintenance", "operator": "Exists"}]}
    )
    tainted = node("n1", taints=[taint("maintenance"), taint("hint", effect="PreferNoSchedule")])
    state = cluster(tainted, node("n2"), admitted_group(), tolerant, member("g-1", bound=True))
    assert following(state, now=ADMITTED + 1).rollback is None


def test_kube_schedulers_refusal_rolls_the_gang_back_quoting_it() -> None:
    state = cluster(
        *NODES,
        admitted_group(),
        refused(member("g-0", released=True), "0/2 nodes are available"),
        refused(member("g-1", released=True), "0/2 nodes are available"),
    )
    rollback = following(state, now=ADMITTED + 1).rollback
    assert rollback is not None
    assert rollback.reason == (
        'kube-scheduler refused pod g-0 on node n1: "0/2 nodes are available" (and 1 more pod(s))'
    )
    assert [(item.pod, item.node) for item in rollback.refused] == [("g-0", "n1"), ("g-1", "n2")]


@pytest.mark.parametrize(
    ("seconds", "rolled_back"),
    [(CONFIG.release_timeout - 1, False), (CONFIG.release_timeout, True)],
)
def test_a_released_member_unbound_past_its_deadline_rolls_the_gang_back(
    seconds: float, rolled_back: bool
) -> None:
    state = cluster(
        *NODES, admitted_group(), member("g-0", released=True), member("g-1", bound=True)
    )
    result = following(state, now=ADMITTED + seconds)
    if rolled_back:
        assert result.rollback is not None
        assert result.rollback.reason == "1 pod(s) not bound within 60s of release: g-0"
    else:
        assert result.rollback is None
        assert result.deadline == ADMITTED + CONFIG.release_timeout


def test_a_queued_member_waits_from_kube_schedulers_last_bind() -> None:
    last_bind = ADMITTED + 50
    elsewhere = bound_at(pod("busy", node_name="n2"), last_bind)
    state = cluster(*NODES, admitted_group(), member("g-0", released=True), elsewhere)
    result = following(state, now=ADMITTED + CONFIG.release_timeout + 1)
    assert result.rollback is None
    assert result.deadline == last_bind + CONFIG.release_timeout


def test_a_member_held_by_another_gate_is_late_from_its_release_whatever_binds() -> None:
    elsewhere = bound_at(pod("busy", node_name="n2"), ADMITTED + 50)
    held = member("g-0", released=True, spec={"schedulingGates": [OTHER_GATE]})
    state = cluster(*NODES, admitted_group(), held, elsewhere)
    rollback = following(state, now=ADMITTED + CONFIG.release_timeout).rollback
    assert rollback is not None and rollback.reason.endswith("of release: g-0")


def test_victims_still_there_are_awaited_and_those_not_leaving_evicted_again() -> None:
    victims = ("v-0", "v-1")
    leaving = pod("v-1", node_name="n2")
    leaving["metadata"]["deletionTimestamp"] = rfc3339(ADMITTED)
    state = cluster(
        *NODES,
        admitted_group(victims=victims),
        member("g-0"),
        member("g-1"),
        pod("v-0", node_name="n1"),
        leaving,
    )
    result = following(state, now=ADMITTED + 10)
    assert result.awaiting == (PodKey("default", "v-0"), PodKey("default", "v-1"))
    assert result.evict == (PodKey("default", "v-0"),)
    assert result.deadline == ADMITTED + CONFIG.victims_timeout
    assert result.to_release == ()


def test_victims_still_there_past_their_timeout_roll_the_gang_back() -> None:
    state = cluster(
        *NODES, admitted_group(victims=("v-0",)), member("g-0"), pod("v-0", node_name="n1")
    )
    rollback = following(state, now=ADMITTED + CONFIG.victims_timeout).rollback
    assert rollback is not None
    assert rollback.reason == (
        "1 pod(s) preempted for it still there 300s after its admission: default/v-0"
    )


def test_once_its_victims_are_gone_the_release_starts_now() -> None:
    now = ADMITTED + 100
    state = cluster(*NODES, admitted_group(victims=("v-0",)), member("g-0"), member("g-1"))
    result = following(state, now=now)
    assert result.victims_gone
    assert result.to_release == (("g-0", "n1"), ("g-1", "n2"))
    assert result.deadline == now + CONFIG.release_timeout


def test_a_victim_gone_whose_claims_still_hold_devices_is_awaited() -> None:
    held = claim("v-0-gpu", allocated=[("n1", "gpu-0")])
    held["metadata"]["ownerReferences"] = [{"kind": "Pod", "name": "v-0", "controller": True}]
    state = cluster(*NODES, admitted_group(victims=("v-0",)), member("g-0"), member("g-1"), held)
    result = following(state, now=ADMITTED + 10)
    assert result.awaiting == (PodKey("default", "v-0"),)
    assert result.evict == ()
    state.delete("ResourceClaim", "default", "v-0-gpu")
    assert following(state, now=ADMITTED + 11).victims_gone
