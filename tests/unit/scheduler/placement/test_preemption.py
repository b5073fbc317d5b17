"""Preemption: the cheapest set of strictly lower-priority victims, or none at all."""

from __future__ import annotations

from muster.api.keys import GroupKey
from muster.scheduler import EngineConfig, schedule
from muster.scheduler.decisions.results import Admission, Reason
from tests.unit.scheduler.builders import Obj, cluster, gang, node, pod, pod_group

NOW = 1_798_761_600.0
CONFIG = EngineConfig(starvation_seconds=10**12)


def running(
    name: str, nodes: list[str], *, priority: int, gpu: str = "4", **group: object
) -> list[Obj]:
    """An admitted gang with one bound pod per listed node."""
    plan = {f"{name}-{index}": node_name for index, node_name in enumerate(nodes)}
    members = [
        pod(pod_name, group=name, gpu=gpu, node_name=node_name, priority=priority)
        for pod_name, node_name in plan.items()
    ]
    record = pod_group(
        name,
        min_count=len(nodes),
        priority=priority,
        admitted=True,
        plan=plan,
        **group,  # type: ignore[arg-type]
    )
    return [record, *members]


def victims_of(admission: Admission) -> list[str]:
    return [victim.pod.name for victim in admission.victims]


def test_a_whole_lower_priority_gang_makes_room() -> None:
    state = cluster(
        node("n1", gpu="4"),
        node("n2", gpu="4"),
        *running("low", ["n1", "n2"], priority=1),
        *gang("high", 1, gpu="4", priority=10),
    )
    (admission,) = schedule(state, now=NOW, config=CONFIG).admissions
    assert admission.group == GroupKey("default", "high")
    assert victims_of(admission) == ["low-0", "low-1"]
    assert admission.victims[0].group == GroupKey("default", "low")
    assert admission.victims[0].priority == 1


def test_a_never_gang_does_not_preempt() -> None:
    state = cluster(
        node("n1", gpu="4"),
        *running("low", ["n1"], priority=1),
        *gang("polite", 1, gpu="4", priority=10, preemption_policy="Never"),
    )
    result = schedule(state, now=NOW, config=CONFIG)
    assert result.admissions == ()
    assert result.verdicts[GroupKey("default", "polite")].reason is Reason.UNSCHEDULABLE


def test_equal_priority_is_never_preempted() -> None:
    state = cluster(
        node("n1", gpu="4"),
        *running("peer", ["n1"], priority=10),
        *gang("high", 1, gpu="4", priority=10),
    )
    assert schedule(state, now=NOW, config=CONFIG).admissions == ()


def test_no_victims_when_the_gang_would_still_not_fit() -> None:
    state = cluster(
        node("n1", gpu="4"),
        node("n2", gpu="4"),
        *running("low", ["n1"], priority=1),
        *running("peer", ["n2"], priority=10),
        *gang("huge", 2, gpu="4", priority=10),
    )
    result = schedule(state, now=NOW, config=CONFIG)
    assert result.admissions == ()
    assert result.verdicts[GroupKey("default", "huge")].message.endswith(
        "; preempting every lower-priority pod would not make room"
    )


def test_lower_priorities_are_taken_before_fewer_pods() -> None:
    state = cluster(
        node("n1", gpu="4"),
        node("n2", gpu="4"),
        pod("cheap-0", gpu="1", node_name="n1", priority=1),
        pod("cheap-1", gpu="1", node_name="n1", priority=1),
        pod("cheap-2", gpu="2", node_name="n1", priority=1),
        pod("dear", gpu="4", node_name="n2", priority=5),
        *gang("high", 1, gpu="4", priority=10),
    )
    (admission,) = schedule(state, now=NOW, config=CONFIG).admissions
    assert victims_of(admission) == ["cheap-0", "cheap-1", "cheap-2"]
    assert admission.placements == {"high-0": "n1"}
    assert all(victim.group is None for victim in admission.victims)


def test_fewer_victims_at_the_same_priority() -> None:
    state = cluster(
        node("n1", gpu="4"),
        node("n2", gpu="4"),
        pod("small-0", gpu="2", node_name="n1", priority=1),
        pod("small-1", gpu="2", node_name="n1", priority=1),
        pod("big", gpu="4", node_name="n2", priority=1),
        *gang("high", 1, gpu="4", priority=10),
    )
    (admission,) = schedule(state, now=NOW, config=CONFIG).admissions
    assert victims_of(admission) == ["big"]


