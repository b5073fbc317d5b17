"""Admission's view of Workloads: the operator's informer cache, confirmed before a refusal.

A PodGroup's ``workloadRef`` is checked against the Workload it names
(:mod:`muster.api.references`). Admission reads Workloads from the operator's
informer, so an accepted PodGroup costs no API call. A cache can lag: the
operator creates a Job's Workload and then at once its PodGroup, and a user may
apply a Workload and its PodGroups in one `kubectl apply`. So a reference the
cache cannot honour is looked up once more, live, before it is refused: a refusal
is always the API server's present answer.

The operator puts a :class:`WorkloadSource` into kopf's memo under
:data:`WORKLOADS_MEMO` at startup.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import kopf

from muster.api.problems import Problem
from muster.api.references import referenced_workload_name, workload_ref_problems

WORKLOADS_MEMO = "workloads"
"""The kopf memo attribute that holds the operator's :class:`WorkloadSource`."""

UNAVAILABLE = 503


class WorkloadSource(Protocol):
    """Workloads by namespace and name; None when there is none."""

    async def cached(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        """From the informer cache: no API call."""

    async def live(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        """From the API server, now."""


async def reference_problems(
    pod_group: Mapping[str, Any], namespace: str, memo: Any
) -> list[Problem]:
    """Why a new PodGroup's ``workloadRef`` cannot be admitted; nothing when it can.

    Without a source in the memo admission cannot decide, and the request fails
    (the client retries) rather than being admitted unchecked.
    """
    name = referenced_workload_name(pod_group)
    if name is None:
        return []
    source: WorkloadSource | None = getattr(memo, WORKLOADS_MEMO, None)
    if source is None:
        raise kopf.AdmissionError("Workloads are not available yet", code=UNAVAILABLE)
    cached = await source.cached(namespace, name)
    problems = workload_ref_problems(pod_group, lambda _: cached)
    if not problems:
        return []
    current = await source.live(namespace, name)
    return workload_ref_problems(pod_group, lambda _: current)
