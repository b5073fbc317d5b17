"""Whole cycles: admission, backfill, starvation, growth, reservations, verdicts."""

from __future__ import annotations

import pytest

from muster.api.keys import GroupKey
from muster.scheduler import EngineConfig, schedule
from muster.scheduler.cycle import board
from muster.scheduler.decisions.results import CycleResult, Reason
from tests.unit.scheduler.builders import cluster, gang, node, pod, pod_group, taint

NOW = 1_798_761_600.0  # 2027-01-01, long after the builders' creation time
PATIENT = EngineConfig(starvation_seconds=10**12)


def admitted(result: CycleResult) -> list[str]:
    return [admission.group.name for admission in result.admissions]


def key(name: str) -> GroupKey:
    return GroupKey("default", name)


def test_an_exact_fit_is_admitted_with_every_pod_placed() -> None:
    state = cluster(node("n1", gpu="4"), node("n2", gpu="4"), *gang("g", 4, gpu="2"))
    result = schedule(state, now=NOW, config=PATIENT)
    (admission,) = result.admissions
    assert sorted(admission.placements) == ["g-0", "g-1", "g-2", "g-3"]
    assert sorted(admission.placements.values()) == ["n1", "n1", "n2", "n2"]
    assert admission.victims == () and admission.domain is None


def test_one_gpu_short_explains_itself() -> None:
    state = cluster(
        node("n1", gpu="4"),
        node("n2", gpu="4"),
        pod("busy", cpu="0", gpu="1", node_name="n2"),
        node("t", gpu="8", taints=[taint("gpu", "reserved")]),
        *gang("g", 4, gpu="2"),
    )
    result = schedule(state, now=NOW, config=PATIENT)
    assert result.admissions == ()
    verdict = result.verdicts[key("g")]
    assert verdict.reason is Reason.UNSCHEDULABLE
    assert verdict.message == (
        "2/3 nodes can host a pod of the gang: 1 node(s) had untolerated taint {gpu: reserved}; "
        "the gang needs 4 pods, at most 3 fit at once; "
        "short in total: nvidia.com/gpu (needs 8, 7 free)"
    )
    assert verdict.explanation is not None
    assert verdict.explanation.best_fit == 3 and verdict.explanation.queue_position == 1


def test_two_gangs_that_cannot_both_fit_admit_exactly_one() -> None:
    state = cluster(
        node("n1", gpu="8"),
        *gang("a", 3, gpu="2", created="2026-01-01T00:00:00Z"),
        *gang("b", 3, gpu="2", created="2026-01-01T00:00:01Z"),
    )
    result = schedule(state, now=NOW, config=PATIENT)
    assert admitted(result) == ["a"]
    assert result.verdicts[key("b")].reason is Reason.UNSCHEDULABLE


def test_members_beyond_min_count_are_placed_when_they_fit() -> None:
    state = cluster(node("n1", cpu="5"), *gang("g", 8, min_count=4, cpu="1"))
    (admission,) = schedule(state, now=NOW, config=PATIENT).admissions
    assert len(admission.placements) == 5


def test_a_gang_with_too_few_pods_waits_and_holds_nothing() -> None:
    objects = gang("g", 2, min_count=4, cpu="1")
    state = cluster(node("n1", cpu="2"), *objects, *gang("small", 2, cpu="1"))
    result = schedule(state, now=NOW, config=EngineConfig(starvation_seconds=0))
    verdict = result.verdicts[key("g")]
    assert verdict.reason is Reason.WAITING_FOR_PODS
    assert verdict.message == "2/4 member pods exist; waiting for 2 more"
    assert admitted(result) == ["small"]


def test_launcher_and_workers_of_different_shapes() -> None:
    state = cluster(
        node("cpu", cpu="4"),
        node("gpu1", cpu="2", gpu="4"),
        node("gpu2", cpu="2", gpu="4"),
        pod_group("mpi", min_count=3),
        pod("launcher", group="mpi", cpu="3"),
        pod("worker-0", group="mpi", cpu="1", gpu="4"),
        pod("worker-1", group="mpi", cpu="1", gpu="4"),
    )
    (admission,) = schedule(state, now=NOW, config=PATIENT).admissions
    assert admission.placements == {"launcher": "cpu", "worker-0": "gpu1", "worker-1": "gpu2"}


