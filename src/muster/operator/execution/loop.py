"""The scheduling loop: carry out the engine's plan, in order. It decides nothing.

One cycle at a time: snapshot, schedule, execute, observe. Each cycle asks the engine
(`schedule`) for its plan on the cache's current state (nothing changes it while the
engine decides: nothing awaits), then runs the plan's steps: preemptions one after another,
first (their victims' groups may be shared), then the other steps several at a time
(the engine planned them on capacity none of the others takes). Within a step the
actions run in order and the step stops at the first that fails, so nothing is
evicted or released whose decision is not written down: a crash at any point leaves
a recorded decision that the next cycle, of this operator or of the next, finishes
(see `muster.scheduler.decisions.plan`); the events of a step are the engine's too, told once
the write before them succeeded. Before each action (a batch of writes: a status,
the evictions, the releases) it asks `still_leading()`, so a replica that lost the
Lease stops at the start of a batch rather than part-way through it.

Releases and ungatings are conditional on each pod's resourceVersion as this
cycle's snapshot had it (`execution.pods`), taken from the cache right after the
engine decided, before anything is awaited: a pod that changed since, or that a new
leader wrote while this replica's write was on its way, is not released on a stale
decision.

What the API server answers to a release is an observation, not a decision: it goes
into the engine's state (`ClusterState.observe_release`), and the next cycle decides
what a refused or failed release means for the gang (see
`muster.scheduler.memory.release_failures`). Everything the engine must remember is in the
PodGroups' status, or in what each cycle hands to the next (`Carried`), which the loop
gives back to the engine unread. Its warnings about single objects (member pods whose
PodGroup is missing, objects it cannot use) are the plan's notices, given after the
steps. With a trace recorded (`--record-trace`), each cycle's decisions go into it
before any of them is carried out, so that a replay decides on exactly the state this
cycle saw. Before each cycle the loop tells the selector judge (`selector_judge`)
which DRA selector cases the claims still need judged; the engine evaluates none.
Start-time estimates are not decisions: their own writer (`estimates`) runs beside
the loop, told when a cycle ended. Each step carried out whole is logged at
INFO in one line (`decision_log`), and the notices at WARNING, one line for the
objects told the same thing (the pods of one missing PodGroup).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from muster.api.keys import GroupKey, PodKey
from muster.api.wire import JsonObject
from muster.operator.execution.decision_log import decision_line, notice_lines
from muster.operator.execution.estimates import EstimateWriter
from muster.operator.execution.events import NORMAL, WARNING, EventRecorder
from muster.operator.execution.pods import PodActions
from muster.operator.execution.selector_judge import SelectorJudge
from muster.operator.execution.writer import StatusWriter
from muster.operator.intake.cache import LiveCache
from muster.operator.intake.trigger import Trigger
from muster.operator.metrics import Metrics
from muster.scheduler import EngineConfig, ReleaseFailure, cycle_line, member_records, schedule
from muster.scheduler.decisions import (
    NOTHING_CARRIED,
    CycleResult,
    Evict,
    Notice,
    Plan,
    RecordEvent,
    Release,
    Step,
    StepKind,
    Ungate,
    WriteStatus,
)

logger = logging.getLogger(__name__)

STEP_CONCURRENCY = 32


class _Execution:
    """One plan being carried out: which groups' statuses are written, which failed,
    and the version of each pod it releases or ungates, as the plan was decided on."""

    def __init__(self, plan: Plan, versions: Mapping[PodKey, str]) -> None:
        self.plan = plan
        self.versions = versions
        self.written: set[GroupKey] = set()
        self.failed: set[GroupKey] = set()


def ungated_pods(plan: Plan) -> Iterator[PodKey]:
    """Every pod whose gate the plan takes off (released or ungated)."""
    for step in plan.steps:
        for action in step.actions:
            if isinstance(action, Release):
                namespace = action.group.namespace
                yield from (PodKey(namespace, pod) for pod, _ in action.placements)
            elif isinstance(action, Ungate):
                yield from action.pods


@dataclass(frozen=True, slots=True)
class Writers:
    """What a cycle's plan is written through: statuses, pods (releases, ungatings,
    evictions), events, and the start-time estimates beside them."""

    status: StatusWriter
    pods: PodActions
    events: EventRecorder
    estimates: EstimateWriter


@dataclass(frozen=True, slots=True)
class LoopHooks:
    """`still_leading`: asked before each batch of writes; `record`, when given, is
    told what each cycle decided, at once (a trace line); `clock` gives the time each
    cycle decides at."""

    still_leading: Callable[[], bool] = lambda: True
    record: Callable[[JsonObject], None] | None = None
    clock: Callable[[], float] = time.time


class SchedulingLoop:
    """Runs cycles and carries out their plans through the API server."""

    def __init__(
        self,
        *,
        cache: LiveCache,
        writers: Writers,
        trigger: Trigger,
        metrics: Metrics,
        engine_config: EngineConfig,
        selectors: SelectorJudge | None = None,
        hooks: LoopHooks = LoopHooks(),
    ) -> None:
        self.cache = cache
        self.still_leading = hooks.still_leading
        self.writer = writers.status
        self.pods = writers.pods
        self.events = writers.events
        self.trigger = trigger
        self.metrics = metrics
        self.engine_config = engine_config
        self.estimates = writers.estimates
        self.selectors = selectors
        self.record = hooks.record
        self.clock = hooks.clock
        self.carried = NOTHING_CARRIED  # what the last cycle handed on, for the next

    async def run(self) -> None:
        """Cycle forever, whenever the trigger says so (until cancelled)."""
        while True:
            await self.trigger.wait()
            try:
                await self.cycle()
            except Exception:
                logger.exception("scheduling cycle failed; retrying on the next trigger")

    async def cycle(self) -> CycleResult:
        """Snapshot, schedule, execute the plan in order, observe."""
        result = self.schedule(self.clock())
        versions = {pod: self.cache.version(pod) for pod in ungated_pods(result.plan)}
        await self.execute(result.plan, versions)
        self.observe(result)
        return result

    def schedule(self, now: float) -> CycleResult:
        """The engine's decisions on the state as it is, handed what the last cycle
        handed on, and written to the trace before any of them is carried out."""
        started = time.perf_counter()
        if self.selectors is not None:
            self.selectors.want(self.cache.state.devices.unjudged())
        result = schedule(
            self.cache.state, now=now, config=self.engine_config, carried=self.carried
        )
        self.carried = result.carried
        if self.record is not None:
            self.record(cycle_line(now, result))
        self.metrics.cycle_duration.observe(time.perf_counter() - started)
        self.metrics.pending_gangs.set(len(result.verdicts))
        return result

    def observe(self, result: CycleResult) -> None:
        """After the plan: a cycle at the moment the engine asked for, and a round of
        estimates."""
        if result.plan.wake_at is not None:
            self.trigger.wake_at(result.plan.wake_at)
        self.estimates.cycle_ended(result.carried)

    async def execute(self, plan: Plan, versions: Mapping[PodKey, str]) -> None:
        """Carry out the plan's steps (exclusive ones in order, then the rest together),
        then give its notices; each pod's gate comes off only from its version in
        `versions`."""
        execution = _Execution(plan, versions)
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
        given = [notice for notice in plan.notices if await self._give(notice)]
        for line in notice_lines(given):
            logger.warning(line)

    async def _carry_out(self, step: Step, execution: _Execution) -> None:
        for action in step.actions:
            if not self.still_leading():
                return  # what is written is finished by whoever leads now
            if isinstance(action, WriteStatus):
                done = await self._write(action.group, execution)
            elif isinstance(action, Evict):
                done = await self._evict(step, action)
            elif isinstance(action, Release):
                done = await self._release(action, execution.versions)
            elif isinstance(action, Ungate):
                done = await self._ungate(action, execution.versions)
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

    async def _release(self, action: Release, versions: Mapping[PodKey, str]) -> bool:
        outcome = await self.pods.release(action, versions)
        self.metrics.releases.inc(len(outcome.done))
        observed = self.clock()
        for pod in outcome.done:
            self.cache.observe_release(pod, None)
        for pod, failure in outcome.failed.items():
            self.cache.observe_release(
                pod, ReleaseFailure(failure.status, failure.message, observed)
            )
        if outcome.failed:
            self.trigger.poke()  # the engine decides what the failures mean
        return True

    async def _ungate(self, action: Ungate, versions: Mapping[PodKey, str]) -> bool:
        """Whether any pod lost its gate: what the Job is told of. The others are
        ungated by a later cycle (the engine sees them still gated)."""
        outcome = await self.pods.ungate(action.pods, versions)
        return bool(outcome.done)

    async def _tell(self, action: RecordEvent) -> bool:
        """On the object the engine named, if it still exists."""
        involved = self.cache.reference_to(action.target)
        if involved is not None:
            kind = WARNING if action.warning else NORMAL
            await self.events.record(involved, kind, action.reason, action.message)
        return True

    def _count(self, step: Step) -> None:
        if step.kind in (StepKind.ADMIT, StepKind.PREEMPT):
            self.metrics.admissions.inc()
            self._observe_time_to_admit(step.group)
        elif step.kind is StepKind.ROLL_BACK:
            self.metrics.rollbacks.inc()

    def _observe_time_to_admit(self, key: GroupKey) -> None:
        created = (record.created for record in member_records(self.cache.state, key))
        known = [moment for moment in created if moment is not None]
        if known:
            self.metrics.time_to_admit.observe(max(0.0, self.clock() - max(known)))

    async def _give(self, notice: Notice) -> bool:
        """A notice as a Warning event on its object, if it still exists; whether it was
        given (the log tells those given, several objects told the same in one line)."""
        if not self.still_leading():
            return False
        involved = self.cache.reference_of(notice.kind, notice.namespace, notice.name)
        if involved is None:
            return False
        await self.events.record(involved, WARNING, notice.reason, notice.message)
        return True
