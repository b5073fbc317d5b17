"""The status an adopted PodGroup is given, read off the Muster PodGroup made for it.

Frameworks read their scheduler's PodGroup status: the training-operator creates no
pod of a Volcano gang before its phase is `Inqueue`, and dashboards show the phase
and the counts. So the status of the Muster PodGroup is told back in each API's own
words (docs/frameworks.md has the table):

- Volcano: `Pending` -> `Inqueue` (the gang waits for its pods, or is admitted) ->
  `Running` (running + succeeded reach minMember) -> `Completed`; never back to
  `Pending` once it has left it. Its conditions carry Muster's verdict.
- scheduler-plugins: `Pending` -> `Scheduled` (admitted) -> `Running` -> `Finished`.

Both get the counts `running`, `succeeded`, `failed`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from muster.api.adoption import VOLCANO, AdoptedApi, min_member
from muster.api.constants import (
    CONDITION_SCHEDULED,
    REASON_SCHEDULED,
    REASON_WAITING_FOR_PODS,
)

_PENDING = "Pending"
_ABSENT = {"running": 0, "succeeded": 0, "failed": 0}


def adopted_status(
    api: AdoptedApi, foreign: Mapping[str, Any], pod_group: Mapping[str, Any]
) -> dict[str, Any]:
    """The whole status the adopted PodGroup `foreign` should have, given the status of
    the Muster PodGroup made for it."""
    status = pod_group.get("status") or {}
    counts = status.get("pods") or {}
    condition = _scheduled_condition(status)
    admitted = condition is not None and condition.get("status") == "True"
    reason = None if condition is None else condition.get("reason")
    running, succeeded = int(counts.get("running", 0)), int(counts.get("succeeded", 0))
    size = min_member(foreign)
    waiting = int(counts.get("total", 0)) - running - succeeded - int(counts.get("failed", 0))
    finished = succeeded >= size and running == 0 and waiting == 0
    started = running + succeeded >= size
    desired: dict[str, Any] = {
        "running": running,
        "succeeded": succeeded,
        "failed": int(counts.get("failed", 0)),
    }
    if api is VOLCANO:
        before = (foreign.get("status") or {}).get("phase", _PENDING)
        queued = admitted or reason == REASON_WAITING_FOR_PODS or before != _PENDING
        phase = _first(
            (finished, "Completed"), (started, "Running"), (queued, "Inqueue"), default=_PENDING
        )
        desired["phase"] = phase
        if condition is not None:
            desired["conditions"] = [_volcano_condition(condition)]
    else:
        phase = _first(
            (finished, "Finished"), (started, "Running"), (admitted, "Scheduled"), default=_PENDING
        )
        desired["phase"] = phase
    return desired


def status_patch(
    api: AdoptedApi, foreign: Mapping[str, Any], pod_group: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The merge patch of `status` that brings `foreign` there; None when it is there.

    Only the fields Muster writes are compared, so fields another writer added are kept;
    a count left out is 0, as the frameworks' Go clients leave zeros out when they write
    the object back.
    """
    desired = adopted_status(api, foreign, pod_group)
    current = foreign.get("status") or {}
    if all(current.get(key, _ABSENT.get(key)) == value for key, value in desired.items()):
        return None
    return {"status": desired}


def _first(*choices: tuple[bool, str], default: str) -> str:
    return next((phase for chosen, phase in choices if chosen), default)


def _scheduled_condition(status: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for condition in status.get("conditions") or []:
        if condition.get("type") == CONDITION_SCHEDULED:
            return condition  # type: ignore[no-any-return]
    return None


def _volcano_condition(condition: Mapping[str, Any]) -> dict[str, Any]:
    """Muster's verdict as Volcano words it: `Scheduled` once admitted, else
    `Unschedulable` with Muster's reason and message."""
    admitted = condition.get("status") == "True"
    found = {
        "type": "Scheduled" if admitted else "Unschedulable",
        "status": "True",
        "reason": str(condition.get("reason", REASON_SCHEDULED)),
        "message": str(condition.get("message", "")),
    }
    if condition.get("lastTransitionTime"):
        found["lastTransitionTime"] = condition["lastTransitionTime"]
    return found
