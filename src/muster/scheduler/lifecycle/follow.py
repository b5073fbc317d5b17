"""How far an admitted gang has come, and whether it must be undone.

An admitted gang has a plan (pod → node) in its status. Reading its member pods
against it tells what is left: while pods preempted for it are still there, nothing
is released (none of its pods runs while the others wait for room), up to
`victims_timeout` after its admission; then pods still gated are released (this is
also how a release left half-done by a restarted operator is finished); pods released
but not bound are waited for until the release deadline; a pod that can no longer
bind where it was planned (its node gone, cordoned, or tainted with a NoSchedule or
NoExecute taint it does not tolerate), that kube-scheduler refused
to bind there, or whose release the API server refused (see `release_failures`),
means the gang cannot complete as planned: it is rolled back at once.

The release clock starts once per release: at the admission (for a preemptor, once
its victims are gone) and again when members beyond the first release are placed (a
growth). Releasing again what is still gated (after a failed release, or by a
restarted operator) does not restart it, so a release that cannot finish is rolled
back at its deadline: pods whose release failed, or pods released and not bound.
A released pod with no gate left is in kube-scheduler's queue, which binds in
priority and arrival order: while kube-scheduler keeps binding (in a burst of
thousands of pods its queue holds minutes of work), the pod is waiting its turn, so
its deadline counts from kube-scheduler's last bind when that came after the release.
A pod that kube-scheduler finds no room for says so (it is refused, above); one held
by another scheduling gate is not in its queue, and its deadline counts from the
release alone.
Members kept back (a gang whose minCount was raised) and members a restarted
operator has yet to release are not late, since nobody tried to release them.
An admitted gang none of whose pods exists any more (its Job suspended, as Kueue
suspends the Jobs it evicts or preempts; every pod deleted) is *vacated*: it is no
longer admitted, and its next pods wait and are admitted like any gang's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from muster.api.keys import GroupKey, PodKey
from muster.scheduler.config import EngineConfig
from muster.scheduler.memory.refusals import Refused
from muster.scheduler.memory.release_failures import RETRY_SECONDS, ReleaseFailure
from muster.scheduler.rules.taints import first_untolerated
from muster.scheduler.state.intake import GroupRecord, PodRecord
from muster.scheduler.state.state import ClusterState


@dataclass(frozen=True, slots=True)
class Rollback:
    """Why a gang must be rolled back now; `refused` when kube-scheduler said so."""

    reason: str
    refused: tuple[Refused, ...] = ()


@dataclass(frozen=True, slots=True)
class Following:
    """What one admitted gang needs this cycle."""

    rollback: Rollback | None = None
    vacated: bool = False  # none of its pods exists any more
    awaiting: tuple[PodKey, ...] = ()  # its victims still there
    evict: tuple[PodKey, ...] = ()  # of those, the ones not on their way out yet
    victims_gone: bool = False  # the last of its victims left since the last cycle
    to_release: tuple[tuple[str, str], ...] = ()  # (pod, node): still gated, node usable
    complete: bool = False  # every planned pod bound (or finished)
    deadline: float | None = None  # rolled back then, if nothing changes
    retry_at: float | None = None  # when a pod whose release failed is released again

    @property
    def settled(self) -> bool:
        """Every planned pod bound, with nothing to release, await or time: until the
        gang or a member changes, every cycle would find the same."""
        return (
            self.complete
            and self.rollback is None
            and not self.vacated
            and not self.awaiting
            and not self.victims_gone
            and not self.to_release
            and self.deadline is None
            and self.retry_at is None
        )


def follow(
    state: ClusterState,
    group: GroupRecord,
    *,
    now: float,
    config: EngineConfig,
    release_deferred: bool = False,
) -> Following:
    """`release_deferred`: its minCount was raised beyond what fits; its gated pods wait."""
    if not state.members.get(group.key):
        return Following(vacated=True)
    memory = group.memory
    awaiting = tuple(victim for victim in memory.victims if _still_there(state, victim))
    if awaiting:
        deadline = (group.admitted_at or now) + config.victims_timeout
        if now >= deadline:
            names = ", ".join(str(victim) for victim in awaiting[:5])
            return Following(
                Rollback(
                    f"{len(awaiting)} pod(s) preempted for it still there "
                    f"{config.victims_timeout:g}s after its admission: {names}"
                )
            )
        leaving = {v for v in awaiting if v not in state.pods or state.pods[v].record.terminating}
        evict = tuple(
            victim
            for victim in awaiting
            if victim not in leaving and not _taken_down_whole(state, victim)
        )
        return Following(awaiting=awaiting, evict=evict, deadline=deadline)
    victims_gone = bool(memory.victims)
    started = now if victims_gone else memory.release_started or group.admitted_at or now
    deadline = started + config.release_timeout
    queue_deadline = max(started, state.last_bind or started) + config.release_timeout
    progress = _progress(state, group, started=started, release_deferred=release_deferred)
    rollback = _undone(
        progress,
        late=progress.late(release_overdue=now >= deadline, queue_overdue=now >= queue_deadline),
        config=config,
    )
    if rollback is not None:
        return Following(rollback)
    retry_at = {pod: failure.at + RETRY_SECONDS for pod, failure in progress.failed}
    due = [(pod, node) for pod, node in progress.to_release if retry_at.get(pod, now) <= now]
    later = [moment for moment in retry_at.values() if moment > now]
    deadlines = [
        *([deadline] if progress.to_release or progress.other_gated else []),
        *([queue_deadline] if progress.queued else []),
    ]
    return Following(
        victims_gone=victims_gone,
        to_release=tuple(due),
        complete=not deadlines and not release_deferred,
        deadline=min(deadlines, default=None),
        retry_at=min(later, default=None),
    )


@dataclass(slots=True)
class _Progress:
    """The planned pods not bound yet, by what holds them up."""

    to_release: list[tuple[str, str]] = field(default_factory=list)  # gated, node usable
    queued: list[str] = field(default_factory=list)  # released, in kube-scheduler's queue
    other_gated: list[str] = field(default_factory=list)  # released, gated by another gate
    stranded: list[tuple[str, str]] = field(default_factory=list)  # node gone, cordoned, tainted
    refused: list[Refused] = field(default_factory=list)  # by kube-scheduler
    failed: list[tuple[str, ReleaseFailure]] = field(default_factory=list)  # release failed

    def late(self, *, release_overdue: bool, queue_overdue: bool) -> list[str]:
        """The pods past their deadline (see the module's docstring), sorted."""
        late = [*self.other_gated, *(pod for pod, _ in self.failed)] if release_overdue else []
        return sorted([*late, *(self.queued if queue_overdue else ())])


def _progress(
    state: ClusterState, group: GroupRecord, *, started: float, release_deferred: bool
) -> _Progress:
    """Where the release begun at `started` stands (failures of earlier ones ignored)."""
    progress = _Progress()
    for pod_name, node in sorted(group.plan.items()):
        key = PodKey(group.key.namespace, pod_name)
        entry = state.pods.get(key)
        if entry is None:
            continue
        pod = entry.record
        if pod.node_name or pod.terminal or pod.terminating:
            continue
        if not _usable(state, node, pod):
            progress.stranded.append((pod_name, node))
        elif pod.gated:
            failure = state.release_failures.get(key)
            if failure is not None and failure.at >= started:
                progress.failed.append((pod_name, failure))
            if not release_deferred:
                progress.to_release.append((pod_name, node))
        else:
            (progress.other_gated if pod.other_gates else progress.queued).append(pod_name)
            if pod.refusal is not None:
                progress.refused.append(Refused(pod_name, node, pod.refusal))
    return progress


def _undone(progress: _Progress, *, late: list[str], config: EngineConfig) -> Rollback | None:
    """Why the gang cannot complete as planned, if it cannot; `late`: the pods past
    their deadline."""
    if progress.stranded:
        pods = ", ".join(f"{pod} (node {node})" for pod, node in progress.stranded[:5])
        return Rollback(
            f"{len(progress.stranded)} planned pod(s) can no longer bind: their node is gone, "
            f"cordoned or tainted against them: {pods}"
        )
    if progress.refused:
        first, others = progress.refused[0], len(progress.refused) - 1
        return Rollback(
            f'kube-scheduler refused pod {first.pod} on node {first.node}: "{first.message}"'
            f"{_more(others)}",
            tuple(progress.refused),
        )
    refusals = [(pod, failure) for pod, failure in progress.failed if failure.refused]
    if refusals:
        (pod, failure), others = refusals[0], len(refusals) - 1
        return Rollback(
            f'the API server refused to release pod {pod}: "{failure.message}"{_more(others)}'
        )
    if not late:
        return None
    last = ""
    if progress.failed:
        pod, failure = progress.failed[-1]
        last = f'; releasing pod {pod} failed: "{failure.message}"'
    return Rollback(
        f"{len(late)} pod(s) not bound within {config.release_timeout:g}s of "
        f"release: {', '.join(late[:5])}{last}"
    )


def _more(others: int) -> str:
    return f" (and {others} more pod(s))" if others else ""


def _taken_down_whole(state: ClusterState, pod: PodKey) -> bool:
    """Whether the victim's gang falls whole: its own step takes it down (see
    `transitions.take_down`), deleting what an eviction is refused for."""
    group_name = state.pods[pod].record.group_name
    group = state.groups.get(GroupKey(pod.namespace, group_name)) if group_name else None
    return group is not None and group.falls_whole


def _still_there(state: ClusterState, pod: PodKey) -> bool:
    """Whether a victim still holds its node (a pod its controller made again under
    the same name holds nothing: it is a new, gated pod), or, gone, still holds devices
    through the claims made for it (kube-scheduler would not allocate them yet)."""
    entry = state.pods.get(pod)
    if entry is not None and entry.record.node_name is not None and not entry.record.terminal:
        return True
    return state.devices.allocated_for(pod.namespace, pod.name)


def _usable(state: ClusterState, node: str, pod: PodRecord) -> bool:
    """Whether a node exists and would still take the pod: it is not cordoned and has
    no NoSchedule or NoExecute taint the pod does not tolerate (one put there after the
    plan, such as the node lifecycle controller's `unreachable` on a node gone silent:
    kube-scheduler's TaintToleration filter keeps the pod off it for as long as it
    stays)."""
    slot = state.node_slot(node)
    if slot is None:
        return False
    record = state.node_table().records[slot]
    if record is None or record.unschedulable:
        return False
    tolerations = pod.rules.tolerations if pod.rules is not None else ()
    return first_untolerated(record.taints, tolerations) is None
