"""Job expansion: concurrent across Jobs, one at a time per Job, Workload first; a
resized gang Job's children follow its minCount."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from muster.api.constants import (
    COMPLETIONS_ANNOTATION,
    MIN_COUNT_ANNOTATION,
    PAUSED_ANNOTATION,
    POLICY_LABEL,
)
from muster.api.times import rfc3339
from muster.client.kube import KubeError, UnreachableError
from muster.operator.execution.expansion import RETRY_INITIAL, Expander
from muster.scheduler.memory.native_jobs import NATIVE_GRACE
from tests.unit.operator.virtual_time import on_virtual_time


def job(name: str, generation: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": "ml",
            "uid": f"{name}-uid",
            "generation": generation,
            "labels": {POLICY_LABEL: "gang"},
        },
        "spec": {
            "parallelism": 2,
            "template": {"spec": {"containers": [{"name": "worker", "image": "trainer"}]}},
        },
    }


class BlockingKube:
    """Creates objects (409 for one that exists); each create waits until `opened`.
    What it reads back is owned by no Job."""

    def __init__(self, log: list[str]) -> None:
        self.log = log
        self.existing: set[str] = set()
        self.in_flight = 0
        self.most_in_flight = 0
        self.opened = asyncio.Event()

    async def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> Any:
        if method == "GET":
            return {"metadata": {}}  # owned by no Job: nothing follows
        assert method == "POST"
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await self.opened.wait()
        finally:
            self.in_flight -= 1
        name = f"{body['kind']} {body['metadata']['name']}"
        if name in self.existing:
            raise KubeError(409, "AlreadyExists", name)
        self.existing.add(name)
        self.log.append(f"create {name}")
        return body


async def no_classes() -> list[dict[str, Any]]:
    return []


class LoggedEvents:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    async def record(self, involved: Any, kind: str, reason: str, message: str) -> None:
        self.log.append(f"event {reason}: {message.partition(' (')[0]}")


def job_expander(kube: Any, log: list[str], **options: Any) -> Expander:
    """The Job expander over a fake client, with no PriorityClass in the cluster."""
    return Expander(kube, LoggedEvents(log), kind="Job", priority_classes=no_classes, **options)  # type: ignore[arg-type]


def expander() -> tuple[Expander, BlockingKube, list[str]]:
    log: list[str] = []
    kube = BlockingKube(log)
    return job_expander(kube, log), kube, log


async def settle() -> None:
    for _ in range(50):
        await asyncio.sleep(0)


async def test_jobs_are_expanded_concurrently() -> None:
    jobs, kube, log = expander()
    for name in ("a", "b", "c"):
        jobs.upsert(job(name))
    worker = asyncio.create_task(jobs.run())
    await settle()
    assert kube.most_in_flight == 3
    kube.opened.set()
    await settle()
    worker.cancel()
    assert sum(entry.startswith("create PodGroup") for entry in log) == 3


async def test_the_workload_is_created_first_and_the_events_follow_both() -> None:
    jobs, kube, log = expander()
    kube.opened.set()
    jobs.upsert(job("train"))
    worker = asyncio.create_task(jobs.run())
    await settle()
    worker.cancel()
    assert log == [
        "create Workload train",
        "create PodGroup train",
        "event Created: created Workload train and PodGroup train",
    ]


async def test_a_job_changed_during_its_expansion_is_expanded_again_afterwards() -> None:
    jobs, kube, log = expander()
    jobs.upsert(job("train"))
    worker = asyncio.create_task(jobs.run())
    await settle()
    jobs.upsert(job("train", generation=2))
    await settle()
    assert kube.most_in_flight == 1
    kube.opened.set()
    await settle()
    worker.cancel()
    assert kube.most_in_flight == 1
    assert log.count("create PodGroup train") == 1
    assert jobs.done[("ml", "train")] == ("ml", "train", "train-uid", 2, "")


async def test_an_expanded_job_is_not_kept_and_its_updates_are_not_queued() -> None:
    jobs, kube, log = expander()
    kube.opened.set()
    jobs.upsert(job("train"))
    worker = asyncio.create_task(jobs.run())
    await settle()
    jobs.upsert(job("train"))  # a status update: the same spec, nothing to expand
    await settle()
    worker.cancel()
    assert (jobs.latest, len(jobs.queue)) == ({}, 0)
    assert log.count("create PodGroup train") == 1


class StoringKube:
    """Creates, reads and JSON-patches objects; 409 on creating one that exists."""

    def __init__(self, log: list[str], refuse_patches: bool = False) -> None:
        self.log = log
        self.objects: dict[str, Any] = {}
        self.refuse_patches = refuse_patches

    async def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> Any:
        if method == "POST":
            key = f"{path}/{body['metadata']['name']}"
            if key in self.objects:
                raise KubeError(409, "AlreadyExists", key)
            body = copy.deepcopy(body)
            body["metadata"]["ownerReferences"][0]["uid"] = "train-uid"
            self.objects[key] = body
            return body
        if method == "GET":
            return copy.deepcopy(self.objects[path])
        assert method == "PATCH"
        if isinstance(body, dict):  # a merge patch of annotations
            annotations = self.objects[path]["metadata"].setdefault("annotations", {})
            for name, value in body["metadata"]["annotations"].items():
                if value is None:
                    annotations.pop(name, None)
                else:
                    annotations[name] = value
            self.log.append(f"annotate {path.rsplit('/', 2)[-2]} {body['metadata']['annotations']}")
            return self.objects[path]
        if self.refuse_patches:
            raise KubeError(422, "Invalid", "minCount must be at least 1")
        test, replace = body
        target = self.objects[path]
        *parents, last = [int(p) if p.isdigit() else p for p in replace["path"].split("/")[1:]]
        for part in parents:
            target = target[part]
        assert target[last] == test["value"]
        target[last] = replace["value"]
        self.log.append(f"patch {path.rsplit('/', 2)[-2]} {replace['value']}")
        return self.objects[path]


async def expand_twice(kube: StoringKube, second: dict[str, Any]) -> Expander:
    jobs = job_expander(kube, kube.log)
    worker = asyncio.create_task(jobs.run())
    jobs.upsert(job("train"))
    await settle()
    jobs.upsert(second)
    await settle()
    worker.cancel()
    return jobs


async def expand_with_classes(
    classes: list[dict[str, Any]], *, running_for: float = 0.0
) -> tuple[StoringKube, list[str]]:
    """A gang Job of class `high` expanded in a cluster with these PriorityClasses (read
    at each try: a test may add one meanwhile), the expander kept running a while."""
    log: list[str] = []
    kube = StoringKube(log)

    async def listed() -> list[dict[str, Any]]:
        return classes

    jobs = Expander(kube, LoggedEvents(log), kind="Job", priority_classes=listed)  # type: ignore[arg-type]
    high = job("train")
    high["spec"]["template"]["spec"]["priorityClassName"] = "high"
    worker = asyncio.create_task(jobs.run())
    jobs.upsert(high)
    await settle()
    await asyncio.sleep(running_for)
    worker.cancel()
    return kube, log


async def test_the_podgroup_is_created_with_the_priority_of_its_class() -> None:
    high = {"metadata": {"name": "high"}, "value": 1000, "preemptionPolicy": "Never"}
    kube, _ = await expand_with_classes([high])
    [pod_group] = [made for made in kube.objects.values() if made["kind"] == "PodGroup"]
    assert pod_group["spec"]["priorityClassName"] == "high"
    assert (pod_group["spec"]["priority"], pod_group["spec"]["preemptionPolicy"]) == (
        1000,
        "Never",
    )


async def test_a_job_whose_class_is_missing_gets_nothing_and_is_told_once() -> None:
    """Neither a Workload nor a PodGroup (no Workload is left without its PodGroup),
    and one Warning naming the field and the class, however often it is retried."""
    kube, log = await expand_with_classes([])
    assert kube.objects == {}
    [told] = [entry for entry in log if entry.startswith("event ")]
    assert told == (
        'event InvalidOptIn: spec.template.spec.priorityClassName: PriorityClass "high" not found'
    )


async def test_a_resized_gang_job_has_its_workload_and_podgroup_follow() -> None:
    log: list[str] = []
    kube = StoringKube(log)
    grown = job("train", generation=2)
    grown["spec"]["parallelism"] = 4
    await expand_twice(kube, grown)
    assert log[-4:] == [
        "patch workloads 4",
        "event MinCountChanged: Workload train: minCount 2 -> 4",
        "patch podgroups 4",
        "event MinCountChanged: PodGroup train: minCount 2 -> 4",
    ]
    group = kube.objects["/apis/scheduling.muster.dev/v1beta1/namespaces/ml/podgroups/train"]
    assert group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 4}}


async def test_the_min_count_annotation_is_followed_without_a_new_generation() -> None:
    log: list[str] = []
    kube = StoringKube(log)
    smaller = job("train")
    smaller["metadata"]["annotations"] = {MIN_COUNT_ANNOTATION: "1"}
    await expand_twice(kube, smaller)
    assert "patch podgroups 1" in log


async def test_a_change_the_podgroup_refuses_is_told_on_the_job() -> None:
    log: list[str] = []
    kube = StoringKube(log, refuse_patches=True)
    grown = job("train", generation=2)
    grown["spec"]["parallelism"] = 3
    await expand_twice(kube, grown)
    assert (
        log[-1]
        == "event MinCountNotFollowed: PodGroup train keeps minCount 2: minCount must be at least 1"
    )


class FlakyKube(BlockingKube):
    """Fails the first creates with `failures`, one each, then behaves."""

    def __init__(self, log: list[str], failures: list[Exception]) -> None:
        super().__init__(log)
        self.failures = failures
        self.opened.set()

    async def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> Any:
        if self.failures:
            raise self.failures.pop(0)
        return await super().request(method, path, body=body)


@on_virtual_time
async def test_any_failure_is_retried_with_backoff_and_no_worker_dies() -> None:
    log: list[str] = []
    failures: list[Exception] = [
        UnreachableError("ServerDisconnectedError()", unsent=False),
        RuntimeError("a bug of our own"),
    ]
    jobs = job_expander(FlakyKube(log, failures), log)
    jobs.upsert(job("train"))
    worker = asyncio.create_task(jobs.run())
    for _ in range(100):
        await asyncio.sleep(0.05)
        if {"create PodGroup train", "create Workload train"} <= set(log):
            break
    assert not worker.done()
    worker.cancel()
    assert {"create PodGroup train", "create Workload train"} <= set(log)


async def test_nothing_is_expanded_without_leadership() -> None:
    log: list[str] = []
    kube = FlakyKube(log, [])
    jobs = job_expander(kube, log, still_leading=lambda: False)
    jobs.upsert(job("train"))
    worker = asyncio.create_task(jobs.run())
    await settle()
    worker.cancel()
    assert log == []


CREATED = 1_000_000.0


def native_job(name: str) -> dict[str, Any]:
    """A Job opted in with the native field only, created at `CREATED`."""
    made = job(name)
    del made["metadata"]["labels"]
    made["metadata"]["creationTimestamp"] = rfc3339(CREATED)
    made["spec"]["scheduling"] = {"schedulingPolicy": {"gang": {"minCount": 2}}}
    return made


class NativeKube(BlockingKube):
    """An API server with the native Workload API: `native` lists the Workloads in it."""

    def __init__(self, log: list[str]) -> None:
        super().__init__(log)
        self.native: list[dict[str, Any]] = []
        self.asked: list[float] = []
        self.opened.set()

    async def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> Any:
        if method == "GET" and path.startswith("/apis/scheduling.k8s.io/"):
            self.asked.append(asyncio.get_running_loop().time())
            return {"items": list(self.native)}
        return await super().request(method, path, body=body)


def native_expander() -> tuple[Expander, NativeKube, list[str]]:
    log: list[str] = []
    kube = NativeKube(log)
    running = asyncio.get_running_loop()
    jobs = job_expander(kube, log, clock=lambda: CREATED + 0.5 + running.time())
    return jobs, kube, log


@on_virtual_time
async def test_a_young_job_with_the_native_field_is_asked_about_again_once_its_grace_ends() -> None:
    jobs, kube, log = native_expander()
    jobs.upsert(native_job("train"))
    worker = asyncio.create_task(jobs.run())
    await asyncio.sleep(10.0)
    worker.cancel()
    assert kube.asked == [0.0, NATIVE_GRACE - 0.5]  # at once, then when the grace ends
    assert log[:2] == ["create Workload train", "create PodGroup train"]


@on_virtual_time
async def test_a_job_the_cluster_s_own_gang_scheduling_took_meanwhile_is_left_alone() -> None:
    jobs, kube, log = native_expander()
    jobs.upsert(native_job("train"))
    worker = asyncio.create_task(jobs.run())
    await asyncio.sleep(0.1)
    owner = {"uid": "train-uid", "kind": "Job", "name": "train"}
    kube.native.append({"metadata": {"name": "train-native", "ownerReferences": [owner]}})
    await asyncio.sleep(10.0)
    worker.cancel()
    assert log == ["event NativeGangScheduling: the cluster's own gang scheduling handles this Job"]


async def test_a_job_waiting_for_its_class_is_expanded_once_the_class_exists() -> None:
    """The first retry comes at most a second later (`RETRY_INITIAL`)."""
    classes: list[dict[str, Any]] = []
    high = {"metadata": {"name": "high"}, "value": 1000}
    asyncio.get_running_loop().call_later(0.1, classes.append, high)
    kube, log = await expand_with_classes(classes, running_for=RETRY_INITIAL + 0.3)
    assert sorted(made["kind"] for made in kube.objects.values()) == ["PodGroup", "Workload"]
    assert [entry.split(":")[0] for entry in log if entry.startswith("event ")] == [
        "event InvalidOptIn",
        "event Created",
    ]


async def test_a_paused_job_marks_its_pod_group_paused_until_it_runs_pods_again() -> None:
    """parallelism 0: the PodGroup shows as paused, not as waiting for its pods."""
    log: list[str] = []
    kube = StoringKube(log)
    paused = job("train", generation=2)
    paused["spec"]["parallelism"] = 0
    jobs = await expand_twice(kube, paused)
    pod_group = kube.objects["/apis/scheduling.muster.dev/v1beta1/namespaces/ml/podgroups/train"]
    assert pod_group["metadata"]["annotations"][PAUSED_ANNOTATION] == "parallelism 0"
    worker = asyncio.create_task(jobs.run())
    jobs.upsert(job("train", generation=3))
    await settle()
    worker.cancel()
    assert PAUSED_ANNOTATION not in pod_group["metadata"]["annotations"]
    assert log.count(f"annotate podgroups {{'{PAUSED_ANNOTATION}': None}}") == 1


async def test_a_job_s_completions_mark_its_pod_group_and_follow_the_job() -> None:
    """An elastic Indexed Job scales completions with parallelism: the mark follows, so
    that the gang's pods left to run are counted from the Job's completions now."""
    log: list[str] = []
    kube = StoringKube(log)
    scaled = job("train", generation=2)
    scaled["spec"] |= {"parallelism": 4, "completions": 4}
    jobs = await expand_twice(kube, scaled)
    pod_group = kube.objects["/apis/scheduling.muster.dev/v1beta1/namespaces/ml/podgroups/train"]
    assert pod_group["metadata"]["annotations"][COMPLETIONS_ANNOTATION] == "4"
    worker = asyncio.create_task(jobs.run())
    jobs.upsert(job("train", generation=3))  # completions unset: a work queue
    await settle()
    worker.cancel()
    assert COMPLETIONS_ANNOTATION not in pod_group["metadata"]["annotations"]