def test_single_mode_gangs_lose_only_the_pods_needed() -> None:
    state = cluster(
        node("n1", gpu="4"),
        node("n2", gpu="4"),
        *running("elastic", ["n1", "n2"], priority=1, single=True),
        *gang("high", 1, gpu="4", priority=10),
    )
    (admission,) = schedule(state, now=NOW, config=CONFIG).admissions
    assert len(admission.victims) == 1


def test_a_victim_is_not_counted_twice_in_one_cycle() -> None:
    state = cluster(
        node("n1", gpu="4"),
        *running("low", ["n1"], priority=1),
        *gang("first", 1, gpu="4", priority=10, created="2026-01-01T00:00:00Z"),
        *gang("second", 1, gpu="4", priority=10, created="2026-01-02T00:00:00Z"),
    )
    result = schedule(state, now=NOW, config=CONFIG)
    assert [admission.group.name for admission in result.admissions] == ["first"]
    assert result.verdicts[GroupKey("default", "second")].reason is Reason.UNSCHEDULABLE


def test_preemption_respects_topology() -> None:
    state = cluster(
        node("a1", gpu="4", labels={"zone": "a"}),
        node("a2", gpu="4", labels={"zone": "a"}),
        node("b1", gpu="4", labels={"zone": "b"}),
        pod("lone", gpu="4", node_name="b1", priority=1),
        *running("low", ["a1", "a2"], priority=2),
        *gang("high", 2, gpu="4", priority=10, topology_key="zone"),
    )
    (admission,) = schedule(state, now=NOW, config=CONFIG).admissions
    assert admission.domain == ("zone", "a")
    assert victims_of(admission) == ["low-0", "low-1"]


def test_preemption_picks_the_domain_needing_fewer_victims() -> None:
    state = cluster(
        node("a1", gpu="4", labels={"zone": "a"}),
        node("a2", gpu="4", labels={"zone": "a"}),
        node("b1", gpu="4", labels={"zone": "b"}),
        node("b2", gpu="4", labels={"zone": "b"}),
        pod("a-busy-0", gpu="4", node_name="a1", priority=1),
        pod("a-busy-1", gpu="4", node_name="a2", priority=1),
        pod("b-busy", gpu="4", node_name="b2", priority=1),
        *gang("high", 2, gpu="4", priority=10, topology_key="zone"),
    )
    (admission,) = schedule(state, now=NOW, config=CONFIG).admissions
    assert admission.domain == ("zone", "b")
    assert victims_of(admission) == ["b-busy"]


def test_a_gang_outranking_its_pods_preempts_only_at_its_pods_priority() -> None:
    """Its PodGroup names 10, its pods were admitted at 1: it may not take the place of
    another team's gang of priority 1, as its pods could not."""
    state = cluster(
        node("n1", gpu="4"),
        *running("other-team", ["n1"], priority=1),
        pod_group("climber", priority=10),
        pod("climber-0", group="climber", gpu="4", priority=1),
    )
    result = schedule(state, now=NOW, config=CONFIG)
    assert result.admissions == ()
    assert result.verdicts[GroupKey("default", "climber")].reason is Reason.UNSCHEDULABLE


def test_a_gang_is_preempted_at_its_pods_priority_when_its_group_names_more() -> None:
    """Its PodGroup names 10, its pods 1: a gang of 5 preempts it, as it would its pods."""
    state = cluster(
        node("n1", gpu="4"),
        pod_group("shield", priority=10, admitted=True, plan={"shield-0": "n1"}),
        pod("shield-0", group="shield", gpu="4", node_name="n1", priority=1),
        *gang("next", 1, gpu="4", priority=5),
    )
    (admission,) = schedule(state, now=NOW, config=CONFIG).admissions
    assert admission.group == GroupKey("default", "next")
    assert victims_of(admission) == ["shield-0"]


def test_a_pod_of_kube_system_is_never_a_victim() -> None:
    """The operator may not evict there (the pod-rights policy): a lower pod of
    kube-system is passed over for one elsewhere, and alone it makes no room."""
    state = cluster(
        node("n1", gpu="4"),
        node("n2", gpu="4"),
        pod("agent", namespace="kube-system", gpu="4", node_name="n1", priority=0),
        pod("batch", gpu="4", node_name="n2", priority=1),
        *gang("high", 1, gpu="4", priority=10),
    )
    (admission,) = schedule(state, now=NOW, config=CONFIG).admissions
    assert victims_of(admission) == ["batch"]

    alone = cluster(
        node("n1", gpu="4"),
        pod("agent", namespace="kube-system", gpu="4", node_name="n1", priority=0),
        *gang("high", 1, gpu="4", priority=10),
    )
    result = schedule(alone, now=NOW, config=CONFIG)
    assert result.admissions == ()
    assert result.verdicts[GroupKey("default", "high")].reason is Reason.UNSCHEDULABLE
