"""The scheduling loop: carry out the engine's plan, in order. It decides nothing.

One cycle at a time. Each cycle asks the engine (`schedule`) for its plan on the
cache's current state, then runs the plan's steps: preemptions one after another,
first (their victims' groups may be shared), then the other steps several at a time
(the engine planned them on capacity none of the others takes). Within a step the
actions run in order and the step stops at the first that fails, so nothing is
evicted or released whose decision is not written down: a crash at any point leaves
a recorded decision that the next cycle, of this operator or of the next, finishes
(see `muster.scheduler.decisions.plan`); the events of a step are the engine's too, told once
the write before them succeeded. Before each action (a batch of writes: a status,
the evictions, the releases) it asks `still_leading()`, so a replica that lost the
Lease stops at the start of a batch rather than part-way through it.

What the API server answers to a release is an observation, not a decision: it goes
into the engine's state (`ClusterState.observe_release`), and the next cycle decides
what a refused or failed release means for the gang (see
`muster.scheduler.memory.release_failures`). Everything the engine must remember is in the
PodGroups' status; the loop keeps only what it tells people about: member pods whose
PodGroup is missing, and objects the engine cannot use, each told once. With a trace
recorded (`--record-trace`), each cycle's decisions go into it before any of them is
carried out, so that a replay decides on exactly the state this cycle saw. Start-time
estimates are not decisions: their own writer (`estimates`) runs beside the loop,
told when a cycle ended. Each step carried out whole is logged at INFO in one line
(`decision_log`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from muster.client.kube import JsonObject
from muster.client.object_references import owner_references, reference
from muster.operator.config import OperatorConfig
from muster.operator.execution.decision_log import decision_line
from muster.operator.execution.estimates import EstimateWriter
from muster.operator.execution.events import (
    NORMAL,
    WARNING,
    EventRecorder,
)
from muster.operator.execution.pods import PodActions
from muster.operator.execution.writer import StatusWriter
from muster.operator.intake.cache import LiveCache
from muster.operator.intake.trigger import Trigger
from muster.operator.metrics import Metrics
from muster.scheduler import EngineConfig, schedule
from muster.scheduler.decisions.plan import (
    Evict,
    Plan,
    RecordEvent,
    Release,
    Step,
    StepKind,
    TellJob,
    Ungate,
    WriteStatus,
)
from muster.scheduler.decisions.results import CycleResult, GroupKey, PodKey
from muster.scheduler.memory.release_failures import ReleaseFailure
from muster.scheduler.state.kinds import ObjectKey
from muster.scheduler.state.trace import cycle_line

logger = logging.getLogger(__name__)

STEP_CONCURRENCY = 32


class _Execution:
    """One plan being carried out: which groups' statuses are written, which failed."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.written: set[GroupKey] = set()
        self.failed: set[GroupKey] = set()


