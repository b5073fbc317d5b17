"""What a PodGroup's status should say, computed from decisions and member pods.

Pure functions: the writer compares their answer with the status last seen and
writes only when it differs, so a 1,000-pod gang whose pods change one by one costs a
handful of writes (one per transition and per change of the counts), not one per pod
event. `lastTransitionTime` moves only when a condition's status flips, as the
Kubernetes API conventions ask.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from muster.api.constants import (
    CONDITION_DISRUPTION_TARGET,
    CONDITION_INITIALLY_SCHEDULED,
    CONDITION_SCHEDULED,
    GANG_GATE,
    REASON_PREEMPTION_BY_SCHEDULER,
)
from muster.api.podgroup import status_min_count

JsonObject = dict[str, Any]

UNSCHEDULABLE = "Unschedulable"  # core/v1 PodReasonUnschedulable
ESTIMATE_FIELDS = ("estimatedStartTime", "estimate")  # kept until the gang is admitted


@dataclass(frozen=True, slots=True)
class Scheduling:
    """The `PodGroupScheduled` outcome to record: admitted (True) or why not (False)."""

    admitted: bool
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class StatusChange:
    """Everything a transition may set; None leaves that part as it is."""

    scheduling: Scheduling | None = None
    plan: Mapping[str, str] | None = None
    clear_plan: bool = False
    disruption_target: str | None = None  # a message sets DisruptionTarget=True
    clear_disruption_target: bool = False
    refusals: Mapping[str, Any] | None = None  # replaces status.refusals
    estimate: Mapping[str, Any] | None = None  # estimatedStartTime and estimate, replaced


def is_gated(pod: JsonObject) -> bool:
    gates = (pod.get("spec") or {}).get("schedulingGates") or []
    return any(gate.get("name") == GANG_GATE for gate in gates)


def is_bound(pod: JsonObject) -> bool:
    return bool((pod.get("spec") or {}).get("nodeName"))


def is_terminal(pod: JsonObject) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def is_refusal(pod_scheduled: Mapping[str, Any]) -> bool:
    """Whether a PodScheduled condition says kube-scheduler found no node for the pod."""
    return pod_scheduled.get("status") == "False" and pod_scheduled.get("reason") == UNSCHEDULABLE


def refusal_message(pod: JsonObject) -> str | None:
    """kube-scheduler's message when it refused the pod and is not preempting for it.

    A pod kube-scheduler nominated a node for is waiting for its own preemption
    victims to leave: it is Unschedulable for now, but not refused.
    """
    status = pod.get("status") or {}
    if status.get("nominatedNodeName"):
        return None
    for item in status.get("conditions") or []:
        if item.get("type") == "PodScheduled" and is_refusal(item):
            return str(item.get("message") or UNSCHEDULABLE)
    return None


def pod_counts(members: Iterable[JsonObject]) -> dict[str, int]:
    """`status.pods`: how many member pods exist and in which state."""
    counts = {"total": 0, "gated": 0, "scheduled": 0, "running": 0, "succeeded": 0, "failed": 0}
    for pod in members:
        counts["total"] += 1
        phase = (pod.get("status") or {}).get("phase")
        if is_gated(pod):
            counts["gated"] += 1
        if is_bound(pod):
            counts["scheduled"] += 1
        if phase == "Running":
            counts["running"] += 1
        elif phase == "Succeeded":
            counts["succeeded"] += 1
        elif phase == "Failed":
            counts["failed"] += 1
    return counts


def condition(status: Mapping[str, Any], kind: str) -> JsonObject | None:
    for item in status.get("conditions") or []:
        if item.get("type") == kind:
            found: JsonObject = item
            return found
    return None


def is_admitted(pod_group: Mapping[str, Any]) -> bool:
    """A gang is admitted while its PodGroupScheduled condition is True."""
    scheduled = condition(pod_group.get("status") or {}, CONDITION_SCHEDULED)
    return scheduled is not None and scheduled.get("status") == "True"


def _with_condition(
    conditions: list[JsonObject],
    kind: str,
    *,
    status: bool,
    reason: str,
    message: str,
    now: str,
    generation: int,
) -> list[JsonObject]:
    value = "True" if status else "False"
    previous = next((c for c in conditions if c.get("type") == kind), None)
    changed = previous is None or previous.get("status") != value
    updated: JsonObject = {
        "type": kind,
        "status": value,
        "reason": reason,
        "message": message,
        "lastTransitionTime": (
            now if previous is None or changed else previous["lastTransitionTime"]
        ),
        "observedGeneration": generation,
    }
    return [c for c in conditions if c.get("type") != kind] + [updated]


def desired_status(
    pod_group: Mapping[str, Any],
    members: Iterable[JsonObject],
    change: StatusChange,
    *,
    now: str,
) -> JsonObject:
    """The status the PodGroup should have after `change`, counts refreshed."""
    current: Mapping[str, Any] = pod_group.get("status") or {}
    generation = int((pod_group.get("metadata") or {}).get("generation") or 0)
    conditions: list[JsonObject] = [dict(c) for c in current.get("conditions") or []]
    scheduling = change.scheduling
    if scheduling is not None:
        common = {"reason": scheduling.reason, "message": scheduling.message, "now": now}
        conditions = _with_condition(
            conditions,
            CONDITION_SCHEDULED,
            status=scheduling.admitted,
            generation=generation,
            **common,
        )
        initially = condition({"conditions": conditions}, CONDITION_INITIALLY_SCHEDULED)
        if initially is None or initially.get("status") != "True":
            conditions = _with_condition(
                conditions,
                CONDITION_INITIALLY_SCHEDULED,
                status=scheduling.admitted,
                generation=generation,
                **common,
            )
    if change.disruption_target is not None:
        conditions = _with_condition(
            conditions,
            CONDITION_DISRUPTION_TARGET,
            status=True,
            reason=REASON_PREEMPTION_BY_SCHEDULER,
            message=change.disruption_target,
            now=now,
            generation=generation,
        )
    elif change.clear_disruption_target:
        conditions = [c for c in conditions if c.get("type") != CONDITION_DISRUPTION_TARGET]
    status: JsonObject = {
        "conditions": sorted(conditions, key=_condition_order),
        "observedGeneration": generation,
        "minCount": status_min_count(pod_group.get("spec") or {}),
        "pods": pod_counts(members),
    }
    admitted_now = scheduling is not None and scheduling.admitted and not is_admitted(pod_group)
    admitted_at = now if admitted_now else current.get("admittedAt")
    if admitted_at:
        status["admittedAt"] = admitted_at
    if change.plan is not None:
        status["plan"] = dict(change.plan)
    elif not change.clear_plan and current.get("plan"):
        status["plan"] = dict(current["plan"])
    refusals = change.refusals if change.refusals is not None else current.get("refusals")
    if refusals:
        status["refusals"] = dict(refusals)
    if not is_admitted({"status": status}):
        estimate = change.estimate if change.estimate is not None else current
        status.update({key: estimate[key] for key in ESTIMATE_FIELDS if key in estimate})
    return status


_ORDER = (CONDITION_SCHEDULED, CONDITION_INITIALLY_SCHEDULED, CONDITION_DISRUPTION_TARGET)


def _condition_order(item: Mapping[str, Any]) -> tuple[int, str]:
    kind = str(item.get("type"))
    return (_ORDER.index(kind) if kind in _ORDER else len(_ORDER), kind)


def needs_write(current: Mapping[str, Any], desired: JsonObject) -> bool:
    """Whether the stored status differs from `desired` (the writer's coalescing test).

    Unchanged conditions keep their old timestamps (see `_with_condition`), so equal
    decisions compare equal and cost no write.
    """
    return dict(current) != desired


def admitted_message(placements: int, domain: tuple[str, str] | None) -> str:
    where = f" in {domain[0]}={domain[1]}" if domain else ""
    return f"{placements} pods placed{where}"
