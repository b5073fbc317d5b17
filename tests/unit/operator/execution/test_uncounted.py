"""Member pods of Jobs lose the Job's tracking finalizer before Muster takes them down."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from muster.api.constants import POD_GROUP_LABEL
from muster.api.keys import PodKey
from muster.client.kube import JSON_PATCH, STRATEGIC_MERGE_PATCH, KubeError
from muster.operator.execution.uncounted import (
    JOB_TRACKING_FINALIZER,
    UncountedPodActions,
    counted_by_job,
    uncount_patch,
)

NAMESPACE = "ml"


def job_pod(name: str = "train-0", **changes: Any) -> dict[str, Any]:
    """A released member pod of Job `train`, as the API server returns it."""
    pod: dict[str, Any] = {
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {POD_GROUP_LABEL: "train"},
            "ownerReferences": [{"kind": "Job", "name": "train", "controller": True}],
            "finalizers": ["example.com/keep", JOB_TRACKING_FINALIZER],
        },
        "status": {"phase": "Pending"},
    }
    pod["metadata"].update(changes.pop("metadata", {}))
    pod["status"].update(changes.pop("status", {}))
    return pod


def test_a_tracked_member_pod_of_a_job_is_counted() -> None:
    assert counted_by_job(job_pod())
    assert counted_by_job(job_pod(status={"phase": "Running"}))


@pytest.mark.parametrize(
    "changes",
    [
        {"metadata": {"labels": {}}},  # in no gang: a plain Job's pod keeps its accounting
        {"metadata": {"ownerReferences": [{"kind": "JobSet", "controller": True}]}},
        {"metadata": {"ownerReferences": [{"kind": "Job", "controller": False}]}},
        {"metadata": {"finalizers": []}},  # already counted, or never tracked
        {"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}},  # someone else's
        {"status": {"phase": "Failed"}},  # a real failure: the Job must count it
        {"status": {"phase": "Succeeded"}},
    ],
)
def test_pods_their_job_would_not_count_or_must_count_are_left_alone(
    changes: dict[str, Any],
) -> None:
    pod = job_pod(**changes)
    assert not counted_by_job(pod)
    assert uncount_patch(pod) is None


def test_the_patch_removes_the_finalizer_only_if_pod_and_finalizer_are_as_read() -> None:
    assert uncount_patch(job_pod(status={"phase": "Running"})) == [
        {"op": "test", "path": "/status/phase", "value": "Running"},
        {"op": "test", "path": "/metadata/finalizers/1", "value": JOB_TRACKING_FINALIZER},
        {"op": "remove", "path": "/metadata/finalizers/1"},
    ]


class FakeApi:
    """Pods by name; JSON patches with their tests, finalizer merges and evictions."""

    def __init__(self, *pods: dict[str, Any], refuse_eviction: set[str] | None = None) -> None:
        self.pods = {pod["metadata"]["name"]: pod for pod in pods}
        self.refuse_eviction = refuse_eviction or set()
        self.log: list[tuple[str, str]] = []
        self.before_patch: dict[str, Any] = {}  # name -> pod the next patch meets

    async def request(
        self, method: str, path: str, *, body: Any = None, content_type: str = "", **_: Any
    ) -> Any:
        await asyncio.sleep(0)
        parts = path.split("/")
        name = parts[6]
        if name not in self.pods:
            raise KubeError(404, "NotFound", name)
        pod = self.pods[name]
        self.log.append((method, "/".join(parts[7:]) or name))
        if method == "GET":
            return copy.deepcopy(pod)
        if method == "PATCH" and content_type == JSON_PATCH:
            if name in self.before_patch:
                pod = self.pods[name] = self.before_patch.pop(name)
            return self._json_patch(pod, body)
        if method == "PATCH" and content_type == STRATEGIC_MERGE_PATCH:
            finalizers = pod["metadata"].setdefault("finalizers", [])
            finalizers.extend(f for f in body["metadata"]["finalizers"] if f not in finalizers)
            return pod
        if method == "POST" and name in self.refuse_eviction:
            raise KubeError(429, "TooManyRequests", "disruption budget")
        del self.pods[name]
        return {}

    @staticmethod
    def _json_patch(pod: dict[str, Any], patch: list[dict[str, Any]]) -> dict[str, Any]:
        for op in patch:
            *_, field, index = op["path"].split("/")
            if op["path"] == "/status/phase":
                actual = pod["status"]["phase"]
            else:
                finalizers = pod["metadata"]["finalizers"]
                actual = finalizers[int(index)] if int(index) < len(finalizers) else None
            if op["op"] == "test" and actual != op["value"]:
                raise KubeError(422, "", "testing value failed")
            if op["op"] == "remove":
                del pod["metadata"][field][int(index)]
        return pod


def actions(api: FakeApi) -> UncountedPodActions:
    return UncountedPodActions(api, concurrency=4)  # type: ignore[arg-type]


def test_an_evicted_member_pod_loses_the_finalizer_first() -> None:
    api = FakeApi(job_pod("train-0"))
    outcome = asyncio.run(actions(api).evict([PodKey(NAMESPACE, "train-0")]))
    assert outcome.done == (PodKey(NAMESPACE, "train-0"),)
    assert api.log == [("GET", "train-0"), ("PATCH", "train-0"), ("POST", "eviction")]


def test_a_pod_whose_eviction_is_refused_gets_its_finalizer_back() -> None:
    api = FakeApi(job_pod("train-0"), job_pod("train-1"), refuse_eviction={"train-1"})
    outcome = asyncio.run(
        actions(api).evict([PodKey(NAMESPACE, "train-0"), PodKey(NAMESPACE, "train-1")])
    )
    assert set(outcome.failed) == {PodKey(NAMESPACE, "train-1")}
    assert api.pods["train-1"]["metadata"]["finalizers"] == [
        "example.com/keep",
        JOB_TRACKING_FINALIZER,
    ]


def test_a_pod_that_finished_between_read_and_patch_keeps_its_finalizer() -> None:
    api = FakeApi(job_pod("train-0"))
    api.before_patch["train-0"] = job_pod("train-0", status={"phase": "Failed"})
    asyncio.run(actions(api).delete([PodKey(NAMESPACE, "train-0")]))
    # Read again after the failed test: a finished pod is the Job's to count.
    assert api.log == [
        ("GET", "train-0"),
        ("PATCH", "train-0"),
        ("GET", "train-0"),
        ("DELETE", "train-0"),
    ]


def test_a_pod_already_gone_is_no_failure() -> None:
    api = FakeApi()
    outcome = asyncio.run(actions(api).evict([PodKey(NAMESPACE, "gone")]))
    assert outcome.done == (PodKey(NAMESPACE, "gone"),)
