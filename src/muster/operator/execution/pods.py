"""What the operator does to pods: release, ungate, evict, delete — many at once.

Releasing is ONE strategic-merge patch per pod that removes our gate and pins the pod
to its planned node by name: a required node affinity term `matchFields
metadata.name In [node]`. The node's name, not its `kubernetes.io/hostname` label,
which differs from the name on many clouds' nodes. The API server lets a gated pod's
required node affinity change only by narrowing: a pod without required terms gains
one term, and a pod with terms keeps each of them with the requirement added (the
terms are ORed, so the pod still matches only nodes it matched before, and of those
only the planned one). This single patch is judged against the gated pod, so a pod
is never released without its pin.

The patch replaces the list of terms whole, so it is built from the pod's own terms,
as the engine read them on the pod it decided on: the plan's `Release` carries them.
A pod whose terms changed since is refused by the API server (the change would not
narrow), and released on a later cycle from its fresh terms.

Ungating removes the gate alone: for the pods no gang will ever hold (a Job whose
opt-in the API server dropped, `muster.scheduler.lifecycle.let_go`), there is no node to pin.

Both patches are conditional: each carries the pod's `metadata.resourceVersion` as
the cycle that decided it read the pod, and the API server applies it only to that
version of the pod (a patched object whose resourceVersion differs from the stored
one is refused with 409 Conflict, `registry.Store.Update`). So a release decided on a
pod that changed since, and above all the release of a leader that lost its Lease
while the write was on its way, after a new leader released, pinned or otherwise
wrote the pod, fails instead of landing. The version is the one of the cycle's
snapshot, never the cache's newest: a thawed leader's informers deliver the new
leader's writes before its queued releases go out, and a release carrying those
versions would land. A conflict is an observation like any failed release: the
engine releases the pod again on a later cycle, from the version its informers
delivered by then, whole (gate and pin in the one patch), never by reading the pod
and patching it here.

Every batch runs with bounded concurrency so a 1,000-pod gang does not open 1,000
connections at once, and none starts once this replica cannot prove it still leads.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from muster.api.constants import GANG_GATE
from muster.api.keys import PodKey
from muster.api.wire import JsonObject
from muster.client.kube import STRATEGIC_MERGE_PATCH, Kube, KubeError
from muster.client.paths import PODS, namespaced
from muster.scheduler import Requirement, Term
from muster.scheduler.decisions import Release

logger = logging.getLogger(__name__)

NODE_NAME_FIELD = "metadata.name"
NOT_LEADING = "not leading"

T = TypeVar("T")


def pinned_terms(node: str, terms: Sequence[Term]) -> list[JsonObject]:
    """The pin: required nodeSelectorTerms that narrow `terms` to the node named `node`."""
    requirement = {"key": NODE_NAME_FIELD, "operator": "In", "values": [node]}
    if not terms:
        return [{"matchFields": [requirement]}]
    return [
        {
            **(
                {"matchExpressions": [_written(item) for item in term.match_expressions]}
                if term.match_expressions
                else {}
            ),
            "matchFields": [*(_written(item) for item in term.match_fields), requirement],
        }
        for term in terms
    ]


def _written(requirement: Requirement) -> JsonObject:
    """A requirement as the API server writes it: without `values` when it has none
    (the server leaves empty lists out, and takes the pin as a narrowing only when
    each of the pod's own requirements comes back as it was)."""
    written: JsonObject = {"key": requirement.key, "operator": requirement.operator}
    if requirement.values:
        written["values"] = list(requirement.values)
    return written


def ungate_patch(version: str) -> JsonObject:
    """Remove the gang gate and nothing else, from the pod at `version` only, as a
    strategic-merge patch."""
    return {
        "metadata": {"resourceVersion": version},
        "spec": {"schedulingGates": [{"$patch": "delete", "name": GANG_GATE}]},
    }


def release_patch(node: str, version: str, terms: Sequence[Term] = ()) -> JsonObject:
    """Remove the gang gate and pin to `node`, from the pod at `version` only, in one
    strategic-merge patch."""
    patch = ungate_patch(version)
    patch["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": pinned_terms(node, terms)
            }
        }
    }
    return patch


@dataclass(frozen=True, slots=True)
class Failure:
    """Why an action failed on a pod: the API server's status (0: no answer, or not
    sent) and its message, the API's own words."""

    status: int
    message: str


