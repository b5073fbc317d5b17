"""Whether the cluster's own gang scheduling has a Job that carries the native field.

Where native gang scheduling runs, the Job controller creates a `scheduling.k8s.io`
Workload owned by a Job with `spec.scheduling` as soon as it sees the Job, and Muster
leaves such a Job alone. A Job younger than `NATIVE_GRACE` seconds without one may
just not have it yet: the question is asked again once the grace is over. An API
server without that API has no native scheduling (no Workloads to look at).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from muster.scheduler.objects.times import parse_time

NATIVE_GRACE = 2.0


@dataclass(frozen=True, slots=True)
class AskAgain:
    """Too early to tell: the Job may still get its native Workload until `at`."""

    at: float


def native_owner(
    job: Mapping[str, Any], workloads: Iterable[Mapping[str, Any]], *, now: float
) -> str | AskAgain | None:
    """The name of the native Workload (among `workloads`, the Job's namespace's) that
    the cluster made for the Job; `AskAgain` while the Job is too young to tell; None
    when nothing native has it, and Muster takes it."""
    metadata = job.get("metadata") or {}
    for workload in workloads:
        owners = (workload.get("metadata") or {}).get("ownerReferences") or []
        if any(owner.get("uid") == metadata.get("uid") for owner in owners):
            return str(workload["metadata"]["name"])
    created = parse_time(metadata.get("creationTimestamp"))
    if created is not None and now < created + NATIVE_GRACE:
        return AskAgain(created + NATIVE_GRACE)
    return None
