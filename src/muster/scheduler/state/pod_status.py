"""What kube-scheduler and the kubelet say of a pod in its status: when it was bound,
whether kube-scheduler refused it, when it finished."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from muster.scheduler.objects.conditions import condition
from muster.scheduler.objects.fields import list_field, mapping_field
from muster.scheduler.objects.times import parse_time

UNSCHEDULABLE = "Unschedulable"  # core/v1 PodReasonUnschedulable


def bound_at(status: Mapping[str, Any]) -> float | None:
    """When the pod was bound: the API server sets its PodScheduled condition True, with
    that moment as its lastTransitionTime, when kube-scheduler binds it."""
    scheduled = condition(status, "PodScheduled")
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
    scheduled = condition(status, "PodScheduled") or {}
    if scheduled.get("status") != "False" or scheduled.get("reason") != UNSCHEDULABLE:
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