def test_topology_picks_the_only_zone_that_fits() -> None:
    state = cluster(
        node("a1", gpu="4", labels={"zone": "a"}),
        node("a2", gpu="2", labels={"zone": "a"}),
        node("b1", gpu="4", labels={"zone": "b"}),
        node("b2", gpu="4", labels={"zone": "b"}),
        node("x", gpu="8"),
        *gang("g", 4, gpu="2", topology_key="zone"),
    )
    (admission,) = schedule(state, now=NOW, config=PATIENT).admissions
    assert admission.domain == ("zone", "b")
    assert set(admission.placements.values()) == {"b1", "b2"}


def test_topology_prefers_the_fullest_zone_that_fits() -> None:
    state = cluster(
        node("a1", gpu="8", labels={"zone": "a"}),
        node("b1", gpu="2", labels={"zone": "b"}),
        node("b2", gpu="2", labels={"zone": "b"}),
        *gang("g", 2, gpu="2", topology_key="zone"),
    )
    (admission,) = schedule(state, now=NOW, config=PATIENT).admissions
    assert admission.domain == ("zone", "b")


def test_no_single_zone_fits_although_the_cluster_would() -> None:
    state = cluster(
        node("a1", gpu="4", labels={"zone": "a"}),
        node("b1", gpu="4", labels={"zone": "b"}),
        node("b2", gpu="6", labels={"zone": "b"}),
        pod("busy", cpu="0", gpu="4", node_name="b2"),
        *gang("g", 5, gpu="2", topology_key="zone"),
    )
    result = schedule(state, now=NOW, config=PATIENT)
    assert result.admissions == ()
    assert result.verdicts[key("g")].message == (
        "3/3 nodes can host a pod of the gang; the gang needs 5 pods, "
        "at most 3 fit at once (zone=a: 2, zone=b: 3); "
        "short in total in any one zone domain: nvidia.com/gpu (needs 10, 6 free)"
    )


def test_higher_priority_goes_first_then_the_older_gang() -> None:
    state = cluster(
        node("n1", cpu="2"),
        *gang("old", 2, cpu="1", created="2026-01-01T00:00:00Z"),
        *gang("new", 2, cpu="1", created="2026-01-02T00:00:00Z"),
        *gang("vip", 2, cpu="1", priority=100, created="2026-01-03T00:00:00Z"),
    )
    result = schedule(state, now=NOW, config=PATIENT)
    assert admitted(result) == ["vip"]
    assert result.verdicts[key("old")].explanation.queue_position == 2  # type: ignore[union-attr]
    state = cluster(
        node("n1", cpu="2"),
        *gang("old", 2, cpu="1", created="2026-01-01T00:00:00Z"),
        *gang("new", 2, cpu="1", created="2026-01-02T00:00:00Z"),
    )
    assert admitted(schedule(state, now=NOW, config=PATIENT)) == ["old"]


def test_a_small_gang_backfills_past_a_blocked_large_one() -> None:
    state = cluster(
        node("n1", cpu="4"),
        *gang("large", 8, cpu="1", created="2026-01-01T00:00:00Z"),
        *gang("small", 2, cpu="1", created="2026-01-02T00:00:00Z"),
    )
    result = schedule(state, now=NOW, config=PATIENT)
    assert admitted(result) == ["small"]


def test_a_starving_gang_holds_nodes_against_backfill() -> None:
    objects = [
        node("n1", cpu="8"),
        node("n2", cpu="2"),
        pod("busy", cpu="4", node_name="n1"),
        *gang("large", 8, cpu="1", created="2026-01-01T00:00:00Z"),
        *gang("small", 2, cpu="1", created="2026-01-02T00:00:00Z"),
        *gang("tiny", 1, cpu="1", created="2026-01-03T00:00:00Z"),
    ]
    patient = schedule(cluster(*objects), now=NOW, config=PATIENT)
    assert admitted(patient) == ["small", "tiny"]
    result = schedule(cluster(*objects), now=NOW, config=EngineConfig(starvation_seconds=60))
    assert admitted(result) == ["small"]  # on n2: n1 is closed for the large gang
    assert set(result.admissions[0].placements.values()) == {"n2"}
    assert result.verdicts[key("large")].message.endswith(
        "; closing nodes for it after 31536000s in the queue"
        " (1 node(s) closed to the gangs behind it)"
    )
    assert result.verdicts[key("tiny")].message.startswith(
        "0/2 nodes can host a pod of the gang: 1 Insufficient cpu, "
        "1 node(s) closed for a gang waiting longer;"
    )


