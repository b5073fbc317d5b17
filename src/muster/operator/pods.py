"""The three things the operator does to pods: release, evict, delete — many at once.

Releasing is ONE strategic-merge patch per pod that removes our gate and pins the pod
to its planned node with a `kubernetes.io/hostname` nodeSelector. The API server
allows adding a nodeSelector only while the pod is still gated, and this single
patch is judged against the gated pod, so a pod is never released without its pin.
Every batch runs with bounded concurrency so a 1,000-pod gang does not open 1,000
connections at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from muster.api.constants import GANG_GATE
from muster.operator.kube import STRATEGIC_MERGE_PATCH, Kube, KubeError
from muster.scheduler.results import PodKey

logger = logging.getLogger(__name__)

HOSTNAME_LABEL = "kubernetes.io/hostname"

T = TypeVar("T")


def release_patch(node: str) -> dict[str, object]:
    """Remove the gang gate and pin to `node`, in one strategic-merge patch."""
    return {
        "spec": {
            "schedulingGates": [{"$patch": "delete", "name": GANG_GATE}],
            "nodeSelector": {HOSTNAME_LABEL: node},
        }
    }


def pod_path(pod: PodKey) -> str:
    return f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}"


@dataclass(frozen=True, slots=True)
class BatchOutcome:
    """Which pods an action succeeded on, and which failed with what."""

    done: tuple[PodKey, ...]
    failed: dict[PodKey, str]


class PodActions:
    """Release, evict and delete pods through the API server, `concurrency` at a time."""

    def __init__(self, kube: Kube, *, concurrency: int) -> None:
        self.kube = kube
        self.semaphore = asyncio.Semaphore(concurrency)

    async def release(self, placements: Iterable[tuple[PodKey, str]]) -> BatchOutcome:
        async def one(item: tuple[PodKey, str]) -> None:
            pod, node = item
            await self.kube.request(
                "PATCH",
                pod_path(pod),
                body=release_patch(node),
                content_type=STRATEGIC_MERGE_PATCH,
            )

        return await self._batch(list(placements), one, key=lambda item: item[0])

    async def evict(self, pods: Iterable[PodKey]) -> BatchOutcome:
        """Evict through the Eviction API, so PodDisruptionBudgets have their say."""

        async def one(pod: PodKey) -> None:
            body = {
                "apiVersion": "policy/v1",
                "kind": "Eviction",
                "metadata": {"name": pod.name, "namespace": pod.namespace},
            }
            eviction = self.kube.request("POST", f"{pod_path(pod)}/eviction", body=body)
            await self._ignoring_missing(eviction)

        return await self._batch(list(pods), one, key=lambda pod: pod)

    async def delete(self, pods: Iterable[PodKey]) -> BatchOutcome:
        async def one(pod: PodKey) -> None:
            await self._ignoring_missing(self.kube.request("DELETE", pod_path(pod)))

        return await self._batch(list(pods), one, key=lambda pod: pod)

    @staticmethod
    async def _ignoring_missing(request: Awaitable[object]) -> None:
        try:
            await request
        except KubeError as error:
            if not error.not_found:
                raise

    async def _batch(
        self, items: list[T], action: Callable[[T], Awaitable[None]], *, key: Callable[[T], PodKey]
    ) -> BatchOutcome:
        async def guarded(item: T) -> str | None:
            async with self.semaphore:
                try:
                    await action(item)
                except (TimeoutError, KubeError, OSError) as error:
                    logger.warning("pod %s: %s", key(item), error)
                    return str(error)
                return None

        results = await asyncio.gather(*(guarded(item) for item in items))
        done = tuple(key(item) for item, error in zip(items, results, strict=True) if error is None)
        failed = {
            key(item): error
            for item, error in zip(items, results, strict=True)
            if error is not None
        }
        return BatchOutcome(done=done, failed=failed)
