"""What kube-scheduler and the kubelet say of a pod, read from its status."""

from __future__ import annotations

from muster.scheduler.state.pod_status import bound_at, finished_at, refusal_message

REFUSED = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "no"}
BOUND = {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}


def test_a_bind_is_told_by_a_true_pod_scheduled_condition() -> None:
    assert bound_at({"conditions": [BOUND]}) == 1767225600.0
    assert bound_at({"conditions": [REFUSED]}) is None
    assert bound_at({}) is None


def test_a_refusal_is_not_one_while_kube_scheduler_preempts_for_the_pod() -> None:
    assert refusal_message({"conditions": [REFUSED]}) == "no"
    assert refusal_message({"conditions": [{**REFUSED, "message": ""}]}) == "Unschedulable"
    assert refusal_message({"conditions": [REFUSED], "nominatedNodeName": "n1"}) is None
    assert refusal_message({"conditions": [BOUND]}) is None


def test_a_finished_pod_ended_when_its_last_container_did() -> None:
    def ended(at: str) -> dict[str, object]:
        return {"state": {"terminated": {"finishedAt": at}}}

    status = {"containerStatuses": [ended("2026-01-01T00:00:10Z"), ended("2026-01-01T00:00:20Z")]}
    assert finished_at(status) == 1767225620.0
    assert finished_at({}) is None