def taken_down(pod_group: dict[str, object], at: str) -> dict[str, object]:
    """The PodGroup as the operator leaves it after preempting or rolling it back."""
    pod_group["status"] = {
        "conditions": [
            {
                "type": "PodGroupScheduled",
                "status": "False",
                "reason": "Preempted",
                "lastTransitionTime": at,
            },
            {
                "type": "PodGroupInitiallyScheduled",
                "status": "True",
                "reason": "Scheduled",
                "lastTransitionTime": "2026-01-01T00:01:00Z",
            },
        ]
    }
    return pod_group


def test_a_gang_taken_down_waits_afresh_before_it_holds_nodes() -> None:
    large, *members = gang("large", 8, cpu="1", created="2026-01-01T00:00:00Z")
    objects = [
        node("n1", cpu="8"),
        pod("busy", cpu="4", node_name="n1"),
        taken_down(large, at="2026-12-31T23:59:30Z"),  # 30 s before NOW
        *members,
        *gang("small", 2, cpu="1", created="2026-01-02T00:00:00Z"),
    ]
    result = schedule(cluster(*objects), now=NOW, config=EngineConfig(starvation_seconds=60))
    assert admitted(result) == ["small"]  # backfills: the large gang waited only 30 s
    assert "holding" not in result.verdicts[key("large")].message
    later = schedule(cluster(*objects), now=NOW + 31, config=EngineConfig(starvation_seconds=60))
    assert admitted(later) == []
    assert "closing nodes for it after 61s" in later.verdicts[key("large")].message


def test_a_gang_whose_nodes_are_closed_for_older_gangs_is_told_so() -> None:
    objects = [
        node("n1", cpu="4"),
        pod("busy", cpu="3", node_name="n1"),
        *gang("older", 1, cpu="4", created="2026-01-01T00:00:00Z"),
        *gang("younger", 1, cpu="2", created="2026-01-02T00:00:00Z"),
    ]
    result = schedule(cluster(*objects), now=NOW, config=EngineConfig(starvation_seconds=60))
    assert "(1 node(s) closed" in result.verdicts[key("older")].message
    assert result.verdicts[key("younger")].message.endswith(
        "; not closing nodes for it after 31449600s in the queue:"
        " the nodes it needs are closed for gangs ahead"
    )


def test_a_gang_too_large_for_the_cluster_holds_nothing() -> None:
    objects = [
        node("n1", cpu="4"),
        *gang("huge", 8, cpu="1", created="2026-01-01T00:00:00Z"),
        *gang("small", 2, cpu="1", created="2026-01-02T00:00:00Z"),
    ]
    result = schedule(cluster(*objects), now=NOW, config=EngineConfig(starvation_seconds=60))
    assert admitted(result) == ["small"]
    message = result.verdicts[key("huge")].message
    assert message.startswith("it does not fit even on an empty cluster: ")
    assert "holding" not in message  # the same words however long it waits


def test_admitted_gangs_grow_as_pods_appear() -> None:
    objects = [
        node("n1", cpu="4"),
        pod_group("g", min_count=2, admitted=True, plan={"g-0": "n1", "g-1": "n1"}),
        pod("g-0", group="g", node_name="n1"),
        pod("g-1", group="g", node_name="n1"),
        pod("g-2", group="g"),
        pod("g-3", group="g", cpu="3"),
    ]
    result = schedule(cluster(*objects), now=NOW, config=PATIENT)
    assert result.admissions == () and result.verdicts == {}
    (growth,) = result.growths
    assert growth.group == key("g") and growth.placements == {"g-2": "n1"}


def test_admitted_topology_gangs_grow_inside_their_domain() -> None:
    objects = [
        node("a1", cpu="1", labels={"zone": "a"}),
        node("a2", cpu="1", labels={"zone": "a"}),
        node("b1", cpu="8", labels={"zone": "b"}),
        pod_group("g", min_count=1, topology_key="zone", admitted=True, plan={"g-0": "a1"}),
        pod("g-0", group="g", node_name="a1"),
        pod("g-1", group="g"),
        pod("g-2", group="g"),
    ]
    (growth,) = schedule(cluster(*objects), now=NOW, config=PATIENT).growths
    assert growth.placements == {"g-1": "a2"}


