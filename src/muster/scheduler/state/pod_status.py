"""What kube-scheduler and the kubelet say of a pod in its status: when it was bound,
whether kube-scheduler refused it, when it finished."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from muster.scheduler.objects.conditions import condition
from muster.scheduler.objects.fields import list_field, mapping_field
from muster.scheduler.objects.times import parse_time

UNSCHEDULABLE = "Unschedulable"  # core/v1 PodReasonUnschedulable


def _is_refusal(scheduled: Mapping[str, Any]) -> bool:
    """Whether a PodScheduled condition says kube-scheduler found no node for the pod."""
    return scheduled.get("status") == "False" and scheduled.get("reason") == UNSCHEDULABLE


def _pod_scheduled(status: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The pod's PodScheduled condition (kube-scheduler's word on it), if it has one."""
    return condition(status, "PodScheduled")


def bound_at(status: Mapping[str, Any]) -> float | None:
    """When the pod was bound: the API server sets its PodScheduled condition True, with
    that moment as its lastTransitionTime, when kube-scheduler binds it."""
    scheduled = _pod_scheduled(status)
    if scheduled is None or scheduled.get("status") != "True":
        return None
    return parse_time(scheduled.get("lastTransitionTime"))


def refusal_message(status: Mapping[str, Any]) -> str | None:
    """kube-scheduler's message when it refused the pod and is not preempting for it.

    A pod kube-scheduler nominated a node for is waiting for its own preemption
    victims to leave: it is Unschedulable for now, but not refused.
    """
    if status.get("nominatedNodeName"):
        return None
    scheduled = _pod_scheduled(status)
    if scheduled is None or not _is_refusal(scheduled):
        return None
    return str(scheduled.get("message") or UNSCHEDULABLE)


def finished_at(status: Mapping[str, Any]) -> float | None:
    """When the last container of a finished pod terminated."""
    times = []
    for raw in list_field(status.get("containerStatuses"), "status.containerStatuses"):
        state = mapping_field(mapping_field(raw, "containerStatuses[]").get("state"), "state")
        terminated = mapping_field(state.get("terminated"), "state.terminated")
        moment = parse_time(terminated.get("finishedAt"))
        if moment is not None:
            times.append(moment)
    return max(times, default=None)
