"""Jobs and Workloads become PodGroups: create what `muster.api.expand` says, idempotently.

An opted-in Job gets a Workload and a PodGroup named after it; a user's Workload gets
one PodGroup per template. All are created with owner references, so the garbage
collector removes them with their owner, and creation is idempotent (an object that
already exists is left alone), so replaying a Job after a restart or a relist costs
one rejected create and nothing else. The Workload comes first: a PodGroup is
admitted only once the Workload it refers to exists.

The admission webhooks leave the operator's own writes alone (a match condition on
its user): what it creates comes from a Job or Workload they admitted already. So a
PodGroup's priority, which their mutating webhook resolves for anyone else's, is
resolved here, from the replica's PriorityClasses, by the same function
(:func:`muster.api.priority.resolve_priority`), before anything is created: a Job
whose pods name a PriorityClass that does not exist gets neither a Workload nor a
PodGroup, and is told so by a Warning event (`InvalidOptIn`, once per Job
generation; the gating webhook refuses such a Job when it is up), and is expanded
again on a backoff while it waits, so a class created later is taken up.

A gang Job whose size changes (parallelism, the native minCount, or the min-count
annotation) has the minCount of its existing Workload template and PodGroup follow,
as the 1.37 Job controller does (:mod:`muster.api.resize`); a PodGroup that refuses
the change is told on the Job. Invalid opt-ins are told to the user as a Warning
event on the Job, once per Job generation. Several objects are expanded at once,
but never one object twice at the same time.

Any failure of an expansion (the API server unreachable, throttling, an error of our
own) is retried while the object exists, each object on an exponential backoff with
jitter of its own; a worker never dies of one. An object the API server refuses for
good (invalid, forbidden) is retried only once it changes. Nothing is expanded once
this replica cannot prove it still leads.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from muster.api.constants import (
    COMPLETIONS_ANNOTATION,
    MIN_COUNT_ANNOTATION,
    PAUSED_ANNOTATION,
    TEMPLATES_ANNOTATION,
)
from muster.api.expand import (
    MANAGED_BY,
    MANAGED_BY_LABEL,
    expand_job,
    expand_workload,
    job_marks,
    template_names,
)
from muster.api.keys import object_key
from muster.api.optin import OptInError, carries_opt_in, read_job_opt_in
from muster.api.priority import PriorityError, with_resolved_priority
from muster.api.problems import Problem
from muster.api.resize import current_min_count, min_count_patch
from muster.api.validation import JOB_PRIORITY_CLASS, validate_job
from muster.api.wire import JsonObject
from muster.client.kube import JSON_PATCH, MERGE_PATCH, Kube, KubeError, NotLeadingError
from muster.client.object_references import reference
from muster.client.objects import get_or_none
from muster.client.paths import POD_GROUPS, WORKLOADS, namespaced
from muster.client.retry import ExponentialBackoff
from muster.operator.execution.events import NORMAL, WARNING, EventRecorder
from muster.operator.execution.work_queue import WorkQueue
from muster.scheduler import AskAgain, native_owner
from muster.webhooks.priority import PriorityClassLister

logger = logging.getLogger(__name__)

RETRY_INITIAL = 1.0
RETRY_MAX = 60.0
NATIVE_API = "scheduling.k8s.io/v1beta1"
WORKERS = 32


class _NotYetError(Exception):
    """Too early to tell whether the cluster's own gang scheduling takes the Job."""

    def __init__(self, at: float) -> None:
        super().__init__(at)
        self.at = at


_COLLECTIONS = {"PodGroup": POD_GROUPS, "Workload": WORKLOADS}


def _collection(obj: Mapping[str, Any]) -> str:
    """The API path of the collection a PodGroup or Workload is created in."""
    return namespaced(_COLLECTIONS[obj["kind"]], obj["metadata"]["namespace"])


def _identity(obj: Mapping[str, Any]) -> tuple[str, str, str, int, str]:
    """What, when it changes, makes an object worth expanding again: its spec
    (the generation), and a Job's min-count annotation, which changes no generation."""
    metadata = obj.get("metadata") or {}
    return (
        *object_key(obj),
        str(metadata.get("uid", "")),
        int(metadata.get("generation") or 0),
        str((metadata.get("annotations") or {}).get(MIN_COUNT_ANNOTATION, "")),
    )


