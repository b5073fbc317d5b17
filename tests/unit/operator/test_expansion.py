"""Job expansion: concurrent across Jobs, one at a time per Job, PodGroup first."""

from __future__ import annotations

import asyncio
from typing import Any

from muster.api.constants import POLICY_LABEL
from muster.operator.expansion import Expander
from muster.operator.kube import KubeError, UnreachableError


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
    """Creates objects (409 for one that exists); each create waits until `opened`."""

    def __init__(self, log: list[str]) -> None:
        self.log = log
        self.existing: set[str] = set()
        self.in_flight = 0
        self.most_in_flight = 0
        self.opened = asyncio.Event()

    async def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> Any:
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


class LoggedEvents:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    async def record(self, involved: Any, kind: str, reason: str, message: str) -> None:
        self.log.append(f"event {reason}: {message.partition(' (')[0]}")


def expander() -> tuple[Expander, BlockingKube, list[str]]:
    log: list[str] = []
    kube = BlockingKube(log)
    return Expander(kube, LoggedEvents(log), kind="Job"), kube, log  # type: ignore[arg-type]


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


async def test_the_podgroup_is_created_first_and_the_events_follow_both() -> None:
    jobs, kube, log = expander()
    kube.opened.set()
    jobs.upsert(job("train"))
    worker = asyncio.create_task(jobs.run())
    await settle()
    worker.cancel()
    assert log == [
        "create PodGroup train",
        "create Workload train",
        "event Created: created PodGroup train",
        "event Created: created Workload train",
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
    assert ("ml", "train", "train-uid", 2) in jobs.done


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


async def test_any_failure_is_retried_with_backoff_and_no_worker_dies() -> None:
    log: list[str] = []
    failures: list[Exception] = [
        UnreachableError("ServerDisconnectedError()", unsent=False),
        RuntimeError("a bug of our own"),
    ]
    jobs = Expander(FlakyKube(log, failures), LoggedEvents(log), kind="Job")  # type: ignore[arg-type]
    jobs.upsert(job("train"))
    worker = asyncio.create_task(jobs.run())
    for _ in range(100):
        await asyncio.sleep(0.05)
        if "create Workload train" in log:
            break
    assert not worker.done()
    worker.cancel()
    assert log[:2] == ["create PodGroup train", "create Workload train"]


async def test_nothing_is_expanded_without_leadership() -> None:
    log: list[str] = []
    kube = FlakyKube(log, [])
    jobs = Expander(kube, LoggedEvents(log), kind="Job", still_leading=lambda: False)  # type: ignore[arg-type]
    jobs.upsert(job("train"))
    worker = asyncio.create_task(jobs.run())
    await settle()
    worker.cancel()
    assert log == []