def test_reservations_are_never_double_booked() -> None:
    objects = [
        node("n1", cpu="4"),
        pod_group("first", min_count=2, admitted=True, plan={"first-0": "n1", "first-1": "n1"}),
        pod("first-0", group="first", cpu="2", gated=False),
        pod("first-1", group="first", cpu="2"),
        *gang("second", 1, cpu="1"),
    ]
    result = schedule(cluster(*objects), now=NOW, config=PATIENT)
    assert admitted(result) == []
    assert result.growths == ()


def test_basic_groups_are_left_to_kube_scheduler() -> None:
    state = cluster(node("n1"), pod_group("b", min_count=None), pod("b-0", group="b"))
    result = schedule(state, now=NOW, config=PATIENT)
    assert (result.admissions, result.growths, result.verdicts) == ((), (), {})
    # Its counts, and its gated member let go (`let_go`): no plan, no pin.
    assert [step.kind for step in result.plan.steps] == ["record", "let go"]


def test_the_state_is_not_changed_by_a_cycle() -> None:
    state = cluster(node("n1", cpu="4"), *gang("g", 2, cpu="1"))
    before = state.taken.copy()
    first = schedule(state, now=NOW, config=PATIENT)
    assert (state.taken == before).all()
    assert schedule(state, now=NOW, config=PATIENT) == first


def test_an_empty_cluster_explains_itself() -> None:
    result = schedule(cluster(*gang("g", 2)), now=NOW, config=PATIENT)
    assert result.verdicts[key("g")].message == (
        "it does not fit even on an empty cluster: "
        "0/0 nodes can host a pod of the gang; the gang needs 2 pods, at most 0 fit at once"
    )


