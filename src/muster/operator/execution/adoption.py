"""Adopted PodGroups become Muster gangs, and are told their status back.

For each PodGroup of an adopted API (`muster run --adopt`) in an adopted namespace,
the leader creates the Muster PodGroup that `muster.api.adoption` makes of it (named
after it, owned by it), has its minCount follow `minMember`, and writes the status
`muster.api.adopted_status` reads off the Muster PodGroup back into the adopted one,
merged into the object (Volcano keeps status there) or through `/status`
(scheduler-plugins). Everything is keyed by the adopted PodGroup and worked from what
the informers last delivered, so a retry works on the latest version and a restart
redoes only what is missing. An adopted PodGroup whose `minResources` exceeds what
the schedulable nodes could ever give together is told so once (a Warning event,
`MinResourcesBeyondCluster`): advisory, the gang is still judged by its pods. A
Muster PodGroup of that name that the adopted one does not own is left alone, and
the adopted PodGroup is told so once. The Muster PodGroup's priority is resolved from
the class the adopted one names, as admission resolves a user's
(:func:`muster.api.priority.with_resolved_priority`): a class that does not exist, or
a system class, is told once (`AdoptionRefused`) and nothing is made.

Transient failures are retried on an exponential backoff per PodGroup; a refusal for
good is logged and retried once the objects change. Nothing is written once this
replica cannot prove it still leads.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

from muster.api.adopted_status import status_patch
from muster.api.adoption import (
    APIS,
    AdoptedApi,
    Adoption,
    adopted_owner,
    adopted_pod_group,
    min_member,
    owned_by,
)
from muster.api.constants import API_VERSION
from muster.api.keys import object_key
from muster.api.priority import PriorityError, with_resolved_priority
from muster.api.resize import min_count_patch
from muster.api.wire import JsonObject
from muster.client.kube import JSON_PATCH, MERGE_PATCH, Kube, KubeError, NotLeadingError
from muster.client.object_references import reference
from muster.client.objects import get_or_none
from muster.client.paths import POD_GROUPS, namespaced
from muster.client.retry import ExponentialBackoff
from muster.operator.execution.events import NORMAL, WARNING, EventRecorder
from muster.operator.execution.work_queue import WorkQueue
from muster.scheduler import beyond_cluster, label_selector
from muster.webhooks.priority import PriorityClassLister

logger = logging.getLogger(__name__)

WORKERS = 4
RETRY_INITIAL = 1.0
RETRY_MAX = 60.0

Key = tuple[str, str, str]  # the adopted API's name, namespace, name


class _ForeignPodGroups:
    """The sink of one adopted API's PodGroups."""

    def __init__(self, adopter: Adopter, api: AdoptedApi) -> None:
        self.adopter = adopter
        self.api = api

    def upsert(self, obj: JsonObject) -> bool:
        obj.setdefault("apiVersion", self.api.api_version)
        obj.setdefault("kind", "PodGroup")
        key = (self.api.name, *object_key(obj))
        self.adopter.foreign[key] = obj
        self.adopter.enqueue(key)
        return False

    def remove(self, obj: JsonObject) -> bool:
        self.adopter.foreign.pop((self.api.name, *object_key(obj)), None)
        return False  # its Muster PodGroup goes with it, by the garbage collector


class _Namespaces:
    """The sink of Namespaces: an adopted namespace's PodGroups are worked when its
    labels change, so a namespace labelled later is adopted then."""

    def __init__(self, adopter: Adopter) -> None:
        self.adopter = adopter

    def upsert(self, obj: JsonObject) -> bool:
        name = str((obj.get("metadata") or {}).get("name", ""))
        labels = dict((obj.get("metadata") or {}).get("labels") or {})
        if (obj.get("metadata") or {}).get("deletionTimestamp"):
            return self.remove(obj)  # going away: nothing more is created in it
        if self.adopter.namespace_labels.get(name) != labels:
            self.adopter.namespace_labels[name] = labels
            for key in [key for key in self.adopter.foreign if key[1] == name]:
                self.adopter.enqueue(key)
        return False

    def remove(self, obj: JsonObject) -> bool:
        self.adopter.namespace_labels.pop(str((obj.get("metadata") or {}).get("name", "")), None)
        return False


