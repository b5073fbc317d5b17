"""PodGroup status as the engine computes it: conditions, counts, plan, lifecycle, events."""

from __future__ import annotations

from typing import Any

from muster.api.constants import PAUSED_ANNOTATION
from muster.scheduler.lifecycle.status import (
    MEMBERSHIP_GRACE,
    PROGRESS_GRACE,
    Scheduling,
    StatusChange,
    deferred_progress,
    desired_status,
    last_moved,
    needs_write,
    pod_counts,
    progress_grace,
    transitions,
    with_estimate,
)
from muster.scheduler.memory.gang_memory import GangMemory
from muster.scheduler.memory.refusals import NodeRefusal, RefusalMemory
from muster.scheduler.placement.explain import waiting_message
from muster.scheduler.state.intake import GroupRecord, PodRecord, pod_from, pod_group_from

GATE = "scheduling.muster.dev/gang"
GANG = {"schedulingPolicy": {"gang": {"minCount": 1}}}
T1, T2, T3, T9 = (f"2026-01-01T00:00:0{second}Z" for second in (1, 2, 3, 9))


def pod(*, gated: bool = False, node: str | None = None, phase: str = "Pending") -> PodRecord:
    spec: dict[str, Any] = {}
    if gated:
        spec["schedulingGates"] = [{"name": GATE}]
    if node:
        spec["nodeName"] = node
    return pod_from({"metadata": {"name": "p"}, "spec": spec, "status": {"phase": phase}})


def group(
    status: dict[str, Any] | None = None,
    generation: int = 3,
    spec: dict[str, Any] | None = None,
) -> GroupRecord:
    return pod_group_from(
        {
            "metadata": {"name": "g", "generation": generation},
            "spec": spec or GANG,
            "status": status or {},
        }
    )


def conditions_by_type(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in status["conditions"]}


ADMITTED = Scheduling(admitted=True, reason="Scheduled", message="4 pods placed")
WAITING = Scheduling(admitted=False, reason="Unschedulable", message="short of GPUs")


def test_counts_each_state_of_member_pods() -> None:
    members = [
        pod(gated=True),
        pod(node="n1", phase="Running"),
        pod(node="n1", phase="Succeeded"),
        pod(node="n2", phase="Failed"),
        pod(),
    ]
    assert pod_counts(members) == {
        "total": 5,
        "gated": 1,
        "scheduled": 3,
        "running": 1,
        "succeeded": 1,
        "failed": 1,
    }


def test_a_pending_gang_mirrors_its_reason_into_initially_scheduled() -> None:
    status = desired_status(group(), [], StatusChange(scheduling=WAITING), now=T1)
    conditions = conditions_by_type(status)
    assert conditions["PodGroupScheduled"]["status"] == "False"
    assert conditions["PodGroupScheduled"]["reason"] == "Unschedulable"
    assert conditions["PodGroupInitiallyScheduled"]["reason"] == "Unschedulable"
    assert conditions["PodGroupScheduled"]["observedGeneration"] == 3
    assert status["observedGeneration"] == 3


def test_initially_scheduled_stays_true_after_the_gang_is_taken_down() -> None:
    admitted = desired_status(
        group(), [], StatusChange(scheduling=ADMITTED, plan={"p": "n"}), now=T1
    )
    preempted = Scheduling(admitted=False, reason="Preempted", message="by x")
    after = desired_status(
        group(admitted), [], StatusChange(scheduling=preempted, clear_plan=True), now=T2
    )
    conditions = conditions_by_type(after)
    assert conditions["PodGroupScheduled"]["reason"] == "Preempted"
    assert conditions["PodGroupInitiallyScheduled"]["status"] == "True"
    assert conditions["PodGroupInitiallyScheduled"]["lastTransitionTime"] == T1
    assert "plan" not in after


def test_transition_time_moves_only_when_the_status_flips() -> None:
    first = desired_status(group(), [], StatusChange(scheduling=WAITING), now=T1)
    reworded = Scheduling(admitted=False, reason="Unschedulable", message="other words")
    second = desired_status(group(first), [], StatusChange(scheduling=reworded), now=T2)
    assert conditions_by_type(second)["PodGroupScheduled"]["lastTransitionTime"] == T1
    third = desired_status(group(second), [], StatusChange(scheduling=ADMITTED), now=T3)
    assert conditions_by_type(third)["PodGroupScheduled"]["lastTransitionTime"] == T3


def test_the_plan_is_kept_unless_replaced_or_cleared() -> None:
    admitted = desired_status(
        group(), [], StatusChange(scheduling=ADMITTED, plan={"p": "n"}), now=T1
    )
    assert desired_status(group(admitted), [], StatusChange(), now=T2)["plan"] == {"p": "n"}
    grown = desired_status(group(admitted), [], StatusChange(plan={"p": "n", "q": "m"}), now=T2)
    assert grown["plan"] == {"p": "n", "q": "m"}