def test_a_failure_on_one_gang_is_its_scheduler_error_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    state = cluster(
        node("n1", cpu="4"),
        *gang("broken", 1, cpu="1", topology_key="zone", created="2026-01-01T00:00:00Z"),
        *gang("fine", 1, cpu="1", created="2026-01-02T00:00:00Z"),
    )

    def fail(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(board, "fit_in_one", fail)
    result = schedule(state, now=NOW, config=PATIENT)
    assert admitted(result) == ["fine"]
    verdict = result.verdicts[key("broken")]
    assert verdict.reason is Reason.SCHEDULER_ERROR
    assert verdict.message == "internal error while deciding: RuntimeError: boom"


def test_a_topology_key_no_node_carries() -> None:
    state = cluster(node("n1"), *gang("g", 1, topology_key="rack"))
    result = schedule(state, now=NOW, config=EngineConfig(starvation_seconds=0))
    assert result.verdicts[key("g")].message.startswith(
        "it does not fit even on an empty cluster: no node carries rack; "
        "0/1 nodes can host a pod of the gang: 1 node(s) had no rack label; "
        "the gang needs 1 pods, at most 0 fit at once"
    )


def test_a_starving_topology_gang_closes_its_best_domain() -> None:
    objects = [
        node("a1", cpu="4", labels={"zone": "a"}),
        node("b1", cpu="2", labels={"zone": "b"}),
        pod("busy", cpu="2", node_name="a1"),
        *gang("large", 4, cpu="1", topology_key="zone", created="2026-01-01T00:00:00Z"),
        *gang("small", 2, cpu="1", topology_key="zone", created="2026-01-02T00:00:00Z"),
    ]
    (patient,) = schedule(cluster(*objects), now=NOW, config=PATIENT).admissions
    assert patient.domain == ("zone", "a")
    result = schedule(cluster(*objects), now=NOW, config=EngineConfig(starvation_seconds=60))
    (admission,) = result.admissions
    assert admission.domain == ("zone", "b")


def with_host_port(port: int, **spec: object) -> dict[str, object]:
    container = {"name": "main", "ports": [{"containerPort": port, "hostPort": port}]}
    return {"containers": [container], **spec}


def test_pods_with_host_ports_never_share_a_node() -> None:
    members = [pod(f"g-{i}", group="g", cpu="1", spec=with_host_port(8080)) for i in range(3)]
    state = cluster(node("n1"), node("n2"), pod_group("g", min_count=3), *members)
    result = schedule(state, now=NOW, config=PATIENT)
    assert result.verdicts[key("g")].message.endswith(
        "the gang needs 3 pods, at most 2 fit at once"
    )
    members_of_two = [
        pod(f"h-{i}", group="h", cpu="1", spec=with_host_port(8080)) for i in range(2)
    ]
    state = cluster(node("n1"), node("n2"), pod_group("h", min_count=2), *members_of_two)
    (admission,) = schedule(state, now=NOW, config=PATIENT).admissions
    assert sorted(admission.placements.values()) == ["n1", "n2"]


def test_a_host_port_in_use_closes_the_node() -> None:
    state = cluster(
        node("n1"),
        node("n2"),
        pod("web", node_name="n1", spec=with_host_port(8080)),
        pod_group("g", min_count=2),
        *[pod(f"g-{i}", group="g", spec=with_host_port(8080)) for i in range(2)],
    )
    verdict = schedule(state, now=NOW, config=PATIENT).verdicts[key("g")]
    assert verdict.message.startswith(
        "1/2 nodes can host a pod of the gang: "
        "1 node(s) didn't have free ports for the requested pod ports;"
    )


def test_host_ports_placed_this_cycle_count_for_later_gangs() -> None:
    state = cluster(
        node("n1"),
        node("n2"),
        pod_group("a", min_count=1, created="2026-01-01T00:00:00Z"),
        pod("a-0", group="a", spec=with_host_port(22, hostNetwork=True)),
        pod_group("b", min_count=2, created="2026-01-02T00:00:00Z"),
        *[pod(f"b-{i}", group="b", spec=with_host_port(22)) for i in range(2)],
    )
    result = schedule(state, now=NOW, config=PATIENT)
    assert admitted(result) == ["a"]


def test_fragmented_capacity_is_named() -> None:
    state = cluster(
        *(node(name, gpu="4") for name in ("n1", "n2", "n3")),
        *(
            pod(f"busy-{n}", cpu="0", gpu=used, node_name=n)
            for n, used in (("n1", "1"), ("n2", "1"), ("n3", "2"))
        ),
        *gang("g", 2, gpu="4"),
    )
    assert schedule(state, now=NOW, config=PATIENT).verdicts[key("g")].message == (
        "0/3 nodes can host a pod of the gang: 3 Insufficient nvidia.com/gpu; "
        "the gang needs 2 pods, at most 0 fit at once; "
        "enough is free in total, but split across nodes in too small pieces"
    )


def test_the_groups_found_quiet_are_handed_on_and_the_state_is_left_alone() -> None:
    running = pod_group("run", min_count=1)
    running["status"] = {
        "conditions": [{"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled"}],
        "plan": {"run-0": "n1"},
    }
    member = pod("run-0", group="run", node_name="n1", gated=False, phase="Running")
    state = cluster(node("n1"), running, member)
    written = schedule(state, now=NOW, config=PATIENT).plan.statuses[key("run")]
    state.apply("PodGroup", {**running, "status": written})
    changes = (state.changes, dict(state.changed))
    first = schedule(state, now=NOW, config=PATIENT)
    assert (state.changes, state.changed) == changes  # only read
    assert first.carried.quiet == {key("run")}
    assert first.carried.as_of == state.changes
    second = schedule(state, now=NOW, config=PATIENT, carried=first.carried)
    assert second.plan.steps == () and second.carried.quiet == first.carried.quiet
    state.apply("Pod", {**member, "status": {"phase": "Failed"}})
    third = schedule(state, now=NOW, config=PATIENT, carried=second.carried)
    assert [step.group for step in third.plan.steps] == [key("run")]


def test_a_quiet_group_deleted_and_made_again_is_looked_at_afresh() -> None:
    running = pod_group("run", min_count=1)
    running["status"] = {
        "conditions": [{"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled"}],
        "plan": {"run-0": "n1"},
    }
    state = cluster(node("n1"), running)
    state.apply("Pod", pod("run-0", group="run", node_name="n1", gated=False, phase="Running"))
    written = schedule(state, now=NOW, config=PATIENT).plan.statuses[key("run")]
    state.apply("PodGroup", {**running, "status": written})
    carried = schedule(state, now=NOW, config=PATIENT).carried
    assert carried.quiet == {key("run")}
    state.delete("PodGroup", "default", "run")
    state.apply("PodGroup", pod_group("run", min_count=1))  # made again, waiting
    result = schedule(state, now=NOW, config=PATIENT, carried=carried)
    assert key("run") not in result.carried.quiet
    assert [step.group for step in result.plan.steps] == [key("run")]
