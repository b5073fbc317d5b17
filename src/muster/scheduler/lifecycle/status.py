"""What a PodGroup's status should say: the one place that knows its shape.

Pure functions over the engine's records: the engine computes with them the status
each group should have after a cycle (in its plan), the operator writes that status
as it is, and `muster simulate` records it in its in-memory cluster, so both say the
same thing in the same words. The writer compares the answer with the status last
seen and writes only when it differs, so a 1,000-pod gang whose pods change one by
one costs a handful of writes, not one per pod event. `lastTransitionTime` moves only
when a condition's status flips, as the Kubernetes API conventions ask.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from muster.api.base import Condition
from muster.api.constants import (
    CONDITION_DISRUPTION_TARGET,
    CONDITION_INITIALLY_SCHEDULED,
    CONDITION_SCHEDULED,
    PAUSED,
    POLICY_BASIC,
    REASON_PREEMPTION_BY_SCHEDULER,
    REASON_SCHEDULED,
    REASON_WAITING_FOR_PODS,
)
from muster.api.keys import GroupKey
from muster.api.podgroup import PodCounts
from muster.api.times import parse_rfc3339, timestamp
from muster.api.wire import JsonObject
from muster.scheduler.memory.gang_memory import GangMemory
from muster.scheduler.memory.gang_memory import to_status as memory_status
from muster.scheduler.memory.refusals import RefusalMemory
from muster.scheduler.memory.refusals import to_status as refusals_status
from muster.scheduler.objects.conditions import admitted, condition, is_true
from muster.scheduler.objects.times import parse_time
from muster.scheduler.state.intake import GroupRecord, PodRecord

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
    refusals: RefusalMemory | None = None  # replaces status.refusals
    memory: GangMemory | None = None  # replaces status.lifecycle


def pod_counts(members: Iterable[PodRecord]) -> JsonObject:
    """`status.pods`: how many member pods exist and in which state."""
    total = gated = scheduled = 0
    phases: Counter[str] = Counter()
    for pod in members:
        total += 1
        gated += pod.gated
        scheduled += bool(pod.node_name)
        phases[pod.phase] += 1
    return PodCounts(
        total=total,
        gated=gated,
        scheduled=scheduled,
        running=phases["Running"],
        succeeded=phases["Succeeded"],
        failed=phases["Failed"],
    ).to_manifest()


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
    """The conditions with `kind` set, through the API's `Condition` model: its
    transition time kept unless its status flips (or the time kept is no time)."""
    value = "True" if status else "False"
    previous = condition({"conditions": conditions}, kind)
    changed = previous is None or previous.get("status") != value
    kept = None if previous is None or changed else parse_time(previous.get("lastTransitionTime"))
    updated = Condition(
        type=kind,
        status=value,
        reason=reason,
        message=message,
        last_transition_time=timestamp(parse_rfc3339(now) if kept is None else kept),
        observed_generation=generation,
    ).to_manifest()
    return [c for c in conditions if c.get("type") != kind] + [updated]


def desired_status(
    group: GroupRecord,
    members: Iterable[PodRecord],
    change: StatusChange,
    *,
    now: str,
    current: Mapping[str, Any] | None = None,
) -> JsonObject:
    """The status the PodGroup should have after `change`, counts refreshed.

    `current` is the status the change applies to (by default, the one the record was
    read with); a cycle that changes one group twice passes its first answer here.
    """
    current = group.status if current is None else current
    status: JsonObject = {
        "conditions": _conditions(current, change, now=now, generation=group.generation),
        "observedGeneration": group.generation,
        "minCount": _min_count(group),
        "pods": pod_counts(members),
    }
    scheduling = change.scheduling
    admitted_now = scheduling is not None and scheduling.admitted and not admitted(current)
    admitted_at = now if admitted_now else current.get("admittedAt")
    if admitted_at:
        status["admittedAt"] = admitted_at
    status.update(_memory(current, change))
    if not admitted(status):
        status.update({key: current[key] for key in ESTIMATE_FIELDS if key in current})
    return status


def _min_count(group: GroupRecord) -> int | str:
    """`status.minCount`, the MIN column: the gang's minCount, or what the group is
    instead (basic, or a gang whose Job is paused)."""
    if not group.gang:
        return POLICY_BASIC
    return PAUSED if group.paused else group.min_count


def _conditions(
    current: Mapping[str, Any], change: StatusChange, *, now: str, generation: int
) -> list[JsonObject]:
    """The conditions after `change`, in their fixed order."""
    conditions: list[JsonObject] = [
        dict(c) for c in current.get("conditions") or [] if isinstance(c, Mapping)
    ]
    scheduling = change.scheduling
    if scheduling is not None:
        kinds = [CONDITION_SCHEDULED]
        if not is_true({"conditions": conditions}, CONDITION_INITIALLY_SCHEDULED):
            kinds.append(CONDITION_INITIALLY_SCHEDULED)  # once true, it stays true
        for kind in kinds:
            conditions = _with_condition(
                conditions,
                kind,
                status=scheduling.admitted,
                reason=str(scheduling.reason),
                message=scheduling.message,
                now=now,
                generation=generation,
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
    return sorted(conditions, key=_condition_order)


def _memory(current: Mapping[str, Any], change: StatusChange) -> JsonObject:
    """The plan and the gang's lifecycle memory after `change` (each kept unless it
    changes; an empty one left out)."""
    memory: JsonObject = {}
    if change.plan is not None:
        memory["plan"] = dict(change.plan)
    elif not change.clear_plan and current.get("plan"):
        memory["plan"] = dict(current["plan"])
    refusals = (
        refusals_status(change.refusals) if change.refusals is not None else current.get("refusals")
    )
    if refusals:
        memory["refusals"] = dict(refusals)
    lifecycle = (
        memory_status(change.memory) if change.memory is not None else current.get("lifecycle")
    )
    if lifecycle and lifecycle != {"rollbacks": 0}:
        memory["lifecycle"] = dict(lifecycle)
    return memory


def with_estimate(current: Mapping[str, Any], estimate: Mapping[str, Any]) -> JsonObject:
    """The stored status with its start-time estimate replaced by `estimate` (some of
    `ESTIMATE_FIELDS`; an absent one is dropped).

    Estimates are written apart from the engine's decisions, on their own budget: the
    rest of the status is kept as it is, and `desired_status` keeps the estimate until
    the gang is admitted, so neither writer undoes the other.
    """
    status = {key: value for key, value in current.items() if key not in ESTIMATE_FIELDS}
    status.update({key: estimate[key] for key in ESTIMATE_FIELDS if key in estimate})
    return status


_ORDER = (CONDITION_SCHEDULED, CONDITION_INITIALLY_SCHEDULED, CONDITION_DISRUPTION_TARGET)


def _condition_order(item: Mapping[str, Any]) -> tuple[int, str]:
    kind = str(item.get("type"))
    return (_ORDER.index(kind) if kind in _ORDER else len(_ORDER), kind)


PROGRESS_GRACE = 30.0
"""Seconds after a gang last moved (its PodGroup appeared, it was admitted, one of its
members was created, bound or started) during which a status write for its progress
alone waits (see `deferred_progress`). Longer than a pod takes from its bind to its
start on a busy node (its image pulled, its containers started; under a loaded KWOK
here, 11 to 12 s), so that a gang binding then starting is not written in between."""


MEMBERSHIP_GRACE = 2.0
"""Seconds after a gang last moved during which a change of how many member pods it
has (one joined or left) waits to be written: long enough to gather the pods a Job
controller creates in one batch (their creation times are whole seconds) into one
write, short enough that `kubectl get podgroups` and the waiting message follow the
pods within a second or two, as `kubectl get pods` does."""


def progress_grace(stored: Mapping[str, Any], desired: Mapping[str, Any]) -> float:
    """How long a change of progress alone may wait (see `deferred_progress`): a
    member joining or leaving is news to whoever watches the gang form, and waits only
    `MEMBERSHIP_GRACE`; the steps of the members it has (bound, started) wait
    `PROGRESS_GRACE`."""
    joined_or_left = _member_count(stored) != _member_count(desired)
    return MEMBERSHIP_GRACE if joined_or_left else PROGRESS_GRACE


def _member_count(status: Mapping[str, Any]) -> object:
    counts = status.get("pods")
    return counts.get("total") if isinstance(counts, Mapping) else None


def last_moved(since: float, members: Iterable[PodRecord]) -> float:
    """When the gang last moved: `since` (its PodGroup's creation, or its admission),
    or the latest creation, bind or start of one of its members after it."""
    moments = (
        moment
        for record in members
        for moment in (record.created, record.bound, record.started)
        if moment is not None
    )
    return max([since, *moments])


def deferred_progress(
    stored: Mapping[str, Any], desired: Mapping[str, Any], *, since: float, now: float
) -> JsonObject | None:
    """The stored status, to keep instead of `desired`, or None to write `desired`.

    A gang's pods arrive one by one after its PodGroup appears ("3/8 member pods
    exist") and start one by one after its admission (gated, bound, running), and a
    status write for every step of every pod of a burst was a third of the API
    server's requests. So while the gang moves (for `progress_grace` seconds from
    `since`, the last time it moved: `last_moved`) a change of the pod counts and of
    the wording of an unchanged condition alone is not written, until every member
    has started (or finished): a gang that starts as it should writes its progress
    once, however slowly its pods come on a busy API server, and one that does not
    shows where it is stuck once it has stopped moving for that long. A member
    joining or leaving waits only a moment (`MEMBERSHIP_GRACE`), so the counts follow
    the pods while a gang forms. Anything else that changes is written at once,
    progress with it.
    """
    if now >= since + progress_grace(stored, desired):
        return None
    counts = desired.get("pods") or {}
    started = sum(counts.get(phase, 0) for phase in ("running", "succeeded", "failed"))
    if started == counts.get("total", 0):
        return None
    fields = {*desired, *stored} - {"pods", "conditions"}
    if any(desired.get(field) != stored.get(field) for field in fields):
        return None
    if _without_wording(desired) != _without_wording(stored):
        return None
    return dict(stored)


def _without_wording(status: Mapping[str, Any]) -> list[JsonObject]:
    return [
        {key: value for key, value in item.items() if key != "message"}
        for item in status.get("conditions") or []
        if isinstance(item, Mapping)
    ]


def needs_write(current: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    """Whether the stored status differs from `desired` (the writer's coalescing test).

    Unchanged conditions keep their old timestamps (see `_with_condition`), so equal
    decisions compare equal and cost no write.
    """
    return dict(current) != dict(desired)


def admitted_message(
    placed: int,
    domain: tuple[str, str] | None = None,
    *,
    live: int | None = None,
    passed_over: tuple[str, ...] = (),
    sliced: tuple[str, int] | None = None,
) -> str:
    """What an admitted gang is told: `4 pods placed in zone=a`; with `live`, out of how
    many of its pods (`4/6 pods placed`), as `muster simulate` reports a gang's end; its
    slices (`in slices of 8 per rack`); and why it is not in a narrower level it
    prefers (`(no rack domain has room ...)`)."""
    count = str(placed) if live is None else f"{placed}/{live}"
    where = f" in {domain[0]}={domain[1]}" if domain else ""
    slices = f" in slices of {sliced[1]} per {sliced[0]}" if sliced else ""
    why = f" ({'; '.join(passed_over)})" if passed_over else ""
    return f"{count} pods placed{where}{slices}{why}"


def preempted_message(preemptor: GroupKey) -> str:
    """What a gang taken down for a higher-priority one is told."""
    return f"preempted by PodGroup {preemptor} to make room for its gang"


@dataclass(frozen=True, slots=True)
class Transition:
    """A condition that changed status or reason: what the PodGroup's events tell."""

    warning: bool
    reason: str
    message: str


def transitions(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[Transition]:
    """The events a status change deserves, one per condition that moved.

    A new gang's first word, that it waits for its pods, is not told: every Job says
    it for the second its controller takes to create them, and a Warning for each
    Job of a burst would bury the ones that matter (the condition still says it).
    News that two conditions carry at once (a preemption turns PodGroupScheduled to
    Preempted and DisruptionTarget to True, with the same message) is told once, in
    the words of the first.
    """
    told: list[Transition] = []
    for kind in (CONDITION_SCHEDULED, CONDITION_DISRUPTION_TARGET):
        old, new = condition(before, kind), condition(after, kind)
        if new is None:
            continue
        if old is None and new.get("reason") == REASON_WAITING_FOR_PODS:
            continue
        if old is not None and all(old.get(key) == new.get(key) for key in ("status", "reason")):
            continue
        reason = str(new.get("reason"))
        message = str(new.get("message") or reason)
        if any(earlier.message == message for earlier in told):
            continue
        told.append(Transition(reason != REASON_SCHEDULED, reason, message))
    return told