def test_disruption_target_is_set_and_cleared() -> None:
    marked = desired_status(group(), [], StatusChange(disruption_target="by x"), now=T1)
    target = conditions_by_type(marked)["DisruptionTarget"]
    assert (target["status"], target["reason"]) == ("True", "PreemptionByScheduler")
    cleared = desired_status(
        group(marked), [], StatusChange(scheduling=ADMITTED, clear_disruption_target=True), now=T2
    )
    assert "DisruptionTarget" not in conditions_by_type(cleared)


def test_the_same_decision_again_needs_no_write() -> None:
    members = [pod(gated=True), pod(gated=True)]
    first = desired_status(group(), members, StatusChange(scheduling=WAITING), now=T1)
    again = desired_status(group(first), members, StatusChange(scheduling=WAITING), now=T9)
    assert not needs_write(first, again)
    members.append(pod(gated=True))
    counted = desired_status(group(first), members, StatusChange(scheduling=WAITING), now=T9)
    assert needs_write(first, counted)


def test_min_count_and_admission_time_are_recorded_for_the_columns() -> None:
    four = {"schedulingPolicy": {"gang": {"minCount": 4}}}
    waiting = desired_status(group(spec=four), [], StatusChange(scheduling=WAITING), now=T1)
    assert waiting["minCount"] == 4
    assert "admittedAt" not in waiting
    admitted = desired_status(
        group(waiting, spec=four), [], StatusChange(scheduling=ADMITTED), now=T2
    )
    assert admitted["admittedAt"] == T2
    again = desired_status(
        group(admitted, spec=four), [], StatusChange(scheduling=ADMITTED), now=T3
    )
    assert again["admittedAt"] == T2
    basic = group(spec={"schedulingPolicy": {"basic": {}}})
    assert desired_status(basic, [], StatusChange(), now=T1)["minCount"] == "basic"


def test_the_refusal_memory_is_kept_unless_replaced() -> None:
    memory = RefusalMemory("s", 1, (NodeRefusal("n", "p", "m", 1),))
    written = {
        "nodeSet": "s",
        "rollbacks": 1,
        "nodes": [{"node": "n", "pod": "p", "message": "m", "count": 1}],
    }
    learnt = desired_status(group(), [], StatusChange(refusals=memory), now=T1)
    assert learnt["refusals"] == written
    kept = desired_status(group(learnt), [], StatusChange(clear_plan=True), now=T2)
    assert kept["refusals"] == written
    settled = RefusalMemory("s", 0, memory.nodes)
    replaced = desired_status(group(learnt), [], StatusChange(refusals=settled), now=T3)
    assert replaced["refusals"]["rollbacks"] == 0


def test_the_lifecycle_memory_is_written_and_read_back_alike() -> None:
    memory = GangMemory(rollbacks=2, backoff_until=60.5, release_started=None)
    status = desired_status(group(), [], StatusChange(memory=memory), now=T1)
    assert status["lifecycle"] == {"rollbacks": 2, "backoffUntil": "1970-01-01T00:01:01Z"}
    assert group(status).memory == GangMemory(rollbacks=2, backoff_until=61.0)
    cleared = desired_status(group(status), [], StatusChange(memory=GangMemory()), now=T2)
    assert "lifecycle" not in cleared


def test_each_condition_that_moves_is_one_event() -> None:
    waiting = desired_status(group(), [], StatusChange(scheduling=WAITING), now=T1)
    admitted = desired_status(group(waiting), [], StatusChange(scheduling=ADMITTED), now=T2)
    assert [(t.warning, t.reason) for t in transitions({}, waiting)] == [(True, "Unschedulable")]
    assert [(t.warning, t.reason) for t in transitions(waiting, admitted)] == [(False, "Scheduled")]
    assert transitions(admitted, admitted) == []


ESTIMATE = {"estimatedStartTime": "2026-01-01T01:00:00Z", "estimate": {"start": "~60m"}}


def test_the_status_keeps_the_estimate_until_the_gang_is_admitted() -> None:
    waiting = with_estimate(desired_status(group(), [], StatusChange(), now=T1), ESTIMATE)
    kept = desired_status(group(waiting), [], StatusChange(), now=T1)
    assert kept["estimate"] == {"start": "~60m"}
    admitted = desired_status(
        group(waiting), [], StatusChange(scheduling=Scheduling(True, "Scheduled", "")), now=T1
    )
    assert "estimate" not in admitted and "estimatedStartTime" not in admitted


