"""The scheduling loop: decide on one snapshot, then carry the decisions out, in order.

One cycle at a time. Each cycle:

1. asks the engine (`schedule`) for a `CycleResult` on the cache's current state;
2. admits each admitted gang: marks its victims' groups `DisruptionTarget`, evicts the
   victims, records the gang's plan in its status (from then on its capacity is held),
   and only then releases its pods, each with one gate-removing, node-pinning patch
   (gangs that preempt one after another, the others several at a time);
3. releases the growth of already admitted gangs the same way;
4. writes every pending gang's verdict (reason and message) to its status;
5. follows every admitted gang: finishes releases left half-done (after a restart),
   rolls back gangs that can no longer bind, whose pods kube-scheduler refused (the
   refusal is remembered in the status, for the engine's next plans) or that missed
   the release deadline, and refreshes their pod counts;
6. refreshes the counts of every other group (basic groups, which the engine leaves
   to kube-scheduler), and tells, once, about member pods whose PodGroup has not
   existed for `orphan_grace` seconds, and about objects the engine cannot use (once
   per object version).

The plan is written before any pod is released, so a crash at any point leaves either
nothing released or a written plan that step 5 of the next operator completes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from muster.api.constants import (
    CONDITION_SCHEDULED,
    REASON_PREEMPTED,
    REASON_ROLLED_BACK,
    REASON_SCHEDULED,
    REASON_WAITING_FOR_PODS,
)
from muster.operator.backoff import Backoff
from muster.operator.cache import LiveCache, ObjectKey
from muster.operator.config import OperatorConfig
from muster.operator.estimates import Estimates
from muster.operator.events import NORMAL, WARNING, EventRecorder, reference
from muster.operator.metrics import Metrics
from muster.operator.pods import PodActions
from muster.operator.progress import (
    ReleaseProgress,
    Rollback,
    release_progress,
    rollback_reason,
)
from muster.operator.status import (
    Scheduling,
    StatusChange,
    admitted_message,
    condition,
    is_admitted,
    is_terminal,
)
from muster.operator.trigger import Trigger
from muster.operator.writer import StatusWriter
from muster.scheduler import EngineConfig, schedule
from muster.scheduler.avoidance import node_set_digest
from muster.scheduler.refusals import (
    RefusalMemory,
    Refused,
    after_rollback,
    after_success,
    exhausted,
    to_status,
)
from muster.scheduler.results import Admission, CycleResult, GroupKey, Growth, PodKey, Verdict

logger = logging.getLogger(__name__)

ADMISSION_CONCURRENCY = 8
# kube-scheduler retries a pod it found unschedulable at most 10 s (its default
# podMaxBackoffDuration) after the event that may have made room, such as the last of
# a preemptor's victims leaving: until then its old refusal still stands in the pod's
# status and is no refusal of the room now free.
VICTIMS_SETTLE = 15.0


class SchedulingLoop:
    """Runs cycles and applies their results through the API server."""

    def __init__(
        self,
        *,
        cache: LiveCache,
        writer: StatusWriter,
        pods: PodActions,
        events: EventRecorder,
        trigger: Trigger,
        metrics: Metrics,
        config: OperatorConfig,
        engine_config: EngineConfig,
    ) -> None:
        self.cache = cache
        self.writer = writer
        self.pods = pods
        self.events = events
        self.trigger = trigger
        self.metrics = metrics
        self.config = config
        self.engine_config = engine_config
        self.backoff = Backoff(initial=config.rollback_backoff, maximum=config.rollback_backoff_max)
        self.released_at: dict[GroupKey, float] = {}
        self.victims_of: dict[GroupKey, frozenset[PodKey]] = {}
        self.victims_left_at: dict[GroupKey, float] = {}
        self.orphaned_since: dict[PodKey, float] = {}
        self.warned_orphans: set[PodKey] = set()
        self.warned_rejections: set[tuple[ObjectKey, str]] = set()
        self.estimates = Estimates(
            horizon=config.estimate_horizon,
            interval=config.estimate_interval,
            config=engine_config,
        )

    async def run(self) -> None:
        """Cycle forever, whenever the trigger says so (until cancelled)."""
        while True:
            await self.trigger.wait()
            try:
                await self.cycle()
            except Exception:
                logger.exception("scheduling cycle failed; retrying on the next trigger")

    async def cycle(self) -> CycleResult:
        now = time.time()
        started = time.perf_counter()
        result = schedule(self.cache.state, now=now, config=self.engine_config)
        self.metrics.cycle_duration.observe(time.perf_counter() - started)
        acted = await self._admit_all(result.admissions, now)
        for growth in result.growths:
            await self._grow(growth, now)
            acted.add(growth.group)
        for key, verdict in result.verdicts.items():
            await self._record_verdict(key, verdict, now)
        self.metrics.pending_gangs.set(len(result.verdicts))
        await self._follow_admitted(now, skip=acted)
        await self._refresh_the_rest(now, skip=acted | set(result.verdicts))
        await self._write_estimates(now, skip=acted)
        await self._warn_orphans(now)
        await self._warn_rejections()
        return result

    async def _admit_all(self, admissions: Sequence[Admission], now: float) -> set[GroupKey]:
        """Admit the cycle's gangs; the groups admitted.

        The engine placed them all on one snapshot, on capacity none of the others
        takes, so gangs without victims are admitted `ADMISSION_CONCURRENCY` at a time:
        one at a time, a burst of admissions would wait on each gang's status write,
        events and releases in turn. Gangs that preempt go first, one after another, as
        their victims' groups may be shared and each of those gets its own status writes.
        """
        acted: set[GroupKey] = set()
        for admission in admissions:
            if admission.victims and await self._admit(admission, now):
                acted.add(admission.group)
        limit = asyncio.Semaphore(ADMISSION_CONCURRENCY)

        async def admit(admission: Admission) -> None:
            async with limit:
                if await self._admit(admission, now):
                    acted.add(admission.group)

        async with asyncio.TaskGroup() as admitting:
            for admission in admissions:
                if not admission.victims:
                    admitting.create_task(admit(admission))
        return acted

    async def _admit(self, admission: Admission, now: float) -> bool:
        key = admission.group
        until = self.backoff.blocked_until(key, now)
        if until is not None:
            self.trigger.wake_at(until)
            return False
        if not admission.placements and self._has_leaving_members(key):
            return False  # its bound pods are victims on their way out, not a running gang
        if admission.victims and not await self._preempt(admission, now):
            return False
        message = admitted_message(len(admission.placements), admission.domain)
        change = StatusChange(
            scheduling=Scheduling(admitted=True, reason=REASON_SCHEDULED, message=message),
            plan=admission.placements,
            clear_disruption_target=True,
        )
        if not await self.writer.write(key, change, now=now):
            return False
        self.metrics.admissions.inc()
        self._observe_time_to_admit(key, now)
        if admission.victims:
            self.victims_of[key] = frozenset(victim.pod for victim in admission.victims)
        await self._release(key, admission.placements, now)
        return True

    def _has_leaving_members(self, key: GroupKey) -> bool:
        members = self.cache.members.get(key, {}).values()
        return any((pod.get("metadata") or {}).get("deletionTimestamp") for pod in members)

    async def _preempt(self, admission: Admission, now: float) -> bool:
        """Evict the admission's victims; their groups are told first, and after."""
        key = admission.group
        groups = sorted({victim.group for victim in admission.victims if victim.group})
        notice = f"preempted by PodGroup {key} to make room for its gang"
        for group in groups:
            await self.writer.write(group, StatusChange(disruption_target=notice), now=now)
        outcome = await self.pods.evict(victim.pod for victim in admission.victims)
        self.metrics.preemptions.inc(len(outcome.done))
        for group in groups:
            change = StatusChange(
                scheduling=Scheduling(admitted=False, reason=REASON_PREEMPTED, message=notice),
                clear_plan=True,
            )
            await self.writer.write(group, change, now=now)
        if outcome.failed:
            pod_group = self.cache.pod_groups.get(key)
            if pod_group is not None:
                blocked = ", ".join(str(pod) for pod in sorted(outcome.failed))
                await self.events.record(
                    reference(pod_group),
                    WARNING,
                    "PreemptionBlocked",
                    f"could not evict {blocked}; retrying",
                )
            return False
        return True

    async def _grow(self, growth: Growth, now: float) -> None:
        pod_group = self.cache.pod_groups.get(growth.group)
        if pod_group is None:
            return
        plan = {**((pod_group.get("status") or {}).get("plan") or {}), **growth.placements}
        if await self.writer.write(growth.group, StatusChange(plan=plan), now=now):
            await self._release(growth.group, growth.placements, now)

    async def _release(self, key: GroupKey, placements: Mapping[str, str], now: float) -> None:
        self.released_at[key] = now
        outcome = await self.pods.release(
            (PodKey(key.namespace, pod), node) for pod, node in placements.items()
        )
        self.metrics.releases.inc(len(outcome.done))

    async def _record_verdict(self, key: GroupKey, verdict: Verdict, now: float) -> None:
        pod_group = self.cache.pod_groups.get(key)
        reason = None if pod_group is None else _reason(pod_group)
        if reason in (REASON_PREEMPTED, REASON_ROLLED_BACK) and (
            verdict.reason == REASON_WAITING_FOR_PODS
            or self.backoff.blocked_until(key, now) is not None
        ):
            # Taken down and coming back: say so until its pods are back or its backoff ends.
            await self.writer.write(key, StatusChange(), now=now)
            return
        scheduling = Scheduling(admitted=False, reason=verdict.reason, message=verdict.message)
        await self.writer.write(key, StatusChange(scheduling=scheduling), now=now)

    async def _follow_admitted(self, now: float, *, skip: set[GroupKey]) -> None:
        for key, pod_group in list(self.cache.pod_groups.items()):
            if key in skip or not is_admitted(pod_group):
                continue
            members = self.cache.members.get(key, {})
            plan: Mapping[str, str] = (pod_group.get("status") or {}).get("plan") or {}
            progress = release_progress(plan, members, self.cache.node_usable)
            self._wait_for_victims(key, progress, plan, now)
            deadline = self._release_deadline(key, pod_group)
            rollback = rollback_reason(
                progress,
                overdue=now >= deadline,
                timeout=self.config.release_timeout,
                waiting=self._making_room(key, now),
            )
            if rollback is not None:
                await self._roll_back(key, rollback, now)
                continue
            change = StatusChange()
            if progress.to_release:
                await self._release(key, dict(progress.to_release), now)
            elif progress.complete:
                self.backoff.succeeded(key)
                self.released_at.pop(key, None)
                self.victims_of.pop(key, None)
                self.victims_left_at.pop(key, None)
                settled = after_success(self._refusal_memory(key))
                if settled is not None:
                    change = StatusChange(refusals=to_status(settled))
            else:
                self.trigger.wake_at(deadline)
            await self.writer.write(key, change, now=now)

    async def _refresh_the_rest(self, now: float, *, skip: set[GroupKey]) -> None:
        """Counts and minCount of groups the engine had nothing to say about (basic ones)."""
        for key, pod_group in list(self.cache.pod_groups.items()):
            if key not in skip and not is_admitted(pod_group):
                await self.writer.write(key, StatusChange(), now=now)

    async def _write_estimates(self, now: float, *, skip: set[GroupKey]) -> None:
        """Start-time estimates of the waiting gangs, and an event when one moves."""
        for key, update in self.estimates.updates(self.cache.state, now).items():
            pod_group = self.cache.pod_groups.get(key)
            if key in skip or pod_group is None:
                continue
            await self.writer.write(key, StatusChange(estimate=update.fields), now=now)
            if update.moved is not None:
                await self.events.record(
                    reference(pod_group), NORMAL, "EstimateMoved", update.moved
                )

    def _wait_for_victims(
        self, key: GroupKey, progress: ReleaseProgress, plan: Mapping[str, str], now: float
    ) -> None:
        """Restart the gang's release clock until the pods preempted for it are gone.

        Its pods cannot bind while its victims still hold their nodes, and victims may
        take minutes to terminate: the release timeout measures the time the gang takes
        to bind once it can, so it counts from the cycle that finds its victims gone.
        Until then its plan keeps its capacity reserved for it. An operator restarted
        meanwhile takes the pods still leaving the nodes its unbound pods wait for.
        """
        victims = self.victims_of.get(key)
        if victims is None and key not in self.released_at and not progress.complete:
            victims = self._leaving_where_planned(key, progress, plan) or None
        if victims is None:
            return
        self.victims_of[key] = victims
        self.released_at[key] = now
        if not any(self._still_holding(pod) for pod in victims):
            del self.victims_of[key]
            self.victims_left_at[key] = now

    def _making_room(self, key: GroupKey, now: float) -> bool:
        """Whether the gang's victims are still leaving, or left too recently for
        kube-scheduler to have tried its pods again (`VICTIMS_SETTLE`)."""
        if key in self.victims_of:
            return True
        left = self.victims_left_at.get(key)
        if left is None:
            return False
        if now < left + VICTIMS_SETTLE:
            self.trigger.wake_at(left + VICTIMS_SETTLE)
            return True
        del self.victims_left_at[key]
        return False

    def _leaving_where_planned(
        self, key: GroupKey, progress: ReleaseProgress, plan: Mapping[str, str]
    ) -> frozenset[PodKey]:
        waiting = [*progress.unbound, *(pod for pod, _ in progress.to_release)]
        nodes = {plan[pod] for pod in waiting}
        members = self.cache.members.get(key, {})
        return frozenset(
            pod
            for node in nodes
            for pod in self.cache.leaving.get(node, ())
            if not (pod.namespace == key.namespace and pod.name in members)
        )

    def _still_holding(self, pod: PodKey) -> bool:
        entry = self.cache.state.pods.get(pod)
        return entry is not None and not entry.record.terminal

    def _release_deadline(self, key: GroupKey, pod_group: Mapping[str, Any]) -> float:
        """Release timeout after the latest release (or its victims' leaving); after a
        restart, after the admission."""
        started = self.released_at.get(key)
        if started is None:
            scheduled = condition(pod_group.get("status") or {}, CONDITION_SCHEDULED) or {}
            started = _parse_time(scheduled.get("lastTransitionTime")) or time.time()
            self.released_at[key] = started
        return started + self.config.release_timeout

    async def _roll_back(self, key: GroupKey, rollback: Rollback, now: float) -> None:
        """Take the gang's pods down (their controller recreates them gated) and requeue it.

        Through the Eviction API, like preemption: the pods get the DisruptionTarget
        condition, so a Job whose podFailurePolicy ignores disruptions recreates them
        at once, without counting failures or backing off. Pods an eviction cannot
        take (a PodDisruptionBudget) are deleted: a gang that cannot bind must not keep
        half of its pods.

        A rollback kube-scheduler caused is written down with the refused nodes (the
        engine leaves them out of the next plans, and stops planning the gang after
        `max_rollbacks` such rollbacks in a row); its message quotes kube-scheduler.
        """
        members = self.cache.members.get(key, {})
        doomed = [
            PodKey(key.namespace, name) for name, pod in members.items() if not is_terminal(pod)
        ]
        evicted = await self.pods.evict(doomed)
        outcome = await self.pods.delete(evicted.failed)
        if outcome.failed:
            return  # try again next cycle; the plan still holds the gang's place
        until = self.backoff.failed(key, now)
        memory = self._remembered(key, rollback.refused)
        limit = self.engine_config.max_rollbacks
        if memory is not None and exhausted(memory, limit, node_set=memory.node_set):
            then = (
                f"{memory.rollbacks} such rollbacks in a row: not planned again until a node "
                "is added, removed or changed"
            )
        else:
            then = f"retrying in {until - now:g}s"
        message = f"rolled back: {rollback.reason}; {then}"
        change = StatusChange(
            scheduling=Scheduling(admitted=False, reason=REASON_ROLLED_BACK, message=message),
            clear_plan=True,
            refusals=None if memory is None else to_status(memory),
        )
        await self.writer.write(key, change, now=now)
        self.released_at.pop(key, None)
        self.victims_of.pop(key, None)
        self.victims_left_at.pop(key, None)
        self.metrics.rollbacks.inc()
        self.trigger.wake_at(until)
        logger.info("PodGroup %s %s", key, message)

    def _refusal_memory(self, key: GroupKey) -> RefusalMemory | None:
        record = self.cache.state.groups.get(key)
        return None if record is None else record.refusals

    def _remembered(self, key: GroupKey, refused: tuple[Refused, ...]) -> RefusalMemory | None:
        """The refusal memory to write with a rollback; None when kube-scheduler refused
        nothing (a timeout, a node gone), which leaves the memory as it is."""
        if not refused:
            return None
        node_set = node_set_digest(self.cache.state.node_table())
        return after_rollback(self._refusal_memory(key), refused, node_set=node_set)

    def _observe_time_to_admit(self, key: GroupKey, now: float) -> None:
        created = [
            _parse_time((pod.get("metadata") or {}).get("creationTimestamp"))
            for pod in self.cache.members.get(key, {}).values()
        ]
        known = [moment for moment in created if moment is not None]
        if known:
            self.metrics.time_to_admit.observe(max(0.0, now - max(known)))

    async def _warn_orphans(self, now: float) -> None:
        """One event per member pod whose PodGroup has not existed for `orphan_grace`
        seconds (it stays gated).

        A Job's pods exist before the operator has created the Job's PodGroup, so
        warning at once would write an event for most pods of every new Job; the
        grace period keeps the event for a PodGroup that is truly missing. The
        members are copied before the first await: the informers change the cache
        while an event is being written.
        """
        orphaned_since: dict[PodKey, float] = {}
        for key, members in list(self.cache.members.items()):
            if key in self.cache.pod_groups:
                continue
            for name, pod in list(members.items()):
                if (pod.get("spec") or {}).get("schedulingGroup"):
                    continue  # the cluster's own gang scheduling has it
                pod_key = PodKey(key.namespace, name)
                since = self.orphaned_since.get(pod_key, now)
                orphaned_since[pod_key] = since
                if pod_key in self.warned_orphans:
                    continue
                due = since + self.config.orphan_grace
                if now < due:
                    self.trigger.wake_at(due)
                    continue
                self.warned_orphans.add(pod_key)
                await self.events.record(
                    reference(pod),
                    WARNING,
                    "PodGroupNotFound",
                    f"PodGroup {key.name} does not exist in namespace {key.namespace}; "
                    "the pod stays gated until it is created",
                )
        self.orphaned_since = orphaned_since
        self.warned_orphans &= orphaned_since.keys()

    async def _warn_rejections(self) -> None:
        """One event per version of an object the engine skips: it is invisible to
        scheduling (a pod holds no capacity, a node offers none, a gang never runs),
        and without the event only the operator's log would say why."""
        current: set[tuple[ObjectKey, str]] = set()
        for key, rejection in list(self.cache.rejections.items()):
            seen = (key, rejection.version)
            current.add(seen)
            if seen in self.warned_rejections:
                continue
            kind, namespace, name = key
            where = f"{namespace}/{name}" if namespace else name
            logger.warning("%s %s is ignored by the scheduler: %s", kind, where, rejection.reason)
            await self.events.record(
                rejection.involved,
                WARNING,
                "IgnoredByScheduler",
                f"Muster cannot use this {kind} and ignores it: {rejection.reason}",
            )
        self.warned_rejections = current


def _reason(pod_group: Mapping[str, Any]) -> str | None:
    scheduled = condition(pod_group.get("status") or {}, CONDITION_SCHEDULED)
    return None if scheduled is None else str(scheduled.get("reason"))


def _parse_time(value: object) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
