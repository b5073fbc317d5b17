"""A cycle's decisions turned into its plan: each gang's transition, written ahead.

The engine's placement part decides who is admitted, grows, waits or is preempted;
`follow` decides what admitted gangs need. Here those decisions become steps (see
`plan`) and every group's desired status, with the lifecycle memory each transition
changes written in the same status as the decision itself.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import replace
from typing import Any

from muster.api.constants import CONDITION_SCHEDULED, REASON_PREEMPTED, REASON_ROLLED_BACK
from muster.api.keys import GroupKey, PodKey
from muster.api.times import rfc3339
from muster.scheduler.config import EngineConfig
from muster.scheduler.decisions.plan import (
    Action,
    Evict,
    Plan,
    RecordEvent,
    Release,
    Step,
    StepKind,
    WriteStatus,
    on_pod_group,
)
from muster.scheduler.decisions.results import Admission, Reason, Verdict
from muster.scheduler.lifecycle.follow import Following, Rollback
from muster.scheduler.lifecycle.status import (
    Scheduling,
    StatusChange,
    admitted_message,
    deferred_progress,
    desired_status,
    last_moved,
    needs_write,
    preempted_message,
    progress_grace,
    transitions,
)
from muster.scheduler.memory.gang_memory import GangMemory, backoff_delay
from muster.scheduler.memory.refusals import after_rollback, after_success, exhausted
from muster.scheduler.objects.conditions import condition
from muster.scheduler.placement.explain import waiting_message
from muster.scheduler.rules.budgets import Violations
from muster.scheduler.state.intake import GroupRecord
from muster.scheduler.state.reads import member_records, pod_record
from muster.scheduler.state.state import ClusterState

TAKEN_DOWN = frozenset({REASON_PREEMPTED, REASON_ROLLED_BACK})


def released_members(state: ClusterState, key: GroupKey) -> tuple[PodKey, ...]:
    """Members that are released (ungated) and neither finished nor on their way out."""
    return tuple(
        record.key
        for record in member_records(state, key)
        if not (record.gated or record.terminal or record.terminating)
    )


def benched_by_lifecycle(state: ClusterState, group: GroupRecord, now: float) -> Verdict | None:
    """Why a gang that is not admitted may not be planned this cycle, or None.

    A gang in backoff takes no capacity and preempts nobody until its backoff ends; a
    gang taken down (rolled back, preempted) whose released pods are still there is
    first finished taking down. Either way its condition keeps what it says.
    """
    if group.admitted:
        return None
    taken_down = group.reason in TAKEN_DOWN and released_members(state, group.key)
    if not (group.memory.in_backoff(now) or taken_down):
        return None
    scheduled = condition(group.status, CONDITION_SCHEDULED) or {}
    reason = Reason(group.reason) if group.reason in TAKEN_DOWN else Reason.ROLLED_BACK
    return Verdict(reason, str(scheduled.get("message") or reason))


class Planner:
    """Collects the steps of one cycle and the desired status of each group."""

    def __init__(self, state: ClusterState, *, now: float, config: EngineConfig) -> None:
        self.state = state
        self.now = now
        self.stamp = rfc3339(now)
        self.config = config
        self.steps: list[Step] = []
        self.statuses: dict[GroupKey, dict[str, Any]] = {}
        self.wake: list[float] = []
        self.deferred: set[GroupKey] = set()  # progress kept back (see `deferred_progress`)

    def change(self, key: GroupKey, change: StatusChange) -> WriteStatus | None:
        """Apply a change to the group's desired status (on top of this cycle's earlier
        changes to it); the write that records it, or None for a group not known."""
        group = self.state.groups.get(key)
        if group is None:
            return None
        members = member_records(self.state, key)
        desired = desired_status(
            group, members, change, now=self.stamp, current=self.statuses.get(key)
        )
        since = group.admitted_at if group.admitted else group.created
        if since is not None and group.status:
            since = last_moved(since, members)
            deferred = deferred_progress(group.status, desired, since=since, now=self.now)
            if deferred is not None:
                self.wake.append(since + progress_grace(group.status, desired))
                desired = deferred
                self.deferred.add(key)
        self.statuses[key] = desired
        return WriteStatus(key)

    def _step(self, key: GroupKey, kind: StepKind, actions: Iterable[Action | None]) -> None:
        kept = tuple(action for action in actions if action is not None)
        self.steps.append(Step(key, kind, kept, exclusive=kind is StepKind.PREEMPT))

    # ---- admissions ----------------------------------------------------------------

    def admit(self, admission: Admission) -> None:
        key = admission.group
        group = self.state.groups[key]
        victims = tuple(sorted(victim.pod for victim in admission.victims))
        actions: list[Action | None] = []
        against = _against_budgets(admission.violations)
        if victims:
            notice = preempted_message(key) + against
            for victim_group in sorted({v.group for v in admission.victims if v.group}):
                actions.append(self._disrupt(victim_group, victims, notice))
        lifecycle = GangMemory(
            rollbacks=group.memory.rollbacks,
            release_started=None if victims else self.now,
            victims=victims,
        )
        placed = len(admission.placements)
        message = admitted_message(
            placed, admission.domain, passed_over=admission.passed_over, sliced=group.slicing
        )
        change = StatusChange(
            scheduling=Scheduling(
                admitted=True, reason=Reason.SCHEDULED, message=message + against
            ),
            plan=admission.placements,
            clear_disruption_target=True,
            memory=lifecycle,
        )
        actions.append(self.change(key, change))
        if victims:
            must_go = tuple(sorted(victim.pod for victim in admission.victims if victim.must_go))
            may_stay = tuple(pod for pod in victims if pod not in set(must_go))
            actions.append(Evict(must_go, force=True) if must_go else None)
            actions.append(Evict(may_stay, force=False) if may_stay else None)
            self.wake.append(self.now + self.config.victims_timeout)
            self._step(key, StepKind.PREEMPT, actions)
            return
        actions.append(_release(self.state, key, admission.placements.items()))
        self.wake.append(self.now + self.config.release_timeout)
        self._step(key, StepKind.ADMIT, actions)

    def _disrupt(
        self, key: GroupKey, victims: tuple[PodKey, ...], notice: str
    ) -> WriteStatus | None:
        """A victim's gang taken down whole (or, disrupted pod by pod, its plan without
        the victims); recorded before any eviction."""
        group = self.state.groups.get(key)
        if group is None:
            return None
        if group.admitted and group.falls_whole:
            memory = group.memory
            kept = GangMemory(rollbacks=memory.rollbacks, backoff_until=memory.backoff_until)
            preempted = Scheduling(False, Reason.PREEMPTED, notice)
            change = StatusChange(preempted, clear_plan=True, disruption_target=notice, memory=kept)
            return self.change(key, change)
        gone = {victim.name for victim in victims if victim.namespace == key.namespace}
        plan = {pod: node for pod, node in group.plan.items() if pod not in gone}
        return self.change(key, StatusChange(plan=plan)) if plan != group.plan else None

    # ---- admitted gangs --------------------------------------------------------------

    def follow(self, group: GroupRecord, following: Following, growth: Mapping[str, str]) -> None:
        key = group.key
        if following.rollback is not None:
            self.roll_back(group, following.rollback)
            return
        if following.vacated:
            self.vacate(group)
            return
        self.wake.extend(
            moment for moment in (following.deadline, following.retry_at) if moment is not None
        )
        if following.awaiting:
            actions: list[Action | None] = [self.change(key, StatusChange())]
            if following.evict:
                actions += [_blocked(key, following.evict), Evict(following.evict, force=False)]
            self._step(key, StepKind.FOLLOW, actions)
            return
        releasing = (*following.to_release, *sorted(growth.items()))
        memory = group.memory
        if growth or following.victims_gone:  # a release starts (see `follow`)
            memory = GangMemory(rollbacks=memory.rollbacks, release_started=self.now)
            self.wake.append(self.now + self.config.release_timeout)
        change = StatusChange(
            plan={**group.plan, **growth} if growth else None,
            memory=memory if memory != group.memory else None,
        )
        if following.complete and not releasing:
            settled = after_success(group.refusals)
            if memory.rollbacks or settled is not None:
                cleared = GangMemory(release_started=memory.release_started)
                change = StatusChange(memory=cleared, refusals=settled)
        write = self.change(key, change)
        kind = StepKind.GROW if growth else StepKind.FOLLOW
        self._step(key, kind, [write, _release(self.state, key, releasing) if releasing else None])

    def vacate(self, group: GroupRecord) -> None:
        """An admitted gang with no pod left is no longer admitted: it holds nothing
        and says it waits for its pods (a Job that Kueue suspended says so, instead of
        still saying where its pods went). Nothing to evict: its plan goes with it."""
        key = group.key
        waiting = waiting_message(0, self.state.quorum(group), paused=group.paused)
        scheduling = Scheduling(False, Reason.WAITING_FOR_PODS, waiting)
        kept = GangMemory(rollbacks=group.memory.rollbacks)
        write = self.change(key, StatusChange(scheduling, clear_plan=True, memory=kept))
        self._step(key, StepKind.RECORD, [write])

    def roll_back(self, group: GroupRecord, rollback: Rollback) -> None:
        """Written first (not admitted, plan cleared, backoff), then its pods evicted:
        their controller makes them again, gated. Through the Eviction API, like
        preemption, so a Job whose podFailurePolicy ignores disruptions recreates them
        at once; what an eviction cannot take is deleted."""
        key = group.key
        rollbacks = group.memory.rollbacks + 1
        until = self.now + backoff_delay(
            rollbacks,
            initial=self.config.rollback_backoff,
            maximum=self.config.rollback_backoff_max,
        )
        memory = group.refusals
        then = _backoff_message(until, rollbacks)
        if rollback.refused:
            node_set = self.state.node_table().digest()
            memory = after_rollback(memory, rollback.refused, node_set=node_set)
            if exhausted(memory, self.config.max_rollbacks, node_set=node_set):
                then = (
                    f"{memory.rollbacks} such rollbacks in a row: not planned again until a "
                    "node is added, removed or changed"
                )
        message = f"rolled back: {rollback.reason}; {then}"
        change = StatusChange(
            scheduling=Scheduling(False, Reason.ROLLED_BACK, message),
            clear_plan=True,
            refusals=memory if rollback.refused else None,
            memory=GangMemory(rollbacks=rollbacks, backoff_until=until),
        )
        write = self.change(key, change)
        self.wake.append(until)
        pods = released_members(self.state, key)
        self._step(key, StepKind.ROLL_BACK, [write, Evict(pods, force=True) if pods else None])

    # ---- gangs that wait, and everything else -----------------------------------------

    def take_down(self, group: GroupRecord) -> None:
        """Finish a rollback or preemption already written: evict its released pods."""
        pods = released_members(self.state, group.key)
        write = self.change(group.key, StatusChange())
        self._step(group.key, StepKind.TAKE_DOWN, [write, Evict(pods, force=True)])

    def verdict(self, group: GroupRecord, verdict: Verdict, *, kept: bool) -> None:
        """`kept`: the condition says what it says (a gang in backoff, or taken down and
        waiting for its pods to come back)."""
        if kept and group.memory.backoff_until is not None:
            self.wake.append(group.memory.backoff_until)
        scheduling = None if kept else Scheduling(False, verdict.reason, verdict.message)
        self._step(group.key, StepKind.RECORD, [self.change(group.key, StatusChange(scheduling))])

    def refresh(self, key: GroupKey) -> None:
        """Counts and minCount of a group nothing else was decided about."""
        if key not in self.statuses:
            self._step(key, StepKind.RECORD, [self.change(key, StatusChange())])

    def idle(self) -> set[GroupKey]:
        """Groups whose only step writes a status they already have, nothing deferred
        back: what this cycle asked of them needs no write at all."""
        steps: dict[GroupKey, list[Step]] = {}
        for step in self.steps:
            steps.setdefault(step.group, []).append(step)
        return {
            key
            for key, theirs in steps.items()
            if len(theirs) == 1
            and theirs[0].actions == (WriteStatus(key),)
            and key not in self.deferred
            and not needs_write(self.state.groups[key].status, self.statuses[key])
        }

    def plan(self, *, idle: AbstractSet[GroupKey] = frozenset()) -> Plan:
        """The plan, without the steps of the `idle` groups: each would only write a
        status the group already has, and carrying one out still costs the operator a
        read of the kept PodGroup (every waiting gang's, every cycle)."""
        steps = [step for step in self.steps if step.group not in idle]
        exclusive = [step for step in steps if step.exclusive]
        others = [step for step in steps if not step.exclusive]
        future = [moment for moment in self.wake if moment > self.now]
        return Plan(
            steps=self._told((*exclusive, *others)),
            statuses=self.statuses,
            versions={key: self.state.groups[key].resource_version for key in self.statuses},
            wake_at=min(future, default=None),
        )

    def _told(self, steps: Iterable[Step]) -> tuple[Step, ...]:
        """The steps with the events each group's transitions deserve, told right after
        the first write of its status."""
        told: set[GroupKey] = set()
        result = []
        for step in steps:
            actions: list[Action] = []
            for action in step.actions:
                actions.append(action)
                if isinstance(action, WriteStatus) and action.group not in told:
                    told.add(action.group)
                    actions.extend(self._events(action.group))
            result.append(replace(step, actions=tuple(actions)))
        return tuple(result)

    def _events(self, key: GroupKey) -> list[RecordEvent]:
        before = self.state.groups[key].status
        return [
            RecordEvent(on_pod_group(key), change.warning, change.reason, change.message)
            for change in transitions(before, self.statuses[key])
        ]


def _blocked(key: GroupKey, pods: tuple[PodKey, ...]) -> RecordEvent:
    """Victims asked to leave when the gang was admitted that are still there and not on
    their way out: their eviction was refused (a PodDisruptionBudget, most often)."""
    names = ", ".join(str(pod) for pod in pods[:5])
    return RecordEvent(
        on_pod_group(key),
        True,
        "PreemptionBlocked",
        f"{len(pods)} pod(s) preempted for it are still there and not leaving: {names}; "
        "evicting them again",
    )


def _release(state: ClusterState, key: GroupKey, placements: Iterable[tuple[str, str]]) -> Release:
    """The release of these pods, with the required node affinity terms of each as the
    engine read it: what its pin narrows (`Release.terms`)."""
    pinned = tuple(sorted(placements))
    terms = []
    for name, _ in pinned:
        record = pod_record(state, PodKey(key.namespace, name))
        rules = None if record is None else record.rules
        if rules is not None and rules.required_terms:
            terms.append((name, rules.required_terms))
    return Release(key, pinned, tuple(terms))


def _against_budgets(violations: Violations) -> str:
    """What a preemption says when only victims a PodDisruptionBudget protects could
    make room (kube-scheduler preempts them all the same, as few as it can)."""
    if not violations:
        return ""
    budgets = ", ".join(violations.budgets)
    return (
        f"; against PodDisruptionBudget {budgets}: {len(violations.pods)} victim pod(s) beyond "
        "what it allows, as no other victims could make room"
    )


def _backoff_message(until: float, rollbacks: int) -> str:
    return f"in backoff until {rfc3339(math.ceil(until))} (rollback {rollbacks} in a row)"