def test_an_estimate_replaces_the_last_one_and_nothing_else() -> None:
    stored = {"plan": {"p": "n"}, **ESTIMATE}
    unknown = with_estimate(stored, {"estimate": {"start": "unknown"}})
    assert unknown == {"plan": {"p": "n"}, "estimate": {"start": "unknown"}}


def test_a_new_gang_waiting_for_its_pods_is_not_told_but_one_that_lost_them_is() -> None:
    waiting = {
        "conditions": [{"type": "PodGroupScheduled", "status": "False", "reason": "WaitingForPods"}]
    }
    admitted = {
        "conditions": [{"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled"}]
    }
    assert transitions({}, waiting) == []
    [told] = transitions(admitted, waiting)
    assert (told.warning, told.reason) == (True, "WaitingForPods")


def starting(gated: int, scheduled: int, running: int) -> dict[str, Any]:
    counts = {"total": 4, "gated": gated, "scheduled": scheduled, "running": running}
    return {"plan": {"p": "n"}, "pods": {**counts, "succeeded": 0, "failed": 0}}


def test_progress_alone_waits_while_a_fresh_gang_starts_and_is_written_once_it_runs() -> None:
    stored = starting(4, 0, 0)
    assert deferred_progress(stored, starting(2, 2, 0), since=100.0, now=101.0) == stored
    assert deferred_progress(stored, starting(0, 4, 4), since=100.0, now=102.0) is None


def test_progress_is_written_after_the_grace_or_with_anything_else() -> None:
    stored = starting(4, 0, 0)
    later = 100.0 + PROGRESS_GRACE
    assert deferred_progress(stored, starting(1, 3, 3), since=100.0, now=later) is None
    moved = {**starting(2, 2, 0), "plan": {"p": "other"}}
    assert deferred_progress(stored, moved, since=100.0, now=101.0) is None


def waiting(exist: int, reason: str = "WaitingForPods") -> dict[str, Any]:
    condition = {"type": "PodGroupScheduled", "status": "False", "reason": reason}
    return {
        "conditions": [{**condition, "message": f"{exist}/4 member pods exist"}],
        "pods": {"total": exist, "gated": exist, "scheduled": 0, "running": 0},
    }


def test_a_new_gang_s_pods_arriving_wait_but_a_new_reason_is_written() -> None:
    assert deferred_progress(waiting(1), waiting(3), since=100.0, now=101.0) == waiting(1)
    assert (
        deferred_progress(waiting(1), waiting(4, "Unschedulable"), since=100.0, now=101.0) is None
    )


def test_a_member_joining_or_leaving_is_written_a_moment_after_the_gang_last_moved() -> None:
    """Not after the long grace: the counts follow the pods while a gang forms."""
    settled = 100.0 + MEMBERSHIP_GRACE
    assert deferred_progress(waiting(1), waiting(3), since=100.0, now=settled) is None
    assert deferred_progress(waiting(3), waiting(2), since=100.0, now=settled) is None
    assert progress_grace(waiting(1), waiting(3)) == MEMBERSHIP_GRACE
    assert progress_grace(starting(4, 0, 0), starting(2, 2, 0)) == PROGRESS_GRACE


def test_a_gang_moves_when_a_member_is_created_bound_or_started() -> None:
    """The grace of its progress counts from then: a slow burst's gang keeps moving."""
    made = pod_from({"metadata": {"name": "a", "creationTimestamp": "2026-01-01T00:00:05Z"}})
    bound = pod_from(
        {
            "metadata": {"name": "b"},
            "spec": {"nodeName": "n"},
            "status": {
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "True",
                        "lastTransitionTime": "2026-01-01T00:00:20Z",
                    }
                ],
                "startTime": "2026-01-01T00:00:30Z",
            },
        }
    )
    epoch = made.created
    assert epoch is not None
    assert last_moved(epoch - 5, []) == epoch - 5
    assert last_moved(epoch - 5, [made]) == epoch
    assert (bound.bound, bound.started) == (epoch + 15, epoch + 25)
    assert last_moved(epoch - 5, [made, bound]) == epoch + 25
    assert last_moved(epoch + 60, [made, bound]) == epoch + 60


def test_a_gang_whose_job_is_paused_shows_as_paused() -> None:
    """Its MIN column, and its waiting message while no pod of it is left."""
    metadata = {"name": "g", "annotations": {PAUSED_ANNOTATION: "parallelism 0"}}
    paused = pod_group_from({"metadata": metadata, "spec": GANG})
    assert desired_status(paused, [], StatusChange(), now=T1)["minCount"] == "paused"
    assert desired_status(group(), [], StatusChange(), now=T1)["minCount"] == 1
    assert waiting_message(0, 1, paused=True) == "paused: its Job runs no pods (parallelism 0)"
    assert waiting_message(1, 2, paused=True) == "1/2 member pods exist; waiting for 1 more"
