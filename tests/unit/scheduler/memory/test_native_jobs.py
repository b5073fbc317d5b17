"""Whether the cluster's own gang scheduling has a Job: its Workload, or too early to tell."""

from __future__ import annotations

from typing import Any

from muster.api.times import rfc3339
from muster.scheduler.memory.native_jobs import NATIVE_GRACE, AskAgain, native_owner

CREATED = 1_000_000.0
JOB: dict[str, Any] = {"metadata": {"uid": "job-uid", "creationTimestamp": rfc3339(CREATED)}}


def workload(name: str, owner_uid: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "ownerReferences": [{"uid": owner_uid}]}}


def test_the_workload_the_job_owns_is_the_cluster_s() -> None:
    workloads = [workload("other", "other-uid"), workload("native", "job-uid")]
    assert native_owner(JOB, workloads, now=CREATED) == "native"


def test_a_young_job_without_one_is_asked_about_again_when_its_grace_ends() -> None:
    assert native_owner(JOB, [], now=CREATED + 1.0) == AskAgain(CREATED + NATIVE_GRACE)
    assert native_owner(JOB, [workload("other", "other-uid")], now=CREATED + NATIVE_GRACE) is None


def test_a_job_without_a_creation_time_is_taken_at_once() -> None:
    assert native_owner({"metadata": {"uid": "job-uid"}}, [], now=0.0) is None
