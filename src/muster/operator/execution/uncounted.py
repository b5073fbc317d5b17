"""Taking a Job's member pods down without the Job paying for it.

The Job controller counts a pod only while the pod carries its tracking finalizer
(`batch.kubernetes.io/job-tracking`): it records a finished pod in the Job's status,
then removes the finalizer, and it skips every pod without one as already accounted
for. So a pod that loses the finalizer before it is taken down is neither a failure
against `backoffLimit` nor a failure of the Job's pod backoff (10 s, doubling with each
failed pod: failures that a podFailurePolicy ignores count there too). The Job
controller itself removes the finalizer this way from the pods it deletes on its own
account: those of a suspended Job (how Kueue takes Jobs down), and surplus pods.

Muster's rollbacks and preemptions are its own decisions, not the workload's
failures, so before it evicts or deletes a pod of a gang that a Job controls, the
finalizer goes. The removal is one JSON patch whose tests make it atomic: the pod
must still carry the finalizer at the same place and still be in the phase it was
read in, so a pod that finished meanwhile keeps its finalizer and is counted as the
Job controller would count it. Pods in no gang, pods of other controllers, finished
pods and pods that something else is deleting are left as they are. When an
eviction is refused (a PodDisruptionBudget) the pod stays, and gets its finalizer
back.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from muster.api.gates import pod_group_name
from muster.api.keys import PodKey
from muster.api.wire import FINISHED_PHASES, controller_name
from muster.client.kube import JSON_PATCH, STRATEGIC_MERGE_PATCH, KubeError
from muster.client.paths import PODS, namespaced
from muster.operator.execution.pods import BatchOutcome, PodActions

logger = logging.getLogger(__name__)

JOB_TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"

# A patch whose tests fail (the pod changed between the read and the patch) is
# answered 422; the pod is read again, a few times at most.
_TEST_FAILED = 422
_ATTEMPTS = 3


def counted_by_job(pod: Mapping[str, Any]) -> bool:
    """Whether taking the pod down now would count against its Job: a gang member
    controlled by a Job, still tracked by it, not finished, not being deleted."""
    metadata = pod.get("metadata") or {}
    return (
        bool(pod_group_name(pod))
        and controller_name(pod, "Job") is not None
        and not metadata.get("deletionTimestamp")
        and (pod.get("status") or {}).get("phase") not in FINISHED_PHASES
        and JOB_TRACKING_FINALIZER in (metadata.get("finalizers") or [])
    )


def uncount_patch(pod: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """The JSON patch that removes the tracking finalizer from the pod as read, if
    it is still there and the pod still in the same phase; None when the Job would
    not count the pod anyway."""
    if not counted_by_job(pod):
        return None
    index = pod["metadata"]["finalizers"].index(JOB_TRACKING_FINALIZER)
    path = f"/metadata/finalizers/{index}"
    return [
        {"op": "test", "path": "/status/phase", "value": pod["status"]["phase"]},
        {"op": "test", "path": path, "value": JOB_TRACKING_FINALIZER},
        {"op": "remove", "path": path},
    ]


RECOUNT_PATCH = {"metadata": {"finalizers": [JOB_TRACKING_FINALIZER]}}
"""Gives a pod its tracking finalizer back (finalizers merge: never twice)."""


class UncountedPodActions(PodActions):
    """Pod actions whose evictions and deletions cost a member pod's Job nothing."""

    async def evict(self, pods: Iterable[PodKey]) -> BatchOutcome:
        pods = list(pods)
        uncounted = await self._uncount_all(pods)
        outcome = await super().evict(pods)
        await asyncio.gather(*(self._recount(pod) for pod in outcome.failed if pod in uncounted))
        return outcome

    async def delete(self, pods: Iterable[PodKey]) -> BatchOutcome:
        pods = list(pods)
        await self._uncount_all(pods)
        return await super().delete(pods)

    async def _uncount_all(self, pods: list[PodKey]) -> set[PodKey]:
        """Remove the tracking finalizer of those pods the Job would count; the
        pods it was removed from. A pod it could not be removed from is taken down
        all the same: a gang must not keep pods because its Job would be charged."""
        removed = await asyncio.gather(*(self._uncount(pod) for pod in pods))
        return {pod for pod, done in zip(pods, removed, strict=True) if done}

    async def _uncount(self, pod: PodKey) -> bool:
        async with self.semaphore:
            for _ in range(_ATTEMPTS):
                try:
                    current = await self.kube.request("GET", namespaced(PODS, *pod))
                    patch = uncount_patch(current)
                    if patch is None:
                        return False
                    await self.kube.request(
                        "PATCH", namespaced(PODS, *pod), body=patch, content_type=JSON_PATCH
                    )
                    return True
                except KubeError as error:
                    if error.status != _TEST_FAILED and not error.conflict:
                        if not error.not_found:
                            logger.warning("pod %s stays counted by its Job: %s", pod, error)
                        return False
                except (TimeoutError, OSError) as error:
                    logger.warning("pod %s stays counted by its Job: %s", pod, error)
                    return False
            logger.warning("pod %s stays counted by its Job: it kept changing", pod)
            return False

    async def _recount(self, pod: PodKey) -> None:
        async with self.semaphore:
            try:
                await self.kube.request(
                    "PATCH",
                    namespaced(PODS, *pod),
                    body=RECOUNT_PATCH,
                    content_type=STRATEGIC_MERGE_PATCH,
                )
            except (TimeoutError, OSError, KubeError) as error:
                logger.warning("pod %s kept, but no longer counted by its Job: %s", pod, error)
