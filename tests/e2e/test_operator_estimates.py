"""Start-time estimates on the real control plane: a gang behind a running one is told
when it starts, and starts then."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from devtools.factories import NodePool, gang_job
from devtools.kubectl import Kubectl
from devtools.operator import OperatorProcess
from devtools.waiting import wait_until

from muster.api.constants import CRON_JOB_ANNOTATION, EXPECTED_RUNTIME_ANNOTATION
from tests.e2e.support.harness import (
    POD_GROUPS,
    explained,
    group_status,
    pod_group,
    pods_of,
    wait_all_bound,
    wait_for_reason,
)

pytestmark = pytest.mark.e2e


def _time(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_a_gang_behind_a_running_one_is_told_when_it_starts_and_starts_then(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    pool.add(gpus=4)
    declared = {EXPECTED_RUNTIME_ANNOTATION: "60s"}
    kubectl.apply(gang_job("a", pool, workers=4, annotations=declared, run_for="60s"), namespace)
    wait_all_bound(kubectl, namespace, "a", 4)
    wait_until(
        "a's pods to run",
        lambda: all(
            (pod.get("status") or {}).get("startTime") for pod in pods_of(kubectl, namespace, "a")
        ),
    )
    kubectl.apply(gang_job("b", pool, workers=4, annotations=declared, run_for="5s"), namespace)

    def estimated() -> str | None:
        # group_status: {} until the operator has made b's PodGroup from its Job.
        value = group_status(kubectl, namespace, "b").get("estimatedStartTime")
        return str(value) if value else None

    wait_until("b to have an estimated start", lambda: estimated() is not None, timeout=45)
    estimate = _time(str(estimated()))
    started = max(_time(pod["status"]["startTime"]) for pod in pods_of(kubectl, namespace, "a"))
    assert abs(estimate - (started + 60)) <= 5, (estimate, started)
    status = pod_group(kubectl, namespace, "b")["status"]
    assert status["estimate"]["basis"] == "declared"
    assert (
        "when " + namespace + "/a ends (expected runtime 60s, declared)"
        in (status["estimate"]["waitingFor"])
    )
    listing = kubectl("get", POD_GROUPS, "-n", namespace).stdout
    assert "START" in listing.splitlines()[0]

    submitted = _time(pod_group(kubectl, namespace, "b")["metadata"]["creationTimestamp"])
    wait_for_reason(kubectl, namespace, "b", "Scheduled", timeout=120)
    admitted = _time(pod_group(kubectl, namespace, "b")["status"]["admittedAt"])
    wait = admitted - submitted
    error = abs(admitted - estimate)
    print(f"b waited {wait:.0f}s; estimate off by {error:.1f}s")
    assert error <= max(15.0, 0.25 * wait)


def test_a_gang_that_never_fits_says_never_beside_a_pod_of_unknown_runtime(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    """A running gang without a declared runtime does not hide that a gang larger than
    its nodes can ever hold will never start: START says `never`, and explain why,
    once its pods have stopped arriving."""
    pool.add(gpus=4)
    kubectl.apply(gang_job("unknown", pool, workers=1), namespace)
    wait_all_bound(kubectl, namespace, "unknown", 1)
    kubectl.apply(gang_job("huge", pool, workers=2, gpus=4), namespace)

    def start() -> str | None:
        estimate = (pod_group(kubectl, namespace, "huge").get("status") or {}).get("estimate")
        return None if not estimate else str(estimate.get("start"))

    # While its pods may still be arriving (the engine's arrival grace) a gang is not
    # yet told `never`: one more pod could change what it needs.
    wait_until("huge to be told never", lambda: start() == "never", timeout=45)
    status = pod_group(kubectl, namespace, "huge")["status"]
    assert status["estimate"]["waitingFor"].startswith("it does not fit even on an empty cluster: ")
    assert "unknown runtime" not in status["estimate"]["waitingFor"]
    assert "estimatedStartTime" not in status
    listing = kubectl("get", POD_GROUPS, "-n", namespace).stdout.splitlines()
    header = listing[0].split()
    (row,) = [line.split() for line in listing[1:] if line.split()[0] == "huge"]
    assert row[header.index("START")] == "never"
    text = explained(operator, namespace, "huge")
    assert "Start:    never" in text
    assert "nvidia.com/gpu (needs 8, 4 allocatable)" in text


def test_a_cron_jobs_job_names_its_cron_job_on_its_pod_group(
    operator: OperatorProcess, kubectl: Kubectl, namespace: str, pool: NodePool
) -> None:
    """The CronJob controller's Job is owned by its CronJob; the Job's PodGroup says
    which, so that the runtimes of the CronJob's earlier Jobs count for the next."""
    pool.add(gpus=1)
    job = gang_job("nightly", pool, workers=1, run_for="5s")
    cron_job = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly"},
        "spec": {
            "schedule": "* * * * *",
            "concurrencyPolicy": "Forbid",
            "jobTemplate": {
                "metadata": {key: job["metadata"][key] for key in ("labels", "annotations")},
                "spec": job["spec"],
            },
        },
    }
    kubectl.apply(cron_job, namespace)

    def made() -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = kubectl.json("get", POD_GROUPS, "-n", namespace)["items"]
        return found

    wait_until("the CronJob's first Job's PodGroup", lambda: bool(made()), timeout=90)
    (group,) = made()
    assert group["metadata"]["name"].startswith("nightly-")
    assert group["metadata"]["annotations"][CRON_JOB_ANNOTATION] == "nightly"
    kubectl("delete", "cronjob", "nightly", "-n", namespace, "--cascade=foreground")
