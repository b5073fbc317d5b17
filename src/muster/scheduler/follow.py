"""How far an admitted gang has come, and whether it must be undone.

An admitted gang has a plan (pod → node) in its status. Reading its member pods
against it tells what is left: while pods preempted for it are still there, nothing
is released (none of its pods runs while the others wait for room), up to
`victims_timeout` after its admission; then pods still gated are released (this is
also how a release left half-done by a restarted operator is finished); pods released
but not bound are waited for until the release deadline; a pod that can no longer
bind where it was planned (its node gone or cordoned), or that kube-scheduler refused
to bind there, means the gang cannot complete as planned: it is rolled back at once.
An admitted gang none of whose pods exists any more (its Job suspended, as Kueue
suspends the Jobs it evicts or preempts; every pod deleted) is *vacated*: it is no
longer admitted, and its next pods wait and are admitted like any gang's.
"""

from __future__ import annotations

from dataclasses import dataclass

from muster.scheduler.config import EngineConfig
from muster.scheduler.intake import GroupRecord
from muster.scheduler.refusals import Refused
from muster.scheduler.results import PodKey
from muster.scheduler.state import ClusterState


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


def follow(
    state: ClusterState,
    group: GroupRecord,
    *,
    now: float,
    config: EngineConfig,
    release_held: bool = False,
) -> Following:
    """`release_held`: its minCount was raised beyond what fits; its gated pods wait."""
    if not state.members.get(group.key):
        return Following(vacated=True)
    memory = group.lifecycle
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
        leaving = {v for v in awaiting if state.pods[v].record.terminating}
        evict = tuple(victim for victim in awaiting if victim not in leaving)
        return Following(awaiting=awaiting, evict=evict, deadline=deadline)
    to_release: list[tuple[str, str]] = []
    unbound: list[str] = []
    stranded: list[tuple[str, str]] = []
    refused: list[Refused] = []
    for pod_name, node in sorted(group.plan.items()):
        entry = state.pods.get(PodKey(group.key.namespace, pod_name))
        if entry is None:
            continue
        pod = entry.record
        if pod.node_name or pod.terminal or pod.terminating:
            continue
        if not _usable(state, node):
            stranded.append((pod_name, node))
        elif pod.gated:
            if not release_held:
                to_release.append((pod_name, node))
        else:
            unbound.append(pod_name)
            if pod.refusal is not None:
                refused.append(Refused(pod_name, node, pod.refusal))
    victims_gone = bool(memory.victims)
    started = now if victims_gone else memory.release_started or group.admitted_at or now
    deadline = started + config.release_timeout
    if stranded:
        pods = ", ".join(f"{pod} (node {node})" for pod, node in stranded[:5])
        return Following(
            Rollback(
                f"{len(stranded)} planned pod(s) can no longer bind: their node is gone "
                f"or cordoned: {pods}"
            )
        )
    if refused:
        first, others = refused[0], len(refused) - 1
        more = f" (and {others} more pod(s))" if others else ""
        return Following(
            Rollback(
                f'kube-scheduler refused pod {first.pod} on node {first.node}: "{first.message}"'
                f"{more}",
                tuple(refused),
            )
        )
    waiting = [*unbound, *(pod for pod, _ in to_release)]
    if waiting and now >= deadline and not to_release:
        return Following(
            Rollback(
                f"{len(waiting)} pod(s) not bound within {config.release_timeout:g}s of "
                f"release: {', '.join(waiting[:5])}"
            )
        )
    return Following(
        victims_gone=victims_gone,
        to_release=tuple(to_release),
        complete=not waiting and not release_held,
        deadline=deadline if unbound else None,
    )


def _still_there(state: ClusterState, pod: PodKey) -> bool:
    """Whether a victim still holds its node (a pod its controller made again under
    the same name holds nothing: it is a new, gated pod)."""
    entry = state.pods.get(pod)
    return entry is not None and entry.record.node_name is not None and not entry.record.terminal


def _usable(state: ClusterState, node: str) -> bool:
    """Whether a node exists and accepts new pods (is not cordoned)."""
    slot = state.node_slot(node)
    if slot is None:
        return False
    record = state.node_table().records[slot]
    return record is not None and not record.unschedulable
