"""Following an admitted gang's release: what is left, and when to roll it back."""

from __future__ import annotations

from typing import Any

from muster.operator.progress import ReleaseProgress, release_progress, rollback_reason
from muster.scheduler.refusals import Refused

GATE = "scheduling.muster.dev/gang"


def pod(*, gated: bool = False, node: str | None = None, deleting: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulingGates": [{"name": GATE}]} if gated else {}
    if node:
        spec["nodeName"] = node
    metadata = {"deletionTimestamp": "2026-01-01T00:00:00Z"} if deleting else {}
    return {"metadata": metadata, "spec": spec, "status": {"phase": "Pending"}}


def usable(*names: str) -> Any:
    return lambda node: node in names


def test_sorts_planned_pods_by_what_they_still_need() -> None:
    plan = {"a": "n1", "b": "n1", "c": "n2", "d": "n3", "gone": "n1"}
    members = {"a": pod(gated=True), "b": pod(), "c": pod(node="n2"), "d": pod(gated=True)}
    progress = release_progress(plan, members, usable("n1", "n2"))
    assert progress.to_release == (("a", "n1"),)
    assert progress.unbound == ("b",)
    assert progress.stranded == (("d", "n3"),)
    assert not progress.complete


def test_bound_finished_and_deleted_pods_need_nothing() -> None:
    plan = {"a": "n1", "b": "n1"}
    members = {"a": pod(node="n1"), "b": pod(deleting=True)}
    assert release_progress(plan, members, usable()).complete


def test_a_stranded_pod_rolls_the_gang_back_at_once() -> None:
    progress = ReleaseProgress(to_release=(), unbound=(), stranded=(("d", "n3"),))
    reason = rollback_reason(progress, overdue=False, timeout=60)
    assert reason is not None and "d (node n3)" in reason.reason


def test_an_unbound_pod_rolls_back_only_when_overdue() -> None:
    progress = ReleaseProgress(to_release=(), unbound=("b",), stranded=())
    assert rollback_reason(progress, overdue=False, timeout=60) is None
    reason = rollback_reason(progress, overdue=True, timeout=60)
    assert reason is not None and "not bound within 60s" in reason.reason and "b" in reason.reason


def test_a_complete_release_is_never_rolled_back() -> None:
    assert rollback_reason(ReleaseProgress((), (), ()), overdue=True, timeout=60) is None


def refused(message: str = "0/3 nodes are available", **status: Any) -> dict[str, Any]:
    released = pod()
    released["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
    ]
    released["status"].update(status)
    return released


def test_a_released_pod_kube_scheduler_refused_is_noted_with_its_message() -> None:
    plan = {"a": "n1", "b": "n2", "c": "n2"}
    gated_condition = pod()
    gated_condition["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}
    ]
    members = {
        "a": refused("no volume"),
        "b": refused(nominatedNodeName="n2"),
        "c": gated_condition,
    }
    progress = release_progress(plan, members, usable("n1", "n2"))
    assert progress.unbound == ("a", "b", "c")
    assert progress.refused == (Refused("a", "n1", "no volume"),)


def test_a_refusal_rolls_the_gang_back_at_once_quoting_kube_scheduler() -> None:
    progress = ReleaseProgress(
        to_release=(),
        unbound=("a", "b"),
        stranded=(),
        refused=(Refused("a", "n1", "no volume"), Refused("b", "n1", "no volume")),
    )
    rollback = rollback_reason(progress, overdue=False, timeout=60)
    assert rollback is not None
    assert rollback.reason == (
        'kube-scheduler refused pod a on node n1: "no volume" (and 1 more pod(s))'
    )
    assert rollback.refused == progress.refused


def test_refusals_while_the_victims_leave_are_no_reason_to_roll_back() -> None:
    progress = ReleaseProgress((), ("a",), (), (Refused("a", "n1", "Insufficient cpu"),))
    assert rollback_reason(progress, overdue=False, timeout=60, waiting=True) is None
    overdue = rollback_reason(progress, overdue=True, timeout=60, waiting=True)
    assert overdue is not None and not overdue.refused