class SchedulingLoop:
    """Runs cycles and carries out their plans through the API server."""

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
        estimates: EstimateWriter,
        still_leading: Callable[[], bool] = lambda: True,
        record: Callable[[JsonObject], None] | None = None,
    ) -> None:
        """`record`, when given, is told what each cycle decided, at once (a trace line)."""
        self.cache = cache
        self.still_leading = still_leading
        self.writer = writer
        self.pods = pods
        self.events = events
        self.trigger = trigger
        self.metrics = metrics
        self.config = config
        self.engine_config = engine_config
        self.estimates = estimates
        self.record = record
        self.orphaned_since: dict[PodKey, float] = {}
        self.warned_orphans: set[PodKey] = set()
        self.warned_rejections: set[tuple[ObjectKey, str]] = set()

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
        if self.record is not None:
            self.record(cycle_line(now, result))
        self.metrics.cycle_duration.observe(time.perf_counter() - started)
        self.metrics.pending_gangs.set(len(result.verdicts))
        await self.execute(result.plan)
        if result.plan.wake_at is not None:
            self.trigger.wake_at(result.plan.wake_at)
        await self._warn_orphans(now)
        await self._warn_rejections()
        self.estimates.cycle_ended()
        return result

    async def execute(self, plan: Plan) -> None:
        """Carry out the plan's steps: exclusive ones in order, then the rest together."""
        execution = _Execution(plan)
        for step in plan.steps:
            if step.exclusive:
                await self._carry_out(step, execution)
        limit = asyncio.Semaphore(STEP_CONCURRENCY)

        async def carry_out(step: Step) -> None:
            async with limit:
                await self._carry_out(step, execution)

        async with asyncio.TaskGroup() as running:
            for step in plan.steps:
                if not step.exclusive:
                    running.create_task(carry_out(step))

    async def _carry_out(self, step: Step, execution: _Execution) -> None:
        for action in step.actions:
            if not self.still_leading():
                return  # what is written is finished by whoever leads now
            if isinstance(action, WriteStatus):
                done = await self._write(action.group, execution)
            elif isinstance(action, Evict):
                done = await self._evict(step, action)
            elif isinstance(action, Release):
                done = await self._release(action)
            elif isinstance(action, Ungate):
                done = await self._ungate(action)
            elif isinstance(action, TellJob):
                done = await self._tell_job(action)
            else:
                done = await self._tell(action)
            if not done:
                return
        self._count(step)
        line = decision_line(step, execution.plan)
        if line is not None:
            logger.info("%s", line)

    async def _write(self, key: GroupKey, execution: _Execution) -> bool:
        if key in execution.written:
            return True
        if key in execution.failed:
            return False
        plan = execution.plan
        if await self.writer.write(key, plan.statuses[key], version=plan.versions[key]):
            execution.written.add(key)
            return True
        execution.failed.add(key)
        self.trigger.poke()  # recompute on what the group says now
        return False

    async def _evict(self, step: Step, action: Evict) -> bool:
        outcome = await self.pods.evict(action.pods)
        if step.kind is StepKind.PREEMPT:
            self.metrics.preemptions.inc(len(outcome.done))
        failed = sorted(outcome.failed)
        if action.force and outcome.refused:
            deleted = await self.pods.delete(sorted(outcome.refused))
            failed = sorted({*(outcome.failed.keys() - outcome.refused), *deleted.failed})
        return not failed  # the decision is written: the next cycle tries again

    async def _release(self, action: Release) -> bool:
        outcome = await self.pods.release(
            (PodKey(action.group.namespace, pod), node) for pod, node in action.placements
        )
        self.metrics.releases.inc(len(outcome.done))
        observed = time.time()
        for pod in outcome.done:
            self.cache.observe_release(pod, None)
        for pod, failure in outcome.failed.items():
            self.cache.observe_release(
                pod, ReleaseFailure(failure.status, failure.message, observed)
            )
        if outcome.failed:
            self.trigger.poke()  # the engine decides what the failures mean
        return True

    async def _ungate(self, action: Ungate) -> bool:
        """Whether any pod lost its gate: what the Job is told of. The others are
        ungated by a later cycle (the engine sees them still gated)."""
        outcome = await self.pods.ungate(action.pods)
        return bool(outcome.done)

    async def _tell_job(self, action: TellJob) -> bool:
        metadata = action.job._asdict()
        involved = reference({"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata})
        kind = WARNING if action.warning else NORMAL
        await self.events.record(involved, kind, action.reason, action.message)
        return True

    async def _tell(self, action: RecordEvent) -> bool:
        """On the PodGroup and on the Job that owns it: users look at either first."""
        pod_group = self.cache.pod_groups.get(action.group)
        if pod_group is not None:
            kind = WARNING if action.warning else NORMAL
            for target in (reference(pod_group), *owner_references(pod_group, "Job")):
                await self.events.record(target, kind, action.reason, action.message)
        return True

    def _count(self, step: Step) -> None:
        if step.kind in (StepKind.ADMIT, StepKind.PREEMPT):
            self.metrics.admissions.inc()
            self._observe_time_to_admit(step.group)
        elif step.kind is StepKind.ROLL_BACK:
            self.metrics.rollbacks.inc()

    def _observe_time_to_admit(self, key: GroupKey) -> None:
        state = self.cache.state
        members = [state.pods[PodKey(key.namespace, name)] for name in state.members.get(key, ())]
        known = [pod.record.created for pod in members if pod.record.created is not None]
        if known:
            self.metrics.time_to_admit.observe(max(0.0, time.time() - max(known)))

    async def _warn_orphans(self, now: float) -> None:
        """One event per member pod whose PodGroup has not existed for `orphan_grace`
        seconds (it stays gated).

        A Job's pods exist before the operator has created the Job's PodGroup, so
        warning at once would write an event for most pods of every new Job; the
        grace period keeps the event for a PodGroup that is truly missing. The pods of
        a Job whose opt-in the API server dropped wait for none: the engine lets them
        go (`muster.scheduler.lifecycle.let_go`), and their Job is told why. The
        members are copied before the first await: the informers change the cache
        while an event is being written.
        """
        orphaned_since: dict[PodKey, float] = {}
        let_go_groups = {dropped.group for dropped in self.cache.state.dropped_fields.values()}
        for key, names in list(self.cache.state.members.items()):
            if key in self.cache.pod_groups or key in let_go_groups:
                continue
            for name in list(names):
                pod_key = PodKey(key.namespace, name)
                entry = self.cache.state.pods.get(pod_key)
                if entry is None or entry.record.native:
                    continue  # gone meanwhile, or the cluster's own gang scheduling has it
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
                    self.cache.reference(pod_key),
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
