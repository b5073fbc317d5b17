"""When will each waiting gang start? The engine's own cycles, run forward in time.

A copy of the state is advanced from one expected pod end to the next (and to the
end of a waiting gang's backoff, before which the engine does not admit it): the pods
ending then are removed, and `schedule` runs at that moment, exactly as the operator
would run it, priority, backfill, nodes closed for starving gangs (they start at the moment
the gang has waited long enough), topology and preemption included. A gang admitted
in that run is given its plan in the copy and its pods run for their expected
runtime, so the gangs behind it see it come and go. Each waiting gang's estimate is
the moment it is admitted in the run.

A gang that does not fit even on the empty cluster never starts, whatever ends: the
engine says so in its verdict, and the run does not wait for it.

The run stops when every other waiting gang has started, when the next end lies past the
horizon, or when the budget is spent: a number of cycles, and `keep_going`, asked
before each cycle (the operator stops a forecast that takes too long, and pauses it
while its own cycle runs; the engine itself reads no clock). A gang still waiting then has no
time: it is beyond the horizon, or it waits on capacity taken by pods of unknown
runtime (they never end in the run, and are named).

What the run cannot know: gangs submitted later (a higher-priority one overtakes),
runtimes that are wrong, pods a Job creates after others complete, gangs preempted
in the run (they leave it: their pods would come back gated, with a fresh wait).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum

from muster.api.keys import GroupKey, PodKey
from muster.scheduler.config import EngineConfig
from muster.scheduler.cycle.engine import schedule
from muster.scheduler.decisions.results import (
    NOTHING_CARRIED,
    Admission,
    Carried,
    CycleResult,
    Growth,
    Reason,
    Verdict,
)
from muster.scheduler.forecast.endings import Ending, Endings
from muster.scheduler.memory.runtimes import Basis, Runtime, observed, weakest
from muster.scheduler.state.intake import PodRecord
from muster.scheduler.state.state import ClusterState

DEFAULT_HORIZON_SECONDS = 24 * 3600.0
DEFAULT_BUDGET_CYCLES = 200


@dataclass(frozen=True, slots=True)
class Reach:
    """How far a forecast runs: up to `horizon` seconds after its start, and at most
    `cycles` cycles (each cycle costs as much as the operator's)."""

    horizon: float = DEFAULT_HORIZON_SECONDS
    cycles: int = DEFAULT_BUDGET_CYCLES


WAITING_FOR_PODS = "fewer than minCount member pods exist"
"""Why a gang's start is unknown while it waits for its pods (its condition says it)."""


class Outcome(StrEnum):
    STARTS = "starts"
    NEVER = "never"  # it does not fit even on the empty cluster
    BEYOND_HORIZON = "beyond-horizon"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Vacancy:
    """Capacity a gang starts on, vacated by pods of one owner ending where it is placed."""

    owner: str
    end: float
    runtime: Runtime


@dataclass(frozen=True, slots=True)
class Estimate:
    """One waiting gang's forecast. `start` is set only when the outcome is STARTS.

    `vacancies` are what pods ending on the gang's nodes vacate before it starts, the last to end
    first (what it waits for); `basis` the weakest of their runtimes (None when it
    starts on capacity free now). `backoff_until` is set when the gang starts the
    moment its backoff ends (after a rollback): then that is what it waited for.
    `unknown` names owners of pods of unknown runtime that still take capacity when
    the run ends; `why` says in words why there is no time.
    """

    group: GroupKey
    outcome: Outcome
    start: float | None = None
    basis: Basis | None = None
    vacancies: tuple[Vacancy, ...] = ()
    domain: tuple[str, str] | None = None
    nodes: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()
    why: str = ""
    backoff_until: float | None = None


@dataclass(frozen=True, slots=True)
class Run:
    """A gang in the run: when it started (or was admitted, for a running one) and ends
    (or is preempted, or ended before the forecast: `finished`). Its end and runtime
    are those of its last pod to end, each pod's runtime read as `Endings` reads it."""

    group: GroupKey
    start: float
    end: float | None
    runtime: Runtime | None
    running: bool  # admitted before the forecast
    preempted: bool = False
    finished: bool = False  # every pod ended before the forecast


@dataclass(frozen=True, slots=True)
class Forecast:
    now: float
    horizon: float
    estimates: dict[GroupKey, Estimate]
    timeline: tuple[Run, ...]
    first_cycle: CycleResult = field(default_factory=CycleResult)
    cycles: int = 0
    complete: bool = True  # False when the budget ran out
    # When the first cycle's verdicts change with time alone (a gang's pods have
    # stopped arriving, a backoff ends): a forecast is due again then, changed or not.
    revisit_at: float | None = None


def forecast(
    state: ClusterState,
    *,
    now: float,
    config: EngineConfig,
    reach: Reach = Reach(),
    keep_going: Callable[[], bool] = lambda: True,
    owned: bool = False,
    carried: Carried = NOTHING_CARRIED,
) -> Forecast:
    """Run the engine forward from `now` until every waiting gang has a start, or the
    run is out of `reach` (its horizon, its cycles), or `keep_going` says no.

    The run works on a copy of `state`, unless `owned`: a caller that already made
    one for the run (to hand it to another thread) saves the second. `carried`: what
    the caller's last cycle on `state` handed on, so that the run's first cycle
    skips the groups it found quiet.
    """
    ahead = state if owned else state.copy()
    budget = _Budget(reach.cycles, keep_going)
    return _Forward(ahead, now, config, reach.horizon, budget, carried=carried).run()


class _Budget:
    """Cycles left, and the caller's say before each one."""

    def __init__(self, cycles: int, keep_going: Callable[[], bool]) -> None:
        self.cycles = cycles
        self.keep_going = keep_going
        self.spent = 0
        self.stopped = False

    def take(self) -> bool:
        """Whether one more cycle may run (counted when it may)."""
        if self.stopped or self.spent >= self.cycles or not self.keep_going():
            self.stopped = True
            return False
        self.spent += 1
        return True


class _Forward:
    def __init__(
        self,
        state: ClusterState,
        now: float,
        config: EngineConfig,
        horizon: float,
        budget: _Budget,
        *,
        carried: Carried,
    ) -> None:
        self.state = state
        self.now = now
        self.config = config
        self.horizon = now + horizon
        self.budget = budget
        self.endings = Endings(self.state, now)
        self.ended: list[Ending] = []
        self.waiting = {key for key in self.state.unadmitted_gangs if self.state.groups[key].gang}
        self.backoffs = _backoff_ends(self.state, self.waiting, now)
        self.starts: dict[GroupKey, tuple[float, Admission]] = {}
        self.never: dict[GroupKey, Verdict] = {}
        self.preempted: dict[GroupKey, float] = {}
        self.first: CycleResult | None = None
        self._unknown: tuple[str, ...] | None = None
        self.blamed: dict[GroupKey, tuple[str, ...]] = {}
        self.moment = now  # the last moment decided
        self.carried = carried  # handed from each cycle of the run to the next

    def run(self) -> Forecast:
        running = self._running()
        moment: float | None = self.now
        while moment is not None:
            self._settle(moment)
            if self._all_decided() or self.budget.stopped:
                break
            moment = self._next_moment(moment)
            if moment is None or moment > self.horizon:
                break
            self.ended.extend(self._finish(moment))
        first = self.first or CycleResult()
        self._blame_unknown()
        estimates = {key: self._estimate(key, first) for key in sorted(self.waiting)}
        return Forecast(
            now=self.now,
            horizon=self.horizon,
            estimates=estimates,
            timeline=tuple(
                sorted((self._cut(run) for run in [*running, *self._started()]), key=_run_order)
            ),
            first_cycle=first,
            cycles=self.budget.spent,
            complete=not self.budget.stopped or self._all_decided(),
            revisit_at=first.plan.wake_at,
        )

    def _all_decided(self) -> bool:
        """Every waiting gang started, or never starts."""
        return self.waiting <= self.starts.keys() | self.never.keys()

    # ---- the run ------------------------------------------------------------------

    def _settle(self, moment: float) -> None:
        """Cycles at one moment until one changes nothing, as the operator's loop does."""
        self.moment = moment
        while self.budget.take():
            result = schedule(  # after the first, only its decisions are read
                self.state,
                now=moment,
                config=self.config,
                carried=self.carried,
                told=self.first is None,
            )
            self.carried = result.carried
            self.first = self.first or result
            for key, verdict in result.verdicts.items():
                if verdict.explanation is not None and verdict.explanation.never:
                    self.never.setdefault(key, verdict)
            if not result.admissions and not result.growths:
                return
            for admission in result.admissions:
                self._admit(admission, moment)
            for growth in result.growths:
                self._grow(growth, moment)

    def _next_moment(self, after: float) -> float | None:
        """The next pod end, or the next end of a waiting gang's backoff."""
        found = [moment for moment in self.backoffs.values() if moment > after]
        end = self.endings.next_end()
        if end is not None:
            found.append(end)
        return min(found, default=None)

    def _admit(self, admission: Admission, moment: float) -> None:
        for victim in admission.victims:
            self._preempt(victim.pod, victim.group, moment)
        self.starts.setdefault(admission.group, (moment, admission))
        self._place(admission.group, admission.placements, moment, admitted_at=moment)

    def _grow(self, growth: Growth, moment: float) -> None:
        self._place(growth.group, growth.placements, moment, admitted_at=None)

    def _place(
        self, key: GroupKey, placements: dict[str, str], moment: float, *, admitted_at: float | None
    ) -> None:
        record = self.state.groups[key]
        planned = replace(
            record,
            admitted=True,
            plan={**record.plan, **placements},
            admitted_at=record.admitted_at if admitted_at is None else admitted_at,
        )
        self.state.put_pod_group(planned)
        for pod, node in placements.items():
            entry = self.state.pods[PodKey(key.namespace, pod)]
            self.endings.add(entry.record, planned, node, moment)

    def _preempt(self, pod: PodKey, group: GroupKey | None, moment: float) -> None:
        """The victim goes; a gang falling with it leaves the run (see the module doc)."""
        self.endings.forget(pod)
        self._gone(pod)
        record = None if group is None else self.state.groups.get(group)
        if record is not None and group is not None and not record.disrupt_single:
            for name in sorted(self.state.members.get(group, ())):
                self.endings.forget(PodKey(group.namespace, name))
                self._gone(PodKey(group.namespace, name))
            self.state.delete("PodGroup", group.namespace, group.name)
            self.preempted.setdefault(group, moment)

    def _finish(self, moment: float) -> list[Ending]:
        ended = self.endings.until(moment)
        for ending in ended:
            self._gone(ending.pod)
        return ended

    def _gone(self, pod: PodKey) -> None:
        """The pod leaves, and its claims are deallocated with it: the resourceclaim
        controller deletes the claims made for it, and a claim no pod uses any more is
        deallocated."""
        entry = self.state.pods.get(pod)
        self.state.delete("Pod", pod.namespace, pod.name)
        if entry is not None and entry.record.device_claims:
            self.state.devices.deallocate(pod.namespace, entry.record.device_claims)

    # ---- what it says -------------------------------------------------------------

    def _estimate(self, key: GroupKey, first: CycleResult) -> Estimate:
        started = self.starts.get(key)
        if started is not None:
            moment, admission = started
            vacancies = self._vacancies(admission, moment)
            return Estimate(
                key,
                Outcome.STARTS,
                start=moment,
                basis=weakest(vacancy.runtime.basis for vacancy in vacancies),
                vacancies=vacancies,
                domain=admission.domain,
                nodes=tuple(sorted(set(admission.placements.values()))),
                backoff_until=self.backoffs.get(key) if self.backoffs.get(key) == moment else None,
            )
        verdict = first.verdicts.get(key)
        if verdict is not None and verdict.reason is Reason.WAITING_FOR_PODS:
            return Estimate(key, Outcome.UNKNOWN, why=WAITING_FOR_PODS)
        if verdict is not None and verdict.reason is Reason.SCHEDULER_ERROR:
            return Estimate(key, Outcome.UNKNOWN, why="the engine could not decide on it")
        never = self.never.get(key)
        if never is not None:
            return Estimate(key, Outcome.NEVER, why=never.message)
        if self.budget.stopped:
            why = f"the forecast stopped after {self.budget.spent} cycles, its budget"
            return Estimate(key, Outcome.UNKNOWN, why=why)
        unknown = self.blamed.get(key) or self._unknown_owners()
        if unknown:
            why = "it waits on capacity taken by pods of unknown runtime"
            return Estimate(key, Outcome.UNKNOWN, unknown=unknown, why=why)
        if self.endings.next_end() is None:
            why = "it does not fit even once every running pod has ended"
            return Estimate(key, Outcome.BEYOND_HORIZON, why=why)
        return Estimate(key, Outcome.BEYOND_HORIZON, why="not within the horizon")

    def _blame_unknown(self) -> None:
        """Which pods of unknown runtime each gang still waiting truly waits on.

        Once the run is over, those pods are taken away and the engine decides once
        more at the last moment: a gang that starts then waits on the pods that were
        on the nodes it takes. A gang that does not start even then waits on more than
        them (gangs ahead, pods ending past the horizon): all of them are named.
        """
        waiting = self.waiting - self.starts.keys() - self.never.keys()
        if not waiting or not self.endings.unknown or not self.budget.take():
            return
        where: dict[str, set[str]] = {}
        for pod, owner in self.endings.unknown.items():
            entry = self.state.pods.get(pod)
            if entry is not None and entry.taken_on is not None:
                where.setdefault(entry.taken_on, set()).add(owner)
            self._gone(pod)
        result = schedule(self.state, now=self.moment, config=self.config, carried=self.carried)
        for admission in result.admissions:
            if admission.group in waiting:
                nodes = set(admission.placements.values())
                owners = {owner for node in nodes for owner in where.get(node, ())}
                if owners:
                    self.blamed[admission.group] = tuple(sorted(owners))

    def _unknown_owners(self) -> tuple[str, ...]:
        """Owners of pods of unknown runtime still taking capacity: the same for every
        gang without a time, so sorted once per run, not once per gang."""
        if self._unknown is None:
            self._unknown = tuple(sorted(set(self.endings.unknown.values())))
        return self._unknown

    def _vacancies(self, admission: Admission, moment: float) -> tuple[Vacancy, ...]:
        nodes = set(admission.placements.values())
        latest: dict[str, Ending] = {}
        for ending in self.ended:
            if ending.node in nodes and ending.end <= moment:
                kept = latest.get(ending.owner)
                if kept is None or ending.end > kept.end:
                    latest[ending.owner] = ending
        found = [Vacancy(e.owner, e.end, e.runtime) for e in latest.values()]
        return tuple(sorted(found, key=lambda vacancy: (-vacancy.end, vacancy.owner)))

    def _started(self) -> list[Run]:
        runs = []
        for key, (moment, admission) in self.starts.items():
            pods = [PodKey(key.namespace, pod) for pod in admission.placements]
            last = self.endings.last_of(pods)
            end, runtime = (None, None) if last is None else (last.end, last.runtime)
            runs.append(Run(key, moment, end, runtime, running=False))
        return runs

    def _running(self) -> list[Run]:
        """Gangs admitted before the forecast: those still taking capacity end with
        their last pod; those whose every pod has ended are finished."""
        runs = []
        for key, record in sorted(self.state.groups.items()):
            if not (record.gang and record.admitted):
                continue
            members = [
                self.state.pods[PodKey(key.namespace, name)]
                for name in sorted(self.state.members.get(key, ()))
            ]
            start = record.admitted_at if record.admitted_at is not None else self.now
            if members and all(member.record.terminal for member in members):
                runs.append(_finished(key, start, [member.record for member in members]))
                continue
            holding = [member.record.key for member in members if member.taken_on is not None]
            last = self.endings.last_of(holding)
            end, runtime = (None, None) if last is None else (last.end, last.runtime)
            runs.append(Run(key, start, end, runtime, running=True))
        return runs

    def _cut(self, run: Run) -> Run:
        """A gang preempted in the run ends there."""
        moment = self.preempted.get(run.group)
        return run if moment is None else replace(run, end=moment, preempted=True)


def _backoff_ends(state: ClusterState, waiting: set[GroupKey], now: float) -> dict[GroupKey, float]:
    """When each waiting gang still in backoff may be admitted again."""
    ends = {key: state.groups[key].memory.backoff_until for key in waiting}
    return {key: until for key, until in ends.items() if until is not None and until > now}


def _finished(key: GroupKey, admitted: float, pods: list[PodRecord]) -> Run:
    """A gang whose pods all ended before the forecast: it ended with the last of them,
    and took what they took (None where the pods do not say when they ran)."""
    ends = [pod.finished for pod in pods if pod.finished is not None]
    took = observed(
        pod.finished - pod.started
        for pod in pods
        if pod.started is not None and pod.finished is not None
    )
    end = max(ends) if ends else None
    return Run(key, admitted, end, took, running=True, finished=True)


def _run_order(run: Run) -> tuple[float, str, str]:
    return (run.start, run.group.namespace, run.group.name)