@dataclass(frozen=True, slots=True)
class BatchOutcome:
    """Which pods an action succeeded on, and which failed with what; of those, the
    ones the API server refused outright (not throttled, not unanswered, not held
    back for want of leadership), where asking again at once would change nothing."""

    done: tuple[PodKey, ...]
    failed: dict[PodKey, Failure]
    refused: frozenset[PodKey] = frozenset()


class PodActions:
    """Release, evict and delete pods through the API server, `concurrency` at a time."""

    def __init__(
        self, kube: Kube, *, concurrency: int, still_leading: Callable[[], bool] = lambda: True
    ) -> None:
        self.kube = kube
        self.semaphore = asyncio.Semaphore(concurrency)
        self.still_leading = still_leading
        # Where the API server's answer to a release goes (the pod as it is now).
        self.answered: Callable[[JsonObject], object] = lambda pod: None

    async def release(self, release: Release, versions: Mapping[PodKey, str]) -> BatchOutcome:
        """Release each pod to its node, each only from its version in `versions`."""

        terms = dict(release.terms)

        def pod_of(item: tuple[str, str]) -> PodKey:
            return PodKey(release.group.namespace, item[0])

        async def one(item: tuple[str, str]) -> None:
            pod, (name, node) = pod_of(item), item
            patch = release_patch(node, _known(pod, versions), terms.get(name, ()))
            await self._patch(pod, patch)

        return await self._batch(list(release.placements), one, key=pod_of)

    async def ungate(self, pods: Iterable[PodKey], versions: Mapping[PodKey, str]) -> BatchOutcome:
        """Ungate each pod, each only from its version in `versions`."""

        async def one(pod: PodKey) -> None:
            await self._patch(pod, ungate_patch(_known(pod, versions)))

        return await self._batch(list(pods), one, key=lambda pod: pod)

    async def _patch(self, pod: PodKey, patch: JsonObject) -> None:
        """Patch the pod; the API server's answer (the pod as it is now) goes to `answered`."""
        answer = await self.kube.request(
            "PATCH", namespaced(PODS, *pod), body=patch, content_type=STRATEGIC_MERGE_PATCH
        )
        self.answered(answer)

    async def evict(self, pods: Iterable[PodKey]) -> BatchOutcome:
        """Evict through the Eviction API, so PodDisruptionBudgets have their say."""

        async def one(pod: PodKey) -> None:
            body = {
                "apiVersion": "policy/v1",
                "kind": "Eviction",
                "metadata": {"name": pod.name, "namespace": pod.namespace},
            }
            eviction = self.kube.request("POST", f"{namespaced(PODS, *pod)}/eviction", body=body)
            await self._ignoring_missing(eviction)

        return await self._batch(list(pods), one, key=lambda pod: pod)

    async def delete(self, pods: Iterable[PodKey]) -> BatchOutcome:
        async def one(pod: PodKey) -> None:
            await self._ignoring_missing(self.kube.request("DELETE", namespaced(PODS, *pod)))

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
        if not self.still_leading():
            unsent = Failure(0, NOT_LEADING)
            return BatchOutcome(done=(), failed={key(item): unsent for item in items})

        async def guarded(item: T) -> KubeError | None:
            async with self.semaphore:
                try:
                    await action(item)
                except KubeError as error:
                    logger.warning("pod %s: %s", key(item), error)
                    return error
                return None

        results = await asyncio.gather(*(guarded(item) for item in items))
        done = tuple(key(item) for item, error in zip(items, results, strict=True) if error is None)
        errors = {
            key(item): error
            for item, error in zip(items, results, strict=True)
            if error is not None
        }
        return BatchOutcome(
            done=done,
            failed={pod: _failure(error) for pod, error in errors.items()},
            refused=frozenset(pod for pod, error in errors.items() if _refusal(error)),
        )


def _known(pod: PodKey, versions: Mapping[PodKey, str]) -> str:
    """The pod's version, which its patch is conditional on; without one the patch
    would apply to whatever the pod is now (an empty resourceVersion is no
    precondition), so it is not sent."""
    version = versions.get(pod)
    if not version:
        raise KubeError(0, "NoResourceVersion", f"no resourceVersion known for pod {pod}")
    return version


def _failure(error: KubeError) -> Failure:
    return Failure(error.status, error.message)


def _refusal(error: KubeError) -> bool:
    """An answer that stands: anything but throttling, no answer, or no leadership."""
    return error.status != 0 and not error.throttled
