"""The PodGroup status a simulation writes, as the operator would record it.

The engine reads a gang's state from its PodGroup (`PodGroupScheduled` and
`status.plan`), so a simulated admission or preemption is written there, in the same
words the operator uses, and the next cycle sees it as it would in a cluster.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from muster.api.constants import (
    CONDITION_INITIALLY_SCHEDULED,
    CONDITION_SCHEDULED,
    REASON_PREEMPTED,
    REASON_SCHEDULED,
)

Manifest = dict[str, Any]


def admitted(pod_group: Mapping[str, Any], plan: Mapping[str, str], now: datetime) -> Manifest:
    """The PodGroup once its gang is admitted with `plan` (pod name -> node name)."""
    result = copy.deepcopy(dict(pod_group))
    status = result.setdefault("status", {})
    _set_condition(
        status, CONDITION_SCHEDULED, value="True", reason=REASON_SCHEDULED, message="", now=now
    )
    _set_condition(
        status,
        CONDITION_INITIALLY_SCHEDULED,
        value="True",
        reason=REASON_SCHEDULED,
        message="",
        now=now,
    )
    status["plan"] = dict(plan)
    status["admittedAt"] = _rfc3339(now)
    return result


def planned(pod_group: Mapping[str, Any], placements: Mapping[str, str]) -> Manifest:
    """The admitted PodGroup with more of its pods placed (a gang growing past minCount)."""
    result = copy.deepcopy(dict(pod_group))
    status = result.setdefault("status", {})
    status["plan"] = {**(status.get("plan") or {}), **placements}
    return result


def preempted(pod_group: Mapping[str, Any], message: str, now: datetime) -> Manifest:
    """The PodGroup of a gang taken down whole: back in the queue, its plan void."""
    result = copy.deepcopy(dict(pod_group))
    status = result.setdefault("status", {})
    _set_condition(
        status,
        CONDITION_SCHEDULED,
        value="False",
        reason=REASON_PREEMPTED,
        message=message,
        now=now,
    )
    status.pop("plan", None)
    return result


def unplanned(pod_group: Mapping[str, Any], pod_name: str) -> Manifest:
    """The PodGroup without one pod in its plan (a single pod of it was preempted)."""
    result = copy.deepcopy(dict(pod_group))
    plan = (result.get("status") or {}).get("plan")
    if plan is not None:
        plan.pop(pod_name, None)
    return result


def scheduled_condition(pod_group: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The `PodGroupScheduled` condition, if the PodGroup has one."""
    for condition in (pod_group.get("status") or {}).get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == CONDITION_SCHEDULED:
            return condition
    return None


def _set_condition(
    status: Manifest, kind: str, *, value: str, reason: str, message: str, now: datetime
) -> None:
    """Replace the condition of type `kind`; its transition time moves only on a change."""
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, Mapping)]
    previous = next((c for c in conditions if c.get("type") == kind), None)
    changed = previous is None or previous.get("status") != value
    transition = _rfc3339(now)
    if not changed and previous is not None:
        transition = previous.get("lastTransitionTime", transition)
    condition = {
        "type": kind,
        "status": value,
        "reason": reason,
        "message": message,
        "lastTransitionTime": transition,
    }
    status["conditions"] = [
        *(c for c in conditions if c.get("type") != kind),
        condition,
    ]


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