class Adopter:
    """Keeps each adopted PodGroup's Muster PodGroup made, sized and its status told.

    `foreign_sink(api)` takes an adopted API's PodGroups, `namespaces` the Namespaces,
    and the adopter itself (`upsert`, `remove`) the Muster PodGroups.
    """

    def __init__(
        self,
        kube: Kube,
        events: EventRecorder,
        adoption: Adoption,
        *,
        priority_classes: PriorityClassLister,
        still_leading: Callable[[], bool] = lambda: True,
        capacity: Callable[[], Mapping[str, int] | None] = lambda: None,
    ) -> None:
        """`capacity`: the summed allocatable of the schedulable nodes, None until the
        nodes are listed (nothing is prechecked before)."""
        self.kube = kube
        self.events = events
        self.adoption = adoption
        self.priority_classes = priority_classes
        self.still_leading = still_leading
        self.selector = label_selector(adoption.namespace_selector, "namespaceSelector")
        self.foreign: dict[Key, JsonObject] = {}
        self.made: dict[tuple[str, str], JsonObject] = {}
        self.namespace_labels: dict[str, Mapping[str, str]] = {}
        self.namespaces = _Namespaces(self)
        self.queue: WorkQueue[Key] = WorkQueue()
        self.backoffs: dict[Key, ExponentialBackoff] = {}
        self.capacity = capacity
        self.told: set[tuple[str, str, str]] = set()  # (uid, reason, message) warned of

    def foreign_sink(self, api: AdoptedApi) -> _ForeignPodGroups:
        return _ForeignPodGroups(self, api)

    def upsert(self, obj: JsonObject) -> bool:
        owner = adopted_owner(obj)
        if owner is not None:
            self.made[object_key(obj)] = obj
            self.enqueue((owner[0].name, *object_key(obj)))
        return False

    def remove(self, obj: JsonObject) -> bool:
        self.made.pop(object_key(obj), None)
        owner = adopted_owner(obj)
        if owner is not None:
            self.enqueue((owner[0].name, *object_key(obj)))  # made again if still adopted
        return False

    def enqueue(self, key: Key) -> None:
        self.queue.add(key)

    def adopts(self, namespace: str) -> bool:
        """Whether the namespace's labels match the adopted namespaces' selector (one
        being deleted matches none)."""
        labels = self.namespace_labels.get(namespace)
        if labels is None:
            return False
        return self.selector is None or self.selector.matches(labels)

    async def run(self) -> None:
        async with asyncio.TaskGroup() as workers:
            for _ in range(WORKERS):
                workers.create_task(self._work())

    async def _work(self) -> None:
        while True:
            key = await self.queue.take()
            try:
                await self._attempt(key)
            finally:
                self.queue.done(key)

    async def _attempt(self, key: Key) -> None:
        try:
            await self._adopt(key)
            self.backoffs.pop(key, None)
        except NotLeadingError:
            return
        except KubeError as error:
            if not error.transient:
                logger.warning("could not adopt PodGroup %s/%s: %s", key[1], key[2], error)
                return
            self._retry_later(key, error)
        except Exception as error:  # a bug must cost this group a retry, not the worker
            logger.exception("adopting PodGroup %s/%s failed", key[1], key[2])
            self._retry_later(key, error)

    def _retry_later(self, key: Key, error: Exception) -> None:
        backoff = self.backoffs.setdefault(
            key, ExponentialBackoff(initial=RETRY_INITIAL, maximum=RETRY_MAX)
        )
        delay = backoff.next()
        logger.warning("adopting %s/%s: %s; retrying in %.1fs", key[1], key[2], error, delay)
        asyncio.get_running_loop().call_later(delay, self.enqueue, key)

    async def _adopt(self, key: Key) -> None:
        foreign = self.foreign.get(key)
        if foreign is None or (foreign.get("metadata") or {}).get("deletionTimestamp"):
            return
        if not self.adopts(key[1]) or not self.still_leading():
            return
        api = APIS[key[0]]
        made = self.made.get(key[1:])
        if made is None:
            await self._create(key, foreign, api)
            return  # its status is told once the informer brings it
        if not owned_by(made, foreign):
            await self._tell_conflict(key, foreign)
            return
        await self._precheck(foreign)
        resize = min_count_patch(made, min_member(foreign))
        if resize is not None:
            path = namespaced(POD_GROUPS, key[1], key[2])
            await self.kube.request("PATCH", path, body=resize, content_type=JSON_PATCH)
        patch = status_patch(api, foreign, made)
        if patch is not None:
            await self._write_status(api, foreign, patch)

    async def _create(self, key: Key, foreign: JsonObject, api: AdoptedApi) -> None:
        """Create its Muster PodGroup; one of that name it does not own is told of."""
        try:
            pod_group = with_resolved_priority(
                adopted_pod_group(foreign, api), await self.priority_classes()
            )
        except PriorityError as error:
            await self._tell_refusal(foreign, str(error.problem))
            return
        path = namespaced(POD_GROUPS, key[1])
        try:
            await self.kube.request("POST", path, body=pod_group)
        except KubeError as error:
            if not error.conflict:
                raise
            existing = await get_or_none(self.kube, f"{path}/{key[2]}")
            if existing is not None and not owned_by(existing, foreign):
                await self._tell_conflict(key, foreign)
            return
        await self.events.record(
            reference(foreign),
            NORMAL,
            "Adopted",
            f"gang-scheduled by Muster: PodGroup.{API_VERSION.split('/')[0]} {key[2]}, "
            f"minCount {min_member(foreign)}",
        )

    async def _write_status(
        self, api: AdoptedApi, foreign: JsonObject, patch: dict[str, Any]
    ) -> None:
        namespace, name = object_key(foreign)
        path = namespaced(api.collection, namespace, name)
        if api.status_subresource:
            path += "/status"
        answer = await self.kube.request("PATCH", path, body=patch, content_type=MERGE_PATCH)
        key = (api.name, namespace, name)
        if key in self.foreign:
            self.foreign[key] = answer  # what the next comparison starts from

    async def _tell_conflict(self, key: Key, foreign: JsonObject) -> None:
        await self._warn_once(
            foreign,
            "AdoptionConflict",
            f"a Muster PodGroup {key[2]} exists that this PodGroup does not own; "
            "Muster leaves both alone",
        )

    async def _tell_refusal(self, foreign: JsonObject, problem: str) -> None:
        """Why no Muster PodGroup is made for it."""
        await self._warn_once(foreign, "AdoptionRefused", f"not gang-scheduled: {problem}")

    async def _precheck(self, foreign: JsonObject) -> None:
        """A `minResources` beyond what the schedulable nodes hold together; the gang
        is still judged by its pods."""
        allocatable = self.capacity()
        if allocatable is None:
            return
        message = beyond_cluster((foreign.get("spec") or {}).get("minResources"), allocatable)
        if message is not None:
            await self._warn_once(foreign, "MinResourcesBeyondCluster", message)

    async def _warn_once(self, foreign: JsonObject, reason: str, message: str) -> None:
        """A Warning event on the adopted object, once per object (by uid), reason and
        message: each cycle finds the same again until the object changes."""
        told = (str((foreign.get("metadata") or {}).get("uid", "")), reason, message)
        if told in self.told:
            return
        self.told.add(told)
        await self.events.record(reference(foreign), WARNING, reason, message)
