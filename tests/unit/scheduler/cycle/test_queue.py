"""Queue order and member classification."""

from __future__ import annotations

from muster.api.keys import GroupKey
from muster.scheduler.cycle.queue import Queue, gangs_of
from tests.unit.scheduler.builders import cluster, gang, node, pod, pod_group, priority_class

NOW = 1_798_761_600.0


def test_priority_then_age_then_name() -> None:
    state = cluster(
        priority_class("high", 50),
        *gang("b-old", 1, created="2026-01-01T00:00:00Z"),
        *gang("a-old", 1, created="2026-01-01T00:00:00Z"),
        *gang("young", 1, created="2026-01-02T00:00:00Z"),
        pod_group("vip", priority_class="high", created="2026-01-03T00:00:00Z"),
        pod("vip-0", group="vip", priority_class="high"),
    )
    assert [g.key.name for g in gangs_of(state, NOW)] == ["vip", "a-old", "b-old", "young"]
    assert gangs_of(state, NOW)[0].priority == 50


def test_a_group_without_a_creation_time_queues_as_just_created() -> None:
    undated = pod_group("undated")
    del undated["metadata"]["creationTimestamp"]
    state = cluster(undated, pod("undated-0", group="undated"), *gang("dated", 1))
    order = gangs_of(state, NOW)
    assert [g.key.name for g in order] == ["dated", "undated"]
    assert order[1].queued_since == NOW


def test_members_are_held_pending_or_neither() -> None:
    state = cluster(
        node("n1"),
        pod_group("g", min_count=4, admitted=True, plan={"g-0": "n1", "g-1": "n1"}),
        pod("g-0", group="g", node_name="n1"),
        pod("g-1", group="g", gated=False),  # released, not bound yet: reserved
        pod("g-2", group="g"),  # gated: pending
        pod("g-3", group="g", gated=False),  # ungated outside the plan: neither
        pod("g-4", group="g", phase="Failed"),
    )
    (admitted,) = gangs_of(state, NOW)
    assert admitted.placed == 2
    assert [entry.record.key.name for entry in admitted.pending] == ["g-2"]
    assert (admitted.existing, admitted.missing) == (3, 2)


def test_admitted_gangs_with_nothing_pending_are_skipped() -> None:
    state = cluster(
        node("n1"),
        pod_group("done", admitted=True, plan={"done-0": "n1"}),
        pod("done-0", group="done", node_name="n1"),
        pod_group("basic", min_count=None),
        pod("basic-0", group="basic"),
    )
    assert gangs_of(state, NOW) == []


def test_a_gang_taken_down_keeps_its_place_but_waits_from_its_take_down() -> None:
    rolled_back = pod_group("rolled-back", created="2026-01-01T00:00:00Z")
    rolled_back["status"] = {
        "conditions": [
            {
                "type": "PodGroupScheduled",
                "status": "False",
                "reason": "RolledBack",
                "lastTransitionTime": "2026-12-31T23:00:00Z",
            },
            {"type": "PodGroupInitiallyScheduled", "status": "True", "reason": "Scheduled"},
        ]
    }
    never_admitted = pod_group("never", created="2026-01-02T00:00:00Z")
    never_admitted["status"] = {
        "conditions": [
            {
                "type": "PodGroupScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "lastTransitionTime": "2026-12-31T23:00:00Z",
            },
            {"type": "PodGroupInitiallyScheduled", "status": "False", "reason": "Unschedulable"},
        ]
    }
    state = cluster(
        rolled_back,
        pod("rolled-back-0", group="rolled-back"),
        never_admitted,
        pod("never-0", group="never"),
    )
    order = gangs_of(state, NOW)
    assert [g.key.name for g in order] == ["rolled-back", "never"]
    assert NOW - order[0].waiting_since == 3600
    assert order[1].waiting_since == order[1].queued_since  # its creation


def test_kept_across_cycles_it_is_the_queue_built_afresh() -> None:
    state = cluster(
        priority_class("high", 50),
        *gang("a", 1, created="2026-01-01T00:00:00Z"),
        *gang("b", 2, created="2026-01-02T00:00:00Z"),
    )
    kept = Queue(state, NOW)
    state.apply("PodGroup", pod_group("c", priority_class="high", created="2026-01-03T00:00:00Z"))
    state.apply("Pod", pod("c-0", group="c", priority_class="high"))
    state.delete("PodGroup", "default", "a")
    state.apply("Pod", pod("b-2", group="b"))
    kept = kept.next(state, NOW)
    assert kept.changed == frozenset(GroupKey("default", name) for name in "abc")
    fresh = [gang for gang in gangs_of(state, NOW) if not gang.record.admitted]
    assert [kept.gangs[key] for _, key in kept.waiting] == fresh
    assert [kept.position(gang.key) for gang in fresh] == [1, 2]