class Expander:
    """Queues Jobs and Workloads from their informers and creates their children.

    One expander per kind (`Job` or `Workload`). The queue holds keys; the object is
    looked up when its turn comes, so a retry always works on the latest version and
    stops once the object is deleted.
    """

    def __init__(
        self,
        kube: Kube,
        events: EventRecorder,
        *,
        kind: str,
        priority_classes: PriorityClassLister,
        still_leading: Callable[[], bool] = lambda: True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.kube = kube
        self.priority_classes = priority_classes
        self.clock = clock
        self.events = events
        self.kind = kind
        self.still_leading = still_leading
        self.backoffs: dict[tuple[str, str], ExponentialBackoff] = {}
        self.queue: WorkQueue[tuple[str, str]] = WorkQueue()
        # Objects waiting to be expanded; one expanded as it is leaves only its identity
        # in `done`, so the Jobs a cluster keeps after they finish cost next to nothing.
        self.latest: dict[tuple[str, str], JsonObject] = {}
        self.done: dict[tuple[str, str], tuple[str, str, str, int, str]] = {}
        # The identity of each object last told about a problem: told once per version.
        self.told: dict[tuple[str, str], tuple[str, str, str, int, str]] = {}

    def upsert(self, obj: JsonObject) -> bool:
        if self.kind == "Job" and not carries_opt_in(obj):
            self.remove(obj)  # it may have opted out; it never keeps a place in memory
            return False
        key = object_key(obj)
        if self.done.get(key) == _identity(obj):
            return False
        self.latest[key] = obj
        self.queue.add(key)
        return False

    def remove(self, obj: JsonObject) -> bool:
        key = object_key(obj)
        self.latest.pop(key, None)
        self.backoffs.pop(key, None)
        self.done.pop(key, None)
        self.told.pop(key, None)
        return False

    async def run(self) -> None:
        """Work the queue forever with `WORKERS` workers; a failed object is retried
        while it exists.

        Each expansion waits on a few API round trips, so one worker would queue a
        burst of Jobs behind each other while their pods wait gated for their PodGroups.
        """
        async with asyncio.TaskGroup() as workers:
            for _ in range(WORKERS):
                workers.create_task(self._work())

    async def _work(self) -> None:
        while True:
            key = await self.queue.take()
            try:
                await self._expand(key)
            finally:
                self.queue.done(key)

    async def _expand(self, key: tuple[str, str]) -> None:
        obj = self.latest.get(key)
        if obj is None:
            return
        if self.done.get(key) == _identity(obj):
            del self.latest[key]
            return
        if (obj.get("metadata") or {}).get("deletionTimestamp"):
            return  # going away: its children go with it
        if not self.still_leading():
            return  # the next leader expands it
        try:
            if self.kind == "Job":
                await self._expand_job(obj)
            else:
                await self._expand_workload(obj)
            self.done[key] = _identity(obj)
            self.backoffs.pop(key, None)
            if self.latest.get(key) is obj:
                del self.latest[key]
        except NotLeadingError:
            return
        except PriorityError as error:  # told on the Job; its class may be created later
            logger.info("not expanding %s yet: %s", reference(obj), error)
            self._retry_later(key, obj, error, log=logger.info)
        except KubeError as error:
            if not error.transient:
                logger.warning("could not expand %s: %s", reference(obj), error)
                return
            self._retry_later(key, obj, error)
        except _NotYetError as early:
            delay = max(0.0, early.at - self.clock())
            asyncio.get_running_loop().call_later(delay, self.queue.add, key)
        except Exception as error:  # a bug must cost this object a retry, not the worker
            logger.exception("expanding %s failed", reference(obj))
            self._retry_later(key, obj, error)

    def _retry_later(
        self,
        key: tuple[str, str],
        obj: JsonObject,
        error: Exception,
        log: Callable[..., None] = logger.warning,
    ) -> None:
        backoff = self.backoffs.setdefault(
            key, ExponentialBackoff(initial=RETRY_INITIAL, maximum=RETRY_MAX)
        )
        delay = backoff.next()
        log("could not expand %s: %s; retrying in %.1fs", reference(obj), error, delay)
        asyncio.get_running_loop().call_later(delay, self.queue.add, key)

    async def _tell_invalid(self, job: JsonObject, problems: list[Problem]) -> None:
        """The Job's Warning event naming every problem, once per version of the Job."""
        key, identity = object_key(job), _identity(job)
        if self.told.get(key) == identity:
            return
        self.told[key] = identity
        message = "; ".join(str(problem) for problem in problems)
        await self.events.record(reference(job), WARNING, "InvalidOptIn", message)

    async def _expand_job(self, job: JsonObject) -> None:
        problems = validate_job(job)
        if problems:  # what the webhook refuses, when it was down or skipped
            await self._tell_invalid(job, problems)
            return
        try:
            opt_in = read_job_opt_in(job)
        except OptInError as error:  # validate_job reports these: never here
            await self._tell_invalid(job, error.problems)
            return
        if opt_in is None:
            return
        if opt_in.source == "field":
            native = await self._native_workload(job)
            if native is not None:
                await self.events.record(
                    reference(job),
                    NORMAL,
                    "NativeGangScheduling",
                    f"the cluster's own gang scheduling handles this Job (Workload {native}); "
                    "Muster leaves it alone",
                )
                return
        if opt_in.label_ignored:
            await self.events.record(
                reference(job),
                WARNING,
                "OptInLabelIgnored",
                "spec.scheduling is set, so it decides how this Job is scheduled; "
                "the scheduling.muster.dev/policy label and annotations are ignored",
            )
        expansion = expand_job(job, opt_in)
        try:
            pod_group = await self._with_priority(expansion.pod_group)
        except PriorityError as error:  # nothing made: no Workload without its PodGroup
            # The group's class is its pods' (`expand_job`): the Job names it there.
            await self._tell_invalid(job, [Problem(JOB_PRIORITY_CLASS, error.problem.message)])
            raise
        # The Workload first, as the PodGroup's admission requires it, and both before
        # the events: the Job's pods wait gated for their PodGroup.
        children = (expansion.workload, pod_group)
        created = [child for child in children if await self._create(child)]
        if opt_in.min_count is not None:
            for child in children:
                if child not in created:
                    await self._follow_min_count(job, child, opt_in.min_count)
        if created:  # one event for both: a burst of Jobs tells one per Job
            names = " and ".join(f"{made['kind']} {made['metadata']['name']}" for made in created)
            pod_group = expansion.pod_group["metadata"]["name"]
            await self.events.record(
                reference(job),
                NORMAL,
                "Created",
                f"created {names} ({opt_in.policy}, from the {opt_in.source}); why the gang "
                f"waits or runs: kubectl describe podgroup {pod_group}",
            )

    async def _native_workload(self, job: JsonObject) -> str | None:
        """The name of the native Workload the cluster made for the Job, or None
        (`native_owner` decides; `_NotYetError` when it is too early to tell)."""
        namespace = (job.get("metadata") or {}).get("namespace")
        path = f"/apis/{NATIVE_API}/namespaces/{namespace}/workloads"
        try:
            workloads = await self.kube.request("GET", path)
        except KubeError as error:
            if error.not_found:
                return None  # no native API, no native scheduling
            raise
        owner = native_owner(job, workloads.get("items") or [], now=self.clock())
        if isinstance(owner, AskAgain):
            raise _NotYetError(owner.at)
        return owner

    async def _expand_workload(self, workload: JsonObject) -> None:
        metadata = workload.get("metadata") or {}
        if (metadata.get("labels") or {}).get(MANAGED_BY_LABEL) == MANAGED_BY:
            return  # made for a Job, which has its PodGroup already
        for pod_group in expand_workload(workload):
            await self._create(await self._with_priority(pod_group))
        names = template_names(workload)
        if (metadata.get("annotations") or {}).get(TEMPLATES_ANNOTATION) != names:
            path = namespaced(WORKLOADS, *object_key(workload))
            patch = {"metadata": {"annotations": {TEMPLATES_ANNOTATION: names}}}
            await self.kube.request("PATCH", path, body=patch, content_type=MERGE_PATCH)

    async def _follow_min_count(self, job: JsonObject, child: JsonObject, min_count: int) -> None:
        """Give the Job's existing Workload or PodGroup the Job's gang size.

        Only a child the Job owns is changed; one that its own admission refuses
        (a rule of the PodGroup's) is left as it is, and the Job is told why.
        """
        path = f"{_collection(child)}/{child['metadata']['name']}"
        current = await get_or_none(self.kube, path)
        if current is None:
            return
        owners = (current.get("metadata") or {}).get("ownerReferences") or []
        if not any(owner.get("uid") == job["metadata"].get("uid") for owner in owners):
            return
        if child["kind"] == "PodGroup":
            await self._follow_marks(job, path, current)
        patch = min_count_patch(current, min_count)
        if patch is None:
            return
        kind, name = child["kind"], child["metadata"]["name"]
        try:
            await self.kube.request("PATCH", path, body=patch, content_type=JSON_PATCH)
        except KubeError as error:
            if error.transient:
                raise
            await self.events.record(
                reference(job),
                WARNING,
                "MinCountNotFollowed",
                f"{kind} {name} keeps minCount {current_min_count(current)}: {error.message}",
            )
            return
        await self.events.record(
            reference(job),
            NORMAL,
            "MinCountChanged",
            f"{kind} {name}: minCount {current_min_count(current)} -> {min_count}",
        )

    async def _follow_marks(self, job: JsonObject, path: str, pod_group: JsonObject) -> None:
        """Keep the Job's PodGroup marked as the Job is now (`job_marks`): paused while
        it runs no pods, and its number of completions."""
        wanted = job_marks(job)
        annotations = (pod_group.get("metadata") or {}).get("annotations") or {}
        changed = {
            key: wanted.get(key)  # None removes it
            for key in (PAUSED_ANNOTATION, COMPLETIONS_ANNOTATION)
            if annotations.get(key) != wanted.get(key)
        }
        if not changed:
            return
        patch = {"metadata": {"annotations": changed}}
        await self.kube.request("PATCH", path, body=patch, content_type=MERGE_PATCH)

    async def _with_priority(self, pod_group: JsonObject) -> JsonObject:
        """The PodGroup with the priority its webhook would give it; raises
        `PriorityError` where that webhook would refuse it."""
        return with_resolved_priority(pod_group, await self.priority_classes())

    async def _create(self, obj: JsonObject) -> bool:
        """Create the object; False when it existed already."""
        try:
            await self.kube.request("POST", _collection(obj), body=obj)
        except KubeError as error:
            if error.conflict:
                return False
            raise
        return True
