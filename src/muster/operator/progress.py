"""How far the release of an admitted gang has come, and whether it must be undone.

An admitted gang has a plan (pod → node) in its status. Reading the member pods
against it tells the loop what is left to do: pods still gated are released (this is
how a restarted operator finishes a release it was killed in the middle of); pods
released but not bound are waited for until the deadline; a pod that can no longer
bind where it was planned (its node is gone or cordoned), or that kube-scheduler
refused to bind there (a rule the engine does not model, or a race), means the gang
cannot complete as planned, and it is rolled back at once instead of waiting out the
clock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from muster.operator.status import is_bound, is_gated, is_terminal, refusal_message
from muster.scheduler.refusals import Refused

JsonObject = dict[str, Any]


@dataclass(frozen=True, slots=True)
class ReleaseProgress:
    """The planned pods of one admitted gang, sorted by what they still need."""

    to_release: tuple[tuple[str, str], ...]  # (pod, node): still gated, node still usable
    unbound: tuple[str, ...]  # released, not yet bound
    stranded: tuple[tuple[str, str], ...]  # (pod, node): not bound, node gone or cordoned
    refused: tuple[Refused, ...] = ()  # unbound pods kube-scheduler refused to bind

    @property
    def complete(self) -> bool:
        return not (self.to_release or self.unbound or self.stranded)


def release_progress(
    plan: Mapping[str, str],
    members: Mapping[str, JsonObject],
    node_usable: Callable[[str], bool],
) -> ReleaseProgress:
    """Classify each planned pod; pods that no longer exist or have finished need nothing."""
    to_release: list[tuple[str, str]] = []
    unbound: list[str] = []
    stranded: list[tuple[str, str]] = []
    refused: list[Refused] = []
    for pod_name, node in sorted(plan.items()):
        pod = members.get(pod_name)
        if pod is None or is_bound(pod) or is_terminal(pod):
            continue
        if (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue
        if not node_usable(node):
            stranded.append((pod_name, node))
        elif is_gated(pod):
            to_release.append((pod_name, node))
        else:
            unbound.append(pod_name)
            message = refusal_message(pod)
            if message is not None:
                refused.append(Refused(pod_name, node, message))
    return ReleaseProgress(tuple(to_release), tuple(unbound), tuple(stranded), tuple(refused))


@dataclass(frozen=True, slots=True)
class Rollback:
    """Why a gang must be rolled back now; `refused` when kube-scheduler said so."""

    reason: str
    refused: tuple[Refused, ...] = ()


def rollback_reason(
    progress: ReleaseProgress, *, overdue: bool, timeout: float, waiting: bool = False
) -> Rollback | None:
    """Why the gang must be rolled back now, or None when it may keep going.

    `waiting`: the gang waits for the pods preempted for it to leave its nodes; until
    they are gone kube-scheduler refuses its pods for want of room, which is no
    reason to give up its place.
    """
    if progress.stranded:
        pods = ", ".join(f"{pod} (node {node})" for pod, node in progress.stranded[:5])
        return Rollback(
            f"{len(progress.stranded)} planned pod(s) can no longer bind: their node is gone "
            f"or cordoned: {pods}"
        )
    if progress.refused and not waiting:
        first = progress.refused[0]
        others = len(progress.refused) - 1
        more = f" (and {others} more pod(s))" if others else ""
        return Rollback(
            f'kube-scheduler refused pod {first.pod} on node {first.node}: "{first.message}"{more}',
            progress.refused,
        )
    if overdue and not progress.complete:
        waiting_pods = [*progress.unbound, *(pod for pod, _ in progress.to_release)]
        return Rollback(
            f"{len(waiting_pods)} pod(s) not bound within {timeout:g}s of release: "
            f"{', '.join(waiting_pods[:5])}"
        )
    return None
